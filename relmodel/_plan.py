"""The capacity planner: checkpoint cadence, ETTR, and what must improve.

Everything is computed with the renewal model (exact for exponential failures,
lemon mixtures included) at the interval that maximises it, and checked by a
quick simulation at each recommended interval.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import warnings

import numpy as np

from ._checkpoint_plan import allowed_strategies, best_intervals, level_intervals, plan_checkpoints, strategy_scenarios
from ._checkpoint_plan import _ettr as strategy_ettr
from ._closed_form import (ClosedFormWarning, LINEAR_TOLERANCE, ettr, feasible_interval, levels_point_ettr,
                           linear_valid, optimal_interval, renewal_applies)
from ._engine import beyond_float_range, check_run_args, expected_failures, pack, stepped_positions
from ._errors import ParameterError, ScenarioError
from ._checks import MAX_COUNT
from ._failures import job_rate_table
from ._plan_parts import CategoryTime, CheckSimulation, IntervalETTR, Sensitivity, TargetReach, TimePerJob, plain
from ._scenario import Scenario, as_scenario
from ._simulate import simulate
from ._units import format_hours

IMPROVABLE = ("failure_rate", "restart_cost", "checkpoint_cost")
SENSITIVITY = ("failure_rate", "restart_cost", "checkpoint_cost", "queue_wait", "n_gpus")
# A strategy whose durable write runs in the background (asynchronous, multilevel) also answers to its persist time.
LEVELS_IMPROVABLE = (*IMPROVABLE, "checkpoint_persist")
LEVELS_SENSITIVITY = (*SENSITIVITY[:3], "checkpoint_persist", *SENSITIVITY[3:])
_MAX_NODES = 2**24  # the largest-job search stops here (or at MAX_COUNT GPUs)
# The check simulation of one interval takes at most this many events in all, failures
# and positions stepped (a budget of about a second); it takes fewer jobs rather than cap legitimate ones,
# and none below MIN_CHECK_JOBS (it says so instead of printing a poor estimate).
CHECK_EVENT_BUDGET = 1.5e8
MIN_CHECK_JOBS = 500
# A job's failure count has an exponential tail (at worst one geometric count
# of attempts at its longest piece), so P(N > 40 E[N]) < e^-40: the check
# simulation's cap never stops a job that the model lets finish.
_CAP_FACTOR = 40.0


def best_ettr(sc: Scenario) -> float:
    """Return the exact ETTR at the best checkpoint intervals.

    One blocking checkpoint: the renewal form at the exact optimal interval.
    With checkpoint levels (``checkpoint_persist`` or ``fast_checkpoints``):
    the exact form at `relmodel._checkpoint_plan.best_intervals`.

    Parameters
    ----------
    sc : Scenario
        The run (its checkpoint intervals are replaced by the best ones).

    Returns
    -------
    float
        ETTR (a ratio in [0, 1]) at those intervals.
    """
    if sc.has_levels:
        return strategy_ettr(best_intervals(sc), "renewal")
    return ettr(sc, "renewal", at="exact")


@dataclasses.dataclass(frozen=True)
class Plan:
    """What `plan` found; `to_dict()` for machines, `str()` for people.

    Parameters
    ----------
    scenario : Scenario
        The run at the recommended checkpoint interval.
    mttf_h : float
        The job's MTTF in hours.
    intervals_h : dict
        Checkpoint interval in hours by label (young, daly, exact, and current
        if given).
    ettr_by_interval : dict
        By interval label, an `IntervalETTR`: the linear, renewal and
        simulated ETTR there.
    time_per_job_h : TimePerJob or None
        Simulated mean hours per job at the recommended interval, by component
        and wall; None where that interval was not simulated.
    sensitivity : dict
        By parameter, a `Sensitivity`: its value, the elasticity of ETTR to it
        and the ETTR with it halved.
    target : TargetReach or None
        With a target ETTR, what each parameter would need to reach it and the
        largest job that does; else None.
    n_jobs : int
        Jobs of the check simulation per interval.
    recommended : str, default "exact"
        The label of the recommended interval.
    by_category : dict, optional
        With a taxonomy, by kind of failure, a `CategoryTime`: its share, its
        failures per job and the hours per job it costs.
    checkpoints : CheckpointPlan, optional
        With checkpoint levels (``checkpoint_persist`` or ``fast_checkpoints``):
        the blocking, asynchronous and multilevel strategies, each at its best
        intervals (`relmodel._checkpoint_plan.plan_checkpoints`). The rest of
        the plan is that of `strategy`.
    strategy : str, optional
        With checkpoint levels, the strategy planned: the recommended one (the
        best exact ETTR) unless `plan` was given another. For ``asynchronous``
        and ``multilevel`` the intervals are labelled ``best`` (and
        ``current``), each row's ``linear`` is the first-order form and
        `level_intervals_h` has every level's interval; the write
        (``checkpoint_cost``) and its persist time are separate parameters.
    level_intervals_h : dict, optional
        For ``asynchronous`` and ``multilevel``: by label, the interval in
        hours of each level (``fast0``, ..., ``durable``; inf: never written).
    """

    scenario: Scenario  # at the recommended interval
    mttf_h: float
    intervals_h: dict[str, float]
    ettr_by_interval: dict[str, IntervalETTR]
    time_per_job_h: TimePerJob | None
    sensitivity: dict[str, Sensitivity]
    target: TargetReach | None
    n_jobs: int
    recommended: str = "exact"
    by_category: dict[str, CategoryTime] | None = None
    checkpoints: object = None  # a CheckpointPlan
    strategy: str | None = None
    level_intervals_h: dict[str, dict[str, float]] | None = None

    @property
    def optimal_interval_h(self) -> float:
        """The recommended checkpoint interval in hours."""
        return self.intervals_h[self.recommended]

    @property
    def ettr(self) -> float:
        """The renewal ETTR at the recommended interval (a ratio in [0, 1])."""
        return self.ettr_by_interval[self.recommended].renewal

    def to_dict(self) -> dict:
        """Return the plan as JSON-ready data, with a `units` block.

        The `units` block gives the unit of every number by its dotted key path
        (``*``: any interval label or failure kind).

        Returns
        -------
        dict
            The plan's numbers (hours, ratios, GPUs, jobs) by key, and ``units``.
        """
        return {
            "mttf_h": self.mttf_h,
            "optimal_interval_h": self.optimal_interval_h,
            "ettr": self.ettr,
            "recommended_method": self.recommended,
            "intervals_h": self.intervals_h,
            "ettr_by_interval": _parts_dict(self.ettr_by_interval),
            "time_per_job_h": _part_dict(self.time_per_job_h),
            "sensitivity": _parts_dict(self.sensitivity),
            "target": _part_dict(self.target),
            "simulation_jobs": self.n_jobs,
            "by_category": _parts_dict(self.by_category),
            **({} if self.checkpoints is None else {"checkpoint_strategies": self.checkpoints.to_dict(),
                                                    "strategy": self.strategy}),
            **({} if self.level_intervals_h is None else {"level_intervals_h": self.level_intervals_h}),
            "scenario": {f.name: plain(getattr(self.scenario, f.name)) for f in dataclasses.fields(Scenario)
                         if f.name != "failure_model"},
            "units": dict(PLAN_UNITS),
        }

    def __repr__(self) -> str:
        e = self.ettr_by_interval[self.recommended]
        simulated = "" if not e.simulated_jobs else f", simulated {e.simulated:.4f}"
        target = "" if self.target is None else (
            f", target {self.target.ettr:g}: " + (f"up to {self.target.max_gpus} GPUs"
                                                  if self.target.max_gpus else "no job size"))
        strategy = "" if self.strategy is None else f"{self.strategy}, "
        return (f"Plan({self.scenario.n_gpus} GPUs, {strategy}MTTF {format_hours(self.mttf_h)}, "
                f"interval {self._interval_text(self.recommended)} ({self.recommended}), "
                f"ETTR {self.ettr:.4f}{simulated}{target})")

    def _repr_html_(self) -> str:
        """A small table for notebooks: the intervals with their ETTR, then MTTF and target."""
        from html import escape

        rows = []
        for label, interval in self.intervals_h.items():
            e = self.ettr_by_interval[label]
            sim = f"{e.simulated:.4f} &plusmn; {1.96 * e.simulated_se:.4f}" if e.simulated_jobs else "not simulated"
            mark = " *" if label == self.recommended else ""
            rows.append(f"<tr><td>{escape(label)}{mark}</td><td>{escape(self._interval_text(label))}</td>"
                        f"<td>{e.linear:.4f}</td><td>{e.renewal:.4f}</td><td>{sim}</td></tr>")
        sc = self.scenario
        strategy = "" if self.strategy is None else f", {self.strategy} checkpoints"
        caption = escape(f"Plan: {sc.n_gpus} GPUs, work {format_hours(sc.work)}, MTTF {format_hours(self.mttf_h)}"
                         + strategy)
        foot = ""
        if self.target is not None:
            g = self.target.max_gpus
            foot = escape(f"target ETTR {self.target.ettr:g}: " + (f"largest job {g} GPUs" if g else
                                                                   "no job size reaches it"))
            foot = f"<tr><td colspan='5'>{foot}</td></tr>"
        return ("<table><caption>" + caption + "</caption><tr><th>method</th><th>interval</th><th>linear</th>"
                "<th>renewal</th><th>simulated (95%)</th></tr>" + "".join(rows) + foot + "</table>")

    def __str__(self) -> str:
        return header(self.scenario, self.mttf_h) + "\n" + self.details()

    def _interval_text(self, label: str) -> str:
        """The interval of `label`; with levels, every level's, fastest first."""
        if self.level_intervals_h is None:
            return _interval_text(self.intervals_h[label])
        return " / ".join(_interval_text(v) for v in self.level_intervals_h[label].values())

    def details(self) -> str:
        """Return what `str()` prints after `header`.

        The table of intervals, where the time goes, sensitivities and targets.

        Returns
        -------
        str
            Those lines, joined by newlines.
        """
        return "\n".join([*self._interval_lines(), *self._time_lines(), *self._category_lines(),
                          *self._sensitivity_lines(), *self._target_lines(), *self._strategy_lines()])

    @property
    def _levelled(self) -> bool:
        return self.level_intervals_h is not None

    def _interval_lines(self) -> list[str]:
        """The planned strategy, then a row per interval with its ETTR by each method, and their caveats."""
        levelled = self._levelled
        width = max(10, *(len(self._interval_text(label)) for label in self.intervals_h))
        out = [""]
        if self.strategy is not None:
            chosen = self.checkpoints.recommended.name == self.strategy
            out.append(f"Planned strategy: {self.strategy} ({'the recommended one' if chosen else 'as asked; '}"
                       + ("" if chosen else f"{self.checkpoints.recommended.name} is recommended") + ")"
                       + ("; intervals fastest level first, durable last" if levelled else
                          "; the write and its persist both block"))
        out.append(f"{'interval':>{width}}  {'method':<8} {'1st-order' if levelled else 'linear':>9} "
                   f"{'exact' if levelled else 'renewal':>8}   simulated (95% CI, jobs)")
        astray = unseen = False
        for label, e in self.ettr_by_interval.items():
            mark = " *" if label == self.recommended else ""
            flag = " " if e.linear_valid else "!"
            astray |= not e.linear_valid
            if e.simulated_jobs:
                lo, hi = e.simulated_ci95
                # No spread while failures are expected: no job failed, not a certainty.
                blind = e.simulated_se == 0 and e.expected_failures > 0
                unseen |= blind
                simulated = f"{e.simulated:.4f} [{lo:.4f}, {hi:.4f}]{'~' if blind else ''}, {e.simulated_jobs}"
            else:
                simulated = f"not simulated: ~{e.expected_failures:.3g} failures a job"
            out.append(f"{self._interval_text(label):>{width}}  {label + mark:<8} {e.linear:8.4f}{flag} "
                       f"{e.renewal:8.4f}   {simulated}")
        if astray:
            out.append("  ! the first-order form is outside its range here: use the exact ETTR" if levelled else
                       f"  ! the linear form is off the renewal form by more than {LINEAR_TOLERANCE:.0%} "
                       "here (or undefined): do not use it")
        if unseen:
            out.append("  ~ no simulated job failed, so that interval has no spread; failures are rare but not "
                       "absent (see the expected failures in --json): use the renewal form")
        finite = [v for v in self.intervals_h.values() if math.isfinite(v)]
        if any(v == 0 for v in finite):
            out.append("  0s: checkpoints cost nothing here, so the long-run forms checkpoint continuously "
                       "(the exact search stops at one a second)")
        if any(v > self.scenario.work for v in finite):
            out.append("  an interval past the work writes no checkpoint at all (young and daly are long-run forms: "
                       "they ignore the job's length)")
        return out

    def _time_lines(self) -> list[str]:
        t = self.time_per_job_h
        if t is None:
            return ["", "Time per job at the * interval: not simulated (each job would see "
                        f"~{self.ettr_by_interval[self.recommended].expected_failures:.3g} failures)"]
        out = ["", f"Time per job at the * interval (simulated mean): wall {format_hours(t.wall)}"]
        for name, label in (("productive", "productive"), ("checkpoint", "checkpoint writes"),
                            ("lost", "re-done work"), ("restart", "restarts"), ("queue", "queue waits")):
            hours = getattr(t, name)
            out.append(f"  {label:<18} {format_hours(hours):>9}  {hours / t.wall:6.1%}")
        return out

    def _category_lines(self) -> list[str]:
        if not self.by_category:
            return []
        out = ["", "Time lost per job by kind of failure (simulated mean at the * interval):",
               f"  {'kind':<20} {'share':>6} {'failures':>9} {'re-done':>9} {'restarts':>9} {'queue':>9}"]
        for name, c in sorted(self.by_category.items(), key=lambda kv: -kv[1].total_h):
            out.append(f"  {name:<20} {c.share:6.1%} {c.failures:9.3g} {format_hours(c.lost_h):>9} "
                       f"{format_hours(c.restart_h):>9} {format_hours(c.queue_h):>9}")
        return out

    def _sensitivity_lines(self) -> list[str]:
        levelled = self._levelled
        out = ["", f"Sensitivity of ETTR ({'exact' if levelled else 'renewal'}; elasticity d ln ETTR / d ln x; "
                   f"interval{'s' if levelled else ''} re-optimised when halved):",
               f"  {'parameter':<18} {'value':>10} {'elasticity':>11} {'ETTR if halved':>15}"]
        for name, s in self.sensitivity.items():
            out.append(f"  {name:<18} {_value_text(name, s.value):>10} {s.elasticity:11.4f} "
                       f"{s.ettr_if_halved:15.4f}")
        return out

    def _target_lines(self) -> list[str]:
        target = self.target
        if target is None:
            return []
        out = ["", f"To reach ETTR {target.ettr:g} (each parameter alone, interval{'s' if self._levelled else ''} "
                   "re-optimised):"]
        for name, need in target.needed.items():
            now = getattr(self.scenario, name)
            if need is None:
                out.append(f"  {name:<18} out of reach through {name.replace('_', ' ')} alone "
                           f"(ETTR {target.best_possible[name]:.4f} at best)")
            elif need >= now:
                out.append(f"  {name:<18} already reached at {_value_text(name, now)}")
            else:
                out.append(f"  {name:<18} {_value_text(name, need)} or less ({now / need:.3g}x lower)"
                           if need > 0 else f"  {name:<18} 0")
        g = target.max_gpus
        out.append(f"  largest job reaching it today: {g} GPUs" if g else
                   "  no job size reaches it with today's parameters")
        return out

    def _strategy_lines(self) -> list[str]:
        if self.checkpoints is None:
            return []
        best = self.checkpoints.recommended
        return ["", "Checkpoint strategies, each at its best intervals (exact ETTR; blocking: the whole write "
                    f"blocks; the rest of this plan is the {self.strategy} one):", str(self.checkpoints),
                f"  recommended: {best.name}, intervals "
                + ", ".join(f"{k} {_interval_text(v)}" for k, v in best.intervals_h.items())]


