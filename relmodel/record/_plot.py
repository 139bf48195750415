"""A run's record drawn: its timeline, and its ETTR beside the model's (matplotlib `Figure`, no pyplot state)."""

from __future__ import annotations

import numpy as np

from ..plot import _caption
from .._store import save_figure
from .._units import format_hours
from ._events import NS_PER_H

NS_PER_DAY = 24 * NS_PER_H
# Span kinds of the timeline, bottom of the drawing order first; the measured components share their names.
COLORS = {"productive": "#5aa55a", "attempt": "#bdbdbd", "lost": "#d62728", "checkpoint": "#1f5fa8",
          "persist_wait": "#8fbce6", "restart": "#f28e2b", "startup": "#9c6b30", "queue": "#3d3d3d"}
MEANS = (("checkpoint_interval", "checkpoint interval"), ("checkpoint_cost", "write"),
         ("restart_cost", "restart"), ("queue_wait", "queue wait"), ("startup_time", "first startup"))
LABELS = {"productive": "productive compute", "attempt": "attempt (no trainer events)",
          "checkpoint": "checkpoint writes", "persist_wait": "waits for persistence", "restart": "restarts",
          "startup": "first startup", "queue": "queue waits", "lost": "lost work (thrown away by a restore)"}


def _hours(h: float) -> str:
    return f"{h:,.1f} h" if h >= 10 else f"{h:.3g} h"


def _band(ax, spans, days, outline: bool, y=0.0, height=1.0):
    """The spans as one band, to scale (zoomed, `outline`: spans under a pixel wide drawn one pixel wide)."""
    for kind, items in spans.items():
        if items:
            bars = [(a / NS_PER_DAY, (b - a) / NS_PER_DAY) for a, b in items]
            thin = outline and kind not in ("productive", "attempt")
            edges = dict(edgecolor=COLORS[kind], linewidth=0.4) if thin else dict(linewidth=0)
            ax.broken_barh(bars, (y, height), facecolors=COLORS[kind], **edges)
    ax.set_ylim(-0.15, 1.55)
    ax.set_yticks([])
    for when, color in days:
        ax.plot(when, np.full(len(when), 1.25), "|", ms=7, mew=0.8, color=color)


def run_figure(record, prediction=None, path=None, *, measured=None):
    """Draw a run's record: its timeline, and its ETTR beside the model's prediction or its components.

    Top: the whole run as one band along days since its first event, each
    span coloured by what the time went to (productive compute, checkpoint
    writes, lost work, restarts, startup, queue waits), with a tick per
    interruption; below it, the busiest day of the run at a readable scale.
    Bottom: with `prediction`, one run's simulated ETTR (5-95% whiskers,
    25-75% box, median), the renewal prediction and the observed ETTR; else
    the measured components in hours as one stacked bar. A caption names the
    record's sources.

    Parameters
    ----------
    record : RunRecord
        The run (`read_run` or `simulate_run`).
    prediction : xarray.Dataset, optional
        From `predict_run` on this record.
    path : str or os.PathLike, optional
        Save the figure here when given.
    measured : xarray.Dataset, optional
        `measure_run` of this record (computed when not given).

    Returns
    -------
    matplotlib.figure.Figure
        The figure (saved to `path` when given).
    """
    from matplotlib.figure import Figure

    from ._measure import measure_timeline, timeline

    tl = timeline(record)  # its spans are what measure_run adds up
    measured = measure_timeline(record, tl) if measured is None else measured
    fig = Figure(figsize=(12, 8), layout="constrained")
    full, zoom, lower = fig.subplots(3, 1, height_ratios=[1.1, 1.1, 1.3])
    _draw_timeline(full, zoom, record, tl.spans)
    if prediction is not None:
        _draw_prediction(lower, prediction)
    else:
        _draw_components(lower, record, measured)
    _caption(fig, _sources_and_means(record, measured))
    if path is not None:
        save_figure(fig, path)
    return fig


def _draw_timeline(full, zoom, record, spans):
    """The whole run as one band, with a tick per interruption and its spans' totals in the legend; below it,
    the busiest day zoomed."""
    ev = record.events
    t0, end = int(ev.time_ns.values[0]), (int(ev.time_ns.values[-1]) - int(ev.time_ns.values[0])) / NS_PER_DAY
    kinds = ev.kind.values
    at = {k: (ev.time_ns.values[kinds == k] - t0) / NS_PER_DAY for k in ("failure", "interruption")}
    ticks = [(at["failure"], "k"), (at["interruption"], "#6a3d9a")]
    _band(full, spans, ticks, False)
    full.set(xlim=(0, max(end, 1e-9)), xlabel="days since the run's start",
             title=f"the run to scale: {end:.1f} days, {len(at['failure'])} unexpected interruptions (black ticks), "
                   f"{len(at['interruption'])} planned (purple ticks)")
    every = np.sort(np.concatenate([at["failure"], at["interruption"]]))
    width = min(1.0, end)
    # The 24 h with the most interruptions, from 2 h before the first of them.
    counts = np.searchsorted(every, every - 1 / 12 + width, side="right") - np.arange(every.size)
    x0 = min(max(every[int(np.argmax(counts))] - 1 / 12, 0.0), max(end - width, 0.0)) if every.size else 0.0
    inside = int(((every >= x0) & (every <= x0 + width)).sum())
    _band(zoom, spans, ticks, True)
    zoom.set(xlim=(x0, x0 + max(width, 1e-9)), xlabel="days since the run's start",
             title=f"the busiest day, zoomed: days {x0:.2f} to {x0 + width:.2f} ({inside} interruptions; spans "
                   f"under a pixel drawn a pixel wide)")
    full.axvspan(x0, x0 + width, ymin=0.02, ymax=0.98, fill=False, ec="k", lw=0.8, ls="--")
    totals = {k: sum(b - a for a, b in v) / NS_PER_H for k, v in spans.items()}
    handles = [full.fill_between([], [], color=COLORS[k], label=f"{LABELS[k]}: {_hours(totals[k])}")
               for k in COLORS if spans[k]]
    full.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.12), ncols=4, fontsize=8, frameon=False)


