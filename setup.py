"""Builds the Cython twin of the timeline kernel; all metadata is in pyproject.toml."""

import sys

from Cython.Build import cythonize
from setuptools import Extension, setup

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
