"""Checkpoint strategies side by side: blocking, asynchronous, and fast levels
below a durable checkpoint, each at its best intervals.

From one scenario that describes the checkpoints a run can take (its own
checkpoint with `checkpoint_cost` blocking and `checkpoint_persist` more to
become durable, and any `fast_checkpoints`), `plan_checkpoints` derives

* ``blocking``: the whole write blocks (cost + persist), no fast level;
* ``asynchronous``: the write blocks for `checkpoint_cost` and persists while
  the job computes (only if `checkpoint_persist` > 0);
* ``multilevel``: the fast levels below the durable checkpoint (only if it has
  fast levels), the durable one asynchronous as given;

finds each one's best intervals with the exact expected ETTR of
`closed_form.levels_point_ettr` (exponential failures), and checks each by a
simulation.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from .closed_form import (MIN_INTERVAL, ClosedFormWarning, ettr, feasible_interval, levels_point_ettr, linear_valid,
                          optimal_interval)
from .engine import check_run_args
from .errors import ParameterError
from .scenario import Scenario, as_scenario
from .simulate import simulate
from .units import format_hours

STRATEGIES = ("blocking", "asynchronous", "multilevel")
# The durable multiple (durable interval over the fastest) is searched over this
# ladder first, then one by one around the best rung; so is the fastest interval,
# on a log grid over its whole range, then by a bounded 1-D search around the best.
_MULTIPLE_LADDER = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
_GRID = 16


@dataclasses.dataclass(frozen=True)
class StrategyPlan:
    """One strategy at its best intervals.

    Parameters
    ----------
    name : str
        ``blocking``, ``asynchronous`` or ``multilevel``.
    scenario : Scenario
        The run with this strategy, at its best intervals.
    ettr : float
        Exact expected ETTR there (exponential failures).
    ettr_first_order : float
        The first-order form there (NaN where undefined).
    first_order_valid : bool
        Whether the first-order form is within its range there.
    simulated : float
        Simulated ETTR (work / mean wall) there; NaN if not simulated.
    simulated_se : float
        Its standard error.
    simulated_jobs : int
        Jobs simulated.
    """

    name: str
    scenario: Scenario
    ettr: float
    ettr_first_order: float
    first_order_valid: bool
    simulated: float
    simulated_se: float
    simulated_jobs: int

    @property
    def intervals_h(self) -> dict:
        """Interval in hours by level: ``fast0``, ... and ``durable``; inf for a level never
        written (its interval is past the work)."""
        sc = self.scenario
        fast = sc.fast_checkpoints or ()
        intervals = {**{f"fast{i}": lv.interval for i, lv in enumerate(fast)}, "durable": sc.checkpoint_interval}
        return {k: math.inf if v > sc.work else v for k, v in intervals.items()}

    def to_dict(self) -> dict:
        """Return the strategy's numbers, JSON-ready.

        Returns
        -------
        dict
            Intervals, costs (hours), ETTR by each form, the simulation's
            estimate and its jobs.
        """
        sc = self.scenario
        return {"intervals_h": self.intervals_h, "checkpoint_cost_h": sc.checkpoint_cost,
                "checkpoint_persist_h": sc.checkpoint_persist, "ettr": self.ettr,
                "ettr_first_order": self.ettr_first_order, "first_order_valid": self.first_order_valid,
                "simulated": self.simulated, "simulated_se": self.simulated_se,
                "simulated_jobs": self.simulated_jobs}


@dataclasses.dataclass(frozen=True)
class CheckpointPlan:
    """`plan_checkpoints`' answer: each strategy at its best intervals, the best first.

    Parameters
    ----------
    strategies : tuple of StrategyPlan
        By exact ETTR, highest first.
    """

    strategies: tuple

    @property
    def recommended(self) -> StrategyPlan:
        """The strategy with the highest exact ETTR."""
        return self.strategies[0]

    def to_dict(self) -> dict:
        """Return the plan, JSON-ready.

        Returns
        -------
        dict
            ``recommended`` (a strategy's name), then each strategy's
            `StrategyPlan.to_dict` by name.
        """
        return {"recommended": self.recommended.name, **{s.name: s.to_dict() for s in self.strategies}}

    def __str__(self) -> str:
        best = self.recommended.ettr
        lines = [f"{'strategy':<13} {'intervals (fast..durable)':<28} {'ETTR':>7} {'first order':>12} "
                 f"{'simulated (95% CI)':>22} {'vs best':>8}"]
        for s in self.strategies:
            intervals = " / ".join("never" if math.isinf(v) else format_hours(v) for v in s.intervals_h.values())
            first = f"{s.ettr_first_order:.4f}" + (" " if s.first_order_valid else "!")
            simulated = (f"{s.simulated:.4f} +- {1.96 * s.simulated_se:.5f}" if s.simulated_jobs
                         else "not simulated")
            lines.append(f"{s.name:<13} {intervals:<28} {s.ettr:7.4f} {first:>12} {simulated:>22} "
                         f"{s.ettr - best:+8.4f}")
        if not all(s.first_order_valid for s in self.strategies):
            lines.append("  ! the first-order form is outside its range there: use the exact ETTR")
        return "\n".join(lines)


def strategy_scenarios(sc: Scenario) -> dict[str, Scenario]:
    """The strategies a scenario's checkpoints allow (see the module's docstring), by name.

    Parameters
    ----------
    sc : Scenario
        A scalar scenario.

    Returns
    -------
    dict of str to Scenario
        ``blocking`` always; ``asynchronous`` if it persists; ``multilevel`` if
        it has fast levels.
    """
    out = {"blocking": sc.sweep(fast_checkpoints=None, checkpoint_persist=0.0,
                                checkpoint_cost=sc.checkpoint_cost + sc.checkpoint_persist)}
    if sc.checkpoint_persist > 0:
        out["asynchronous"] = sc.sweep(fast_checkpoints=None)
    if sc.fast_checkpoints:
        out["multilevel"] = sc
    return out


def _ettr(sc: Scenario, method: str) -> float:
    if sc.has_levels:
        return levels_point_ettr(sc, method)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClosedFormWarning)
        return ettr(sc, method)


def with_intervals(sc: Scenario, fastest: float, multiple: int) -> Scenario:
    """Return `sc` with its fastest interval moved, the other fast levels keeping their multiples of it.

    Parameters
    ----------
    sc : Scenario
        A scalar scenario.
    fastest : float
        The new fastest interval (h): the first fast level's, or without fast
        levels the scenario's own `checkpoint_interval`.
    multiple : int
        The durable interval over the fastest (ignored without fast levels).

    Returns
    -------
    Scenario
        The scenario at those intervals.
    """
    fast = sc.fast_checkpoints
    if not fast:
        return sc.sweep(checkpoint_interval=fastest)
    base = fast[0].interval
    levels = tuple(dataclasses.replace(lv, interval=round(lv.interval / base) * fastest) for lv in fast)
    return sc.sweep(fast_checkpoints=levels, checkpoint_interval=multiple * fastest)


def _score(sc: Scenario, fastest: float, multiple: int, method: str) -> float:
    value = _ettr(with_intervals(sc, fastest, multiple), method)
    return -math.inf if math.isnan(value) else float(value)


def _best_fastest(sc: Scenario, multiple: int, low: float, high: float, method: str,
                  points: int = _GRID) -> tuple[float, float]:
    """(ETTR, fastest interval) maximising `method`'s ETTR at a fixed durable multiple:
    a log grid over [low, high], then a bounded search between the best point's neighbours."""
    if high <= low:
        return _score(sc, low, multiple, method), low
    grid = np.geomspace(low, high, points)
    scores = [_score(sc, x, multiple, method) for x in grid]
    k = int(np.argmax(scores))
    best = (scores[k], float(grid[k]))
    from scipy.optimize import minimize_scalar  # here: scipy.optimize costs `import relmodel` a tenth of a second

    lo, hi = np.log(grid[max(k - 1, 0)]), np.log(grid[min(k + 1, grid.size - 1)])
    found = minimize_scalar(lambda y: -_score(sc, math.exp(y), multiple, method), bounds=(lo, hi),
                            method="bounded", options={"xatol": 1e-4})
    if -found.fun > best[0]:
        best = (-found.fun, math.exp(found.x))
    return best