def _draw_prediction(ax, prediction):
    """One run's simulated ETTR as a box and whiskers, beside the predictions and the observed ETTR."""
    q = prediction.run_ettr_quantile.sel(quantile=[0.05, 0.25, 0.5, 0.75, 0.95]).values
    ax.hlines(0, q[0], q[4], color="0.3", lw=1.2)
    ax.vlines([q[0], q[4]], -0.12, 0.12, color="0.3", lw=1.2)
    ax.broken_barh([(q[1], q[3] - q[1])], (-0.25, 0.5), facecolors="#c6dbef", edgecolor="0.3",
                   label="one run's ETTR, simulated: 25-75% box, 5-95% whiskers")
    ax.vlines(q[2], -0.25, 0.25, color="0.3", lw=2, label="median of the simulated runs")
    renewal = float(prediction.predicted_ettr_renewal)
    ax.vlines(renewal, -1, 0.5, color="C0", ls="--", lw=1.2, label=f"renewal prediction {renewal:.3f}")
    if "assumed_ettr" in prediction:
        assumed = float(prediction.assumed_ettr)
        ax.vlines(assumed, -1, 0.5, color="C2", ls=":", lw=1.5, label=f"the assumed plan's prediction {assumed:.3f}")
    observed = float(prediction.observed_ettr_model_terms)
    ax.plot(observed, 0, "*", ms=15, mfc="C3", mec="k", ls="none",
            label=f"observed {observed:.3f} (less startup; with it {float(prediction.observed_ettr):.3f})")
    values = np.concatenate([q, [renewal, observed, float(prediction.get("assumed_ettr", renewal))]])
    pad = max(0.02, 0.08 * float(values.max() - values.min()))
    ax.set(xlim=(values.min() - pad, values.max() + pad), ylim=(-1, 1.2), yticks=[],
           xlabel="ETTR (productive / wall-clock, fraction)",
           title=f"ETTR: the observed run is at quantile {float(prediction.observed_quantile):.2f} of "
                 f"{prediction.attrs.get('n_runs', '')} simulated runs "
                 f"(scenario {prediction.attrs.get('scenario_source', '')})")
    ax.legend(loc="upper left", fontsize=8, ncols=2, frameon=False)


def _draw_components(ax, record, measured):
    """The measured components in hours as one stacked bar."""
    from ._measure import MEASURED_COMPONENTS

    parts = {name: float(measured.time.sel(component=name)) for name in MEASURED_COMPONENTS}
    if not record.has_trainer_events:  # the attempts' time is all the record can say
        parts = {"attempt": float(measured.runtime), "queue": parts["queue"]}
    left = 0.0
    for name, hours in parts.items():
        if hours > 0:
            ax.barh(0, hours, left=left, height=0.5, color=COLORS[name], label=f"{LABELS[name]}: {_hours(hours)}")
            left += hours
    ettr = float(measured.ettr)
    ax.set(ylim=(-0.6, 1.3), yticks=[], xlim=(0, max(float(measured.wall), 1e-9)),
           xlabel="hours of wall-clock time", title=f"where the {float(measured.wall):,.1f} h went: ETTR "
           + (f"{ettr:.3f}" if np.isfinite(ettr) else "unknown (no trainer events)"))
    ax.legend(loc="upper left", fontsize=8, ncols=4, frameon=False)


def _sources_and_means(record, measured) -> str:
    """The caption: the record's sources and start, and the measured means."""
    gpus = f"{record.n_gpus:,} GPUs; " if record.n_gpus else ""
    means = [f"{label} {format_hours(float(measured[name]))}" for name, label in MEANS
             if np.isfinite(float(measured[name]))]
    rate = (f"; {float(measured.node_day_rate) * 1000:.2f} interruptions per 1000 node-days"
            if "node_day_rate" in measured else "")
    return (f"sources: {' + '.join(record.summary.sources)} ({len(record):,} events; {gpus}started "
            f"{np.datetime_as_string(record.events.time.values[0], unit='s')} UTC)\nmeasured means: "
            + ", ".join(means) + rate)
