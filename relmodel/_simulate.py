"""`simulate`: Monte Carlo timelines of a scenario or grid, as a labelled Dataset."""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from . import _labels as labels
from ._feedback import enabled
from ._kernels import BACKENDS
from ._kernels.layout import BLOCK_SIZE, CATEGORY_COLUMNS, JOB_COLUMNS, LEVEL_COLUMNS, N_BINS
from ._closed_form import LINEAR_TOLERANCE, grid_closed_forms
from ._engine import (COMPONENTS, DEFAULT_MAX_FAILURES, RNG_SCHEME, check_grid_memory, check_run_args, check_threads,
                      estimate)
from ._checks import check_choice, check_flag, check_levels
from ._scenario import Scenario, as_scenario



DEFAULT_QUANTILES = (0.05, 0.5, 0.95)  # of the wall time, unless `simulate` is given others


class CappedJobsWarning(RuntimeWarning):
    """Some jobs hit max_failures and were stopped: their scenario's ETTR is near 0."""


class OutOfRangeWarning(RuntimeWarning):
    """Some grid points were not simulated: a job's timeline there passes float64's range."""


CATALOGUE = {**labels.SIMULATED, **labels.SIMULATED_BY_CATEGORY, **labels.SIMULATED_BY_LEVEL, **labels.PER_JOB}


