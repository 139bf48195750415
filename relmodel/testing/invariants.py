"""Checks any model of ETTR or MTTF must pass, one line each in a user's test.

An ETTR model is any callable ``model(scenario) -> float``; an MTTF model is a
callable ``model(n_gpus, failure_rate, gpus_per_node) -> hours``. Each check
raises `InvariantError` (an AssertionError, so pytest and hypothesis report
and shrink it) naming the invariant, the scenario and the values seen.
For example::

    from hypothesis import given
    from relmodel.testing import invariants
    from relmodel.testing.strategies import scenarios

    @given(scenarios(laws=("exponential",)))
    def test_my_ettr(sc):
        invariants.check_ettr_model(my_ettr, sc)

NaN is the documented "outside my valid range" answer of a closed form (as
`relmodel.ettr(method="linear")` gives); checks skip NaN unless
``allow_nan=False``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

from .._docparts import fill_doc_parts
from .._errors import ParameterError

__all__ = [
    "COSTS",
    "InvariantError",
    "check_agrees_with_simulation",
    "check_ettr_model",
    "check_failure_free_limit",
    "check_in_unit_interval",
    "check_monotone",
    "check_mttf_model",
    "failure_free_ettr",
]

COSTS = ("failure_rate", "restart_cost", "checkpoint_cost", "queue_wait", "n_gpus")

# Docstring parts that several docstrings share, written once: a docstring names one as %(name)s.
_DOC_PARTS = {
    "model_and_scenario": """\
model : callable
    ``model(sc) -> float``, an ETTR model.
