"""Figures of a cluster simulation (matplotlib `Figure`, no pyplot state)."""

from __future__ import annotations

import numpy as np

STYLE = {"elastic": ("C0", "-"), "fixed-batch": ("C1", "--"), "fifo": ("C2", ":")}


def cluster_figure(ds, path=None):
    """GPU utilisation over time and the distribution of job completion times,
    one curve per policy; saved to `path` if given. Returns the Figure."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.5), layout="constrained")
    left, right = fig.subplots(1, 2)
    n_gpus = ds.attrs.get("n_gpus", 1)
    for policy in ds.policy.values.tolist():
        color, style = STYLE.get(policy, ("k", "-"))
        p = ds.sel(policy=policy)
        left.plot(ds.time, p.gpu_utilisation, style, color=color, label=policy)
        jct = np.sort(p.jct.values[np.isfinite(p.jct.values)])
        if jct.size:
            right.step(jct, np.arange(1, jct.size + 1), where="post", color=color, linestyle=style,
                       label=f"{policy}: {jct.size} completed, mean {jct.mean():.3g} h")
    if float(ds.gpus_up.min()) < n_gpus:
        left.plot(ds.time, ds.gpus_up / n_gpus, color="0.5", lw=0.8, label="GPUs up")
    left.set(xlabel="time (h)", ylabel="GPUs held by jobs / GPUs", ylim=(0, 1.05),
             title=f"utilisation, {n_gpus} GPUs")
    right.set(xscale="log", xlabel="job completion time (h)", ylabel="jobs completed within that time",
              title="job completion times")
    left.legend(fontsize=8)
    right.legend(fontsize=8, loc="upper left")
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def load_sweep_figure(sweep, path=None):
    """Jobs completed and mean completion time against arrival rate, per policy
    (`sweep`: a Dataset with dims arrival_rate x policy)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.5), layout="constrained")
    left, right = fig.subplots(1, 2)
    rates = sweep.arrival_rate.values
    for policy in sweep.policy.values.tolist():
        color, style = STYLE.get(policy, ("k", "-"))
        p = sweep.sel(policy=policy)
        left.plot(rates, p.completed / p.submitted, "o" + style, color=color, ms=4, label=policy)
        right.plot(rates, p.jct_mean, "o" + style, color=color, ms=4, label=policy)
    left.set(xscale="log", xlabel="arrival rate (jobs/h)", ylabel="jobs completed / jobs submitted",
             ylim=(0, 1.05), title=f"jobs completed, {sweep.attrs.get('n_gpus', '?')} GPUs")
    right.set(xscale="log", yscale="log", xlabel="arrival rate (jobs/h)", ylabel="mean completion time (h)",
              title="mean job completion time")
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
