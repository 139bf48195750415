"""Figures of throughput under failures (matplotlib `Figure`, no pyplot state)."""

from __future__ import annotations

import numpy as np

from .._store import save_figure
from .._units import format_hours

MARKERS = {"recycle": "o", "restart": "s", "spare": "^", "drop-pipeline": "v", "oobleck": "D", "bamboo": "P"}
# Strategies often share a line (recycle, restart and spare all sit at 1.0 in
# the steady state): each strategy's points are shifted sideways by its own
# small offset, at most DODGE failed workers; the first line is wide and solid
# and the later ones dashed on top of it, so a shared stretch shows both colours.
DODGE = 0.25
DASHES = ((5, 2), (2, 2), (6, 2, 1, 2), (1, 1.5), (4, 1.5, 1, 1.5, 1, 1.5), (3, 3))


def throughput_figure(table, runs=None, path=None, *, title: str | None = None):
    """Draw the fraction of fault-free throughput against failed workers, one line per strategy.

    Lines that coincide are shifted sideways a little (each strategy its own
    offset and marker) so none hides another; the aim max(T0, work bound) is
    drawn only where it is finite. `runs` adds a panel each of time averages
    with their intervals; a trace panel says how often the trace has fewer
    nodes than the run's workers. A caption names the fixed parameters.

    Parameters
    ----------
    table : xarray.Dataset
        A Dataset from `throughput_table`.
    runs : xarray.Dataset or list of xarray.Dataset, optional
        A Dataset from `simulate_runs` or `replay_traces`, or a list of them.
    path : str or os.PathLike, optional
        Save the figure here when given.
    title : str, optional
        Title of the first panel (default: the configuration).

    Returns
    -------
    matplotlib.figure.Figure
        The figure: a steady-state panel, and one panel per Dataset of `runs`
        (saved to `path` when given).
    """
    from matplotlib.figure import Figure

    extra = [] if runs is None else (list(runs) if isinstance(runs, (list, tuple)) else [runs])
    fig = Figure(figsize=(6.5 + 4.5 * len(extra), 4.8), layout="constrained")
    axes = fig.subplots(1, 1 + len(extra), squeeze=False)[0]
    ax = axes[0]
    n = table.n_failures.values
    strategies = [str(s) for s in table.strategy.values]
    step = 2 * DODGE / max(len(strategies) - 1, 1)
    for i, strategy in enumerate(strategies):
        offset = (i - (len(strategies) - 1) / 2) * step if len(strategies) > 1 else 0.0
        style = dict(lw=4, ls="-") if i == 0 else dict(lw=1.8, ls=(0, DASHES[(i - 1) % len(DASHES)]))
        ax.plot(n + offset, table.fraction_of_ideal.sel(strategy=strategy), marker=MARKERS.get(strategy, "o"),
                ms=5, zorder=2 + i / 10, label=strategy + _memory_note(table, strategy), **style)
    with np.errstate(divide="ignore", invalid="ignore"):
        aim = float(table.attrs["ideal_period"]) / table.recycle_target.values
    aim = np.where(np.isfinite(aim), aim, np.nan)
    if np.isfinite(aim).any():  # a line with no finite point is not drawn, so not listed
        ax.plot(n, aim, "k:", lw=1.2, zorder=5, label="recycle aim: T0 / max(T0, work bound)")
    highest = float(np.nanmax(np.where(np.isfinite(table.fraction_of_ideal), table.fraction_of_ideal, np.nan),
                              initial=1.0))
    # A plan may beat the configured fault-free schedule (ReCycle's decoupled backward): keep it in view.
    ax.set(xlabel="failed workers", ylabel="steady-state throughput / fault-free",
           ylim=(-0.02, max(1.05, 1.04 * highest)), title=title or config_title(table.attrs))
    ax.set_xticks(n)
    ax.legend(fontsize=7, loc="best")
    for ax_runs, ds in zip(axes[1:], extra):
        _runs_panel(ax_runs, ds)
    fig.supxlabel(_caption(table.attrs, extra), fontsize=8, color="0.2", wrap=True)
    if path is not None:
        save_figure(fig, path)
    return fig


def trace_notes(runs) -> list[str]:
    """Return what each replayed trace offers the run.

    Its most nodes at once and the share of its time with fewer nodes than the
    run has workers.

    Parameters
    ----------
    runs : xarray.Dataset
        A Dataset from `replay_traces` (a Dataset without a trace dim gives []).

    Returns
    -------
    list of str
        One line per trace; "never has ..." where the trace never holds enough nodes.
    """
    if "trace" not in runs.dims:
        return []
    needed = int(runs.attrs["replicas"]) * int(runs.attrs["stages"])
    notes = []
    for name in runs.trace.values:
        sel = runs.sel(trace=name)
        most = int(sel.max_nodes) if "max_nodes" in runs else None
        short = float(sel.time_fraction.sel(n_failures=slice(1, None)).sum()) if "time_fraction" in runs else None
        if most is not None and most < needed:
            notes.append(f"{name}: never has the {needed} nodes the run needs (at most {most}): "
                         "\n  strategies that need every worker stall (about 0)")
        elif short is not None:
            notes.append(f"{name}: at most {most} nodes for {needed} workers; "
                         f"workers down {short:.0%} of the time")
    return notes