def best_intervals(sc: Scenario) -> Scenario:
    """Return `sc` at the intervals that maximise its exact ETTR.

    One blocking level: the exact optimal interval (`optimal_interval`), or
    past the work (no checkpoint at all) where that is best. Otherwise no
    checkpoint at all is one candidate; for the others the fastest interval
    ranges from 1 s (and no shorter than any level's persistence over its
    multiple, where the exact form stops) to the work, and with fast levels the durable multiple over a ladder from one
    more than the slowest fast level's multiple to 128; the fast levels keep
    their multiples of the fastest. The first-order form, cheap, ranks every
    rung of the ladder over the whole range of the fastest interval; the exact
    form then searches that whole range again on the three best rungs and
    their neighbours, and walks on from the best while it improves.

    Parameters
    ----------
    sc : Scenario
        A scalar scenario with exponential failures.

    Returns
    -------
    Scenario
        The scenario at its best intervals.
    """
    if not sc.has_levels:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClosedFormWarning)
            best = optimal_interval(sc, "exact")
        # An optimum past the work is no checkpoint at all (an interval of exactly the work
        # would write one at the end).
        return sc.sweep(checkpoint_interval=feasible_interval(best, sc.work))
    best = _best_level_intervals(sc)
    # No checkpoint at all (every interval past the work) is a plan too, and wins where writes cost
    # more than the work they save.
    never = with_intervals(sc, feasible_interval(math.inf, sc.work), 1 if not sc.fast_checkpoints else
                           round(sc.checkpoint_interval / sc.fast_checkpoints[0].interval))
    return never if _value(never) >= _value(best) else best


