"""Figures (matplotlib `Figure` objects: no global pyplot state, any backend)."""

from __future__ import annotations

import warnings

import numpy as np

from .closed_form import ClosedFormWarning, ettr, feasible_interval, mttf, optimal_interval
from .scenario import Scenario, as_scenario


def _axes(ax):
    if ax is not None:
        return ax
    from matplotlib.figure import Figure

    return Figure(figsize=(6, 4), layout="constrained").subplots()


def ettr_vs_interval(scenario, ax=None, *, n_points: int = 60, n_sim: int = 8, n_jobs: int = 20_000, seed: int = 0):
    """ETTR against checkpoint interval: both closed forms as curves, the
    simulation with 95% error bars, and each method's optimum marked."""
    from .simulate import simulate

    sc: Scenario = as_scenario(scenario)
    ax = _axes(ax)
    best = {m: feasible_interval(optimal_interval(sc, m), sc.work) for m in ("young", "daly", "exact")}
    centre = best["exact"] if best["exact"] < sc.work else sc.work / 2
    lo, hi = max(centre / 20, 1 / 3600), min(centre * 20, sc.work)
    grid = np.unique(np.geomspace(lo, hi, n_points))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClosedFormWarning)
        for method, style in (("renewal", "-"), ("linear", "--")):
            ax.plot(grid, ettr(sc.sweep(checkpoint_interval=grid), method), style, label=f"{method} closed form")
    points = np.unique(np.geomspace(lo, hi, n_sim))
    sim = simulate(sc.sweep(checkpoint_interval=points), n_jobs=n_jobs, seed=seed)
    ax.errorbar(points, sim.ettr, yerr=1.96 * sim.ettr_se, fmt="o", ms=4, capsize=2, color="k",
                label=f"simulated ({n_jobs} jobs, 95%)")
    for (method, interval), color in zip(best.items(), ("C3", "C4", "C2")):
        ax.axvline(interval, color=color, lw=0.8, ls=":", label=f"{method} optimum {interval * 60:.3g} min")
    ax.set(xscale="log", xlabel="checkpoint interval (h)", ylabel="ETTR",
           title=f"{sc.n_gpus} GPUs, MTTF {sc.mttf:.3g} h")
    ax.legend(fontsize=7)
    return ax


def scale_projection(scenario, ax=None, *, gpus=None):
    """ETTR at the exact optimal interval (left axis) and job MTTF (right axis,
    log) against GPU count, from 8 to 131,072 GPUs by default."""
    sc: Scenario = as_scenario(scenario)
    ax = _axes(ax)
    gpus = np.asarray(gpus if gpus is not None else 2 ** np.arange(3, 18))
    values = ettr(sc.sweep(n_gpus=gpus), "renewal", at="exact")
    ax.plot(gpus, values, "o-", ms=3, color="C0", label="ETTR (renewal, exact interval)")
    ax.set(xscale="log", xlabel="GPUs", ylabel="ETTR", ylim=(0, 1.02))
    right = ax.twinx()
    right.plot(gpus, mttf(gpus, sc.failure_rate, sc.gpus_per_node), "s--", ms=3, color="C1", label="MTTF")
    right.set(yscale="log", ylabel="MTTF (h)")
    ax.set_title(f"failure rate {sc.failure_rate:g} per node-day")
    lines = ax.get_lines() + right.get_lines()
    ax.legend(lines, [line.get_label() for line in lines], fontsize=7, loc="lower left")
    return ax


def plan_figure(scenario, path=None, **kwargs):
    """Both figures side by side; saved to `path` when given. Returns the Figure."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.5), layout="constrained")
    left, right = fig.subplots(1, 2)
    ettr_vs_interval(scenario, left, **kwargs)
    scale_projection(scenario, right)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def _tick(value) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"


def study_figure(ds, x=None, y=None, path=None):
    """A study's standard figures over two sweep axes: a heat map of simulated
    ETTR, and (when checkpoint_interval is swept) the best simulated interval
    against the other axis beside the exact closed-form optimum."""
    from matplotlib.figure import Figure

    sweep_dims = [d for d in ds.ettr.dims]
    x = x or sweep_dims[0]
    y = y or (sweep_dims[1] if len(sweep_dims) > 1 else None)
    for name, dim in (("x", x), ("y", y)):
        if dim is not None and dim not in sweep_dims:
            raise ValueError(f"{name}: {dim!r} is not a sweep axis of this study ({', '.join(sweep_dims)})")
    if y is None:
        raise ValueError(f"y: a study figure needs two sweep axes; this study sweeps {', '.join(sweep_dims)}")
    ettr_xy = ds.ettr
    others = [d for d in sweep_dims if d not in (x, y)]
    if others:  # the first value of every other axis
        ettr_xy = ettr_xy.isel({d: 0 for d in others})
    ettr_xy = ettr_xy.transpose(y, x).load()
    with_curve = "checkpoint_interval" in (x, y)
    fig = Figure(figsize=(12 if with_curve else 6, 4.5), layout="constrained")
    axes = fig.subplots(1, 2 if with_curve else 1)
    heat = axes[0] if with_curve else axes
    mesh = heat.pcolormesh(np.arange(ettr_xy.sizes[x]), np.arange(ettr_xy.sizes[y]), ettr_xy.values,
                           shading="nearest", vmin=0, vmax=1, cmap="viridis")
    heat.set(xticks=range(ettr_xy.sizes[x]), yticks=range(ettr_xy.sizes[y]), xlabel=x, ylabel=y,
             title="simulated ETTR" + (f" ({', '.join(f'{d}={ds[d].values[0]:g}' for d in others)})" if others else ""))
    heat.set_xticklabels([_tick(v) for v in ettr_xy[x].values], rotation=45, fontsize=7)
    heat.set_yticklabels([_tick(v) for v in ettr_xy[y].values], fontsize=7)
    fig.colorbar(mesh, ax=heat, label="ETTR")
    if with_curve:
        other = y if x == "checkpoint_interval" else x
        best = ettr_xy.idxmax("checkpoint_interval")
        ax = axes[1]
        ax.plot(best[other], best, "o", label="best simulated interval (grid)")
        # The optimum does not depend on the interval the grid was run at: fix it to one value.
        sc = Scenario.from_dataset(ettr_xy).sweep(checkpoint_interval=float(ettr_xy.checkpoint_interval[0]))
        ax.plot(ettr_xy[other], optimal_interval(sc, "exact"), "-", label="exact optimum (renewal)")
        ax.set(xscale="log", yscale="log", xlabel=other, ylabel="checkpoint interval (h)",
               title="optimal checkpoint interval")
        ax.legend(fontsize=8)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig

