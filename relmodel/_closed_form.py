"""Closed-form models: MTTF and expected ETTR (linear and renewal forms).

Both give work / E[wall], a ratio of means; the mean over jobs of work / wall
is a different quantity (Jensen), which only `simulate` reports.
"""

from __future__ import annotations

import math
import numbers
import sys
import warnings

import numpy as np

from . import _labels as labels
from ._errors import ParameterError, ScenarioError
from ._checks import check_number
from ._failures import has_lemons, job_rate_log_masses
from ._levels_closed_form import levels_expected_wall, levels_first_order, waiting_writes
from ._level_pattern import split_work
from ._units import short_repr
from ._scenario import Scenario, as_scenario

ETTR_METHODS = ("linear", "renewal")
INTERVAL_METHODS = ("young", "daly", "exact")
MIN_INTERVAL = 1.0 / 3600.0  # one second: no plan checkpoints more often
# The linear form is flagged where it strays from the exact (renewal) form by
# more than this, relative: inside it the first-order terms it drops are below
# the spread between Young's and Daly's intervals in typical plans.
LINEAR_TOLERANCE = 0.02
_GRID_POINTS = 2048  # candidate checkpoint counts per level of the exact search


class ClosedFormWarning(UserWarning):
    """A closed form was asked for outside the range where it holds."""


