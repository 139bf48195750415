"""Builds the Cython twin of the timeline kernel; all metadata is in pyproject.toml."""

import runpy
import sys
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup


def write_layout_pxi(layout_py="relmodel/_kernels/layout.py", pxi="relmodel/_kernels/_layout.pxi"):
    """The Cython twin's copy of the kernels' layout, written from the one declaration
    (`relmodel._kernels.layout.LAYOUT`): compile-time constants, and LAYOUT itself."""
    layout = runpy.run_path(layout_py)["LAYOUT"]
    text = (f"# Written by setup.py from {layout_py}; do not edit.\ncdef enum:\n"
            + "".join(f"    {name} = {value}\n" for name, value in layout.items())
            + "\nLAYOUT = dict(\n" + "".join(f"    {name}={name},\n" for name in layout) + ")\n")
    path = Path(pxi)
    if not path.exists() or path.read_text() != text:  # unchanged: no rebuild
        path.write_text(text)


write_layout_pxi()

# No FMA contraction and no fast-math: the Cython kernel must match the Numba
# kernel bit for bit, and Numba does not contract either.
flags = [] if sys.platform == "win32" else ["-O3", "-ffp-contract=off", "-fno-fast-math"]

setup(
    ext_modules=cythonize(
        [
            Extension(
                "relmodel._kernels._timeline_cy",
                ["relmodel/_kernels/_timeline_cy.pyx"],
                extra_compile_args=flags,
            )
        ],
        compiler_directives={"language_level": 3},
    )
)
