"""Optional dependencies: studies at scale (zarr, netCDF, Dask) install with
``pip install 'relmodel[studies]'``, so that a planner's install stays small."""

from __future__ import annotations

import importlib.util

# module: the distribution that provides it
STUDIES = {"zarr": "zarr", "h5netcdf": "h5netcdf", "distributed": "dask[distributed]", "filelock": "filelock"}


class MissingExtraError(ImportError):
    """A feature needs a package of an extra that is not installed."""


def require(module: str, feature: str) -> None:
    """Raise `MissingExtraError` naming the extra to install if `module` is missing.

    Parameters
    ----------
    module : str
        The importable module the feature needs (a key of `STUDIES`).
    feature : str
        What the user asked for, as the message's subject (".zarr output").
    """
    if importlib.util.find_spec(module) is None:
        raise MissingExtraError(f"{feature} needs {STUDIES[module]}: pip install 'relmodel[studies]'")