def mttf(n_gpus, failure_rate, gpus_per_node=8):
    """Mean time to failure of a job in hours: 1 / (n_nodes * failure_rate).

    Broadcasts over array arguments; infinite when failure_rate is 0. Each value
    is checked as the Scenario field of that name (a ScenarioError names it).

    Parameters
    ----------
    n_gpus : int or array_like
        GPUs in the job.
    failure_rate : float or array_like
        Failures per node-day.
    gpus_per_node : int or array_like, default 8
        GPUs per node.

    Returns
    -------
    float or numpy.ndarray
        The job's MTTF in hours (an array when any argument is one).

    Raises
    ------
    ScenarioError
        If a value is outside its Scenario field's valid range.
    """
    n_gpus, failure_rate, gpus_per_node = (
        np.vectorize(lambda v, name=name, kind=kind: check_number(name, v, kind=kind), otypes=[otype])(value)
        for name, kind, otype, value in (("n_gpus", "count", np.int64, n_gpus),
                                         ("failure_rate", "rate", float, failure_rate),
                                         ("gpus_per_node", "count", np.int64, gpus_per_node)))
    n_nodes = -(-n_gpus // gpus_per_node)
    with np.errstate(divide="ignore", over="ignore"):  # inf: no failures, or a subnormal rate
        out = 24.0 / (n_nodes * failure_rate)
    return float(out) if out.ndim == 0 else out


def _growth(lam, length):
    """(e^(lam*length) - 1) / lam, with its limit `length` at lam = 0; inf on overflow."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return np.where(lam > 0, np.expm1(lam * length) / np.where(lam > 0, lam, 1.0), length)


def _times(a, b):
    """a * b with 0 * inf = 0 (a zero cost stays zero however many failures)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where((a == 0) | (b == 0), 0.0, a * b)


def restart_phase_mean(lam, restart, queue, share=None):
    """Return R*, the expected time from a failure until the job computes again.

    Queue waits and restarts, failures during restarts included; exact for
    exponential failures at `lam` per hour.

    One kind of failure: R* = q e^(lam u0) + (e^(lam u0) - 1)/lam. With a
    taxonomy (`restart`, `queue`, `share` given per category along the last
    axis; every failure, also one during a restart, draws its category anew),
    renewal at each failure gives::

        R* = sum_c share_c (q_c + (1 - e^(-lam u_c))/lam) / sum_c share_c e^(-lam u_c),

    which is the one-kind form for one category. (It is not the share-weighted
    mean of the one-kind R*_c: a long restart is more likely to be cut short and
    re-drawn, so the mix seen during restarts differs from the shares.)

    Parameters
    ----------
    lam : float or numpy.ndarray
        Job failure rate per hour.
    restart : float or numpy.ndarray
        Restart cost in hours (per category along the last axis with `share`).
    queue : float or numpy.ndarray
        Mean queue wait in hours (per category along the last axis with `share`).
    share : numpy.ndarray, optional
        Each category's share of failures (last axis); None for one kind.

    Returns
    -------
    float or numpy.ndarray
        R* in hours, broadcast over the arguments.
    """
    if share is None:
        with np.errstate(over="ignore"):
            return _times(queue, np.exp(lam * restart)) + _growth(lam, restart)
    lam = np.asarray(lam, dtype=float)[..., None]
    restart, queue, share = (np.asarray(x, dtype=float) for x in (restart, queue, share))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        completes = np.exp(-lam * restart)  # P(a restart of category c runs through)
        spent = np.where(lam > 0, -np.expm1(-lam * restart) / np.where(lam > 0, lam, 1.0), restart)  # E[min(T, u_c)]
        return np.sum(share * (queue + spent), axis=-1) / np.sum(share * completes, axis=-1)


def renewal_expected_wall(lam, interval, work, ckpt, restart, queue, share=None):
    """Return E[wall] for exponential failures at rate `lam` per hour, exact.

    The job is the one of docs: user-guide/job-model.md, 'What a job does'.
    A restart (with its queue wait) takes R* (`restart_phase_mean`) including
    failures during it; a segment of length s takes (e^(lam s) - 1)(1/lam + R*).
    With `share`, `restart` and `queue` are per category (last axis): a taxonomy.
    inf where E[wall] exceeds float64; `log_renewal_expected_wall` stays finite.

    Parameters
    ----------
    lam : float or numpy.ndarray
        Job failure rate per hour.
    interval : float or numpy.ndarray
        Checkpoint interval in hours.
    work : float or numpy.ndarray
        Productive work in hours.
    ckpt : float or numpy.ndarray
        Checkpoint write cost in hours.
    restart : float or numpy.ndarray
        Restart cost in hours (per category with `share`).
    queue : float or numpy.ndarray
        Mean queue wait in hours (per category with `share`).
    share : numpy.ndarray, optional
        Each failure category's share (last axis); None for one kind.

    Returns
    -------
    float or numpy.ndarray
        The expected wall time in hours (inf past float64's range).
    """
    with np.errstate(over="ignore"):
        return np.exp(log_renewal_expected_wall(lam, interval, work, ckpt, restart, queue, share))


def _log_expm1(x):
    """log(e^x - 1) for x >= 0 without overflow; -inf at 0."""
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(x > 1.0, x + np.log1p(-np.exp(-np.where(x > 1.0, x, 1.0))), np.log(np.expm1(x)))


def _log_expm1_ratio(x):
    """log((e^x - 1) / x) for x >= 0 without overflow; 0 at 0 (its limit), for subnormal x too."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        small = np.where(x > 0.0, np.expm1(np.minimum(x, 1.0)) / np.where(x > 0.0, x, 1.0), 1.0)
        large = np.where(np.isinf(x), np.inf, _log_expm1(x) - np.log(np.where(x > 1.0, x, 1.0)))  # inf - inf
        return np.where(x > 1.0, large, np.log(small))


def _logsumexp(x, axis=-1, weights=None):
    """log sum(weights e^x) along `axis`, -inf where every term is 0."""
    x = np.asarray(x, dtype=float)
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    terms = np.exp(x - top) if weights is None else weights * np.exp(x - top)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(terms, axis=axis)) + np.squeeze(top, axis=axis)


def log_renewal_expected_wall(lam, interval, work, ckpt, restart, queue, share=None):
    """Return log E[wall] of `renewal_expected_wall`, finite however hopeless the job.

    1/lam + R* = (1/lam + mean q) / sum_c share_c e^(-lam u_c) (one category:
    e^(lam u0) (1/lam + q)), so a segment of length s costs
    log(e^(lam s) - 1) + log(1/lam + R*), and E[wall] = n_full seg(dt + w) + seg(rest).

    The arguments are those of `renewal_expected_wall`.

    Returns
    -------
    float or numpy.ndarray
        The natural log of the expected wall time in hours.
    """
    if share is None:
        restart, queue, share = (np.asarray(x, dtype=float)[..., None] for x in (restart, queue, 1.0))
    restart, queue, share = (np.asarray(x, dtype=float) for x in (restart, queue, share))
    lam, interval, work, ckpt = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (lam, interval, work, ckpt)))
    n_full, remainder = split_work(work, interval)
    failing = lam > 0
    rate = np.where(failing, lam, 1.0)
    mean_queue = np.sum(share * queue, axis=-1)
    # Past float64's range (costs near its limit) a product is inf and its log stays inf; a piece of
    # no length costs nothing, however long the restarts (not -inf + inf, which `where` masks).
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_completes = _logsumexp(-rate[..., None] * restart, weights=share)
        # (e^(lam s) - 1)(1/lam + R*) = s (e^x - 1)/x (1 + lam q) / completes, x = lam s:
        # no 1/lam, which overflows for subnormal rates.
        queued = rate * mean_queue
        log_queued = np.where(np.isinf(queued), np.log(rate) + np.log(np.where(queued > 0, mean_queue, 1.0)),
                              np.log1p(queued))
        log_restart = log_queued - log_completes

        def log_segment(length):
            return np.where(failing & (length > 0), np.log(length) + _log_expm1_ratio(rate * length) + log_restart,
                            np.log(length))

        full = np.where(n_full > 0, np.log(np.where(n_full > 0, n_full, 1.0)) + log_segment(interval + ckpt), -np.inf)
        return np.logaddexp(full, log_segment(remainder))


def _restart_args(sc: Scenario) -> tuple:
    """(restart, queue, share) for renewal_expected_wall: per category with a taxonomy."""
    if sc.taxonomy is None:
        return sc.restart_cost, sc.queue_wait, None
    cats = sc.taxonomy
    return tuple(np.array([getattr(c, name) for c in cats]) for name in ("restart_cost", "queue_wait", "share"))


# -- closed forms over a grid's points, as arrays --------------------------------
# Each takes a scenario (or grid) and returns one value per point, in scenario
# index order; `labels.over_grid` labels them. Values were checked when the
# Scenario was built, so nothing here checks them again.

_MIXTURE_ELEMENTS = 2**22  # rates x points evaluated at once for a lemon mixture (32 MiB a temporary)


def _columns(sc: Scenario) -> dict:
    """The scenario's fields as flat arrays over its points, with n_nodes and the job failure rate."""
    cols = sc.columns()
    cols["n_nodes"] = -(-cols["n_gpus"] // cols["gpus_per_node"])
    cols["job_failure_rate"] = cols["n_nodes"] * cols["failure_rate"] / 24.0
    return cols


def _point_restart_args(sc: Scenario, cols: dict, points) -> tuple:
    """(restart, queue, share) of `points` for log_renewal_expected_wall (the taxonomy's per category)."""
    if sc.taxonomy is None:
        return cols["restart_cost"][points], cols["queue_wait"][points], None
    return _restart_args(sc)


def _renewal_ettr(sc: Scenario, cols: dict, exponential: bool = False) -> np.ndarray:
    """The renewal ETTR at every point; NaN where failures are Weibull (unless `exponential`:
    then every point is read with exponential failures of the same mean)."""
    interval, work, ckpt = cols["checkpoint_interval"], cols["work"], cols["checkpoint_cost"]
    out = np.full(work.shape, np.nan)
    applies = np.ones(work.shape, bool) if exponential else cols["weibull_shape"] == 1.0
    lemons = has_lemons(cols["failure_rate"], cols["lemon_fraction"], cols["lemon_rate_factor"])
    plain = np.flatnonzero(applies & ~lemons)
    if plain.size:
        log_walls = log_renewal_expected_wall(cols["job_failure_rate"][plain], interval[plain], work[plain],
                                              ckpt[plain], *_point_restart_args(sc, cols, plain))
        out[plain] = np.exp(np.log(work[plain]) - log_walls)
    # Lemon mixtures: one table of job rates per mixture, every point of that mixture at once.
    mixed = np.flatnonzero(applies & lemons)
    keys = np.stack([cols[name][mixed].astype(float)
                     for name in ("n_nodes", "failure_rate", "lemon_fraction", "lemon_rate_factor")], axis=1)
    mixtures, which = np.unique(keys, axis=0, return_inverse=True)
    for m, (n_nodes, failure_rate, fraction, factor) in enumerate(mixtures):
        log_mass, rate = job_rate_log_masses(int(n_nodes), failure_rate, fraction, factor)
        points = mixed[which.reshape(-1) == m]
        step = max(1, _MIXTURE_ELEMENTS // rate.size)
        for start in range(0, points.size, step):
            at = points[start:start + step]
            # Points along rows, rates along columns: each row sums in the order a single point would.
            restart, queue, share = _point_restart_args(sc, cols, at)
            if share is None:
                restart, queue = restart[:, None], queue[:, None]
            log_walls = log_renewal_expected_wall(rate[None, :], interval[at, None], work[at, None], ckpt[at, None],
                                                  restart, queue, share)
            out[at] = np.exp(np.log(work[at]) - _logsumexp(log_mass[None, :] + log_walls, axis=-1))
    return np.minimum(out, 1.0)


# -- checkpoint levels (fast levels, persisting writes) -----------------------------
_LEVEL_MIXTURE_RATES = 64  # lemon mixtures with levels: at most this many job rates, each one exact solve


def level_points(sc: Scenario) -> np.ndarray:
    """Return the indices, in scenario index order, of the points of scenario or grid `sc` whose
    checkpoints come in levels (fast levels, or a write that persists)."""
    if sc.fast_checkpoints:
        return np.arange(sc.size)
    return np.flatnonzero(np.asarray(sc.columns()["checkpoint_persist"]) > 0)


def _level_args(p: Scenario) -> tuple:
    """(n_full, rem, d0, mult, cost, restart, persist, survives, categories) of a scalar point."""
    table = p.level_table()
    n_full, rem = split_work(p.work, table["base"])
    categories = ([(c.share, c.restart_cost, c.queue_wait) for c in p.taxonomy] if p.taxonomy
                  else [(1.0, p.restart_cost, p.queue_wait)])
    return (n_full, rem, table["base"], table["mult"], table["cost"], table["restart"], table["persist"],
            table["survives"], categories)


def levels_point_ettr(p: Scenario, method: str) -> tuple[float, str | None]:
    """Return the ETTR of one scalar point with checkpoint levels, and why it is not to be trusted.

    Parameters
    ----------
    p : Scenario
        A scalar scenario with checkpoint levels.
    method : {"renewal", "linear"}
        "renewal": work / the exact E[wall] of
        `levels_closed_form.levels_expected_wall` (exponential failures, lemon
        mixtures of up to 64 job rates; exact where no write waits for
        persistence, and where only the durable level's writes wait).
        "linear": the first-order form
        (`levels_closed_form.levels_first_order`).

    Returns
    -------
    value : float
        The ETTR; NaN where the form does not apply.
    reason : str or None
        None where `value` holds; else why it is NaN (renewal) or outside its
        valid range (linear).
    """
    args = _level_args(p)
    n_full, rem, *rest = args
    if method == "linear":
        value, valid = levels_first_order(p.job_failure_rate, *rest)
        if valid:
            return value, None
        return value, waiting_writes(*rest) or "the first-order form with checkpoint levels leaves its range"
    if p.weibull_shape != 1.0:
        return math.nan, "it needs exponential failures (weibull_shape = 1)"
    if has_lemons(p.failure_rate, p.lemon_fraction, p.lemon_rate_factor):
        log_mass, rates = job_rate_log_masses(p.n_nodes, p.failure_rate, p.lemon_fraction, p.lemon_rate_factor)
        if rates.size > _LEVEL_MIXTURE_RATES:
            return math.nan, (f"a lemon mixture of {rates.size} job rates with checkpoint levels "
                              f"(at most {_LEVEL_MIXTURE_RATES}); simulate it")
        mass = np.exp(log_mass - log_mass.max())
        walls = []
        for rate in rates:
            wall, reason = _levels_wall(rate, args)
            if reason is not None:
                return math.nan, reason
            walls.append(wall)
        wall = float(np.dot(mass, walls) / mass.sum())
    else:
        wall, reason = _levels_wall(p.job_failure_rate, args)
        if reason is not None:
            return math.nan, reason
    return min(p.work / wall, 1.0), None


def _levels_wall(rate: float, args: tuple) -> tuple[float, str | None]:
    """`levels_expected_wall` at `rate`; at a subnormal rate, its value at rate 0 where failures move the
    wall by less than rounding (such a rate has too few digits for the exact form's sums: it read 0 or
    erred by 1e-6)."""
    if 0.0 < rate < sys.float_info.min:
        wall, reason = levels_expected_wall(0.0, *args)
        if reason is None and rate * wall < 2.0**-60:
            return wall, None
    return levels_expected_wall(rate, *args)


def _levels_values(sc: Scenario, points: np.ndarray, method: str) -> tuple[np.ndarray, list]:
    """The closed form at the level points of a grid, and the reasons where it is NaN."""
    values, reasons = np.full(points.size, np.nan), []
    for k, i in enumerate(points):
        point = sc.point(np.unravel_index(i, sc.shape)) if sc.is_grid else sc
        values[k], reason = levels_point_ettr(point, method)
        if reason is not None:
            reasons.append(reason)
    return values, reasons


def _linear_ettr(cols: dict) -> np.ndarray:
    """The first-order (linear) ETTR at every point; NaN where its numerator is <= 0."""
    lam, interval = cols["job_failure_rate"], cols["checkpoint_interval"]
    with np.errstate(invalid="ignore", over="ignore"):
        numerator = 1.0 - lam * (cols["restart_cost"] + interval / 2.0)
        value = numerator / (1.0 + cols["checkpoint_cost"] / interval) / (1.0 + lam * cols["queue_wait"])
    return np.where(numerator > 0, value, np.nan)


def _linear_deviation(linear: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """(linear - exact) / exact, `exact` the renewal form with exponential failures; NaN where `linear` is."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isnan(linear), np.nan, np.where(exact == 0.0, np.inf, (linear - exact) / exact))


def grid_closed_forms(sc: Scenario) -> dict[str, np.ndarray]:
    """Return both ETTR forms at every point of a scenario or grid, each evaluated once.

    What `compare` sets beside the simulation: the values of ``ettr(sc,
    "linear")`` and ``ettr(sc, "renewal")`` (without their warnings), where the
    renewal form is exact, and `linear_deviation`.

    Parameters
    ----------
    sc : Scenario
        A scenario or grid.

    Returns
    -------
    dict of str to numpy.ndarray
        ``ettr_linear``, ``ettr_renewal``, ``renewal_exact`` (bool) and
        ``linear_deviation``, one value per point in scenario index order.
    """
    cols = _columns(sc)
    linear = _linear_ettr(cols)
    exponential = _renewal_ettr(sc, cols, exponential=True)  # the renewal form read with exponential failures
    exact = cols["weibull_shape"] == 1.0
    leveled = level_points(sc)
    if leveled.size:
        linear[leveled] = _levels_values(sc, leveled, "linear")[0]
        exponential[leveled] = _levels_values(sc, leveled, "renewal")[0]
        exact = exact.copy()
        exact[leveled] &= ~np.isnan(exponential[leveled])
    return {"ettr_linear": linear, "ettr_renewal": np.where(exact, exponential, np.nan), "renewal_exact": exact,
            "linear_deviation": _linear_deviation(linear, exponential)}


def grid_linear_deviation(sc: Scenario) -> np.ndarray:
    """Return `linear_deviation`, (linear - exact) / exact, at every point of scenario or grid `sc`, in
    scenario index order; NaN where the linear form is."""
    cols = _columns(sc)
    return _linear_deviation(_linear_ettr(cols), _renewal_ettr(sc, cols, exponential=True))


def linear_deviation(sc: Scenario) -> float:
    """Return (linear - exact) / exact for a scalar scenario; NaN where the linear form is.

    The exact form is the renewal ETTR of the scenario with exponential failures
    of the same mean (the law the linear form assumes), so a Weibull scenario is
    measured against its exponential twin.

    Parameters
    ----------
    sc : Scenario
        A scalar scenario (no sweep axes).

    Returns
    -------
    float
        The linear form's relative error.
    """
    return float(grid_linear_deviation(sc._scalar())[0])


def linear_valid(sc: Scenario) -> bool:
    """Tell whether the linear form of the scalar scenario `sc` is usable: its numerator is positive
    and it is within LINEAR_TOLERANCE (relative) of the renewal form."""
    return abs(linear_deviation(sc)) <= LINEAR_TOLERANCE


def renewal_applies(sc: Scenario) -> bool:
    """Tell whether ``ettr(sc, "renewal")`` is exact for the scalar scenario `sc`: for exponential
    failures, lemon mixtures and failure taxonomies included; not for Weibull failures."""
    return sc.weibull_shape == 1.0


def _columns_at(sc: Scenario, at: str) -> tuple[dict, np.ndarray]:
    """The grid's columns with the interval `at` asks for, and where that interval is undefined (NaN)."""
    cols = _columns(sc)
    undefined = np.zeros(cols["work"].shape, bool)
    if at != "given":
        interval = _optimal_intervals(sc, cols, at)
        undefined = np.isnan(interval)
        feasible = _feasible_intervals(interval, cols["work"])
        cols["checkpoint_interval"] = np.where(undefined, 1.0, feasible)  # 1.0: any valid stand-in
    return cols, undefined


def ettr_arrays(sc: Scenario, method: str = "renewal", at: str = "given") -> np.ndarray:
    """Return a closed-form ETTR at every point of a scenario or grid, without warnings.

    `ettr` is this labelled, with its ClosedFormWarning where the form does not
    hold.

    Parameters
    ----------
    sc : Scenario
        A scenario or grid.
    method : {"renewal", "linear"}, default "renewal"
        Which closed form.
    at : {"given", "young", "daly", "exact"}, default "given"
        Which checkpoint interval (see `ettr`).

    Returns
    -------
    numpy.ndarray
        One value per point, in scenario index order.
    """
    cols, undefined = _columns_at(sc, at)
    return _ettr_values(sc, cols, undefined, method)[0]


def _ettr_values(sc: Scenario, cols: dict, undefined: np.ndarray, method: str) -> tuple[np.ndarray, list]:
    """The form at every point, and the reasons it is NaN or not trusted at points with levels."""
    values = _linear_ettr(cols) if method == "linear" else _renewal_ettr(sc, cols)
    leveled, reasons = level_points(sc), []
    if leveled.size:
        values[leveled], reasons = _levels_values(sc, leveled, method)
    return np.where(undefined, np.nan, values), reasons


def ettr(scenario, method: str = "renewal", *, at: str = "given"):
    """Expected ETTR = work / E[wall] by a closed form.

    method="renewal": exact for exponential failures (also with lemon nodes, a
    failure taxonomy, see `restart_phase_mean`, and any queue-wait law with that
    mean); NaN, with a ClosedFormWarning, where failures are Weibull.
    method="linear": the first-order form of the Meta study, (1 - lam (u0 +
    dt/2)) / (1 + w/dt) / (1 + lam q), with a taxonomy's share-weighted u0 and
    q; NaN, with a ClosedFormWarning, where its numerator is <= 0, and a
    ClosedFormWarning wherever it strays from the exact renewal form by more
    than LINEAR_TOLERANCE (2 %, relative; `linear_deviation` gives the gap).

    At points with checkpoint levels (``checkpoint_persist`` > 0 or
    ``fast_checkpoints``), "renewal" is the exact form of
    `levels_closed_form.levels_expected_wall` and "linear" its first-order
    form (`levels_point_ettr`); where either does not hold (a write that waits
    for persistence, Weibull failures, a large lemon mixture; the first-order
    form out of its range) a ClosedFormWarning says why. `at` must then be
    "given" (`plan_checkpoints` finds the best intervals per level).

    Parameters
    ----------
    scenario : Scenario or dict
        A scenario or a grid (a dict of Scenario fields works too).
    method : {"renewal", "linear"}, default "renewal"
        Which closed form.
    at : {"given", "young", "daly", "exact"}, default "given"
        "given" uses the scenario's checkpoint_interval; "young", "daly" or
        "exact" use that optimal interval, point by point.

    Returns
    -------
    float or xarray.DataArray
        A float for a scenario, a DataArray over the sweep dims for a grid.

    Raises
    ------
    ValueError
        If `method` or `at` is not one of the choices, or (a ScenarioError) the
        scenario is invalid.

    Warns
    -----
    ClosedFormWarning
        Where the chosen form does not hold (see above).
    """
    sc = as_scenario(scenario)
    if method not in ETTR_METHODS:
        raise ParameterError("method", f"unknown ETTR method {method!r}; use one of {ETTR_METHODS}")
    if at != "given" and at not in INTERVAL_METHODS:
        raise ParameterError("at", f"use 'given' or one of {INTERVAL_METHODS} (got {at!r})")
    leveled = level_points(sc)
    if leveled.size and at != "given":
        raise ParameterError("at", "the optimal intervals of young, daly and exact ignore checkpoint levels; "
                                   "rm.plan_checkpoints finds the best intervals per level")
    cols, undefined = _columns_at(sc, at)
    values, reasons = _ettr_values(sc, cols, undefined, method)
    plain = np.ones(values.size, bool)
    plain[leveled] = False
    nan = np.isnan(values) & plain
    if (nan & undefined).any():
        warnings.warn(f"{method} ETTR is NaN where the {at} optimal interval is: it needs exponential failures "
                      "(weibull_shape = 1)", ClosedFormWarning, stacklevel=2)
    if (nan & ~undefined).any():
        reason = ("its numerator 1 - lam (u0 + dt/2) is <= 0" if method == "linear"
                  else "it needs exponential failures (weibull_shape = 1)")
        warnings.warn(f"{method} ETTR is NaN where {reason}", ClosedFormWarning, stacklevel=2)
    for reason in sorted(set(reasons)):
        warnings.warn(f"{method} ETTR with checkpoint levels is NaN or not trusted where {reason}",
                      ClosedFormWarning, stacklevel=2)
    if method == "linear":
        exact = _renewal_ettr(sc, cols, exponential=True)
        if leveled.size:
            exact[leveled] = _levels_values(sc, leveled, "renewal")[0]
        deviation = np.abs(_linear_deviation(values, exact))
        astray = deviation > LINEAR_TOLERANCE  # NaN (numerator <= 0) was warned about above
        if astray.any():
            where = f" at {int(astray.sum())} of {deviation.size} points" if sc.is_grid else ""
            warnings.warn(f"linear ETTR is off the exact renewal form by up to {deviation[astray].max():.1%}{where}, "
                          f"more than the {LINEAR_TOLERANCE:.0%} it is trusted to; use method='renewal'",
                          ClosedFormWarning, stacklevel=2)
    return labels.over_grid(sc, values, f"ettr_{method}")


def feasible_interval(interval: float, work: float) -> float:
    """Return an interval a Scenario accepts.

    At least MIN_INTERVAL; past the job (no checkpoint at all) when the optimum
    is infinite or longer than the job: a millionth past it, and at least
    MIN_INTERVAL (so past a subnormal work too).

    Parameters
    ----------
    interval : float
        An optimal interval in hours, possibly 0 or infinite; NaN (an optimum
        `optimal_interval` does not give, as "exact" under Weibull failures).
    work : float
        The job's work in hours.

    Returns
    -------
    float
        A valid checkpoint interval in hours; NaN for a NaN `interval`.

    Raises
    ------
    ScenarioError
        If `interval` is not a number >= 0, inf or NaN, or `work` not a finite number > 0.
    """
    work = check_number("work", work, kind="duration")
    if not isinstance(interval, numbers.Real) or isinstance(interval, bool) or interval < 0:
        raise ScenarioError("interval", f"must be a number of hours >= 0, or inf (got {short_repr(interval)})")
    try:
        interval = float(interval)
    except OverflowError:  # an integer past float64: past any job
        interval = math.inf
    return float(_feasible_intervals(interval, work))


def _feasible_intervals(interval, work):
    """`feasible_interval` over arrays; NaN stays NaN."""
    # Past the job by more than split_work's tolerance: for work under a second, MIN_INTERVAL
    # (a millionth more of a subnormal work rounds back to the work itself: one checkpoint).
    past = np.maximum(work * (1.0 + 1e-6), MIN_INTERVAL)
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(interval) | (interval > work), past, np.maximum(interval, MIN_INTERVAL))


def long_run_optimal_interval(lam: float, ckpt: float) -> float:
    """Return the maximiser of the long-run renewal ETTR, lam dt / (e^(lam (dt + w)) - 1).

    Restart cost and queue wait do not move it. With x = lam dt and c = lam w,
    the optimum solves (1 - x) e^(x + c) = 1, so x = 1 + W0(-e^(-1 - c)) (Lambert
    W, principal branch); Newton steps on log(1 - x) + x + c = 0 restore the
    digits that W loses next to its branch point when c is small.

    Parameters
    ----------
    lam : float
        Job failure rate per hour.
    ckpt : float
        Checkpoint write cost in hours.

    Returns
    -------
    float
        The optimal checkpoint interval in hours.
    """
    if lam == 0:
        return math.inf
    c = lam * ckpt
    if c == 0:
        return 0.0
    from scipy.special import lambertw  # here: at module level it would slow `import relmodel`

    w0 = float(lambertw(-math.exp(-1.0 - c)).real)
    if c <= 1.0:  # x small: polish x itself
        x = 1.0 + w0 if 0.0 < 1.0 + w0 < 1.0 else min(math.sqrt(2.0 * c), 0.5)
        for _ in range(4):
            g = math.log1p(-x) + x + c
            x = min(max(x + g * (1.0 - x) / x, x / 2), (1.0 + x) / 2)
        return x / lam
    # x near 1: polish l = log(1 - x), which solves l - e^l + 1 + c = 0 (no underflow).
    l = math.log(-w0) if -1.0 < w0 < 0.0 else -1.0 - c
    for _ in range(6):
        l -= (l - math.exp(l) + 1.0 + c) / (1.0 - math.exp(l))
    return -math.expm1(l) / lam


def _optimal_intervals(sc: Scenario, cols: dict, method: str) -> np.ndarray:
    """The optimal interval of `method` at every point (`optimal_interval`)."""
    lam, w = cols["job_failure_rate"], cols["checkpoint_cost"]
    failing = lam > 0
    rate = np.where(failing, lam, 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        m = 1.0 / rate  # the job's MTTF where it fails (inf for a subnormal rate)
        if method == "young":
            young = _root_of_product(2.0 * w / rate, w, 1.0 / np.sqrt(rate))
            return np.where(failing, young, np.inf)
        if method == "daly":
            root = _root_of_product(2.0 * w * m, w, np.sqrt(m))
            daly = root * (1.0 + np.sqrt(w / (2.0 * m)) / 3.0 + w / (18.0 * m)) - w
            # Free checkpoints: 0, also where M overflows (sqrt(0 * inf) would be NaN).
            return np.where(failing, np.where(w == 0, 0.0, np.where(w >= 2.0 * m, m, daly)), np.inf)
    # The exact optimum is a search over checkpoint counts, point by point.
    return np.array([_exact_finite_work(p) if renewal_applies(p) else math.nan for p in sc.points()])


def _root_of_product(product, w, root_of_rest):
    """sqrt(`product`) for `product` = 2 w x, given sqrt(x) as `root_of_rest`: where the
    product overflows (a subnormal rate, a cost near the float limit) or underflows to 0
    (a subnormal cost) its root need not, so there the product of roots."""
    root = np.sqrt(product)
    lost = np.isinf(root) | ((root == 0) & (w > 0))
    return np.where(lost, math.sqrt(2.0) * np.sqrt(w) * root_of_rest, root)


def _exact_finite_work(sc: Scenario) -> float:
    """The maximiser of the renewal ETTR for the scenario's finite work.

    With k checkpoints, E[wall] rises with the interval between work/(k+1) and
    work/k (the last, shorter piece has no checkpoint and the segment cost is
    convex), so the optimum lies just past some work/(k+1). E[wall] over k is
    searched on the whole range of counts, 0 to one checkpoint a second: first
    on a geometric grid, then on finer grids between the neighbours of the best
    point, down to every count (no window sized for typical jobs, which missed
    the optimum of jobs with millions of checkpoints). The point returned is
    nudged past the breakpoint so that `work` splits into k full intervals and
    a remainder.
    """
    if sc.job_failure_rate == 0:
        return math.inf
    log_mass, rate = job_rate_log_masses(sc.n_nodes, sc.failure_rate, sc.lemon_fraction, sc.lemon_rate_factor)
    if rate.size > _COARSE_RATES:
        # A wide lemon mixture: locate the optimum on its quantiles, then search
        # again over the job rates that carry E[wall] there (all but e^-46 of it).
        levels = (np.arange(_COARSE_RATES) + 0.5) / _COARSE_RATES
        coarse = rate[np.minimum(np.searchsorted(np.cumsum(np.exp(log_mass)), levels), rate.size - 1)]
        near = _search_counts(np.full(_COARSE_RATES, -math.log(_COARSE_RATES)), coarse, sc)
        weight = log_mass + log_renewal_expected_wall(rate, _split_after(sc.work, near), sc.work,
                                                      sc.checkpoint_cost, *_restart_args(sc))
        carries = weight >= weight.max() - 46.0
        log_mass, rate = log_mass[carries], rate[carries]
    best = _search_counts(log_mass, rate, sc)
    if best == 0:
        return math.inf
    # The counts searched keep intervals of at least MIN_INTERVAL just past a
    # breakpoint; one more checkpoint is possible at MIN_INTERVAL itself.
    candidates = np.array([float(_split_after(sc.work, best)), MIN_INTERVAL])
    return float(candidates[_least_wall(candidates, log_mass, rate, sc)])


def _search_counts(log_mass, rate, sc: Scenario) -> float:
    """The checkpoint count with the least expected wall time, in [0, work / MIN_INTERVAL]."""
    k_max = max(math.floor(sc.work / MIN_INTERVAL) - 1, 0)  # intervals of MIN_INTERVAL or more
    counts = np.round(np.geomspace(1.0, k_max, _GRID_POINTS)) if k_max >= 1 else []
    k = np.unique(np.concatenate([[0.0], counts]))
    while True:
        i = _best_count(k, log_mass, rate, sc)
        lo, hi = k[max(i - 1, 0)], k[min(i + 1, k.size - 1)]
        if hi - lo <= _GRID_POINTS:
            k = np.arange(lo, hi + 1)
            return float(k[_best_count(k, log_mass, rate, sc)])
        k = np.unique(np.round(np.linspace(lo, hi, _GRID_POINTS)))


_COARSE_RATES = 16  # quantiles of a lemon mixture's rate that locate the exact optimum


def _split_after(work, k):
    """The interval just past work / (k + 1): k full intervals and a shorter remainder.

    The nudge is the least that `split_work` (exact multiples within 1e-9 of an
    interval) still reads as k intervals, with a margin for rounding: twice its
    tolerance, and at least 8 ulps of the remainder. The ETTR just past the
    breakpoint is the best of its piece, so a larger nudge would cost ETTR.
    """
    k = np.asarray(k, dtype=float)
    nudge = np.maximum(2e-9 / (k + 1), 8 * np.finfo(float).eps)
    return work / (k + 1) * (1.0 + nudge)


def _best_count(k, log_mass, rate, sc: Scenario) -> int:
    """Index in `k` of the checkpoint count with the least expected wall time."""
    return _least_wall(_split_after(sc.work, k), log_mass, rate, sc)


def _least_wall(intervals, log_mass, rate, sc: Scenario) -> int:
    """Index in `intervals` of the one with the least expected wall time over the lemon mixture,
    every rate of the mixture (rows) at every interval (columns) at once, in logs (a hopeless
    job's E[wall] overflows float64 at every interval)."""
    # _MIXTURE_ELEMENTS at a time (2**20 rates x 2048 intervals at once would be 16 GiB a temporary);
    # a column's sum runs down its rows in the same order however many columns there are.
    step = max(1, _MIXTURE_ELEMENTS // rate.size)
    log_wall = np.empty(len(intervals))
    for start in range(0, len(intervals), step):
        log_walls = log_renewal_expected_wall(rate[:, None], intervals[None, start:start + step], sc.work,
                                              sc.checkpoint_cost, *_restart_args(sc))
        log_wall[start:start + step] = _logsumexp(log_mass[:, None] + log_walls, axis=0)
    return int(np.argmin(log_wall))


def optimal_interval(scenario, method: str = "exact"):
    """The checkpoint interval (hours) that maximises ETTR.

    "young": sqrt(2 w M); "daly": Daly's higher-order form, M when w >= 2M;
    "exact": the maximiser of the renewal ETTR for the scenario's finite work
    (exponential failures; NaN with a ClosedFormWarning otherwise), found by a
    search around the long-run optimum of `long_run_optimal_interval`.
    M = 1 / (job failure rate). Infinite when there are no failures (never
    checkpoint, or "exact": the job is shorter than its best interval); 0 for
    "young" and "daly" when checkpoints are free (never below MIN_INTERVAL for
    "exact").

    Parameters
    ----------
    scenario : Scenario or dict
        A scenario or a grid.
    method : {"exact", "young", "daly"}, default "exact"
        Which optimum.

    Returns
    -------
    float or xarray.DataArray
        The interval in hours; a DataArray over the sweep dims for a grid.

    Raises
    ------
    ValueError
        If `method` is not one of the choices, or (a ScenarioError) the scenario
        is invalid.
    """
    sc = as_scenario(scenario)
    if method not in INTERVAL_METHODS:
        raise ParameterError("method", f"unknown interval method {method!r}; use one of {INTERVAL_METHODS}")
    if level_points(sc).size:
        raise ParameterError("scenario", "young, daly and exact optimal intervals are for one blocking checkpoint; "
                                         "with checkpoint levels use rm.plan_checkpoints")
    out = labels.over_grid(sc, _optimal_intervals(sc, _columns(sc), method), f"optimal_interval_{method}")
    if np.isnan(out).any():
        warnings.warn("the exact optimal interval is NaN where failures are Weibull (renewal form needed)",
                      ClosedFormWarning, stacklevel=2)
    return out
