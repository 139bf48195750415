"""Figures of throughput under failures (matplotlib `Figure`, no pyplot state)."""

from __future__ import annotations

import numpy as np

MARKERS = {"recycle": "o", "restart": "s", "spare": "^", "drop-pipeline": "v", "oobleck": "D", "bamboo": "P"}


def throughput_figure(table, runs=None, path=None, *, title: str | None = None):
    """Fraction of fault-free throughput against failed workers, one line per
    strategy (`table` from `throughput_table`); `runs` (a Dataset from
    `simulate_runs` or `replay_traces`, or a list of them) adds a panel each of
    time averages with their intervals. Saved to `path` when given. Returns the Figure."""
    from matplotlib.figure import Figure

    extra = [] if runs is None else (list(runs) if isinstance(runs, (list, tuple)) else [runs])
    fig = Figure(figsize=(6.5 + 4.5 * len(extra), 4.2), layout="constrained")
    axes = fig.subplots(1, 1 + len(extra), squeeze=False)[0]
    ax = axes[0]
    n = table.n_failures.values
    for strategy in table.strategy.values:
        lead = str(strategy) == "recycle"  # drawn on top: it often shares a line with others
        ax.plot(n, table.fraction_of_ideal.sel(strategy=strategy), marker=MARKERS.get(str(strategy), "o"),
                ms=7 if lead else 5, lw=2.5 if lead else 1.5, zorder=3 if lead else 2, label=str(strategy))
    with np.errstate(divide="ignore", invalid="ignore"):
        aim = float(table.attrs["ideal_period"]) / table.recycle_target
    ax.plot(n, aim, "k:", lw=1, label="max(T0, work bound)")
    ax.set(xlabel="failed workers", ylabel="throughput / fault-free", ylim=(-0.02, 1.05), xticks=n,
           title=title or _config_title(table.attrs))
    ax.legend(fontsize=7)
    for ax_runs, ds in zip(axes[1:], extra):
        _runs_panel(ax_runs, ds)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


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
    ax.set(ylabel="time-average throughput / fault-free", ylim=(0, 1.05),
           title=f"runs with failures, {where}" if "trace" not in runs.dims else f"replaying traces, {where}")
    ax.legend(fontsize=7)


def _config_title(attrs) -> str:
    return (f"p={attrs['stages']} stages, d={attrs['replicas']} replicas, m={attrs['microbatches']} "
            f"({attrs['order']}, {attrs['backward']}, {attrs['optimizer']})")