def simulate(scenario, n_jobs: int = 100_000, seed: int = 0, backend: str = "auto", *,
             keep_jobs: bool = False, max_failures: int = DEFAULT_MAX_FAILURES, n_threads: int | None = None,
             progress=None, quantiles=DEFAULT_QUANTILES, scenario_keys=None) -> xr.Dataset:
    """Sample `n_jobs` job timelines per scenario point and summarise them.

    With a failure taxonomy (``Scenario(taxonomy=...)`` or a `TaxonomyMixture`
    failure model) the Dataset also has a `category` dim, the category table
    as coordinates (`category_share`, `category_restart_cost`,
    `category_queue_wait`, `category_domain`) and `failures_by_category`,
    `lost_by_category`, `restart_by_category`, `queue_by_category` (means per
    job; they add up over categories to the totals) and their sum
    `unproductive_by_category`. Without one, none of these.

    With fast checkpoint levels (``Scenario(fast_checkpoints=...)``) it also
    has a `level` dim (``fast0``, ... and ``durable``), the level table as
    coordinates (`level_interval`, `level_cost`, `level_restart`,
    `level_persist`, `level_survives`) and `writes_by_level`,
    `restores_by_level` and `persist_wait_by_level` (means per job). The
    component ``persist_wait`` of `time_mean` is the time spent waiting for a
    write to persist before the next one of its level (0 unless a level
    persists for longer than its interval; failures strike while waiting, and
    a wait a failure cuts short counts up to the failure).

    The level semantics (docs: user guide, "Checkpoint strategies", "Semantics"): every
    failure, during a restart too, draws again which levels survive, so a
    restore can fall back a level; restoring the job's start pays
    ``restart_cost`` and counts as a ``durable`` restore; a level's previous
    checkpoint stays restorable while its next write is in flight or
    persisting; `restores_by_level` counts one restore per failure;
    ``checkpoint`` time is the failure-free run's writes and a write cut short
    or written again after a restore is ``lost`` time (`writes_by_level`
    counts every completed write).

    Parameters
    ----------
    scenario : Scenario or mapping
        The scenario, or a mapping of its fields; sequences make sweep dims.
    n_jobs : int, default 100000
        Jobs per scenario point, 1 to 2**40.
    seed : int, default 0
        0 <= seed < 2**32. Same seed, same bits, whatever the backend, thread
        count or chunking.
    backend : {"auto", "numba", "cython"}, default "auto"
        "numba" (parallel), "cython" (serial, no JIT) or "auto" (the quicker
        to answer: Cython for short runs, and on a cold Numba cache Cython
        while Numba compiles in the background, then Numba;
        `engine.resolve_backend`). The same bits whichever; the `backend`
        attr says which ran ("cython then numba" for such a switch).
    keep_jobs : bool, default False
        Also return per-job variables `job_*` along a `job` dim (memory grows
        with n_jobs; otherwise it does not). A run whose arrays would pass the
        memory budget (docs: user guide, "Memory budget") is refused before it starts.
    max_failures : int, default 100000
        A job is stopped at this many failures and counted in `n_capped` (a
        CappedJobsWarning says so); its times are truncated, and its point's
        `wall_quantile` is the kept jobs' exact quantiles with `keep_jobs`,
        NaN without (the histogram is too coarse for such walls). A grid point whose
        every job would be stopped (probability above 1 - 1e-6, exponential
        failures: `engine.certainly_capped`) is not simulated at all:
        n_capped = n_jobs and NaN estimates, in no time (unless keep_jobs).
        Nor is a point whose failure-free wall, or one failure's costs, pass
        float64's range (`engine.beyond_float_range`): NaN estimates with
        n_capped = 0, and an OutOfRangeWarning.
    n_threads : int, optional
        Numba threads for this call (default: Numba's setting).
    progress : bool or callable, optional
        Show a progress bar (tqdm); or a callable, called with the number of
        jobs finished after each chunk (to drive a bar of your own). None (the
        default): the bar where stderr is a terminal.
    quantiles : sequence of float, default (0.05, 0.5, 0.95)
        Distinct levels in [0, 1] of the wall-time quantiles.
    scenario_keys : sequence of int, optional
        Each grid point's key of the random stream, in [0, 2**32) (default 0,
        1, ... in C order, the points' order in `Scenario.points`). A point
        or a sub-grid simulated with the keys it has in a larger grid gets
        that grid's bits there.

    Returns
    -------
    xarray.Dataset
        The sweep dims, every scenario field as a coordinate, the variables
        described in their `long_name` attrs (times in hours), and provenance
        attrs.

    Raises
    ------
    ScenarioError
        If an argument is out of its valid range, or the run would pass the
        memory budget (RELMODEL_MEMORY_BUDGET; the message names it).

    Warns
    -----
    CappedJobsWarning
        If any job hit `max_failures` and was stopped.
    OutOfRangeWarning
        If a grid point's job timeline passes float64's range (not simulated).
    """
    sc = as_scenario(scenario)
    # Every argument checked before any work (packing a grid takes time too).
    n_jobs, seed, max_failures = check_run_args(n_jobs, seed, max_failures)
    backend = check_choice("backend", backend, (*BACKENDS, "auto"))
    n_threads = check_threads(n_threads)
    keep_jobs = check_flag("keep_jobs", keep_jobs)
    callback = progress if callable(progress) else None
    progress = callback is None and enabled(None if progress is None else check_flag("progress", progress))
    quantiles = check_levels("quantiles", quantiles)
    check_grid_memory(sc, n_jobs, keep_jobs)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        from ._feedback import bar_width

        bar = tqdm(total=sc.size * n_jobs, unit="job", unit_scale=True, desc="simulate", **bar_width())
        callback = bar.update
    try:
        totals, est = estimate(sc.points(), n_jobs, seed, backend, scenario_keys=scenario_keys, quantiles=quantiles,
                               max_failures=max_failures, keep_jobs=keep_jobs, n_threads=n_threads,
                               progress=callback)
    finally:
        if bar is not None:
            bar.close()

    values = {name: est[name] for name in labels.SIMULATED}
    if sc.taxonomy is not None:
        values.update({name: est[name] for name in labels.SIMULATED_BY_CATEGORY})
    if sc.fast_checkpoints:
        values.update({name: est[name] for name in labels.SIMULATED_BY_LEVEL})
    if keep_jobs:
        for i, column in enumerate(JOB_COLUMNS):
            values[f"job_{column.name}"] = totals.jobs[:, :, i].astype(column.dtype, copy=False)
        if sc.taxonomy is not None:
            for i, column in enumerate(CATEGORY_COLUMNS):
                values[f"job_{column.name}_by_category"] = totals.cat_jobs[:, :, :, i]
        if sc.fast_checkpoints:
            for i, column in enumerate(LEVEL_COLUMNS):
                values[f"job_{column.name}_by_level"] = totals.level_jobs[:, :, :, i]
    ds = labels.grid_dataset(sc, CATALOGUE, values, quantiles=quantiles, components=COMPONENTS,
                             attrs=labels.provenance("relmodel Monte Carlo job timelines", seed=seed, rng=RNG_SCHEME,
                                                     backend=totals.backend, n_jobs=n_jobs,
                                                     max_failures=max_failures,
                                                     block_size=BLOCK_SIZE, histogram_bins=N_BINS))
    if keep_jobs:
        ds = ds.assign_coords(job=("job", np.arange(n_jobs)))
    for message, category in run_warnings(est["n_capped"], est["failures_mean"], n_jobs, max_failures):
        warnings.warn(message, category, stacklevel=2)
    return ds


def run_warnings(n_capped, failures_mean, n_jobs: int, max_failures: int) -> list[tuple[str, type]]:
    """The warnings a run's points call for: (text, class) of CappedJobsWarning and OutOfRangeWarning.

    A point not simulated with no job capped is `engine.beyond_float_range`.

    Parameters
    ----------
    n_capped : numpy.ndarray
        Jobs stopped at `max_failures`, per point.
    failures_mean : numpy.ndarray
        Mean failures per job, per point (NaN where a point was not simulated).
    n_jobs : int
        Jobs per point.
    max_failures : int
        The cap a job is stopped at.

    Returns
    -------
    list of (str, type)
        Empty where every point was simulated and no job hit the cap.
    """
    out = []
    message = capped_message(n_capped, failures_mean, n_jobs, max_failures)
    if message:
        out.append((message, CappedJobsWarning))
    beyond = int((np.isnan(np.asarray(failures_mean)) & (np.asarray(n_capped) == 0)).sum())
    if beyond:
        out.append((f"{beyond} grid point(s) not simulated: a job's failure-free wall, or the cost of one failure "
                    "(a checkpoint interval with its write, a queue wait and a restart), passes float64's range "
                    "(about 1.8e308 h); their estimates are NaN with n_capped 0", OutOfRangeWarning))
    return out