def header(sc: Scenario, mttf_h: float | None = None) -> str:
    """Return the first lines of a plan: the run and its MTTF.

    They need no simulation, so the command line prints them at once.

    Parameters
    ----------
    sc : Scenario
        The run (its checkpoint interval is not shown).
    mttf_h : float, optional
        The job's MTTF in hours (default: ``sc.mttf``).

    Returns
    -------
    str
        Two lines: the run (GPUs, nodes, work, failures per node-day, costs in
        hours) and its MTTF.
    """
    mttf_h = sc.mttf if mttf_h is None else mttf_h
    persist = f" + {format_hours(sc.checkpoint_persist)} to persist" if sc.checkpoint_persist else ""
    lines = [
        f"{sc.n_gpus} GPUs ({sc.n_nodes} nodes), work {format_hours(sc.work)}, "
        f"failure rate {sc.failure_rate:g} per node-day, checkpoint {format_hours(sc.checkpoint_cost)}{persist}, "
        f"restart {format_hours(sc.restart_cost)}, queue {format_hours(sc.queue_wait)}",
    ]
    for i, lv in enumerate(sc.fast_checkpoints or ()):
        lines.append(f"fast level {i}: write {format_hours(lv.cost)} + {format_hours(lv.persist)} to persist, "
                     f"restart {format_hours(lv.restart)}, survives {lv.survives:.0%} of failures")
    return "\n".join([*lines, f"MTTF of the job: {format_hours(mttf_h)}"])


