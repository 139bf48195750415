"""Figures of a cluster simulation (matplotlib `Figure`, no pyplot state)."""

from __future__ import annotations


import numpy as np

from .._docparts import fill_doc_parts
from .._ticks import number_text, plain_log_axis
from .._store import save_figure
from .._units import format_hours

# Policies often coincide (elastic and fixed-batch complete the same jobs at
# light load): the first is wide and solid, the later ones thinner and dashed on
# top of it, each with its own hollow marker of decreasing size.
STYLE = {"elastic": ("C0", "-"), "fixed-batch": ("C1", "--"), "fifo": ("C2", ":")}
MARKER = {"elastic": ("o", 9, 3.5), "fixed-batch": ("s", 6, 1.8), "fifo": ("^", 5, 1.5)}


def _style(policy: str):
    color, line = STYLE.get(policy, ("k", "-"))
    marker, size, width = MARKER.get(policy, ("D", 5, 1.5))
    return dict(color=color, ls=line, lw=width, marker=marker, ms=size, mfc="none", mew=1.4)


def cluster_caption(attrs) -> str:
    """The fixed parameters of a cluster simulation, from its Dataset attrs.

    Parameters
    ----------
    attrs : the attrs of a `simulate_cluster` Dataset (missing keys are left out).

    Returns
    -------
    str
    """
    hours = (("checkpoint_interval_h", "checkpoint every"), ("checkpoint_cost_h", "checkpoint write"),
             ("restart_cost_h", "restart"), ("pause_h", "rescale pause"), ("repair_time_h", "repair"))
    parts = []
    if "n_gpus" in attrs:
        parts.append(f"{attrs['n_gpus']} GPUs" + (f" ({attrs['gpus_per_node']} a node)" if "gpus_per_node" in attrs
                                                  else ""))
    if "failure_rate_per_node_day" in attrs:
        parts.append(f"failure rate {float(attrs['failure_rate_per_node_day']):g} per node-day")
    parts += [f"{words} {format_hours(float(attrs[key]))}" for key, words in hours if key in attrs]
    for key, words in (("objective", "objective"), ("admission", "admission"), ("unplaceable", "unplaceable jobs:"),
                       ("arrival_window", "arrivals over"), ("workload_workload", "workload"),
                       ("workload_curve", "throughput curves")):
        if key in attrs:
            parts.append(f"{words} {attrs[key]}")
    if attrs.get("unplaceable") == "queue" and "max_wait_h" in attrs:  # a wait only a queue has
        wait = float(attrs["max_wait_h"])
        parts.append("waiting without limit" if wait == float("inf") else f"waiting at most {format_hours(wait)}")
    if "seeds" in attrs:
        parts.append(f"seeds {attrs['seeds']}")
    return "fixed: " + ", ".join(parts)


# Docstring parts that several docstrings share, written once: a docstring names one as %(name)s.
_DOC_PARTS = {
    "path_and_returns": """\
path : str or pathlib.Path, optional
    Where to save the figure (its format from the suffix).

Returns
-------
matplotlib.figure.Figure
    The figure, saved to `path` when one is given.""",
}


def cluster_figure(ds, path=None):
    """GPU utilisation over time and the distribution of job completion times,
    one curve per policy, with the fixed parameters in a caption.

    Parameters
    ----------
    ds : xarray.Dataset
        A Dataset from `simulate_cluster` (dims time x policy).
    %(path_and_returns)s
    """
    fig, left, right = _two_panels()
    n_gpus = ds.attrs.get("n_gpus", 1)
    for i, policy in enumerate(ds.policy.values.tolist()):
        style = _style(policy)
        line = dict(color=style["color"], ls=style["ls"], lw=max(style["lw"] - 1.5, 1.0), zorder=2 + i / 10)
        p = ds.sel(policy=policy)
        left.plot(ds.time, p.gpu_utilisation, label=policy, **line)
        jct = np.sort(p.jct.values[np.isfinite(p.jct.values)])
        if jct.size:
            right.step(jct, np.arange(1, jct.size + 1), where="post", label=f"{policy}: {jct.size} completed, "
                       f"mean {jct.mean():.3g} h", **line)
    if float(ds.gpus_up.min()) < n_gpus:
        left.plot(ds.time, ds.gpus_up / n_gpus, color="0.5", lw=0.8, label="GPUs up / GPUs")
    left.set(xlabel="time (h)", ylabel="GPUs held by jobs / GPUs (fraction)", ylim=(0, 1.05),
             title=f"utilisation, {n_gpus} GPUs")
    right.set(xscale="log", xlabel="job completion time (h)", ylabel="jobs completed within that time (jobs)",
              title="job completion times")
    left.legend(fontsize=8)
    if right.get_lines():  # none where no job completed: said in the panel, not an empty legend's warning
        plain_log_axis(right.xaxis)
        right.legend(fontsize=8, loc="upper left")
    else:
        right.text(0.5, 0.5, "no job completed under any policy", transform=right.transAxes, ha="center")
    return _captioned(fig, ds.attrs, path)


def load_sweep_figure(sweep, path=None):
    """Jobs completed and mean completion time against arrival rate, per policy.

    Parameters
    ----------
    sweep : xarray.Dataset
        Dims arrival_rate x policy, with the variables completed, submitted
        and jct_mean.
    %(path_and_returns)s
    """
    fig, left, right = _two_panels()
    rates = sweep.arrival_rate.values
    for i, policy in enumerate(sweep.policy.values.tolist()):
        p = sweep.sel(policy=policy)
        style = _style(policy)
        left.plot(rates, p.completed / p.submitted, label=policy, zorder=2 + i / 10, **style)
        right.plot(rates, p.jct_mean, label=policy, zorder=2 + i / 10, **style)
    left.set(xscale="log", xlabel="arrival rate (jobs/h)", ylabel="jobs completed / jobs submitted (fraction)",
             ylim=(0, 1.05), title=f"jobs completed, {sweep.attrs.get('n_gpus', '?')} GPUs")
    right.set(xscale="log", yscale="log", xlabel="arrival rate (jobs/h)", ylabel="mean completion time (h)",
              title="mean job completion time")
    for ax in (left, right):
        ax.set_xticks(rates, [number_text(r) for r in rates])
        ax.xaxis.set_minor_formatter("")
        ax.legend(fontsize=8)
    plain_log_axis(right.yaxis)
    return _captioned(fig, sweep.attrs, path)


fill_doc_parts(_DOC_PARTS, cluster_figure, load_sweep_figure)


def _two_panels():
    """A figure of two panels side by side, as the cluster figures draw them: (figure, left, right)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.9), layout="constrained")
    left, right = fig.subplots(1, 2)
    return fig, left, right


def _captioned(fig, attrs: dict, path):
    """Caption `fig` with the fixed parameters of `attrs` (`cluster_caption`), save it to `path` if given."""
    fig.supxlabel(cluster_caption(attrs), fontsize=8, color="0.2", wrap=True)
    if path is not None:
        save_figure(fig, path)
    return fig