def _runs_panel(ax, runs):
    strategies = [str(s) for s in runs.strategy.values]
    groups = [str(t) for t in runs.trace.values] if "trace" in runs.dims else ["Monte Carlo"]
    width = 0.8 / len(groups)
    x = np.arange(len(strategies))
    for g, name in enumerate(groups):
        sel = runs.sel(trace=name) if "trace" in runs.dims else runs
        value = sel.fraction_of_ideal.values
        ci = sel.fraction_of_ideal_ci.values
        err = np.abs(np.stack([value - ci[:, 0], ci[:, 1] - value]))
        ax.bar(x + (g - (len(groups) - 1) / 2) * width, value, width, yerr=np.nan_to_num(err), capsize=2, label=name)
    ax.set_xticks(x, strategies, rotation=30, ha="right", fontsize=8)
    a = runs.attrs
    where = f"{a['replicas']} x {a['stages']}-stage"
    notes = "\n".join(trace_notes(runs))
    top = 1.05 + (0.07 * (notes.count("\n") + 1) + 0.03 if notes else 0)  # room for the notes above the bars
    ax.set(ylabel="time-average throughput / fault-free", ylim=(0, top), yticks=np.linspace(0, 1, 6),
           title=f"runs with failures, {where}" if "trace" not in runs.dims else f"replaying traces, {where}")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=min(len(groups), 4))
    if notes:  # why a bar is at zero: the trace, not the strategy
        ax.text(0.02, 0.985, notes, transform=ax.transAxes, ha="left", va="top", fontsize=7,
                bbox=dict(boxstyle="round", fc="w", ec="0.6", alpha=0.9), zorder=6)


def config_title(attrs) -> str:
    """The pipeline's shape and schedule kind, from a table's attrs (the figure's default title).

    Parameters
    ----------
    attrs : dict
        The attrs of a `throughput_table` Dataset.

    Returns
    -------
    str
    """
    return (f"p={attrs['stages']} stages, d={attrs['replicas']} replicas, m={attrs['microbatches']} "
            f"({attrs['order']}, {attrs['backward']}, {attrs['optimizer']})")


def _memory_note(table, strategy: str) -> str:
    """Why a strategy's line lies at 0: it does not fit the memory budget (everywhere or at some counts)."""
    if "memory_limited" not in table:
        return ""
    limited = table.memory_limited.sel(strategy=strategy).values
    return " (ruled out by memory)" if limited.all() else (" (memory-limited at some counts)" if limited.any() else "")


def _times_text(values) -> str:
    values = np.atleast_1d(values)
    return f"{values[0]:g}" if np.all(values == values[0]) else "/".join(f"{v:g}" for v in values)


def _caption(attrs, runs) -> str:
    """The fixed parameters: the pipeline, its task times, and each runs panel's failure model."""
    parts = [(f"fixed: p={attrs['stages']}, d={attrs['replicas']}, m={attrs['microbatches']}, "
              f"F={_times_text(attrs['fwd'])}, B={_times_text(attrs['bwd_input'])}, "
              f"W={_times_text(attrs['bwd_weight'])} "
              f"({'s' if attrs.get('task_time_unit') == 's' else 'task time units'}), {attrs['order']}, "
              f"{attrs['backward']} backward, {attrs['optimizer']} optimizer")]
    if "spares" in attrs:
        parts.append(f"{attrs['spares']} spares")
    if "bamboo_slowdown" in attrs:
        parts.append(f"Bamboo takeover x{float(attrs['bamboo_slowdown']):g}")
    for ds in runs:
        a = ds.attrs
        kind = "traces" if "trace" in ds.dims else f"runs of {format_hours(float(a['duration_h']))}"
        model = [f"{kind}: time unit {format_hours(float(a['time_unit_h']))}"]
        if "trace" not in ds.dims:
            model.append(f"failure rate {float(a['failure_rate']):g} per node-day, "
                         f"repair {format_hours(float(a['repair_time_h']))}")
        model.append(f"restart {format_hours(float(a['restart_cost_h']))}, "
                     f"checkpoint every {format_hours(float(a['checkpoint_interval_h']))}, "
                     f"{a.get('n_runs', '?')} {'placements' if 'trace' in ds.dims else 'runs'}")
        parts.append("; ".join(model))
    parts.append(f"markers shifted sideways by up to {DODGE:g} so coinciding lines stay visible")
    return "; ".join(parts)