# Units of the numbers in Plan.to_dict(), by dotted key path; "*" is any interval
# label or failure kind. "1" is a plain ratio (ETTR, shares, elasticities).
SCENARIO_UNITS = {
    "n_gpus": "GPUs", "failure_rate": "failures per node-day", "checkpoint_interval": "h", "work": "h",
    "checkpoint_cost": "h", "restart_cost": "h", "queue_wait": "h", "gpus_per_node": "GPUs per node",
    "weibull_shape": "1", "lemon_fraction": "1 (fraction of nodes)", "lemon_rate_factor": "1 (rate multiple)",
    "checkpoint_persist": "h",
}
PLAN_UNITS = {
    "mttf_h": "h", "optimal_interval_h": "h", "ettr": "1", "intervals_h.*": "h",
    **{f"ettr_by_interval.*.{k}": "1" for k in ("linear", "renewal", "simulated", "simulated_se",
                                                "simulated_ci95")},
    "ettr_by_interval.*.expected_failures": "failures per job", "ettr_by_interval.*.simulated_jobs": "jobs",
    "time_per_job_h.*": "h", "sensitivity.*.elasticity": "1", "sensitivity.*.ettr_if_halved": "1",
    **{f"sensitivity.{k}.value": SCENARIO_UNITS.get(k, "h") for k in LEVELS_SENSITIVITY},
    "target.ettr": "1", **{f"target.needed.{k}": SCENARIO_UNITS[k] for k in LEVELS_IMPROVABLE},
    "level_intervals_h.*.*": "h",
    "target.best_possible.*": "1", "target.max_gpus": "GPUs", "simulation_jobs": "jobs per interval",
    "by_category.*.share": "1", "by_category.*.failures": "failures per job", "by_category.*.lost_h": "h",
    "by_category.*.restart_h": "h", "by_category.*.queue_h": "h",
    **{f"scenario.{k}": u for k, u in SCENARIO_UNITS.items()},
    "scenario.taxonomy.*.share": "1", "scenario.taxonomy.*.restart_cost": "h",
    "scenario.taxonomy.*.queue_wait": "h",
    **{f"scenario.fast_checkpoints.*.{k}": "h" for k in ("interval", "cost", "restart", "persist")},
    "scenario.fast_checkpoints.*.survives": "1",
    "checkpoint_strategies.*.intervals_h.*": "h", "checkpoint_strategies.*.checkpoint_cost_h": "h",
    "checkpoint_strategies.*.checkpoint_persist_h": "h",
    **{f"checkpoint_strategies.*.{k}": "1" for k in ("ettr", "ettr_first_order", "simulated", "simulated_se")},
    "checkpoint_strategies.*.simulated_jobs": "jobs",
}


