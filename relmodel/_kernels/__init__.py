"""Private compiled kernels. `backend(name)` returns a module with the timeline
entry points `run_blocks` and `run_jobs`; the Numba one is imported (and
compiled, or loaded from its cache) only when first asked for."""

from pathlib import Path

from .._errors import ParameterError
from .._extras import MissingExtraError

BACKENDS = ("numba", "cython")


def backend(name: str):
    if name == "numba":
        from . import timeline_numba as module
    elif name == "cython":
        try:
            from . import _timeline_cy as module
        except ImportError:
            raise MissingExtraError(f"the Cython twin of the kernels is not built in {Path(__file__).parent}; "
                                    f"{how_to_build_twin()}") from None
    else:
        raise ParameterError("backend", f"unknown backend {name!r}; use one of {BACKENDS}")
    return module


def source_checkout() -> Path | None:
    """The source checkout relmodel was imported from (its root holds ``pyproject.toml``), or None for an
    installed package."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "relmodel" / "_kernels").is_dir() else None


def how_to_build_twin() -> str:
    """What builds the Cython twin where relmodel was imported from."""
    root = source_checkout()
    if root is None:
        return "reinstall relmodel (pip install --force-reinstall relmodel)"
    return (f"Python imported relmodel from the source checkout {root} (the current folder comes first): start "
            "it from another folder to use the installed package, or build the twin here with "
            "`pip install -e . --no-build-isolation`")
