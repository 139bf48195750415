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

from ._display import key_value_table
from ._closed_form import (MIN_INTERVAL, ClosedFormWarning, _level_args, ettr, feasible_interval, levels_point_ettr,
                           linear_valid, optimal_interval)
from ._engine import check_run_args
from ._errors import ParameterError, ScenarioError
from ._failures import has_lemons
from ._levels_closed_form import levels_wall_lower_bound
from ._scenario import Scenario, as_scenario
from ._simulate import simulate
from ._units import format_hours

CHECKPOINT_STRATEGIES = ("blocking", "asynchronous", "multilevel")
# Durable multiples past the first 16 whole ones are first searched this factor apart (`best_intervals`).
_LADDER_STEP = 1.25
_GRID_STEP = 3.0  # and the fastest interval on a log grid this factor apart over its whole range
_ROUNDS = 3  # rounds of the search in the durable and the fastest interval around the best (past 16 multiples)
_KINKS = 8  # around a refined interval, the numbers of positions whose teeth's ends are tried,
_KINKS_UP_TO = 2000  # where it has at most this many (past it a tooth is below the planner's 0.1%)
_ALL_TEETH = 256  # or every tooth's ends where the search's range holds no more teeth than this


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
        Jobs simulated: 0 where the check simulation skipped the point (every
        job certain to hit `simulate`'s max_failures, a CappedJobsWarning; or a
        timeline past float64's range, an OutOfRangeWarning).
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
        """Interval in hours by level (`level_intervals`)."""
        return level_intervals(self.scenario)

    @property
    def intervals_text(self) -> str:
        """The intervals, fastest level first, "never" for a level never written."""
        return " / ".join("never" if math.isinf(v) else format_hours(v) for v in self.intervals_h.values())

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

    def __repr__(self) -> str:
        return "CheckpointPlan(" + ", ".join(f"{s.name} {s.intervals_text} ETTR {s.ettr:.4f}"
                                             for s in self.strategies) + ")"

    def _repr_html_(self) -> str:
        """The strategies as a small table for notebooks, the recommended first."""
        rows = [(s.name + (" *" if s is self.recommended else ""), f"intervals {s.intervals_text}, ETTR {s.ettr:.4f}"
                 + (f", simulated {s.simulated:.4f}" if s.simulated_jobs else "")) for s in self.strategies]
        return key_value_table("CheckpointPlan (intervals fast..durable; * recommended)", rows)

    def __str__(self) -> str:
        best = self.recommended.ettr
        lines = [f"{'strategy':<13} {'intervals (fast..durable)':<28} {'ETTR':>7} {'first order':>12} "
                 f"{'simulated (95% CI)':>22} {'vs best':>8}"]
        for s in self.strategies:
            intervals = s.intervals_text
            first = f"{s.ettr_first_order:.4f}" + (" " if s.first_order_valid else "!")
            simulated = (f"{s.simulated:.4f} +- {1.96 * s.simulated_se:.5f}" if s.simulated_jobs
                         else "not simulated")
            lines.append(f"{s.name:<13} {intervals:<28} {s.ettr:7.4f} {first:>12} {simulated:>22} "
                         f"{s.ettr - best:+8.4f}")
        if not all(s.first_order_valid for s in self.strategies):
            lines.append("  ! the first-order form is outside its range there: use the exact ETTR")
        return "\n".join(lines)


def level_intervals(sc: Scenario) -> dict:
    """Return the scalar scenario `sc`'s checkpoint interval in hours by level (``fast0``, ... and
    ``durable``); inf for a level never written (its interval is past the work)."""
    fast = sc.fast_checkpoints or ()
    intervals = {**{f"fast{i}": lv.interval for i, lv in enumerate(fast)}, "durable": sc.checkpoint_interval}
    return {k: math.inf if v > sc.work else v for k, v in intervals.items()}


def first_durable_multiple(sc: Scenario) -> int:
    """Return the least durable interval of the scalar scenario `sc` as a multiple of the fastest one:
    one past the slowest fast level's multiple; 1 without fast levels."""
    own = sc.level_table()["mult"][:-1]
    return int(own[-1]) + 1 if own.size else 1


def allowed_strategies(sc: Scenario, names, parameter: str) -> dict[str, Scenario]:
    """Return `strategy_scenarios`, having refused any of `names` that the scenario does not allow.

    Parameters
    ----------
    sc : Scenario
        A scalar scenario.
    names : iterable of str
        The strategies asked for.
    parameter : str
        The argument that named them, for the error.

    Returns
    -------
    dict of str to Scenario
        `strategy_scenarios(sc)`.

    Raises
    ------
    ParameterError
        Naming `parameter`, the first strategy refused and why.
    """
    allowed = strategy_scenarios(sc)
    unknown = [name for name in names if name not in allowed]
    if unknown:
        why = {"asynchronous": "it needs checkpoint_persist > 0", "multilevel": "it needs fast_checkpoints"}
        reason = why.get(unknown[0], f"use some of {CHECKPOINT_STRATEGIES}")
        raise ParameterError(parameter, f"{unknown[0]!r}: {reason} (this run allows {', '.join(allowed)})")
    return allowed


def strategy_scenarios(sc: Scenario) -> dict[str, Scenario]:
    """Return the strategies the scalar scenario `sc`'s checkpoints allow (see the module's docstring)
    by name: ``blocking`` always; ``asynchronous`` if it persists; ``multilevel`` if it has fast levels."""
    blocking_cost = sc.checkpoint_cost + sc.checkpoint_persist
    if not math.isfinite(blocking_cost):
        raise ScenarioError("checkpoint_persist", "with checkpoint_cost, a write that blocks until it persists "
                                                  "would take longer than float64 holds (about 1.8e308 h)")
    out = {"blocking": sc.sweep(fast_checkpoints=None, checkpoint_persist=0.0, checkpoint_cost=blocking_cost)}
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


class _Search:
    """The exact ETTR of plans (fastest interval x, durable multiple m) of one scenario, memoised,
    and the best plan so far.

    m = None is the plan with no durable write at all (every multiple past the
    work is that plan). The best so far begins as `start` (a plan solved
    first); a plan whose upper bound (`_ettr_bound`) cannot beat it is scored
    by that bound and not solved, and only a plan that does better replaces it.
    """

    def __init__(self, sc: Scenario, start: Scenario):
        self.sc = sc
        table = sc.level_table()
        self.own = table["mult"][:-1]  # the fast levels' multiples of the fastest
        self.persist = table["persist"]
        self.work = sc.work
        # No shorter than a fast level's persistence over its multiple (else its writes wait, which the exact
        # form does not solve); with fast levels the durable writes do not wait either (`low`) but in
        # `_waiting_search`: the exact form solves them by its positions engine, too slow for the whole ladder.
        self.floor = max([MIN_INTERVAL, *(self.persist[:-1] / self.own)])
        self.first = first_durable_multiple(sc)
        self.best = (_value(start), start)
        self.memo = {}

    def low(self, m: int | None) -> float:
        """The least fastest interval at multiple m."""
        if m is None or not self.own.size:
            return self.floor
        return max(self.floor, float(self.persist[-1]) / m)

    def high(self, m: int | None) -> float:
        """The greatest fastest interval at multiple m (a durable write within the work; any fast
        write within it with m = None)."""
        return self.work if m is None else self.work / m

    def plan(self, x: float, m: int | None) -> Scenario:
        if not self.own.size:
            return with_intervals(self.sc, x, 1)
        return with_intervals(self.sc, x, max(self.first, int(self.work // x) + 1) if m is None else m)

    def value(self, x: float, m: int | None) -> float:
        key = (x, m)
        if key not in self.memo:
            plan = self.plan(x, m)
            bound = _ettr_bound(plan)
            if bound <= self.best[0]:
                self.memo[key] = bound
            else:
                value = _value(plan)
                self.memo[key] = value
                if value > self.best[0]:
                    self.best = (value, plan)
        return self.memo[key]

    def grid(self, m: int | None) -> tuple[float, float, float, float]:
        """(value, x, lo, hi) of the best of a log grid of fastest intervals over m's whole range
        (a factor _GRID_STEP apart, at least 4 points) and its kinks; lo, hi its neighbours."""
        lo, hi = self.low(m), self.high(m)
        if hi <= lo:
            return (self.value(lo, m), lo, lo, lo) if hi == lo else (-math.inf, lo, lo, lo)
        points = max(4, int(math.ceil(math.log(hi / lo) / math.log(_GRID_STEP))) + 1)
        grid = np.geomspace(lo, hi, points).tolist()
        # Where the number of positions changes on a short job (all of them where there are few), and where
        # the durable writes begin to wait.
        counts = range(max(1, math.ceil(self.work / hi)), math.floor(self.work / lo) + 1)
        teeth = self.teeth(counts if len(counts) <= _ALL_TEETH // 2 else range(1, 9))
        xs = sorted({*grid, *(x for x in (*teeth, float(self.persist[-1]) / (m or 1)) if lo < x < hi)})
        values = [self.value(x, m) for x in xs]
        k = int(np.argmax(values))
        # The bracket: the grid points on either side of the best (not a kink beside it).
        below = max((x for x in grid if x < xs[k]), default=lo)
        above = min((x for x in grid if x > xs[k]), default=hi)
        return values[k], xs[k], below, above

    def refine(self, m: int | None, lo: float, hi: float, waiting: bool = False) -> tuple[float, float]:
        """(value, x): the best fastest interval in [lo, hi] at multiple m, by a bounded search in log x
        (with `waiting`, down to the floor: durable writes that wait too)."""
        least = self.floor if waiting else self.low(m)
        lo, hi = max(lo, least), min(hi, self.high(m))
        if hi <= lo:
            return (self.value(lo, m), lo) if hi == lo else (-math.inf, lo)
        found = _log_argmax(lambda x: self.value(x, m), lo, hi, xatol=1e-4)
        # With few positions the ETTR jumps where their number changes (x = work / k, teeth of relative
        # height about 1 / k): the search may stop on a tooth's slope, so the teeth's ends near it are
        # candidates too (at x, k positions; just past it, k - 1).
        n = round(self.work / found)
        few = (max(1, math.ceil(self.work / hi)), math.floor(self.work / lo))  # the counts in [lo, hi]
        # (A sawtooth has a max on each tooth: with few, try them all; and those around n, within [lo, hi] or
        # not: the grid ranks teeth where its points fall on them, so the best one may lie past the bracket.)
        counts = set(range(few[0], few[1] + 1)) if few[1] - few[0] <= _ALL_TEETH else set()
        if n <= _KINKS_UP_TO:
            counts.update(range(max(1, n - _KINKS), n + _KINKS + 1))
        if m is not None:  # and where the number of durable writes changes (n a multiple of m)
            durable = n // m
            counts.update(k * m for k in range(max(1, durable - 2), durable + 3))
        kinks = [x for x in self.teeth(sorted(counts)) if least <= x <= self.high(m)]
        return max((self.value(x, m), x) for x in (found, lo, hi, *kinks))

    def teeth(self, counts) -> list[float]:
        """The ends of the teeth for these numbers of positions k: x = work / k (k of them, no remainder)
        and just past it (k - 1 and a remainder of about x)."""
        return [x for k in counts for x in (self.work / k, self.work / k * (1 + 1e-8))]


def _ettr_bound(sc: Scenario) -> float:
    """An upper bound of the exact ETTR: work over `levels_wall_lower_bound` (for a lemon mixture, over
    the failure-free wall)."""
    args = _level_args(sc)
    lam = 0.0 if has_lemons(sc.failure_rate, sc.lemon_fraction, sc.lemon_rate_factor) else sc.job_failure_rate
    wall = levels_wall_lower_bound(lam, *args)
    return sc.work / wall if wall > 0 else 1.0


def _multiple_ladder(first: int, top: int) -> list[int]:
    """Every whole multiple from `first` up to first + 15, then a factor 1.25 apart up to `top`."""
    ladder = list(range(first, min(first + 16, top + 1)))
    m = float(ladder[-1]) if ladder else float(first)
    while True:
        m *= _LADDER_STEP
        if round(m) > top:
            break
        ladder.append(round(m))
    return ladder


def best_intervals(sc: Scenario) -> Scenario:
    """Return `sc` at the intervals that maximise its exact ETTR.

    One blocking level: the exact optimal interval (`optimal_interval`), or
    past the work (no checkpoint at all) where that is best. With levels the
    fastest interval x ranges from 1 s (and no shorter than a fast level's
    persistence over its multiple) to the work, and with fast levels the
    durable multiple m (the durable interval over x) over every whole number
    from one more than the slowest fast level's multiple to work / x, or none
    at all (no durable write); the fast levels keep their multiples of x. The
    durable checkpoint alone may be written more often than it persists (its
    writes then wait; the exact form solves that).

    The search: the plan as given, then for no durable write and for each
    multiple on a ladder (the first 16 whole ones, then a factor 1.25 apart up
    to the largest that fits the work) the exact ETTR on a log grid of x over
    its whole range (a factor 3 apart, and the kinks where the number of
    positions changes on a short job, all of them where there are at most
    128, or the durable writes begin to wait); a
    bounded search in log x between the neighbours of the best grid points of
    the four best multiples and of no durable write, with the ends of the
    sawtooth's teeth near it
    (the ETTR jumps where the number of positions changes); then, where the
    best multiple is past the whole ones, rounds of bounded searches in the
    durable interval D = m x (at fixed x) and in x (at fixed D), m rounded to
    a whole number. With fast levels, the plans whose durable writes wait
    (written more often than they persist) come last, at the best multiple,
    its two neighbours on each side and the best four of the ladder up to
    twice it (whole multiples up to twice the ladder's first 16: the exact
    form's cost grows with the multiple): the fastest interval from where the
    waits begin down a factor 3 at a time until the ETTR has fallen twice
    (each step down adds a stall to every durable write), then the bounded
    search at the two best multiples. Plans whose ETTR is bounded below the
    best so far
    (`levels_wall_lower_bound`: each segment between durable checkpoints
    redone after failures that fall back to it, each failure's least restart
    and its queue wait) are not solved. No checkpoint at all is a candidate
    too, solved first (the first best so far). A property test holds the
    result within 0.1% of a dense brute force
    of the plans whose writes do not wait, and three cases with fast levels
    within 0.1% of one over durable writes that wait
    (`tests/test_checkpoint_plan.py`).

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
    # No checkpoint at all (every interval past the work) is a plan too, and wins where writes cost
    # more than the work they save; solved first, it prunes every plan that cannot beat it (with
    # failures years apart, all of them).
    never = with_intervals(sc, feasible_interval(math.inf, sc.work), 1 if not sc.fast_checkpoints else
                           round(sc.checkpoint_interval / sc.fast_checkpoints[0].interval))
    return _best_level_intervals(sc, never)


def _value(sc: Scenario) -> float:
    """The exact ETTR, -inf where it is NaN (so that any plan beats it)."""
    value = _ettr(sc, "renewal")
    return -math.inf if math.isnan(value) else float(value)


def _best_level_intervals(sc: Scenario, never: Scenario) -> Scenario:
    """`best_intervals` with levels: the best plan that writes checkpoints, or `never` (no checkpoint
    at all, the best so far to begin with) where none does better (a tie keeps it)."""
    search = _Search(sc, never)
    if not sc.fast_checkpoints:
        _, _, lo, hi = search.grid(1)
        search.refine(1, lo, hi)
        return search.best[1]
    top = int(sc.work // search.floor)  # past it no durable write fits the work
    ladder = [*_multiple_ladder(search.first, top), None]
    # The plan as given first, and no durable write: a good best-so-far early prunes more.
    given = sc.fast_checkpoints[0].interval
    search.value(given, round(sc.checkpoint_interval / given))
    grids = {None: search.grid(None)}
    grids.update((m, search.grid(m)) for m in ladder[:-1])
    ranked = sorted(ladder, key=lambda m: -grids[m][0])
    found = {m: search.refine(m, *grids[m][2:]) for m in {*ranked[:4], None}}
    best_m = max(found, key=lambda m: found[m][0])
    # Among the whole multiples, walk from the best to its neighbours while they do better (a grid a
    # factor 3 apart can rank a sharp optimum's rung below others).
    while best_m is not None and best_m <= search.first + 15:
        for m in (best_m - 1, best_m + 1):
            if m in grids and m not in found:
                found[m] = search.refine(m, *grids[m][2:])
        walked = max(found, key=lambda m: found[m][0])
        if walked == best_m:
            break
        best_m = walked
    if best_m is not None and best_m > search.first + 15:
        # Past the whole multiples, around the best: the durable interval D = m x and x are nearly
        # independent (each trades its own writes against its own losses), so a few rounds of searches
        # in log D at fixed x and in log x at fixed D reach the optimum where m is whole (rounded).
        x, durable = found[best_m][1], best_m * found[best_m][1]

        def multiple(x: float, durable: float) -> int:
            return max(search.first, round(durable / x))

        def scored(x: float, durable: float) -> float:
            # Only plans whose durable writes do not wait (`_waiting_search` comes later, among small
            # multiples: here the positions engine would take minutes a plan) and that fit the work.
            m = multiple(x, durable)
            return search.value(x, m) if search.low(m) <= x <= search.high(m) else -1.0

        for _ in range(_ROUNDS):
            durable = _log_argmax(lambda d: scored(x, d), durable / 1.3, durable * 1.3)
            x = _log_argmax(lambda y: scored(y, durable), x / 1.3, x * 1.3)

        search.refine(multiple(x, durable), x / 1.2, x * 1.2)  # and the teeth there (the durable count changes)
    best = search.best[1]
    if best is never:  # no plan beat it: around the multiple whose grid ranked first
        m = ranked[0]
    else:
        m = round(best.checkpoint_interval / best.fast_checkpoints[0].interval) if best.checkpoint_interval <= sc.work \
            else None
    if m is not None and search.first * search.floor < float(search.persist[-1]):
        # Durable writes that wait: at the best multiple of the search without them, its neighbours and
        # the best few up to twice it, among the whole multiples up to twice the ladder's (a larger one's
        # plans cost the positions engine seconds each).
        largest = 2 * (search.first + 15)
        _waiting_search(search, sorted(r for r in {*ranked[:4], *range(m - 2, m + 3)}
                                       if r is not None and search.first <= r <= min(2 * m + 4, largest)))
    return search.best[1]


def _waiting_search(search: "_Search", multiples):
    """Durable writes more often than they persist, with fast levels (the exact form solves them by its
    positions engine, too slow a plan to search the whole ladder): at each of `multiples`, the
    fastest interval from where its durable writes begin to wait down a factor _GRID_STEP at a time
    while the ETTR rises or has fallen only once (each step down adds a stall to every durable write);
    then, at the two multiples whose points did best, `_Search.refine` between the best point's
    neighbours (and the teeth there)."""
    persist = float(search.persist[-1])
    brackets = []
    for m in multiples:
        xs, values = [], []
        x = min(persist / m, search.high(m))
        while x > search.floor and (len(values) < 3 or max(values[-2:]) >= max(values)):
            xs.append(x)
            values.append(search.value(x, m))
            x /= _GRID_STEP
        if xs:
            k = int(np.argmax(values))
            brackets.append((values[k], m, max(search.floor, xs[k] / _GRID_STEP), xs[max(k - 1, 0)]))
    for _, m, lo, hi in sorted(brackets, reverse=True)[:2]:
        search.refine(m, lo, hi, waiting=True)


def _log_argmax(f, lo: float, hi: float, xatol: float = 3e-3) -> float:
    """The point of [lo, hi] where f is highest, by a bounded search in log to `xatol` (an ETTR of
    -inf, a plan the exact form cannot score, counts as -1: finite, for the search's arithmetic)."""
    from scipy.optimize import minimize_scalar  # here: at module level it would slow `import relmodel`

    found = minimize_scalar(lambda y: -max(f(math.exp(y)), -1.0), bounds=(math.log(lo), math.log(hi)),
                            method="bounded", options={"xatol": xatol})
    return math.exp(found.x)


def plan_checkpoints(scenario, *, strategies=None, n_jobs: int = 20_000, seed: int = 0,
                     backend: str = "auto", progress: bool | None = None) -> CheckpointPlan:
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
    progress : bool, optional
        A bar on stderr, a step per strategy searched and per check
        simulation (a search takes seconds); None (the default): where stderr
        is a terminal. The numbers do not depend on it.

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
    names = tuple(strategy_scenarios(sc)) if strategies is None else tuple(strategies)
    allowed = allowed_strategies(sc, names, "strategies")
    from ._feedback import progress_bar

    out = []
    bar = progress_bar(len(names) * (2 if n_jobs else 1), "checkpoint strategies", unit="step",
                       enabled_=progress)
    for name in names:
        bar.set_postfix_str(f"{name}: best intervals")
        best = best_intervals(allowed[name])
        bar.update(1)
        value = _ettr(best, "renewal")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClosedFormWarning)
            if best.has_levels:
                first, reason = levels_point_ettr(best, "linear")
                valid = reason is None
            else:
                first, valid = ettr(best, "linear"), linear_valid(best)
        simulated = se = math.nan
        simulated_jobs = int(n_jobs)
        if n_jobs:
            bar.set_postfix_str(f"{name}: check simulation")
            ds = simulate(best, n_jobs=n_jobs, seed=seed, backend=backend)
            simulated, se = float(ds.ettr), float(ds.ettr_se)
            # simulate skips a point whose every job would hit its cap (a CappedJobsWarning says so) or
            # whose timeline passes float64's range: NaN failures, no job run.
            if math.isnan(float(ds.failures_mean)):
                simulated_jobs = 0
            bar.update(1)
        out.append(StrategyPlan(name, best, float(value), float(first), bool(valid), simulated, se, simulated_jobs))
    bar.close()
    return CheckpointPlan(tuple(sorted(out, key=lambda s: -s.ettr)))


__all__ = ["CheckpointPlan", "StrategyPlan", "CHECKPOINT_STRATEGIES", "allowed_strategies", "best_intervals",
           "first_durable_multiple", "level_intervals", "plan_checkpoints", "strategy_scenarios", "with_intervals"]