def _part_dict(part):
    return None if part is None else part.to_dict()


def _parts_dict(parts: dict | None) -> dict | None:
    return None if parts is None else {key: part.to_dict() for key, part in parts.items()}


def _interval_text(hours: float) -> str:
    return "never" if math.isinf(hours) else format_hours(hours)


def _value_text(name: str, value) -> str:
    return format_hours(value) if name.endswith(("_cost", "_wait", "_persist")) else f"{value:g}"


def plan(scenario=None, *, target_ettr: float | None = None, n_jobs: int = 20_000, seed: int = 0,
         backend: str = "auto", max_failures: int | None = None, progress=None, strategy: str | None = None,
         **fields) -> Plan:
    """Plan a run: recommended checkpoint interval, ETTR, MTTF and what must improve.

    Give a Scenario (its checkpoint_interval, if any, is shown as "current"), or
    its fields as keywords (checkpoint_interval optional). `target_ettr` in (0, 1)
    adds, for failure rate, restart cost and checkpoint cost, the value each would
    need alone to reach it, and the largest GPU count that reaches it today.
    Needs exponential failures (weibull_shape = 1): the plan rests on the renewal form.
    With checkpoint levels (``checkpoint_persist`` or ``fast_checkpoints``) the
    strategies are compared first (`relmodel._checkpoint_plan.plan_checkpoints`)
    and the plan is that of the recommended one, or of `strategy`: its best
    intervals, their check simulation, sensitivities (the write and its persist
    time apart) and targets, each with the intervals re-optimised.

    Each interval is checked by a simulation of `n_jobs` jobs. Its cap on
    failures per job (`max_failures`, by default 40 times the renewal model's
    expected count at the highest failure rate) stops no job the model lets
    finish; where `n_jobs` jobs would draw more than CHECK_EVENT_BUDGET failures
    it simulates fewer jobs (the interval says how many), and below
    MIN_CHECK_JOBS none (the plan says so and gives the expected failures).

    Parameters
    ----------
    scenario : Scenario, optional
        The run; or give its fields as keywords.
    target_ettr : float, optional
        The ETTR to reach, in (0, 1).
    n_jobs : int
        Jobs of the check simulation per interval (fewer within CHECK_EVENT_BUDGET).
    seed : int
        Seed of the check simulation.
    backend : str
        "auto" (default: the Cython twin for short checks, no JIT wait), "numba"
        or "cython"; the same bits whichever.
    max_failures : int, optional
        Cap on failures per simulated job (default: see above).
    progress : bool or callable, optional
        True: a progress bar over the check simulations (tqdm, on stderr); a
        callable is called with the jobs done after each chunk; None (the
        default): the bar where stderr is a terminal.
    strategy : str, optional
        With checkpoint levels, the strategy to plan (``blocking``,
        ``asynchronous`` or ``multilevel``; default: the recommended one).
    **fields
        Scenario fields, when no `scenario` is given.

    Returns
    -------
    Plan
        The recommended interval, ETTR by interval, MTTF, sensitivities and targets.

    Raises
    ------
    TypeError
        If both a `scenario` and its fields are given.
    ValueError
        If `check_plan` refuses the arguments.
    """
    if scenario is None:
        current = fields.get("checkpoint_interval")
        fields.setdefault("checkpoint_interval", 1.0)
        sc = Scenario(**fields)
    else:
        if fields:
            raise TypeError("give a scenario or its fields, not both")
        sc = as_scenario(scenario)
        current = sc.checkpoint_interval
    n_jobs, seed = check_plan(sc, target_ettr, n_jobs, seed, max_failures, strategy)
    if progress is None:
        from ._feedback import enabled

        progress = enabled()
    return plan_checked(sc, current is not None, target_ettr, n_jobs, seed, backend, max_failures, progress,
                        strategy)


