"""Figures (matplotlib `Figure` objects: no global pyplot state, any backend).

Every figure says what it was drawn from: units on its axes, plain-number
ticks, and the parameters it holds fixed in a caption under it.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ._ticks import number_text, plain_log_axis  # noqa: F401  public here too
from ._docparts import fill_doc_parts
from ._closed_form import ClosedFormWarning, ettr, feasible_interval, mttf, optimal_interval
from ._errors import ParameterError
from ._plan import Plan, budgeted_jobs, failure_cap
from ._scenario import Scenario, as_scenario
from ._simulate import simulate
from ._store import save_figure
from ._units import format_hours

# The simulated points of an interval figure draw at most this many failures in
# all (a budget of about a second): a long run takes fewer jobs a point, and a
# point that would get fewer than MIN_FIGURE_JOBS jobs is left out.
__all__ = ["axis_label", "compare_figure", "durable_interval_panel", "ettr_vs_interval", "plain_log_axis",
           "plan_figure",
           "scale_projection", "scenario_caption", "strategies_panel", "study_caption", "study_figure"]

FIGURE_EVENT_BUDGET = 2e7
MIN_FIGURE_JOBS = 200

# Young's, Daly's and the exact optimum often coincide: hollow markers of
# decreasing size around a filled star stay visible on top of each other.
OPTIMUM_STYLE = {
    "young": dict(marker="v", ms=13, mfc="none", mec="C3", mew=1.4),
    "daly": dict(marker="s", ms=9, mfc="none", mec="C4", mew=1.4),
    "exact": dict(marker="*", ms=8, mfc="C2", mec="k", mew=0.5),
}
TARGET_STYLE = dict(color="C6", ls="-.", lw=1.2)
CURRENT_STYLE = dict(color="0.25", ls="--", lw=1.0)
JOB_STYLE = dict(color="C3", ls=":", lw=1.0)


def _axes(ax):
    if ax is not None:
        return ax
    from matplotlib.figure import Figure

    return Figure(figsize=(6.5, 4.8), layout="constrained").subplots()


def scenario_caption(sc: Scenario, *, fixed=("work", "failure_rate", "checkpoint_cost", "restart_cost",
                                             "queue_wait", "gpus_per_node")) -> str:
    """Return the parameters a figure of `sc` holds fixed, in words with units.

    Parameters
    ----------
    sc : Scenario
        The scenario (one point).
    fixed : tuple of str, optional
        The fields to name, in this order (default: work, failure rate,
        checkpoint and restart costs, queue wait, GPUs per node).

    Returns
    -------
    str
        e.g. "work 14d, failure rate 0.0065 per node-day, checkpoint write 5min, ...".
    """
    words = {
        "n_gpus": lambda: f"{sc.n_gpus} GPUs",
        "work": lambda: f"work {format_hours(sc.work)}",
        "failure_rate": lambda: f"failure rate {sc.failure_rate:g} per node-day",
        "checkpoint_cost": lambda: f"checkpoint write {format_hours(sc.checkpoint_cost)}" + (
            f" + {format_hours(sc.checkpoint_persist)} to persist" if sc.checkpoint_persist > 0 else ""),
        "restart_cost": lambda: (f"restarts by taxonomy ({len(sc.taxonomy)} kinds)" if sc.taxonomy
                                 else f"restart {format_hours(sc.restart_cost)}"),
        "queue_wait": lambda: "" if sc.taxonomy else f"queue wait {format_hours(sc.queue_wait)}",
        "gpus_per_node": lambda: f"{sc.gpus_per_node} GPUs/node",
    }
    parts = [words[name]() for name in fixed]
    if "checkpoint_cost" in fixed:  # a fast level's write is as much an input as the durable one's
        parts += [f"fast level {k}: write {format_hours(lv.cost)}"
                  + (f" + {format_hours(lv.persist)} to persist" if lv.persist > 0 else "")
                  + f", restart {format_hours(lv.restart)}, survives {lv.survives:.0%}"
                  for k, lv in enumerate(sc.fast_checkpoints or ())]
    if sc.lemon_fraction > 0 and sc.lemon_rate_factor != 1:
        parts.append(f"lemon nodes {sc.lemon_fraction:g} at {sc.lemon_rate_factor:g}x the rate")
    return ", ".join(p for p in parts if p)


def _caption(fig, text: str) -> None:
    """The fixed parameters under the figure (a supxlabel: the layout makes room for it)."""
    fig.supxlabel(text, fontsize=8, color="0.2", wrap=True)


def _plan_inputs(scenario, target_ettr, current_interval):
    """(scenario, target, current interval, largest job reaching the target) from a Plan or a Scenario."""
    if isinstance(scenario, Plan):
        plan = scenario
        if target_ettr is None and plan.target is not None:
            target_ettr = plan.target.ettr
        if current_interval is None:
            current_interval = plan.intervals_h.get("current")
        max_gpus = plan.target.max_gpus if plan.target is not None else None
        return plan.scenario, target_ettr, current_interval, max_gpus
    return as_scenario(scenario), target_ettr, current_interval, None


def _simulated_points(sc: Scenario, points, n_jobs: int, seed: int, backend: str):
    """Simulated ETTR and its standard error at `points`, within FIGURE_EVENT_BUDGET failures.

    Returns (intervals, ettr, se, jobs) of the points simulated.
    """

    per_point = FIGURE_EVENT_BUDGET / max(len(points), 1)
    kept, values, errors, jobs_used = [], [], [], []
    for interval in points:
        at = sc.sweep(checkpoint_interval=float(interval))
        jobs, _, highest = budgeted_jobs(at, n_jobs, per_point, MIN_FIGURE_JOBS)
        if not jobs:
            continue  # too many failures a job for a quick check: the closed forms speak for it
        ds = simulate(at, n_jobs=jobs, seed=seed, max_failures=failure_cap(highest), backend=backend)
        if np.isfinite(float(ds.ettr)):
            kept.append(float(interval))
            values.append(float(ds.ettr))
            errors.append(float(ds.ettr_se))
            jobs_used.append(jobs)
    return np.array(kept), np.array(values), np.array(errors), jobs_used


def ettr_vs_interval(scenario, ax=None, *, n_points: int = 60, n_sim: int = 8, n_jobs: int = 20_000, seed: int = 0,
                     target_ettr: float | None = None, current_interval: float | None = None, backend: str = "auto"):
    """Draw ETTR against checkpoint interval for the scenario's work.

    Both closed forms as curves, simulated points with 95% error bars, Young's,
    Daly's and the exact optimum as distinct markers on the renewal curve, the
    target ETTR as a horizontal line and the current interval as a vertical one.
    The title says what the work takes at the exact optimum.

    Parameters
    ----------
    scenario : Scenario or relmodel._plan.Plan
        A `Scenario` (one point; its checkpoint interval is not used) or a
        `relmodel._plan.Plan` (which brings its target and current interval).
    ax : matplotlib.axes.Axes, optional
        The Axes to draw on (default: a new Figure's, with a caption of the
        fixed parameters).
    n_points : int, default 60
        Points of each closed-form curve.
    n_sim : int, default 8
        Simulated intervals (log-spaced; fewer where a point would need more
        than its share of FIGURE_EVENT_BUDGET failures).
    n_jobs : int, default 20000
        Jobs per simulated interval, at most.
    seed : int, default 0
        Seed of the simulation.
    target_ettr : float, optional
        Draw this ETTR as a horizontal line.
    current_interval : float, optional
        Draw the interval used today (hours) as a vertical line.
    backend : str, default "auto"
        Kernel of the simulated points: "auto", "numba" or "cython" (the same bits).

    Returns
    -------
    matplotlib.axes.Axes
        The Axes drawn on.
    """
    own_figure = ax is None
    sc, target_ettr, current_interval, _ = _plan_inputs(scenario, target_ettr, current_interval)
    ax = _axes(ax)
    best = {m: feasible_interval(optimal_interval(sc, m), sc.work) for m in ("young", "daly", "exact")}
    centre = best["exact"] if best["exact"] < sc.work else sc.work / 2
    lo, hi = max(centre / 20, 1 / 3600), min(centre * 20, sc.work)
    if current_interval is not None and math.isfinite(current_interval):
        current_interval = feasible_interval(float(current_interval), sc.work)
        lo, hi = min(lo, current_interval / 2), min(max(hi, current_interval * 2), sc.work)
    grid = np.unique(np.geomspace(lo, hi, n_points))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClosedFormWarning)
        renewal = ettr(sc.sweep(checkpoint_interval=grid), "renewal")
        ax.plot(grid, renewal, "-", color="C0", label="renewal closed form")
        ax.plot(grid, ettr(sc.sweep(checkpoint_interval=grid), "linear"), "--", color="C1", lw=1,
                label="linear closed form")
    points, sim, se, jobs = _simulated_points(sc, np.unique(np.geomspace(lo, hi, n_sim)), n_jobs, seed, backend)
    if points.size:
        jobs_text = f"{min(jobs)}" if min(jobs) == max(jobs) else f"{min(jobs)}-{max(jobs)}"
        ax.errorbar(points, sim, yerr=1.96 * se, fmt="o", ms=4, capsize=2, color="k", zorder=4,
                    label=f"simulated ({jobs_text} jobs a point, 95%)")
    peak = ettr(sc.sweep(checkpoint_interval=best["exact"]), "renewal")
    for method, interval in best.items():
        value = ettr(sc.sweep(checkpoint_interval=interval), "renewal")
        ax.plot([interval], [value], ls="none", zorder=5, **OPTIMUM_STYLE[method],
                label=f"{method} optimum {format_hours(interval)}: {value:.4f}")
    if current_interval is not None and math.isfinite(current_interval):
        value = ettr(sc.sweep(checkpoint_interval=current_interval), "renewal")
        ax.axvline(current_interval, **CURRENT_STYLE, label=f"current interval {format_hours(current_interval)}: "
                                                           f"{value:.4f}")
        ax.annotate("current", (current_interval, 1.0), xycoords=("data", "axes fraction"), rotation=90,
                    ha="right", va="top", fontsize=7, color=CURRENT_STYLE["color"])
    if target_ettr is not None:
        ax.axhline(target_ettr, **TARGET_STYLE, label=f"target ETTR {target_ettr:g}")
    # Zoom in where the whole curve (and the target) lies high, in steps of 0.1.
    lowest = np.nanmin(np.append(renewal[np.isfinite(renewal)], [peak] + ([target_ettr] if target_ettr else [])))
    bottom = max(0.0, math.floor((lowest - 0.05) * 10) / 10)
    ax.set(xscale="log", xlabel="checkpoint interval (h)", ylabel="ETTR (productive / wall-clock)",
           ylim=(bottom, 1.0 + 0.02 * (1 - bottom)), xlim=(lo / 1.15, hi * 1.15))
    plain_log_axis(ax.xaxis)
    wall = sc.work / peak if peak > 0 else math.inf
    # The exact form's expectation: the plan's text gives the simulated mean beside it.
    ax.set_title(f"{sc.n_gpus} GPUs, MTTF {format_hours(sc.mttf)}: {format_hours(sc.work)} of work "
                 f"take {format_hours(wall)} (exact form)\nat the exact optimum (ETTR {peak:.4f})", fontsize=10)
    ax.legend(fontsize=7, loc="best")
    if own_figure:
        _caption(ax.figure, scenario_caption(sc))
    return ax


def scale_projection(scenario, ax=None, *, gpus=None, target_ettr: float | None = None,
                     max_gpus: int | None = None):
    """Draw ETTR and job MTTF against GPU count, for the scenario's work.

    ETTR at the exact optimal interval on the left axis, job MTTF (hours, log
    scale) on the right.

    Parameters
    ----------
    scenario : Scenario or relmodel._plan.Plan
        A `Scenario` (one point) or a `relmodel._plan.Plan`.
    ax : matplotlib.axes.Axes, optional
        The Axes to draw on (default: a new Figure's, with a caption).
    gpus : array_like of int, optional
        GPU counts to draw (default 8 to 131,072 GPUs in powers of two, and the
        job's own count).
    target_ettr : float, optional
        Draw this ETTR as a horizontal line.
    max_gpus : int, optional
        Mark the largest job (GPUs) reaching the target (a Plan brings it).

    Returns
    -------
    matplotlib.axes.Axes
        The ETTR axes (the MTTF axes is its twin).
    """
    own_figure = ax is None
    sc, target_ettr, _, plan_max = _plan_inputs(scenario, target_ettr, None)
    max_gpus = max_gpus if max_gpus is not None else plan_max
    ax = _axes(ax)
    if gpus is None:  # 8 to 131,072 GPUs, and past the job and the largest job reaching the target
        top = max(2**17, 2 * sc.n_gpus, 2 * (max_gpus or 0))
        gpus = np.union1d(2 ** np.arange(3, int(math.log2(top)) + 1), [sc.n_gpus])
    gpus = np.asarray(gpus)
    values = ettr(sc.sweep(n_gpus=gpus), "renewal", at="exact")
    ax.plot(gpus, values, "o-", ms=3, color="C0", label="ETTR (renewal, exact interval)")
    own = ettr(sc, "renewal", at="exact")
    ax.axvline(sc.n_gpus, **JOB_STYLE)
    ax.plot([sc.n_gpus], [own], "D", ms=8, mfc="none", mec=JOB_STYLE["color"], mew=1.5, zorder=5,
            label=f"this job: {sc.n_gpus} GPUs, ETTR {own:.4f}")
    if target_ettr is not None:
        ax.axhline(target_ettr, **TARGET_STYLE, label=f"target ETTR {target_ettr:g}")
    if max_gpus:
        ax.axvline(max_gpus, color="C2", ls="--", lw=1, label=f"largest job reaching it: {max_gpus} GPUs")
    ax.set(xscale="log", xlabel="GPUs of the job", ylabel="ETTR at the exact optimal interval", ylim=(0, 1.02))
    plain_log_axis(ax.xaxis, base=2)
    ax.tick_params(axis="x", labelsize=8)
    right = ax.twinx()
    right.plot(gpus, mttf(gpus, sc.failure_rate, sc.gpus_per_node), "s--", ms=3, color="C1", label="job MTTF")
    right.set(yscale="log", ylabel="job MTTF (h)")
    plain_log_axis(right.yaxis)
    ax.set_title(f"ETTR and MTTF against job size ({format_hours(sc.work)} of work)", fontsize=10)
    lines = ax.get_lines() + right.get_lines()
    lines = [line for line in lines if not line.get_label().startswith("_")]
    ax.legend(lines, [line.get_label() for line in lines], fontsize=7, loc="lower left")
    if own_figure:
        _caption(ax.figure, scenario_caption(sc))
    return ax


def plan_figure(scenario, path=None, *, target_ettr: float | None = None, current_interval: float | None = None,
                **kwargs):
    """Draw the plan's two figures side by side, from the plan's inputs.

    Left: ETTR against checkpoint interval (`ettr_vs_interval`); right: ETTR
    and MTTF against job size (`scale_projection`). A title names the job and
    its work; a caption the fixed parameters. A plan of an asynchronous or
    multilevel strategy instead shows the strategies side by side
    (`strategies_panel`) and its ETTR against its durable interval
    (`durable_interval_panel`).

    Parameters
    ----------
    scenario : relmodel._plan.Plan or Scenario
        A `relmodel._plan.Plan` (best: it brings the target ETTR, the current
        interval and the largest job reaching the target) or a `Scenario`.
    path : str or os.PathLike, optional
        Save the figure here when given.
    target_ettr : float, optional
        The target ETTR; overrides or supplies what a Plan brings.
    current_interval : float, optional
        The interval used today in hours; overrides or supplies what a Plan brings.
    **kwargs
        Passed to `ettr_vs_interval` (n_points, n_sim, n_jobs, seed, backend).

    Returns
    -------
    matplotlib.figure.Figure
        The figure (saved to `path` when given).
    """
    from matplotlib.figure import Figure

    sc, target_ettr, current_interval, max_gpus = _plan_inputs(scenario, target_ettr, current_interval)
    fig = Figure(figsize=(13, 5.4), layout="constrained")
    left, right = fig.subplots(1, 2)
    levelled = isinstance(scenario, Plan) and scenario.level_intervals_h is not None
    if levelled:
        strategies_panel(scenario, left)
        durable_interval_panel(scenario, right, target_ettr=target_ettr)
    else:
        ettr_vs_interval(sc, left, target_ettr=target_ettr, current_interval=current_interval, **kwargs)
        scale_projection(sc, right, target_ettr=target_ettr, max_gpus=max_gpus)
    strategy = f", {scenario.strategy} checkpoints" if isinstance(scenario, Plan) and scenario.strategy else ""
    fig.suptitle(f"Plan: {sc.n_gpus} GPUs ({sc.n_nodes} nodes), {format_hours(sc.work)} of work{strategy}"
                 + (f", target ETTR {target_ettr:g}" if target_ettr is not None else ""), fontsize=12)
    _caption(fig, "fixed: " + scenario_caption(sc))
    if path is not None:
        save_figure(fig, path)
    return fig


def strategies_panel(plan: Plan, ax=None):
    """Draw the checkpoint strategies of a plan side by side: exact ETTR at each one's best intervals.

    Bars give the exact ETTR, points the check simulation's estimate with its
    95% interval; each bar is labelled with its intervals (fastest level
    first), the planned strategy's bar is outlined.

    Parameters
    ----------
    plan : relmodel._plan.Plan
        A plan with checkpoint levels (its ``checkpoints``).
    ax : matplotlib.axes.Axes, optional
        Draw here (default: a new figure's axes).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    if plan.checkpoints is None:
        raise ParameterError("plan", "has no checkpoint strategies (give checkpoint_persist or fast_checkpoints)")
    ax = _axes(ax)
    strategies = plan.checkpoints.strategies
    x = np.arange(len(strategies))
    exact = [s.ettr for s in strategies]
    bars = ax.bar(x, exact, color=[f"C{i}" for i in range(len(strategies))], alpha=0.6, label="exact ETTR")
    for bar, s in zip(bars, strategies):
        if s.name == plan.strategy:
            bar.set_edgecolor("black")
            bar.set_linewidth(2.0)
    simulated = [(i, s.simulated, 1.96 * s.simulated_se) for i, s in enumerate(strategies) if s.simulated_jobs]
    if simulated:
        i, est, half = zip(*simulated)
        ax.errorbar(i, est, yerr=half, fmt="o", color="black", capsize=4, label="simulated (95% CI)")
    for i, s in enumerate(strategies):
        ax.annotate(f"{s.ettr:.4f}", (i, s.ettr), textcoords="offset points", xytext=(0, 4), ha="center",
                    fontsize=9)
    ax.set_xticks(x, [f"{s.name}{' (planned)' if s.name == plan.strategy else ''}\n{s.intervals_text}"
                      for s in strategies], fontsize=9)
    ax.set_ylim(0.0, 1.08)  # bars from zero, so that their lengths compare (room above for the labels)
    ax.set_ylabel("ETTR")
    ax.set_title("Checkpoint strategies, each at its best intervals (fastest level first)")
    ax.legend(loc="upper right", fontsize=9)
    return ax


def durable_interval_panel(plan: Plan, ax=None, *, target_ettr: float | None = None, n_points: int = 60):
    """Draw a levelled plan's exact ETTR against its durable interval, the fast levels at their best.

    With fast levels the durable interval moves in whole multiples of the
    fastest one (the other fast levels keep theirs); without, it moves freely.
    The best intervals and the current ones (if the plan has them) are marked.

    Parameters
    ----------
    plan : relmodel._plan.Plan
        A plan of an asynchronous or multilevel strategy.
    ax : matplotlib.axes.Axes, optional
        Draw here (default: a new figure's axes).
    target_ettr : float, optional
        A horizontal line at this ETTR.
    n_points : int, default 60
        Durable intervals drawn (at most).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    from ._checkpoint_plan import _ettr as strategy_ettr
    from ._checkpoint_plan import first_durable_multiple, with_intervals

    if plan.level_intervals_h is None:
        raise ParameterError("plan", "is not of an asynchronous or multilevel strategy")
    ax = _axes(ax)
    sc = plan.scenario
    best = sc.checkpoint_interval
    if sc.fast_checkpoints:
        fastest = sc.fast_checkpoints[0].interval
        first = first_durable_multiple(sc)
        top = max(first + 1, int(min(sc.work / fastest, 20 * best / fastest)))
        multiples = np.unique(np.round(np.geomspace(first, top, n_points)).astype(int))
        grid = multiples * fastest
        points = [with_intervals(sc, fastest, int(m)) for m in multiples]
    else:
        grid = np.unique(np.geomspace(max(best / 20, 1 / 3600), min(best * 20, sc.work), n_points))
        points = [sc.sweep(checkpoint_interval=float(v)) for v in grid]
    values = np.array([strategy_ettr(p, "renewal") for p in points])
    ax.plot(grid, values, "-", color="C0", label=f"{plan.strategy}: exact ETTR")
    ax.plot([best], [plan.ettr], "*", color="C3", markersize=14,
            label=f"best: {plan._interval_text('best')} ({plan.ettr:.4f})")
    if "current" in plan.level_intervals_h:
        current = plan.ettr_by_interval["current"].renewal
        ax.plot([plan.intervals_h["current"]], [current], "s", color="C2",
                label=f"current: {plan._interval_text('current')} ({current:.4f})")
    if target_ettr is not None:
        ax.axhline(target_ettr, color="gray", linestyle=":", label=f"target {target_ettr:g}")
    ax.set_xscale("log")
    plain_log_axis(ax.xaxis)
    ax.set_xlabel("durable checkpoint interval (h)")
    ax.set_ylabel("ETTR")
    ax.set_title("ETTR against the durable interval"
                 + (" (fast levels at their best)" if sc.fast_checkpoints else ""))
    ax.legend(fontsize=9)
    return ax


# Units as the coordinates' attrs spell them, in the words of an axis label.
# The fixed parameters a reader looks for first, in this order; the rest follow by name.
_CAPTION_ORDER = ("work", "n_gpus", "failure_rate", "checkpoint_interval", "checkpoint_cost", "restart_cost",
                  "queue_wait", "gpus_per_node")
_UNIT_WORDS = {"1/(node day)": "per node-day", "GPU": "GPUs", "GPU/node": "GPUs/node", "h": "h", "1": ""}


def axis_label(ds, name: str) -> str:
    """Return a sweep axis's name with its unit from the coordinate's attrs: 'n_gpus (GPUs)'.

    Parameters
    ----------
    ds : xarray.Dataset
        The study Dataset.
    name : str
        The coordinate.

    Returns
    -------
    str
        The name, with its unit in words in parentheses where it has one.
    """
    unit = ds[name].attrs.get("units", "")
    words = _UNIT_WORDS.get(unit, unit)
    return f"{name} ({words})" if words else name


def _value_with_unit(ds, name: str) -> str:
    value = ds[name].values.item() if ds[name].ndim == 0 else ds[name].values[0]
    unit = ds[name].attrs.get("units", "")
    if isinstance(value, (str, np.str_)):
        return f"{name} {value}"
    if unit == "h":
        return f"{name} {format_hours(float(value))}"
    words = _UNIT_WORDS.get(unit, unit)
    return f"{name} {number_text(value)}" + (f" {words}" if words else "")


def _sweep_dims(ds) -> tuple:
    """The sweep axes of a study's or `compare`'s Dataset: those of its simulated ETTR."""
    return ds["ettr" if "ettr" in ds else "ettr_sim"].dims


def study_caption(ds, shown=()) -> str:
    """Return the parameters a study figure holds fixed.

    Every scalar coordinate, the first value of each sweep axis not shown, and
    the jobs a point.

    Parameters
    ----------
    ds : xarray.Dataset
        The study Dataset (or `relmodel.compare`'s).
    shown : tuple of str, optional
        The sweep axes the figure draws.

    Returns
    -------
    str
        "fixed: " and the values with their units, comma-separated.
    """
    sweep_dims = list(_sweep_dims(ds))
    fixed = sorted((name for name in ds.coords if ds[name].ndim == 0),
                   key=lambda name: (_CAPTION_ORDER.index(name) if name in _CAPTION_ORDER else len(_CAPTION_ORDER),
                                     name))
    parts = [_value_with_unit(ds, name) for name in fixed]
    parts += [_value_with_unit(ds, d) + " (first of its sweep)" for d in sweep_dims if d not in shown]
    run = [f"{ds.attrs['n_jobs']} jobs a point" if "n_jobs" in ds.attrs else "",
           f"seed {ds.attrs['seed']}" if "seed" in ds.attrs else ""]
    return "fixed: " + ", ".join(parts + [r for r in run if r])


def study_figure(ds, x=None, y=None, path=None):
    """Draw a study's standard figures over two sweep axes.

    A heat map of simulated ETTR with the value written in each cell, and (when
    checkpoint_interval is swept) the best simulated interval against the other
    axis beside the exact closed-form optimum. Axis labels carry the units of
    the coordinates; a caption names the fixed parameters.

    Parameters
    ----------
    ds : xarray.Dataset
        A study Dataset (`relmodel.open_study`).
    x : str, optional
        The sweep axis along x (default: the first).
    y : str, optional
        The sweep axis along y (default: the second).
    %(path_and_returns)s

    Raises
    ------
    ValueError
        If `x` or `y` is not a sweep axis of the study, they are the same
        axis, or the study has only one.
    """
    from matplotlib.figure import Figure

    sweep_dims = [d for d in ds.ettr.dims]
    x = x or sweep_dims[0]
    y = y or (sweep_dims[1] if len(sweep_dims) > 1 else None)
    for name, dim in (("x", x), ("y", y)):
        if dim is not None and dim not in sweep_dims:
            raise ParameterError(name, f"{dim!r} is not a sweep axis of this study ({', '.join(sweep_dims)})")
    if y is None:
        raise ParameterError("y", f"a study figure needs two sweep axes; this study sweeps {', '.join(sweep_dims)}")
    if x == y:  # numpy said "axes don't match array"
        raise ParameterError("y", f"must be another sweep axis than x (both {x!r})")
    ettr_xy = ds.ettr
    others = [d for d in sweep_dims if d not in (x, y)]
    if others:  # the first value of every other axis
        ettr_xy = ettr_xy.isel({d: 0 for d in others})
    ettr_xy = ettr_xy.transpose(y, x).load()
    with_curve = "checkpoint_interval" in (x, y)
    n_x, n_y = ettr_xy.sizes[x], ettr_xy.sizes[y]
    fig = Figure(figsize=(13 if with_curve else 7, 5.4), layout="constrained")
    axes = fig.subplots(1, 2 if with_curve else 1)
    heat = axes[0] if with_curve else axes
    values = ettr_xy.values
    mesh = heat.pcolormesh(np.arange(n_x), np.arange(n_y), values, shading="nearest", vmin=0, vmax=1,
                           cmap="viridis")
    heat.set(xticks=range(n_x), yticks=range(n_y), xlabel=axis_label(ds, x), ylabel=axis_label(ds, y),
             title="simulated ETTR")
    heat.set_xticklabels([number_text(v) for v in ettr_xy[x].values], rotation=45 if n_x > 6 else 0, fontsize=8)
    heat.set_yticklabels([number_text(v) for v in ettr_xy[y].values], fontsize=8)
    size = 8 if n_x <= 8 else 7 if n_x <= 12 else 5
    for (row, col), value in np.ndenumerate(values):
        # viridis is dark below about 0.55: white text there, black above
        heat.text(col, row, "n/a" if not np.isfinite(value) else f"{value:.2f}", ha="center", va="center",
                  fontsize=size, color="w" if not np.isfinite(value) or value < 0.55 else "k")
    fig.colorbar(mesh, ax=heat, label="ETTR (productive / wall-clock)")
    if with_curve:
        other = y if x == "checkpoint_interval" else x
        best = ettr_xy.idxmax("checkpoint_interval")
        ax = axes[1]
        ax.plot(best[other], best, "o", label="best simulated interval (grid)")
        # The optimum does not depend on the interval the grid was run at: fix it to one value.
        sc = Scenario.from_dataset(ettr_xy).sweep(checkpoint_interval=float(ettr_xy.checkpoint_interval[0]))
        ax.plot(ettr_xy[other], optimal_interval(sc, "exact"), "-", label="exact optimum (renewal)")
        log_other = np.all(ettr_xy[other].values > 0)
        ax.set(xscale="log" if log_other else "linear", yscale="log", xlabel=axis_label(ds, other),
               ylabel=axis_label(ds, "checkpoint_interval"), title="optimal checkpoint interval")
        if log_other:
            plain_log_axis(ax.xaxis, base=2 if other == "n_gpus" else 10)
        plain_log_axis(ax.yaxis)
        ax.legend(fontsize=8)
    _caption(fig, study_caption(ds, shown=(x, y)))
    if path is not None:
        save_figure(fig, path)
    return fig


# The closed forms of `compare`, as their curves and markers are drawn.
COMPARED_FORMS = {"ettr_renewal": dict(label="renewal closed form", color="C0", ls="-", marker="o"),
                  "ettr_linear": dict(label="linear closed form", color="C1", ls="--", marker="s")}


def compare_figure(ds, path=None):
    """Draw the closed forms against the simulation, from `relmodel.compare`'s Dataset.

    With a sweep axis: ETTR against the first one, a line per closed form and
    the simulated points with their 95%% error bars (the first value of every
    other axis). Without one: each closed form against the simulated ETTR,
    beside the diagonal where they would agree. A closed form that does not
    apply (NaN: the renewal form under non-exponential failures) is left out
    and the legend says so. A caption names the fixed parameters.

    Parameters
    ----------
    ds : xarray.Dataset
        The Dataset of `relmodel.compare` (or `relmodel compare --out`).
    %(path_and_returns)s
    """
    dims = _sweep_dims(ds)
    ax = _axes(None)
    shown = dims[:1]
    if dims:
        x = dims[0]
        line = ds.isel({d: 0 for d in dims[1:]})
        values = line[x].values
        numeric = np.issubdtype(values.dtype, np.number)
        positions = values if numeric else np.arange(values.size)
        for name, style in COMPARED_FORMS.items():
            ys = line[name].values
            label = style["label"] if np.isfinite(ys).any() else style["label"] + ": n/a here"
            # Categories (a choice field) have no values between them: markers, not lines.
            shape = dict(ls=style["ls"]) if numeric else dict(ls="none", marker=style["marker"], mfc="none")
            ax.plot(positions, ys, color=style["color"], lw=1.2, label=label, **shape)
        ax.errorbar(positions, line.ettr_sim.values, yerr=1.96 * line.ettr_sim_se.values, fmt="o", ms=4, capsize=2,
                    color="k", zorder=4, label="simulated (95%)")
        ax.set_xlabel(axis_label(ds, x))
        if not numeric:
            ax.set_xticks(positions, [str(v) for v in values])
            ax.set_xlim(-0.5, values.size - 0.5)
        elif values.size > 1 and values.min() > 0 and values.max() >= 10 * values.min():
            ax.set_xscale("log")
            plain_log_axis(ax.xaxis, base=2 if x == "n_gpus" else 10)
        ax.set_ylabel("ETTR (productive / wall-clock)")
    else:
        sim, se = float(ds.ettr_sim), float(ds.ettr_sim_se)
        for name, style in COMPARED_FORMS.items():
            value = float(ds[name])
            label = style["label"] + (f": {value:.4f}" if math.isfinite(value) else ": n/a here")
            ax.errorbar([sim], [value], xerr=[1.96 * se], ls="none", marker=style["marker"], color=style["color"],
                        capsize=2, label=label)
        finite = [v for v in (sim, float(ds.ettr_linear), float(ds.ettr_renewal)) if math.isfinite(v)]
        low, high = (min(finite) - 0.02, max(finite) + 0.02) if finite else (0.0, 1.0)
        ax.plot([low, high], [low, high], color="0.5", lw=0.8, ls=":", label="closed form = simulation")
        ax.set(xlim=(low, high), ylim=(low, high), xlabel=f"simulated ETTR ({sim:.4f}, 95% error bar)",
               ylabel="closed-form ETTR")
    ax.set_title(f"Closed forms against the simulation ({ds.attrs.get('n_jobs', '?')} jobs a point)", fontsize=10)
    ax.legend(fontsize=8, loc="best")
    _caption(ax.figure, study_caption(ds, shown=shown))
    if path is not None:
        save_figure(ax.figure, path)
    return ax.figure


# Docstring parts that several docstrings share, written once: a docstring names one as %(name)s.
_DOC_PARTS = {
    "path_and_returns": """\
path : str or os.PathLike, optional
    Save the figure here when given.

Returns
-------
matplotlib.figure.Figure
    The figure (saved to `path` when given).""",
}
fill_doc_parts(_DOC_PARTS, study_figure, compare_figure)