sc : Scenario
    A scalar scenario.""",
}


class InvariantError(AssertionError):
    """A model broke an invariant; the message says which, where and by how much."""


def _evaluate(model, sc) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a closed form's range warnings are the caller's business
        value = model(sc)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InvariantError(f"model returned {value!r}, not a number, for {sc}") from None


def check_in_unit_interval(model, sc, *, allow_nan: bool = True) -> float:
    """Check that 0 <= model(sc) <= 1 (NaN allowed as "outside the model's range").

    Parameters
    ----------
    %(model_and_scenario)s
    allow_nan : bool, default True
        Whether NaN passes.

    Returns
    -------
    float
        The model's value.

    Raises
    ------
    InvariantError
        If the value is outside [0, 1] (or NaN with ``allow_nan=False``).
    """
    value = _evaluate(model, sc)
    if math.isnan(value):
        if not allow_nan:
            raise InvariantError(f"ETTR is NaN for {sc}")
        return value
    if not 0.0 <= value <= 1.0:
        raise InvariantError(f"ETTR {value!r} outside [0, 1] for {sc}")
    return value


def _worse(sc, parameter: str, factor: float):
    value = getattr(sc, parameter)
    if parameter == "n_gpus":  # more nodes, not only more GPUs on the same nodes
        bigger = math.ceil(value * factor) + sc.gpus_per_node
    else:
        bigger = value * factor if value > 0 else 1.0 / 60 if parameter != "failure_rate" else 1e-3
    return dataclasses.replace(sc, **{parameter: bigger})


def check_monotone(model, sc, parameter: str, *, factor: float = 2.0, rtol: float = 1e-12) -> None:
    """Check that ETTR does not increase when `parameter` grows by `factor`.

    A zero cost is raised to one minute.

    Parameters
    ----------
    %(model_and_scenario)s
    parameter : str
        A cost, the failure rate or the GPU count (one of `COSTS`).
    factor : float, default 2.0
        How much the parameter grows.
    rtol : float, default 1e-12
        Relative slack allowed for rounding.

    Raises
    ------
    InvariantError
        If the ETTR increases.
    """
    if parameter not in COSTS:
        raise ParameterError("parameter", f"must be one of {COSTS} (got {parameter!r})")
    if not factor > 1:
        raise ParameterError("factor", f"must be > 1 (got {factor!r})")
    worse = _worse(sc, parameter, factor)
    before, after = _evaluate(model, sc), _evaluate(model, worse)
    if math.isnan(before) or math.isnan(after):
        return
    if after > before * (1 + rtol) + 1e-300:
        raise InvariantError(
            f"ETTR rose from {before!r} to {after!r} when {parameter} went from "
            f"{getattr(sc, parameter)!r} to {getattr(worse, parameter)!r} ({sc})")


def failure_free_ettr(sc) -> float:
    """Return the ETTR of the job with no failures: work over work plus its checkpoint writes.

    Parameters
    ----------
    sc : Scenario
        A scalar scenario.

    Returns
    -------
    float
        The failure-free ETTR.
    """
    n_full, _ = sc.intervals
    return sc.work / (sc.work + n_full * sc.checkpoint_cost)


def check_failure_free_limit(model, sc, *, rtol: float = 1e-6, shrink: float = 1e-9,
                             failure_free=failure_free_ettr) -> None:
    """Check that ETTR tends to the failure-free value as failures vanish, within `rtol`.

    Checked at failure rate 0 and at a rate expecting `shrink` failures over
    the job (its failure-free wall time plus one restart and queue wait).

    Parameters
    ----------
    %(model_and_scenario)s
    rtol : float, default 1e-6
        Relative tolerance.
    shrink : float, default 1e-9
        Expected failures over the job at the small rate.
    failure_free : callable, default failure_free_ettr
        ``failure_free(sc)`` is the limit: by default work / (work + checkpoint
        writes) of the finite job; a long-run model passes
        ``failure_free=lambda sc: 1 / (1 + sc.checkpoint_cost / sc.checkpoint_interval)``.

    Raises
    ------
    InvariantError
        If the model misses the limit.
    """
    expected = failure_free(sc)
    exposure = sc.failure_free_wall + sc.restart_cost + sc.queue_wait  # hours
    tiny = shrink * 24.0 / (sc.n_nodes * exposure)  # per node-day
    for rate in (tiny, 0.0):
        value = _evaluate(model, dataclasses.replace(sc, failure_rate=rate))
        if not abs(value - expected) <= rtol * expected:
            raise InvariantError(
                f"with failure_rate={rate!r} ETTR is {value!r}, expected the failure-free "
                f"{expected!r} within rtol={rtol} ({sc})")


def check_ettr_model(model, sc, *, costs=COSTS, factor: float = 2.0, limit_rtol: float | None = 1e-6,
                     failure_free=failure_free_ettr) -> None:
    """Check every invariant of an ETTR model at `sc`.

    In [0, 1], monotone in each of `costs`, and the failure-free limit.

    Parameters
    ----------
    %(model_and_scenario)s
    costs : tuple of str, default COSTS
        The parameters checked for monotonicity.
    factor : float, default 2.0
        How much each grows (see `check_monotone`).
    limit_rtol : float or None, default 1e-6
        Tolerance of the failure-free limit; None skips that check.
    failure_free : callable, default failure_free_ettr
        As in `check_failure_free_limit`.

    Raises
    ------
    InvariantError
        At the first invariant broken.
    """
    check_in_unit_interval(model, sc)
    for parameter in costs:
        check_monotone(model, sc, parameter, factor=factor)
    if limit_rtol is not None:
        check_failure_free_limit(model, sc, rtol=limit_rtol, failure_free=failure_free)


def check_agrees_with_simulation(model, sc, *, n_jobs: int = 20_000, seed: int = 0, k: float = 4.0,
                                 atol: float = 0.0, **simulate_kwargs) -> float:
    """Check that ``|model(sc) - simulated ETTR| <= k`` standard errors (+ atol).

    The simulated quantity is `ettr` (total work over total wall time), the one
    closed forms give. Pass a fixed `seed` so the test is deterministic.

    Parameters
    ----------
    %(model_and_scenario)s
    n_jobs : int, default 20000
        Jobs simulated.
    seed : int, default 0
        Simulation seed.
    k : float, default 4.0
        Allowed standard errors.
    atol : float, default 0.0
        Absolute slack added to the bound.
    **simulate_kwargs
        Passed to `relmodel._simulate`.

    Returns
    -------
    float
        The z-score of the model against the simulation.

    Raises
    ------
    InvariantError
        If the model is further off than allowed.
    """
    from .._simulate import simulate

    ds = simulate(sc, n_jobs=n_jobs, seed=seed, **simulate_kwargs)
    simulated, se = float(ds.ettr), float(ds.ettr_se)
    value = _evaluate(model, sc)
    gap = abs(value - simulated)
    if not gap <= k * se + atol:
        raise InvariantError(
            f"model gives {value!r}, the simulation {simulated!r} +- {se:.3g} ({n_jobs} jobs, seed {seed}): "
            f"{gap / se if se else math.inf:.1f} standard errors apart ({sc})")
    return (value - simulated) / se if se else 0.0


fill_doc_parts(_DOC_PARTS, check_in_unit_interval, check_monotone, check_failure_free_limit, check_ettr_model,
               check_agrees_with_simulation)


def check_mttf_model(model, n_gpus: int, failure_rate: float, gpus_per_node: int = 8, *,
                     rtol: float = 1e-9) -> None:
    """Check an MTTF model's invariants.

    MTTF is positive, infinite without failures, decreasing in the GPU count
    and the rate, and inversely proportional to the node count and the rate.

    Parameters
    ----------
    model : callable
        ``model(n_gpus, failure_rate, gpus_per_node) -> float``, hours.
    n_gpus : int
        GPUs in the job.
    failure_rate : float
        Failures per node-day.
    gpus_per_node : int, default 8
        GPUs per node.
    rtol : float, default 1e-9
        Relative tolerance of the proportionality checks.

    Raises
    ------
    InvariantError
        At the first invariant broken.
    """
    def mttf(n, r):
        value = float(model(n_gpus=n, failure_rate=r, gpus_per_node=gpus_per_node))
        if not value > 0 or math.isnan(value):
            raise InvariantError(f"MTTF {value!r} is not positive for n_gpus={n}, failure_rate={r}")
        return value

    base = mttf(n_gpus, failure_rate)
    if not math.isinf(mttf(n_gpus, 0.0)):
        raise InvariantError(f"MTTF is {mttf(n_gpus, 0.0)!r}, not infinite, with failure_rate=0")
    nodes = -(-n_gpus // gpus_per_node)
    doubled_nodes = mttf(2 * nodes * gpus_per_node, failure_rate)
    doubled_rate = mttf(n_gpus, 2 * failure_rate)
    for label, value in (("twice the nodes", doubled_nodes), ("twice the rate", doubled_rate)):
        if not math.isclose(value, base / 2, rel_tol=rtol):
            raise InvariantError(f"MTTF with {label} is {value!r}, expected half of {base!r} "
                                 f"(n_gpus={n_gpus}, failure_rate={failure_rate}, gpus_per_node={gpus_per_node})")