def plan_checked(sc: Scenario, has_current: bool, target_ettr, n_jobs: int, seed: int, backend: str, max_failures,
                 progress, strategy: str | None = None) -> Plan:
    """Return `plan` of arguments already checked: by `check_plan`, which gave `n_jobs` and `seed`.

    For callers that check first and answer before the plan is done (the
    command line prints the plan's header at once); each value is checked once.

    Parameters
    ----------
    sc : Scenario
        The run, as `check_plan` accepted it.
    has_current : bool
        Whether `sc`'s checkpoint_interval is the one used today (shown as
        "current"), rather than a stand-in.
    target_ettr : float or None
        As `plan` takes it.
    n_jobs : int
        As `check_plan` returned it.
    seed : int
        As `check_plan` returned it.
    backend : str
        As `plan` takes it.
    max_failures : int or None
        As `plan` takes it.
    progress : bool or callable
        As `plan` takes it.
    strategy : str, optional
        As `plan` takes it.

    Returns
    -------
    Plan
        The plan.
    """
    checkpoints = known = None  # (known: each strategy's check simulation, which the plan reuses)
    if not sc.has_levels:
        strategy = None  # one blocking checkpoint: nothing to compare (check_plan allows only "blocking")
    else:  # the strategies side by side, then the plan of the chosen one
        # Each strategy at its best intervals, checked by one budgeted simulation that the plan of the
        # chosen one reuses (plan_checkpoints would simulate them with n_jobs and no failure cap).
        checkpoints = plan_checkpoints(sc, n_jobs=0, progress=bool(progress))
        known = _check_points({s.scenario: s.scenario for s in checkpoints.strategies}, n_jobs, seed, backend,
                              max_failures, progress)
        checkpoints = dataclasses.replace(checkpoints, strategies=tuple(
            _with_check(s, known[s.scenario]) for s in checkpoints.strategies))
        chosen = checkpoints.recommended if strategy is None else next(
            s for s in checkpoints.strategies if s.name == strategy)
        if chosen.name != "blocking":
            return _levels_plan(sc, chosen, checkpoints, has_current, target_ettr, n_jobs, seed, backend,
                                max_failures, progress, known)
        strategy = chosen.name
        sc = strategy_scenarios(sc)["blocking"]
    intervals = {m: optimal_interval(sc, m) for m in ("young", "daly", "exact")}
    if has_current:
        intervals["current"] = sc.checkpoint_interval
    feasible = {label: feasible_interval(v, sc.work) for label, v in intervals.items()}
    checks = _check_simulations(sc, sorted(set(feasible.values())), n_jobs, seed, backend, max_failures, progress,
                                known)
    ettr_by = {}
    for label, interval in feasible.items():
        at = sc.sweep(checkpoint_interval=interval)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClosedFormWarning)  # flagged in linear_valid
            linear = ettr(at, "linear")
        ettr_by[label] = checks[interval].interval_ettr(linear, linear_valid(at), ettr(at, "renewal"))
    best = sc.sweep(checkpoint_interval=feasible["exact"])
    time_per_job, by_category = _where_time_goes(sc, checks[feasible["exact"]].dataset)

    return Plan(
        scenario=best, mttf_h=sc.mttf, intervals_h=intervals, ettr_by_interval=ettr_by,
        time_per_job_h=time_per_job, sensitivity=_sensitivity(best),
        target=None if target_ettr is None else _targets(best, float(target_ettr)), n_jobs=n_jobs,
        by_category=by_category, checkpoints=checkpoints, strategy=strategy,
    )


