"""Closed-form models: MTTF and expected ETTR (linear and renewal forms).

Both give work / E[wall], a ratio of means; the mean over jobs of work / wall
is a different quantity (Jensen), which only `simulate` reports.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from .failures import job_rate_table
from .scenario import Scenario, as_scenario, split_work

ETTR_METHODS = ("linear", "renewal")


class ClosedFormWarning(UserWarning):
    """A closed form was asked for outside the range where it holds."""


def mttf(n_gpus, failure_rate, gpus_per_node=8):
    """Mean time to failure of a job in hours: 1 / (n_nodes * failure_rate), rate per node-day.

    Broadcasts over array arguments; infinite when failure_rate is 0.
    """
    n_gpus = np.asarray(n_gpus)
    failure_rate = np.asarray(failure_rate, dtype=float)
    if np.any(n_gpus < 1) or np.any(np.asarray(gpus_per_node) < 1):
        raise ValueError("n_gpus and gpus_per_node must be >= 1")
    if np.any(~np.isfinite(failure_rate)) or np.any(failure_rate < 0):
        raise ValueError(f"failure_rate must be finite and >= 0 (got {failure_rate})")
    n_nodes = -(-n_gpus // np.asarray(gpus_per_node))
    with np.errstate(divide="ignore"):
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


def renewal_expected_wall(lam, interval, work, ckpt, restart, queue):
    """E[wall] for exponential failures at rate `lam` per hour (SPEC section 3), exact.

    A restart (with its queue wait) takes R* = q e^(lam u0) + (e^(lam u0) - 1)/lam
    including failures during it; a segment of length s takes (e^(lam s) - 1)(1/lam + R*).
    """
    lam, interval, work, ckpt, restart, queue = np.broadcast_arrays(
        *(np.asarray(x, dtype=float) for x in (lam, interval, work, ckpt, restart, queue))
    )
    split = np.vectorize(split_work, otypes=[float, float])
    n_full, remainder = split(work, interval)
    with np.errstate(over="ignore"):
        restart_star = _times(queue, np.exp(lam * restart)) + _growth(lam, restart)
        def segment(length):
            return _growth(lam, length) + _times(np.expm1(lam * length), restart_star)
        return _times(n_full, segment(interval + ckpt)) + segment(remainder)


def _renewal_point(sc: Scenario) -> float:
    cdf, rate = job_rate_table(sc.n_nodes, sc.failure_rate, sc.lemon_fraction, sc.lemon_rate_factor)
    prob = np.diff(cdf, prepend=0.0)
    walls = renewal_expected_wall(
        rate, sc.checkpoint_interval, sc.work, sc.checkpoint_cost, sc.restart_cost, sc.queue_wait
    )
    return float(sc.work / np.sum(_times(prob, walls)))


def _linear_point(sc: Scenario) -> float:
    lam = sc.job_failure_rate
    numerator = 1.0 - lam * (sc.restart_cost + sc.checkpoint_interval / 2.0)
    if numerator <= 0:
        return float("nan")
    return numerator / (1.0 + sc.checkpoint_cost / sc.checkpoint_interval) / (1.0 + lam * sc.queue_wait)


def renewal_applies(sc: Scenario) -> bool:
    """The renewal form is exact for exponential failures (lemon mixtures included)."""
    return sc.weibull_shape == 1.0


def ettr(scenario, method: str = "renewal"):
    """Expected ETTR = work / E[wall] by a closed form.

    method="renewal": exact for exponential failures (also with lemon nodes and
    any queue-wait law with that mean); NaN, with a ClosedFormWarning, where
    failures are Weibull. method="linear": the first-order form of the Meta
    study, (1 - lam (u0 + dt/2)) / (1 + w/dt) / (1 + lam q); NaN, with a
    ClosedFormWarning, where its numerator is <= 0.

    Returns a float for a scenario, a DataArray over the sweep dims for a grid.
    """
    sc = as_scenario(scenario)
    if method not in ETTR_METHODS:
        raise ValueError(f"method: unknown ETTR method {method!r}; use one of {ETTR_METHODS}")
    point = _renewal_point if method == "renewal" else _linear_point
    values = np.array([point(p) if method == "linear" or renewal_applies(p) else np.nan for p in sc.points()])
    if np.isnan(values).any():
        reason = ("its numerator 1 - lam (u0 + dt/2) is <= 0" if method == "linear"
                  else "it needs exponential failures (weibull_shape = 1)")
        warnings.warn(f"{method} ETTR is NaN where {reason}", ClosedFormWarning, stacklevel=2)
    if not sc.is_grid:
        return float(values[0])
    return xr.DataArray(
        values.reshape(sc.shape), coords=sc.coords(), dims=sc.dims, name=f"ettr_{method}",
        attrs={"long_name": f"expected ETTR, {method} closed form", "units": "1"},
    )