def capped_message(n_capped, failures_mean, n_jobs: int, max_failures: int) -> str | None:
    """The CappedJobsWarning's text for these points' capped jobs (None: no job was capped).

    Parameters
    ----------
    n_capped, failures_mean : array_like
        Per grid point: jobs stopped at `max_failures`, and the mean failures (NaN where not simulated).
    n_jobs : int
        Jobs per point.
    max_failures : int
        The cap.

    Returns
    -------
    str or None
        The text, or None where no job hit the cap.
    """
    n_capped, failures_mean = np.asarray(n_capped), np.asarray(failures_mean)
    total = int(n_capped.sum())
    if not total:
        return None
    skipped = int((np.isnan(failures_mean) & (n_capped == n_jobs)).sum())
    unsimulated = (f"; {skipped} grid point(s) not simulated, as every job would hit it "
                   "(NaN estimates)") if skipped else ""
    return (f"{total} of {n_capped.size * n_jobs} jobs hit max_failures={max_failures} and were stopped; "
            f"their ETTR is near 0 and their times are truncated (see n_capped; wall_quantile is NaN there unless "
            f"keep_jobs){unsimulated}; "
            "a run costs up to n_jobs x max_failures failure events, so a lower max_failures answers sooner")


def compare(grid, n_jobs: int = 100_000, seed: int = 0, backend: str = "auto", **simulate_kwargs) -> xr.Dataset:
    """Compare the closed forms against the simulation, point by point over a scenario grid.

    `grid` may also be a Dataset from `simulate` or a study (`open_study`): its
    simulated ETTR is used as it is, and only the closed forms are computed.

    Parameters
    ----------
    grid : Scenario, mapping or xarray.Dataset
        The scenario or grid to simulate (or a mapping of its fields), or a
        Dataset from `simulate` or a study, whose simulated ETTR is used.
    n_jobs : int, default 100000
        Jobs per scenario point (unused with a Dataset).
    seed : int, default 0
        Seed of the simulation (unused with a Dataset).
    backend : {"auto", "numba", "cython"}, default "auto"
        Simulation backend, as for `simulate` (unused with a Dataset).
    **simulate_kwargs
        Passed to `simulate` (unused with a Dataset).

    Returns
    -------
    xarray.Dataset
        `ettr_linear`, `ettr_renewal`, `ettr_sim` (work / mean wall, the
        quantity both closed forms estimate) and `ettr_sim_se`,
        `ettr_job_mean` (the mean of per-job ratios, for the Jensen gap),
        `z_renewal` (simulation minus renewal in standard errors),
        `linear_rel_error` (linear against the exact reference: renewal where
        it applies, else the simulation), and flags `renewal_exact`
        (exponential failures) and `linear_valid` (within LINEAR_TOLERANCE,
        2 %, of the exact renewal form, `closed_form.linear_valid`). Closed
        forms that do not apply are NaN.
    """
    if isinstance(grid, xr.Dataset):
        sim, sc = grid, Scenario.from_dataset(grid)
    else:
        sc = as_scenario(grid)
        sim = simulate(sc, n_jobs=n_jobs, seed=seed, backend=backend, **simulate_kwargs)
    forms = grid_closed_forms(sc)
    exact = forms["renewal_exact"]
    valid = np.abs(forms["linear_deviation"]) <= LINEAR_TOLERANCE
    ds = xr.Dataset(coords=sim.coords).drop_vars(["quantile", "component"], errors="ignore")
    for name in ("ettr_linear", "ettr_renewal"):
        ds[name] = labels.grid_variable(sc, labels.COMPARED[name], forms[name])
    ds["ettr_sim"] = sim.ettr
    ds["ettr_sim_se"] = sim.ettr_se
    for name in ("ettr_job_mean", "ettr_job_mean_se", "n_capped"):  # a study may not have kept them
        if name in sim:
            ds[name] = sim[name]
    with np.errstate(invalid="ignore", divide="ignore"):
        ds["z_renewal"] = (ds.ettr_sim - ds.ettr_renewal) / ds.ettr_sim_se
        reference = xr.where(exact.reshape(sc.shape), ds.ettr_renewal, ds.ettr_sim)
        ds["linear_rel_error"] = (ds.ettr_linear - reference) / reference
    ds["renewal_exact"] = (sc.dims, exact.reshape(sc.shape))
    ds["linear_valid"] = (sc.dims, valid.reshape(sc.shape))
    labels.label(ds, labels.COMPARED)
    ds.attrs = {**sim.attrs, "title": "relmodel: closed forms against simulation"}
    return ds