def _levels_plan(sc: Scenario, chosen, checkpoints, has_current: bool, target_ettr, n_jobs: int, seed: int,
                 backend: str, max_failures, progress, known=None) -> Plan:
    """`plan_checked` for an asynchronous or multilevel strategy (`chosen`, a StrategyPlan)."""
    from ._feedback import progress_bar

    points = {"best": chosen.scenario}
    if has_current:
        points["current"] = strategy_scenarios(sc)[chosen.name]  # the intervals as given
    ettr_by, datasets, intervals = {}, {}, {}
    for label, point in points.items():
        check = _check_simulations(point, [point.checkpoint_interval], n_jobs, seed, backend, max_failures,
                                   progress, known)[point.checkpoint_interval]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClosedFormWarning)
            first, reason = levels_point_ettr(point, "linear")
        ettr_by[label] = check.interval_ettr(first, reason is None, strategy_ettr(point, "renewal"))
        datasets[label] = check.dataset
        intervals[label] = level_intervals(point)
    best = chosen.scenario
    time_per_job, by_category = _where_time_goes(best, datasets["best"])
    # Each re-optimisation of a levelled plan searches its intervals (a tenth of a second or more): a bar.
    steps = len(LEVELS_SENSITIVITY) + (0 if target_ettr is None else len(LEVELS_IMPROVABLE) + 1)
    bar = progress_bar(steps, f"{chosen.name}: sensitivities" + ("" if target_ettr is None else " and targets"),
                       unit="step", enabled_=progress is True)
    try:
        sensitivity = _sensitivity(best, LEVELS_SENSITIVITY, bar.update)
        # Six digits: each evaluation is a search of the intervals.
        target = None if target_ettr is None else _targets(best, float(target_ettr), LEVELS_IMPROVABLE, bar.update,
                                                           rtol=1e-6)
    finally:
        bar.close()
    return Plan(
        scenario=best, mttf_h=sc.mttf, intervals_h={k: v["durable"] for k, v in intervals.items()},
        ettr_by_interval=ettr_by, time_per_job_h=time_per_job, sensitivity=sensitivity, target=target,
        n_jobs=n_jobs, recommended="best", by_category=by_category, checkpoints=checkpoints,
        strategy=chosen.name, level_intervals_h=intervals,
    )


def _where_time_goes(sc: Scenario, ds) -> tuple[TimePerJob | None, dict | None]:
    """(time per job by component, time lost by kind of failure with a taxonomy) from the check
    simulation `ds` of sc; None where it was not simulated."""
    if ds is None:
        return None, None
    by_category = None
    if sc.taxonomy:
        by_category = {c.name: CategoryTime(c.share, *(
            float(ds[f"{field}_by_category"].sel(category=c.name)) for field in ("failures", "lost", "restart",
                                                                                  "queue"))) for c in sc.taxonomy}
    return TimePerJob.from_dataset(ds), by_category


