"""The labelling layer: plain arrays in, labelled xarray objects out.

The kernels and the closed forms compute NumPy arrays over a scenario grid's
points; this module alone turns them into Datasets and DataArrays: one
catalogue of variables (long name, units, extra dims), the grid's coordinates
(every sweep dim has one, every scenario field is one), and the provenance
attrs every Dataset carries. `simulate`, `compare`, the closed forms on grids,
a study's store and the command line all label through it, so a variable has
the same name, units and description wherever it appears.
"""

from __future__ import annotations

import dataclasses
import datetime

import numpy as np
import xarray as xr

from ._version import __version__
from ._scenario import Scenario


@dataclasses.dataclass(frozen=True)
class Variable:
    """How a variable is labelled: its description, units and dims beyond the grid's.

    Parameters
    ----------
    long_name : str
        What the variable holds (the ``long_name`` attr).
    units : str
        Its units (the ``units`` attr; "" for flags, which get none).
    extra_dims : tuple of str, default ()
        Dims after the sweep dims (``quantile``, ``component``, ``category``, ``level``, ``job``).
    """

    long_name: str
    units: str
    extra_dims: tuple[str, ...] = ()

    @property
    def attrs(self) -> dict:
        """The attrs of a variable so labelled."""
        return {"long_name": self.long_name, **({"units": self.units} if self.units else {})}


# Monte Carlo estimates per grid point (`simulate`, a study's store).
SIMULATED = {
    "ettr": Variable("ETTR as total productive time / total wall time (work / mean wall)", "1"),
    "ettr_se": Variable("standard error of ettr (delta method)", "1"),
    "ettr_job_mean": Variable("mean over jobs of productive / wall", "1"),
    "ettr_job_mean_se": Variable("standard error of ettr_job_mean", "1"),
    "wall_mean": Variable("mean wall-clock time per job", "h"),
    "wall_se": Variable("standard error of wall_mean", "h"),
    "wall_quantile": Variable("wall-clock time quantiles (2048-bin histogram of failure-free wall / wall; where a "
                              "job was capped, the kept jobs' exact quantiles, NaN if not kept)", "h", ("quantile",)),
    "failures_mean": Variable("mean failures per job (during compute, checkpoint writes and restarts)", "1"),
    "failures_se": Variable("standard error of failures_mean", "1"),
    "time_mean": Variable("mean time per job by component; the components add up to wall_mean", "h",
                          ("component",)),
    "n_capped": Variable("jobs stopped at max_failures (their times are truncated)", "1"),
}
# Only with a failure taxonomy; each adds up over categories to the total
# (failures_mean, or that component of time_mean).
SIMULATED_BY_CATEGORY = {
    "failures_by_category": Variable("mean failures per job of each category", "1", ("category",)),
    "lost_by_category": Variable("mean lost (re-done) work per job, by the category of the failure that lost it",
                                 "h", ("category",)),
    "restart_by_category": Variable("mean restart time per job, by the category of the failure restarted from",
                                    "h", ("category",)),
    "queue_by_category": Variable("mean queue wait per job, by the category of the failure before it", "h",
                                  ("category",)),
    "unproductive_by_category": Variable("lost + restart + queue by category: the mean time per job each kind costs",
                                         "h", ("category",)),
}
# Only with fast checkpoint levels (`Scenario(fast_checkpoints=...)`), along a
# ``level`` dim: fast levels first, the scenario's own checkpoint ("durable") last.
SIMULATED_BY_LEVEL = {
    "writes_by_level": Variable("mean completed checkpoint writes per job, by level", "1", ("level",)),
    "restores_by_level": Variable("mean restores per job, by the level restored (the job's start counts as durable)",
                                  "1", ("level",)),
    "persist_wait_by_level": Variable("mean time per job waiting for the level's previous write to persist", "h",
                                      ("level",)),
}
# Per job, with simulate(keep_jobs=True).
PER_JOB = {
    "job_wall": Variable("wall-clock time of each job", "h", ("job",)),
    "job_productive": Variable("productive time of each job", "h", ("job",)),
    "job_checkpoint": Variable("checkpoint write time of each job", "h", ("job",)),
    "job_lost": Variable("lost (re-done) work of each job", "h", ("job",)),
    "job_restart": Variable("restart time of each job", "h", ("job",)),
    "job_queue": Variable("queue wait of each job", "h", ("job",)),
    "job_failures": Variable("failures of each job", "1", ("job",)),
    "job_capped": Variable("1 where the job was stopped at max_failures", "1", ("job",)),
    "job_persist_wait": Variable("time each job waited for checkpoint writes to persist", "h", ("job",)),
    "job_failures_by_category": Variable("failures of each job by category", "1", ("job", "category")),
    "job_lost_by_category": Variable("lost work of each job by the category of the failure", "h", ("job", "category")),
    "job_restart_by_category": Variable("restart time of each job by category", "h", ("job", "category")),
    "job_queue_by_category": Variable("queue wait of each job by category", "h", ("job", "category")),
    "job_writes_by_level": Variable("completed checkpoint writes of each job by level", "1", ("job", "level")),
    "job_restores_by_level": Variable("restores of each job by level", "1", ("job", "level")),
    "job_persist_wait_by_level": Variable("persistence wait of each job by level", "h", ("job", "level")),
}
# Closed forms (`ettr`, `optimal_interval`), one per method.
CLOSED_FORMS = {
    **{f"ettr_{method}": Variable(f"expected ETTR, {method} closed form", "1") for method in ("linear", "renewal")},
    **{f"optimal_interval_{method}": Variable(f"optimal checkpoint interval ({method})", "h")
       for method in ("young", "daly", "exact")},
}
# `compare`: closed forms beside the simulation.
COMPARED = {
    "ettr_linear": Variable("expected ETTR, first-order (linear) closed form", "1"),
    "ettr_renewal": Variable("expected ETTR, renewal closed form (exact for exponential failures)", "1"),
    "ettr_sim": Variable("simulated ETTR: total productive / total wall", "1"),
    "ettr_sim_se": Variable("standard error of ettr_sim", "1"),
    "ettr_job_mean": Variable("simulated mean over jobs of productive / wall (not what the closed forms give)", "1"),
    "ettr_job_mean_se": Variable("standard error of ettr_job_mean", "1"),
    "n_capped": Variable("simulated jobs stopped at max_failures", "1"),
    "z_renewal": Variable("(ettr_sim - ettr_renewal) / ettr_sim_se", "1"),
    "linear_rel_error": Variable("(ettr_linear - reference) / reference; reference: renewal if exact, else ettr_sim",
                                 "1"),
    "renewal_exact": Variable("the renewal form is exact here (exponential failures)", ""),
    "linear_valid": Variable("the linear form is within 2 % of the exact renewal form (and defined)", ""),
}


def provenance(title: str, **attrs) -> dict:
    """Return the attrs every relmodel Dataset starts with, then `attrs`.

    Parameters
    ----------
    title : str
        What the Dataset holds.
    **attrs
        Further attrs (seed, backend, ...), in order.

    Returns
    -------
    dict
        ``title``, ``relmodel_version``, ``created`` (UTC, ISO 8601), then `attrs`.
    """
    return {"title": title, "relmodel_version": __version__,
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), **attrs}


def grid_coords(sc: Scenario, *, quantiles=None, components=None, categories: bool = True) -> dict:
    """Return the coordinates of a scenario grid's results.

    Every scenario field is a coordinate (a sweep axis as a dimension
    coordinate, with its units); with a taxonomy, the category table along a
    ``category`` dim.

    Parameters
    ----------
    sc : Scenario
        The scenario or grid.
    quantiles : sequence of float, optional
        Levels of a ``quantile`` dim.
    components : sequence of str, optional
        Names of a ``component`` dim.
    categories : bool, default True
        Add the taxonomy's ``category`` coordinates (if it has one) and the
        fast checkpoint levels' ``level`` coordinates (if it has them).

    Returns
    -------
    dict
        Coordinate name to its value or ``(dims, values, attrs)``.
    """
    coords = dict(sc.coords())
    if quantiles is not None:
        coords["quantile"] = ("quantile", np.asarray(quantiles, dtype=float), {"units": "1"})
    if components is not None:
        coords["component"] = ("component", list(components))
    if categories:
        coords.update(sc.category_coords())
        coords.update(sc.level_coords())
    return coords


def grid_variable(sc: Scenario, variable: Variable, values) -> tuple:
    """Return ``(dims, values, attrs)`` of a variable over a grid.

    Parameters
    ----------
    sc : Scenario
        The grid.
    variable : Variable
        How the variable is labelled.
    values : numpy.ndarray
        One row per grid point in scenario index order (C order), then the
        variable's extra dims.

    Returns
    -------
    tuple
        Dims, values shaped ``sc.shape + extra``, attrs.
    """
    values = np.asarray(values)
    return sc.dims + variable.extra_dims, values.reshape(sc.shape + values.shape[1:]), variable.attrs


def grid_dataset(sc: Scenario, catalogue: dict, values: dict, *, attrs: dict, **coord_options) -> xr.Dataset:
    """Return a Dataset of the variables in `values`, labelled from `catalogue`.

    Parameters
    ----------
    sc : Scenario
        The grid the values are over.
    catalogue : dict of str to Variable
        How each variable is labelled.
    values : dict of str to numpy.ndarray
        Each variable's values (see `grid_variable`), in the order to keep.
    attrs : dict
        The Dataset's attrs (from `provenance`).
    **coord_options
        Passed to `grid_coords`.

    Returns
    -------
    xarray.Dataset
        The labelled Dataset.
    """
    data_vars = {name: grid_variable(sc, catalogue[name], value) for name, value in values.items()}
    return xr.Dataset(data_vars, coords=grid_coords(sc, **coord_options), attrs=attrs)


def over_grid(sc: Scenario, values, name: str):
    """Return a closed form's values: a float for a scenario, a DataArray over a grid.

    Parameters
    ----------
    sc : Scenario
        The scenario or grid.
    values : numpy.ndarray
        One value per grid point, in scenario index order.
    name : str
        The closed form's name in `CLOSED_FORMS`.

    Returns
    -------
    float or xarray.DataArray
        A float for a scalar scenario; else a DataArray over the sweep dims
        with every scenario field as a coordinate.
    """
    values = np.asarray(values, dtype=float)
    if not sc.is_grid:
        return float(values.reshape(-1)[0])
    return xr.DataArray(values.reshape(sc.shape), coords=sc.coords(), dims=sc.dims, name=name,
                        attrs=CLOSED_FORMS[name].attrs)


def label(ds: xr.Dataset, catalogue: dict) -> xr.Dataset:
    """Set the attrs of every variable of `ds` that `catalogue` lists, in place.

    Parameters
    ----------
    ds : xarray.Dataset
        A Dataset whose variables were computed with xarray arithmetic.
    catalogue : dict of str to Variable
        How each variable is labelled.

    Returns
    -------
    xarray.Dataset
        `ds`.
    """
    for name, variable in catalogue.items():
        if name in ds:
            ds[name].attrs = variable.attrs
    return ds