def _value(sc: Scenario) -> float:
    """The exact ETTR, -inf where it is NaN (so that any plan beats it)."""
    value = _ettr(sc, "renewal")
    return -math.inf if math.isnan(value) else float(value)


def _best_level_intervals(sc: Scenario) -> Scenario:
    """`best_intervals` with levels, among plans that write checkpoints."""
    table = sc.level_table()
    own = table["mult"][:-1]
    persist = table["persist"]

    def bounds(multiple: int) -> tuple[float, float]:
        mult = np.append(own, multiple)
        # No shorter than a level's persistence over its multiple: else its writes wait.
        low = max(MIN_INTERVAL, float(np.max(persist / mult)))
        return low, max(low, sc.work / multiple)

    if not sc.fast_checkpoints:
        _, fastest = _best_fastest(sc, 1, *bounds(1), "renewal")
        return with_intervals(sc, fastest, 1)
    first = int(own[-1]) + 1
    ladder = sorted({first, *(m for m in _MULTIPLE_LADDER if m > first)})
    ranked = sorted(ladder, key=lambda m: -_best_fastest(sc, m, *bounds(m), "linear")[0])
    candidates = {n for m in ranked[:3] for n in (m - 1, m, m + 1) if n >= first}
    exact = {m: _best_fastest(sc, m, *bounds(m), "renewal", points=8) for m in sorted(candidates)}
    best_m = max(exact, key=lambda m: exact[m][0])
    for step in (-1, 1):  # walk one by one from the best multiple while the exact ETTR improves
        m = best_m + step
        while m >= first and (m - step) in exact:
            if m not in exact:
                exact[m] = _best_fastest(sc, m, *bounds(m), "renewal", points=8)
            if exact[m][0] <= exact[m - step][0]:
                break
            m += step
    best_m = max(exact, key=lambda m: exact[m][0])
    return with_intervals(sc, exact[best_m][1], best_m)


def plan_checkpoints(scenario, *, strategies=None, n_jobs: int = 20_000, seed: int = 0,
                     backend: str = "auto") -> CheckpointPlan:
    """Compare checkpoint strategies, each at its best intervals.

    Parameters
    ----------
    scenario : Scenario or dict
        One run with exponential failures, describing the checkpoints it can
        take: `checkpoint_cost` (blocking), `checkpoint_persist` (more until
        durable) and any `fast_checkpoints`.
    strategies : sequence of str, optional
        Some of ``blocking``, ``asynchronous`` and ``multilevel`` (default:
        every one the scenario allows).
    n_jobs : int, default 20000
        Jobs of the check simulation of each strategy (0: none).
    seed : int, default 0
        Seed of the check simulations.
    backend : str, default "auto"
        Simulation backend.

    Returns
    -------
    CheckpointPlan
        The strategies, best first.

    Raises
    ------
    ValueError
        For a grid, Weibull failures, or a strategy the scenario does not allow.
    """
    sc = as_scenario(scenario)
    if sc.is_grid:
        raise ParameterError("scenario", f"plan_checkpoints takes one scenario, not a grid over {sc.dims}")
    if sc.weibull_shape != 1.0:
        raise ParameterError("weibull_shape", "the strategies are compared by the exact ETTR, which needs "
                                              "exponential failures (weibull_shape = 1)")
    if n_jobs:
        check_run_args(n_jobs, seed, 1)
    allowed = strategy_scenarios(sc)
    names = tuple(allowed) if strategies is None else tuple(strategies)
    unknown = [name for name in names if name not in allowed]
    if unknown:
        why = {"asynchronous": "it needs checkpoint_persist > 0", "multilevel": "it needs fast_checkpoints"}
        raise ParameterError("strategies", f"{unknown[0]!r}: " + why.get(unknown[0], f"use some of {STRATEGIES}"))
    out = []
    for name in names:
        best = best_intervals(allowed[name])
        value = _ettr(best, "renewal")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClosedFormWarning)
            if best.has_levels:
                first, reason = levels_point_ettr(best, "linear")
                valid = reason is None
            else:
                first, valid = ettr(best, "linear"), linear_valid(best)
        simulated = se = math.nan
        if n_jobs:
            ds = simulate(best, n_jobs=n_jobs, seed=seed, backend=backend)
            simulated, se = float(ds.ettr), float(ds.ettr_se)
        out.append(StrategyPlan(name, best, float(value), float(first), bool(valid), simulated, se, int(n_jobs)))
    return CheckpointPlan(tuple(sorted(out, key=lambda s: -s.ettr)))


__all__ = ["CheckpointPlan", "StrategyPlan", "STRATEGIES", "best_intervals", "plan_checkpoints", "strategy_scenarios",
           "with_intervals"]