def check_plan(sc: Scenario, target_ettr=None, n_jobs=20_000, seed=0, max_failures=None,
               strategy=None) -> tuple[int, int]:
    """Refuse, before any work, what `plan` cannot plan (a ValueError naming the parameter).

    Parameters
    ----------
    sc : Scenario
        The run: one point, exponential failures.
    target_ettr : float, optional
        The ETTR to reach, in (0, 1), as `plan` takes it.
    n_jobs : int, default 20000
        Jobs of the check simulation per interval, as `plan` takes it.
    seed : int, default 0
        Seed of the check simulation, as `plan` takes it.
    max_failures : int, optional
        Cap on failures per simulated job, as `plan` takes it.
    strategy : str, optional
        The strategy to plan, as `plan` takes it.

    Returns
    -------
    tuple of int
        (n_jobs, seed) as Python ints.

    Raises
    ------
    ValueError
        If `sc` is a grid, its failures are not exponential, or an argument is
        out of range (the message names it).
    """
    if sc.is_grid:
        raise ParameterError("scenario", f"plan takes one scenario, not a grid over {sc.dims}")
    if not renewal_applies(sc):
        raise ParameterError("weibull_shape", "the planner uses the renewal model, which needs exponential "
                                              "failures (weibull_shape = 1); use relmodel.compare for Weibull failures")
    if target_ettr is not None and not (isinstance(target_ettr, (int, float)) and 0 < target_ettr < 1):
        raise ParameterError("target_ettr", f"must be in (0, 1) (got {target_ettr!r})")
    if strategy is not None:
        allowed_strategies(sc, [strategy], "strategy")
    n_jobs, seed, _ = check_run_args(n_jobs, seed, 1 if max_failures is None else max_failures)
    return n_jobs, seed


def expected_failures_bound(sc: Scenario) -> tuple[float, float]:
    """Return (mean, highest) expected failures per job over the job rates the simulation samples.

    Exact for one kind of failure: a piece of length s takes e^(lam s) - 1
    failures on average, and each failure e^(lam u0) - 1 more during its
    restarts. With a taxonomy the longest restart gives an upper bound.

    Parameters
    ----------
    sc : Scenario
        The run: one point.

    Returns
    -------
    tuple of float
        The mean over sampled job failure rates, and the highest, of the
        expected failures per job.
    """
    cdf, rate = job_rate_table(sc.n_nodes, sc.failure_rate, sc.lemon_fraction, sc.lemon_rate_factor)
    n_full, remainder = sc.intervals
    restart = max((c.restart_cost for c in sc.taxonomy), default=0.0) if sc.taxonomy else sc.restart_cost
    failures = expected_failures(rate, n_full, sc.checkpoint_interval, sc.checkpoint_cost, remainder, restart)
    mass = np.diff(cdf, prepend=0.0)
    with np.errstate(invalid="ignore"):  # a rate the table gives no mass adds none, however many failures
        return float(np.sum(np.where(mass > 0, mass * failures, 0.0))), float(failures.max())


