"""Optional dependencies, so that a planner's install stays small: studies at
scale (zarr, netCDF, Dask) install with ``pip install 'relmodel[studies]'``,
ReCycle's exact pipeline planner (OR-Tools CP-SAT) with ``pip install 'relmodel[exact]'``,
and `relmodel bench`'s SimPy peer with ``pip install 'relmodel[bench]'``."""

from __future__ import annotations

import importlib.util

# module: the distribution that provides it
STUDIES = {"zarr": "zarr", "h5netcdf": "h5netcdf", "distributed": "dask[distributed]", "filelock": "filelock"}
EXACT = {"ortools": "ortools"}
BENCH = {"simpy": "simpy"}
EXTRA_OF = {**{module: "studies" for module in STUDIES}, **{module: "exact" for module in EXACT},
            **{module: "bench" for module in BENCH}}


class MissingExtraError(ImportError):
    """A feature needs a package of an extra that is not installed."""


def require(module: str, feature: str) -> None:
    """Raise `MissingExtraError` naming the extra to install if `module` is missing.

    Parameters
    ----------
    module : str
        The importable module the feature needs (a key of `STUDIES`, `EXACT` or `BENCH`).
    feature : str
        What the user asked for, as the message's subject (".zarr output").
    """
    if not available(module):
        extra = EXTRA_OF[module]
        raise MissingExtraError(f"{feature} needs {({**STUDIES, **EXACT, **BENCH})[module]}: "
                                f"pip install 'relmodel[{extra}]'")


def available(module: str) -> bool:
    """Whether `module` can be imported (without importing it).

    Parameters
    ----------
    module : str
        The importable module.

    Returns
    -------
    bool
    """
    return importlib.util.find_spec(module) is not None
