"""Private compiled kernels. `backend(name)` returns a module with the timeline
entry points `run_blocks` and `run_jobs`; the Numba one is imported (and
compiled, or loaded from its cache) only when first asked for."""

from .._errors import ParameterError

BACKENDS = ("numba", "cython")


def backend(name: str):
    if name == "numba":
        from . import timeline_numba as module
    elif name == "cython":
        from . import _timeline_cy as module
    else:
        raise ParameterError("backend", f"unknown backend {name!r}; use one of {BACKENDS}")
    return module