def budgeted_jobs(sc: Scenario, n_jobs: int, budget: float = CHECK_EVENT_BUDGET,
                  min_jobs: int = MIN_CHECK_JOBS) -> tuple[int, float, float]:
    """Return how many jobs a quick simulation of `sc` takes within an event budget.

    Parameters
    ----------
    sc : Scenario
        The run: one point.
    n_jobs : int
        Jobs wanted.
    budget : float, default CHECK_EVENT_BUDGET
        Expected events the simulation may take in all: failures drawn, and
        positions stepped one by one (`relmodel._engine.stepped_positions`).
    min_jobs : int, default MIN_CHECK_JOBS
        Fewer jobs than this (or than `n_jobs`) give too poor an estimate to show.

    Returns
    -------
    jobs : int
        `n_jobs`, fewer where they would take more than `budget` events, or 0
        where fewer than `min_jobs` would fit.
    mean, highest : float
        Expected failures per job, over the job rates sampled and at the highest
        (`expected_failures_bound`).
    """
    mean, highest = expected_failures_bound(sc)
    per_job = mean + float(stepped_positions(pack(sc))[0])
    jobs = n_jobs if per_job * n_jobs <= budget else int(budget // per_job)
    return (0 if jobs < min(min_jobs, n_jobs) else jobs), mean, highest


def failure_cap(highest: float) -> int:
    """Return the cap on failures per job that no job the model lets finish reaches.

    Parameters
    ----------
    highest : float
        Expected failures per job at the highest job rate.

    Returns
    -------
    int
        ``40 * highest + 1000`` (P(N > 40 E[N]) < e^-40), at most 2^62.
    """
    return int(min(_CAP_FACTOR * highest + 1000, 2**62))


def _check_simulations(sc: Scenario, intervals, n_jobs: int, seed: int, backend: str, max_failures,
                       progress, known=None) -> dict:
    """`_check_simulation` at each interval (`_check_points`)."""
    return _check_points({v: sc.sweep(checkpoint_interval=v) for v in intervals}, n_jobs, seed, backend,
                         max_failures, progress, known)


def _check_points(points: dict, n_jobs: int, seed: int, backend: str, max_failures, progress, known=None) -> dict:
    """`_check_simulation` of each point ({label: scenario}), under one progress bar (or callback) for all
    of them; a point already in `known` ({scenario: check}, the same seed and budget) is not run again."""
    known = {} if known is None else known
    todo = {label: point for label, point in points.items() if point not in known}
    budgets = {label: budgeted_jobs(point, n_jobs) for label, point in todo.items()}
    bar = None
    if progress is True and todo:
        from ._feedback import progress_bar

        bar = progress_bar(sum(jobs for jobs, _, _ in budgets.values()), "check simulation", enabled_=True)
        progress = bar.update
    try:
        new = {label: _check_simulation(point, budgets[label], seed, backend, max_failures, progress or None)
               for label, point in todo.items()}
    finally:
        if bar is not None:
            bar.close()
    return {label: new[label] if label in new else known[point] for label, point in points.items()}


def _with_check(strategy, check: CheckSimulation):
    """A StrategyPlan with the check simulation's estimate."""
    return dataclasses.replace(strategy, simulated=check.simulated, simulated_se=check.simulated_se,
                               simulated_jobs=check.simulated_jobs)


def _check_simulation(sc: Scenario, budget: tuple, seed: int, backend: str, max_failures,
                      progress=None) -> CheckSimulation:
    """Simulate one interval with its `budgeted_jobs` (nothing where the budget allows too few jobs)."""
    jobs, mean, highest = budget
    if not jobs or beyond_float_range(pack(sc)).all():
        return CheckSimulation(mean)
    cap = max_failures if max_failures is not None else failure_cap(highest)
    ds = simulate(sc, n_jobs=jobs, seed=seed, backend=backend, max_failures=cap, progress=progress or False)
    return CheckSimulation(mean, jobs, float(ds.ettr), float(ds.ettr_se), ds)


def _sensitivity(sc: Scenario, names=SENSITIVITY, step=None) -> dict:
    """By parameter: value, elasticity of the exact ETTR at sc's intervals, best ETTR with it halved."""
    out = {}
    for name in names:
        value = getattr(sc, name)
        if name == "n_gpus":
            # ETTR depends on size through n_nodes * failure_rate only.
            elasticity = out["failure_rate"].elasticity
            halved = best_ettr(sc.sweep(n_gpus=max(1, value // 2)))
        elif value == 0:
            elasticity, halved = 0.0, best_ettr(sc)
        else:
            h = 1e-4
            # At the top of a field's range (the largest failure rate, a duration near the float
            # limit) the step up is refused: a one-sided difference there.
            up, down = (_ettr_if_valid(sc, name, value * math.exp(step)) for step in (h, -h))
            span = 2 * h
            if up is None:
                up, span = strategy_ettr(sc, "renewal"), h
            elasticity = (math.log(up) - math.log(down)) / span if up > 0 and down > 0 else math.nan
            halved = best_ettr(sc.sweep(**{name: value / 2}))
        out[name] = Sensitivity(value, elasticity, halved)
        if step is not None:
            step(1)
    return out


def _ettr_if_valid(sc: Scenario, name: str, value) -> float | None:
    """The exact ETTR of sc with `name` set to `value` at its intervals; None where the Scenario refuses it."""
    try:
        point = sc.sweep(**{name: value})
    except ScenarioError:
        return None
    return strategy_ettr(point, "renewal")


def _targets(sc: Scenario, x: float, names=IMPROVABLE, step=None, rtol: float = 1e-10) -> TargetReach:
    """What each parameter alone would need for a best ETTR of x, and the largest job reaching it."""
    needed, best_possible = {}, {}
    for name in names:
        now = getattr(sc, name)
        def gap(v, name=name):
            return best_ettr(sc.sweep(**{name: v})) - x
        floor = now * 1e-6 if name == "checkpoint_cost" else 0.0
        best_possible[name] = gap(floor) + x
        if gap(now) >= 0:
            needed[name] = now
        elif best_possible[name] < x:
            needed[name] = None
        else:
            needed[name] = _root_below(gap, floor, now, rtol)
        if step is not None:
            step(1)
    max_gpus = _max_gpus(sc, x)
    if step is not None:
        step(1)
    return TargetReach(x, needed, best_possible, max_gpus)


def _root_below(gap, floor: float, now: float, rtol: float) -> float:
    """Where the decreasing `gap` crosses zero in [floor, now], given gap(floor) >= 0 > gap(now).

    The values span up to the whole float range (a restart of 1e308 h): the crossing is first
    bracketed within three decades, stepping down from `now`, then found in log space, where the
    root finder's tolerance is relative to the value.
    """
    from scipy.optimize import brentq  # here: at module level it would slow `import relmodel`

    smallest = max(floor, _SMALLEST_POSITIVE)
    high, low = now, now / 1e3
    while low > smallest and gap(low) < 0:
        high, low = low, low / 1e3
    low = max(low, smallest)
    if gap(low) < 0:  # only the floor itself reaches it (a zero restart, say)
        return floor
    return math.exp(brentq(lambda t: gap(math.exp(t)), math.log(low), math.log(high), xtol=rtol, maxiter=200))


_SMALLEST_POSITIVE = sys.float_info.min  # the smallest value at full precision


def _max_gpus(sc: Scenario, x: float) -> int | None:
    """The largest GPU count (whole nodes) whose best ETTR reaches x."""
    def reaches(nodes: int) -> bool:
        return best_ettr(sc.sweep(n_gpus=nodes * sc.gpus_per_node)) >= x
    max_nodes = min(_MAX_NODES, MAX_COUNT // sc.gpus_per_node)
    if not reaches(1):
        return None
    lo, hi = 1, 2
    while hi < max_nodes and reaches(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, max_nodes)
    if hi == max_nodes and reaches(max_nodes):
        return max_nodes * sc.gpus_per_node
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if reaches(mid) else (lo, mid)
    return lo * sc.gpus_per_node
