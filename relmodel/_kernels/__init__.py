"""Private compiled kernels. `backend(name)` returns a module with the timeline
entry points `run_blocks` and `run_jobs`; the Numba one is imported (and
compiled, or loaded from its cache) only when first asked for."""

import importlib

BACKENDS = ("numba", "cython")
_MODULES = {"numba": ".timeline_numba", "cython": "._timeline_cy"}


def backend(name: str):
    if name not in _MODULES:
        raise ValueError(f"backend: unknown backend {name!r}; use one of {BACKENDS}")
    return importlib.import_module(_MODULES[name], __name__)
