"""A run's observed ETTR and its badput, measured from its record (the study's definition).

ETTR = productive time / wall-clock time of the run, from its first attempt's
start to its end, queue time after interruptions included. Wall time splits
exactly (integer nanoseconds) into productive compute, checkpoint writes,
waits for persistence, lost work, restarts (initialisation after an
interruption, failed ones included), the first attempt's startup and queue
waits: the components of `simulate`, plus startup, which the model has not.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import xarray as xr

from .._checks import MAX_COUNT, check_integer
from .._fit import poisson_rate_interval
from .._scenario import DEFAULT_GPUS_PER_NODE
from .._version import __version__
from .._taxonomy import load as load_taxonomy
from ._events import NS_PER_H, RunRecord, RunRecordError

MEASURED_COMPONENTS = ("productive", "checkpoint", "persist_wait", "lost", "restart", "startup", "queue")
# Logs round times and durations apart: a write or wait logged up to this much longer than the time since
# the attempt's previous event is taken to start at that event (docs: user-guide/run-record.md).
ROUNDING_NS = 5 * 10**6


@dataclasses.dataclass(slots=True)
class Attempt:
    """One attempt of a run (instants in ns since the epoch).

    Parameters
    ----------
    start : int
        Its attempt_start.
    first_step : int, default -1
        Its first step (-1: none, or not known).
    end : int, default -1
        Where it ended.
    ended_by : str, default ""
        "run_end", "failure", "interruption" or "record end".
    """

    start: int
    first_step: int = -1
    end: int = -1
    ended_by: str = ""


@dataclasses.dataclass(slots=True)
class Interruption:
    """One failure or planned interruption of a run (ns).

    Parameters
    ----------
    time : int
        When it struck (ns since the epoch).
    kind : str
        "failure" or "interruption".
    reason : str
        The reason the record gives ("" where none).
    lost_before : int
        The run's lost work up to it (the walk's running total).
    lost : int, default 0
        The work it lost: what the restore after it threw away.
    queue_after : int, default -1
        The queue wait after it (-1: the record ends first).
    restart_after : int, default -1
        The restart after it, up to its first step or the next failure (-1: none).
    restart_completed : bool, default False
        Whether that restart reached its first step.
    runtime_at : int, default 0
        The run's runtime (wall less queue) at it.
    compute_at : int, default -1
        Compute where it struck, before the wait it cut short (a write cut
        short counts as compute; -1: it struck in an initialisation).
    wait_cut : int, default 0
        The wait for persistence it cut short.
    """

    time: int
    kind: str
    reason: str
    lost_before: int
    lost: int = 0
    queue_after: int = -1
    restart_after: int = -1
    restart_completed: bool = False
    runtime_at: int = 0
    compute_at: int = -1
    wait_cut: int = 0


class _Saved(NamedTuple):
    """A checkpoint on the run's path, as the walk keeps it (ns)."""

    value: int  # compute and writes up to its end
    compute: int  # compute alone
    step: int
    path_end: int  # how many of the path's spans end by it


class Write(NamedTuple):
    """One checkpoint write of a run (ns)."""

    position: int  # compute done when it started
    duration: int
    wait: int  # for the previous write to persist, before it
    end: int  # ns since the epoch
    attempt: int  # the attempt that wrote it (0: the first)


@dataclasses.dataclass
class Timeline:
    """A record's timeline, measured (ns): totals, and per attempt and interruption.

    Parameters
    ----------
    start, end : int
        The run's first and last instants (ns since the epoch).
    ended : bool
        Whether the record has the run's end.
    totals : dict
        Component -> ns (None where the record cannot say).
    attempts : list of Attempt
        The run's attempts, in order.
    interruptions : list of Interruption
        Its failures and planned interruptions, in order.
    writes : list of Write
        Its completed checkpoint writes, in order.
    restore_depths : list
        Per interruption: checkpoints its restore fell back past the latest.
    kept_positions : list of int
        Compute (ns) at which each write on the run's final path began: the
        checkpoints its end kept, in order.
    notes : list
        Remarks on how the record was read.
    spans : dict
        Where each stretch of the wall went, {kind: [(start, end), ...]} in ns
        since the run's start: the components' names (a component's spans add
        up to its total), or "attempt" and "queue" alone without trainer events.
    """

    start: int
    end: int
    ended: bool
    totals: dict  # component -> ns (None where the record cannot say)
    attempts: list[Attempt]
    interruptions: list[Interruption]
    writes: list[Write]
    restore_depths: list  # per interruption: checkpoints fallen back past the latest (0: the latest)
    kept_positions: list
    notes: list
    spans: dict


def timeline(record: RunRecord) -> Timeline:
    """Walk the record's events and account for every nanosecond of the run.

    Parameters
    ----------
    record : RunRecord
        The run.

    Returns
    -------
    Timeline
        Every nanosecond of the run, accounted.

    Raises
    ------
    RunRecordError
        On events that contradict each other (naming the file's line).
    """
    walk = _Walk(record)
    for i in range(walk.first, len(walk.kinds)):
        walk.event(i)
    return walk.finish()


class _Walk:
    """A walk through a record's events, in time order: the run's clock, the
    work on its path (compute and writes, with the checkpoints it could restore),
    and every stretch of wall time accounted to one component."""

    def __init__(self, record: RunRecord):
        ev = record.events
        self.record, self.ev = record, ev
        self.times, self.kinds = ev.time_ns.values, ev.kind.values
        self.steps, self.durations, self.waits = ev.step.values, ev.duration_ns.values, ev.wait_ns.values
        self.reasons, self.lines = ev.reason.values, ev.line.values
        self.files = ev.file.values if "file" in ev else np.full(ev.sizes["event"], record.summary.sources[0])
        self.notes = []
        starts = np.flatnonzero(self.kinds == "attempt_start")
        if starts.size == 0:
            self.notes.append("no attempt_start: the run starts at its first event")
        self.first = 0 if starts.size == 0 else int(starts[0])
        if self.first > 0:
            self.fail(0, "time", "an event before the run's first attempt_start")
        self.start = int(self.times[0])
        self.phase = "init"  # init | run | down | ended
        self.clock = self.start
        self.value = self.compute = 0
        self.stack = [_Saved(0, 0, 0, 0)]  # the checkpoints on the run's path, oldest first
        self.restorable = {0: 0}  # step -> stack depth
        self.spans = {kind: [] for kind in (*MEASURED_COMPONENTS, "attempt")}
        self.path = []  # the path's compute and writes (start, end, kind); a restore makes those above it lost
        self.totals = dict.fromkeys(MEASURED_COMPONENTS, 0)
        self.attempts = [Attempt(self.start)]
        self.interruptions, self.writes, self.depths = [], [], []
        self.down_at = -1
        self.rounding = []  # (line, ns) of the durations logged past the previous event, by rounding
        self.first_attempt = True

    def fail(self, i, field, why):
        raise RunRecordError(str(self.files[i]), int(self.lines[i]), field, why)

    def span(self, kind, a, b):
        self.spans[kind].append((a - self.start, b - self.start))

    def rounded(self, i, before, duration, wait, field):
        """A write's duration and wait (ns; -1: none), as logged, that end at this event, from `before` it
        (ns, <= 0) at the previous one: up to `ROUNDING_NS` too long is rounding, taken off them."""
        duration, wait = max(duration, 0), max(wait, 0)
        over = duration + wait + before
        if over > ROUNDING_NS:
            self.fail(i, field, f"the {'write' if field == 'duration_s' else 'wait'} would start {over / 1e6:g} ms "
                                f"before the previous event of the attempt (more than the {ROUNDING_NS // 10**6} ms "
                                "that rounding explains)")
        if over > 0:
            self.rounding.append((int(self.lines[i]), over))
            cut = min(over, duration)
            duration, wait = duration - cut, wait - (over - cut)
        return duration, wait

    def restore(self, depth_from_top):
        """Back to a checkpoint on the path (`depth_from_top` below the latest): the work since is lost."""
        stack = self.stack
        if depth_from_top:  # the checkpoints above the one restored are gone (only theirs: linear in writes)
            keep = len(stack) - depth_from_top
            for saved in stack[keep:]:
                if self.restorable.get(saved.step, -1) >= keep:
                    del self.restorable[saved.step]
            del stack[keep:]
        self.totals["lost"] += self.value - stack[-1].value
        self.value, self.compute = stack[-1].value, stack[-1].compute
        for a, b, _ in self.path[stack[-1].path_end:]:
            self.span("lost", a, b)
        del self.path[stack[-1].path_end:]

    def event(self, i):
        t, kind = int(self.times[i]), str(self.kinds[i])
        if self.phase == "ended":
            self.fail(i, "event", "an event after run_end")
        if kind == "attempt_start":
            if i != self.first:
                self.attempt_start(i, t)
        elif kind == "checkpoint_restored":
            self.checkpoint_restored(i)
        elif kind == "first_step":
            self.first_step(i, t)
        elif kind in ("checkpoint_written", "step", "run_end"):
            self.progress(i, t, kind)
        else:  # failure, interruption
            self.interruption(i, t, kind)

    def attempt_start(self, i, t):
        if self.phase in ("init", "run"):
            self.fail(i, "event", "an attempt_start while an attempt runs (its failure or interruption is missing)")
        self.totals["queue"] += t - self.down_at
        self.span("queue", self.down_at, t)
        self.interruptions[-1].queue_after = t - self.down_at
        self.attempts.append(Attempt(t))
        self.clock, self.phase = t, "init"
        self.restore(0)
        self.depths.append(0)

    def checkpoint_restored(self, i):
        if self.phase != "init":
            self.fail(i, "event", "checkpoint_restored outside an attempt's initialisation")
        step = int(self.steps[i])
        if step not in self.restorable:
            self.fail(i, "step", f"no restorable checkpoint of step {step} on the run's path")
        depth = len(self.stack) - 1 - self.restorable[step]
        if depth:
            self.restore(depth)
            if self.depths:
                self.depths[-1] += depth

    def starting_up(self, t, completed: bool):
        """The time from the attempt's start to `t`: its startup, or the restart after an interruption."""
        spent = t - self.clock
        kind = "startup" if self.first_attempt else "restart"
        self.totals[kind] += spent
        self.span(kind, self.clock, t)
        if not self.first_attempt:
            self.interruptions[-1].restart_after, self.interruptions[-1].restart_completed = spent, completed

    def first_step(self, i, t):
        if self.phase != "init":
            self.fail(i, "event", "first_step outside an attempt's initialisation")
        self.starting_up(t, True)
        self.attempts[-1].first_step = t
        self.clock, self.phase = t, "run"

    def progress(self, i, t, kind):
        """A checkpoint written, a step, or the run's end: compute (and a write) up to `t`."""
        if self.phase == "init":  # an attempt without first_step: its initialisation is not known
            self.notes.append(f"line {int(self.lines[i])}: an attempt with no first_step (initialisation counted as "
                              "compute)")
            self.attempts[-1].first_step = self.clock
            self.phase = "run"
        elif self.phase != "run":
            self.fail(i, "event", f"a {kind} event outside an attempt (after a failure or the run's end)")
        clock = self.clock
        if kind == "checkpoint_written":
            d, w = self.rounded(i, clock - t, int(self.durations[i]), int(self.waits[i]), "duration_s")
            begin = t - d - w
            self.value += begin - clock
            self.compute += begin - clock
            self.writes.append(Write(self.compute, d, w, t, len(self.attempts) - 1))
            self.totals["persist_wait"] += w
            self.value += d
            self.path.append((clock, begin, "productive"))
            self.span("persist_wait", begin, begin + w)
            self.path.append((begin + w, t, "checkpoint"))
            self.stack.append(_Saved(self.value, self.compute, int(self.steps[i]), len(self.path)))
            self.restorable[int(self.steps[i])] = len(self.stack) - 1
        else:
            self.value += t - clock
            self.compute += t - clock
            self.path.append((clock, t, "productive"))
        self.clock = t
        if kind == "run_end":
            self.attempts[-1].end, self.attempts[-1].ended_by = t, "run_end"
            self.phase = "ended"

    def interruption(self, i, t, kind):
        """A failure or planned interruption: the attempt ends; where it struck is kept for the replay."""
        if self.phase in ("down", "ended"):
            self.fail(i, "event", f"a {kind} outside an attempt")
        struck = Interruption(t, kind, str(self.reasons[i]), lost_before=self.totals["lost"])
        if self.phase == "init":
            self.starting_up(t, False)
        else:  # compute (a write cut short looks the same), then the wait it cut short (wait_s) where logged
            _, w = self.rounded(i, self.clock - t, 0, int(self.waits[i]), "wait_s")
            struck.compute_at, struck.wait_cut = self.compute + t - w - self.clock, w
            self.value += t - w - self.clock
            self.compute += t - w - self.clock
            self.totals["persist_wait"] += w
            self.path.append((self.clock, t - w, "productive"))
            self.span("persist_wait", t - w, t)
        self.attempts[-1].end, self.attempts[-1].ended_by = t, kind
        self.interruptions.append(struck)
        self.clock, self.phase, self.down_at = t, "down", t
        self.first_attempt = False

    def finish(self) -> Timeline:
        """The run's end: lost work per interruption, what the path kept, and the totals checked."""
        totals, spans, interruptions, stack = self.totals, self.spans, self.interruptions, self.stack
        start, end = self.start, int(self.times[-1])
        ended = self.phase == "ended"
        if self.rounding:
            lines, over = zip(*self.rounding)
            self.notes.append(f"{len(lines)} write or wait durations up to {max(over) / 1e6:g} ms longer than the time "
                              f"since the previous event (rounding; first at line {lines[0]}): taken to start at it")
        if not ended:
            self.notes.append("the run does not end in the record: measured up to its last event")
            if self.phase == "down":
                self.restore(0)
            else:
                if self.phase == "init":  # an initialisation the record's end cuts short
                    self.starting_up(end, False)
                self.attempts[-1].end, self.attempts[-1].ended_by = end, "record end"
        # Lost work per interruption: what the restore after it cost (the last one, if the record ends down).
        lost_marks = [x.lost_before for x in interruptions] + [totals["lost"]]
        queue_so_far = 0
        for k, x in enumerate(interruptions):
            x.lost = lost_marks[k + 1] - lost_marks[k]
            x.runtime_at = x.time - start - queue_so_far
            queue_so_far += max(x.queue_after, 0)
        for a, b, kind in self.path:  # what the path kept: productive compute and checkpoint writes
            self.span(kind, a, b)
        checkpoint = sum((b.value - a.value) - (b.compute - a.compute) for a, b in zip(stack, stack[1:]))
        totals["checkpoint"] = checkpoint
        totals["productive"] = self.value - checkpoint
        wall = end - start
        if sum(totals.values()) != wall:  # pragma: no cover - every interval is accounted once by construction
            raise AssertionError(f"components {sum(totals.values())} ns != wall {wall} ns")
        if not self.record.has_trainer_events:  # attempts alone: only the run's boundaries are known
            for name in ("productive", "checkpoint", "persist_wait", "lost", "restart", "startup"):
                totals[name] = None
                spans["attempt"] += spans.pop(name)
                spans[name] = []
            self.notes.append("no trainer events: productive time, writes, lost work and restarts are unknown")
        spans = {kind: [(a, b) for a, b in items if b > a] for kind, items in spans.items()}
        return Timeline(start, end, ended, totals, self.attempts, interruptions, self.writes, self.depths,
                        [saved.compute for saved in stack[1:]], self.notes, spans)




def measure_run(record: RunRecord, *, n_gpus: int | None = None, gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
                taxonomy="meta-2024") -> xr.Dataset:
    """Measure a run's ETTR and badput from its record.

    Parameters
    ----------
    record : RunRecord
        From `read_run` (or `simulate_run`).
    n_gpus : int, optional
        GPUs of the run (default: the record's, and each attempt's own where
        sacct gives attempts of different sizes); needed for the failure rate
        per node-day.
    gpus_per_node : int, default 8
        GPUs of a node, as `Scenario.gpus_per_node`: the run's nodes are
        ``ceil(n_gpus / gpus_per_node)``.
    taxonomy : Taxonomy or str, default "meta-2024"
        Says which interruptions are infrastructure failures (by their reason).

    Returns
    -------
    xarray.Dataset
        ``time`` (h) along ``component`` (productive, checkpoint, persist_wait,
        lost, restart, startup, queue; NaN where the record cannot say) and
        ``time_ns`` (the same, exact integer ns; -1 where unknown), which add
        up to ``wall_ns``;
        ``wall``, ``runtime`` (wall less queue), ``ettr`` (productive / wall),
        ``ettr_model_terms`` (productive / (wall - startup): the model has no
        startup), counts (``interruptions``, ``failures``, ``planned``,
        ``infrastructure``, ``attempts``, ``writes``), measured inputs
        (``checkpoint_interval``, ``checkpoint_cost``, ``restart_cost``,
        ``queue_wait``, ``startup_time``: means, h), the interruption rate
        per hour of runtime and, with GPUs, ``node_day_rate``, interruptions
        (planned ones too: each interrupts the job, as a failure does in the
        model) per node-day of runtime, with its exact Poisson interval
        (``node_day_rate_low``, ``node_day_rate_high``);
        per interruption (dim ``interruption``): ``interruption_time``,
        ``interruption_kind``, ``interruption_reason``, ``interruption_lost``,
        ``interruption_queue``, ``interruption_restart`` (h; NaN where not
        known); ``interruptions_by_reason``. Provenance in attrs.
    """
    return measure_timeline(record, timeline(record), n_gpus=n_gpus, gpus_per_node=gpus_per_node,
                            taxonomy=taxonomy)


def measure_timeline(record: RunRecord, tl: Timeline, *, n_gpus: int | None = None,
                     gpus_per_node: int = DEFAULT_GPUS_PER_NODE, taxonomy="meta-2024") -> xr.Dataset:
    """`measure_run` of a record whose `timeline` is walked already (by a caller that also needs it).

    Parameters
    ----------
    record : RunRecord
        The run.
    tl : Timeline
        ``timeline(record)``.
    n_gpus : int, optional
        As for `measure_run`.
    gpus_per_node : int, default 8
        As for `measure_run`.
    taxonomy : Taxonomy or str, default "meta-2024"
        As for `measure_run`.

    Returns
    -------
    xarray.Dataset
        As `measure_run` returns it.
    """
    tax = load_taxonomy(taxonomy)
    gpus = n_gpus if n_gpus is not None else record.n_gpus
    gpus_per_node = check_integer("gpus_per_node", gpus_per_node, 1, MAX_COUNT)
    hours = {k: (np.nan if v is None else v / NS_PER_H) for k, v in tl.totals.items()}
    wall = (tl.end - tl.start) / NS_PER_H
    runtime = wall - hours["queue"]
    inter = tl.interruptions
    kinds = np.array([x.kind for x in inter], dtype=object).astype(str)
    reasons = np.array([x.reason or "unknown" for x in inter], dtype=object).astype(str)
    infrastructure = [tax.is_infrastructure(*_state_and_cause(x.reason)) for x in inter]
    n = len(inter)
    completed_restarts = [x.restart_after for x in inter if x.restart_completed]
    queue_waits = [x.queue_after for x in inter if x.queue_after >= 0]
    # Compute between checkpoints on the final path: work redone after a fall-back, perhaps at another
    # pace, counts once.
    kept = tl.kept_positions
    interval = kept[-1] / len(kept) / NS_PER_H if kept else np.nan
    first = tl.attempts[0]
    first_init = first.first_step - first.start if first.first_step >= 0 else None
    values = {
        "wall": wall, "runtime": runtime,
        "ettr": hours["productive"] / wall if wall > 0 else np.nan,
        "ettr_model_terms": hours["productive"] / (wall - hours["startup"]) if wall > hours["startup"] else np.nan,
        "interruptions": n, "failures": int((kinds == "failure").sum()),
        "planned": int((kinds == "interruption").sum()),
        "infrastructure": int(sum(infrastructure)), "attempts": len(tl.attempts), "writes": len(tl.writes),
        "checkpoint_interval": interval,
        "checkpoint_cost": float(np.mean([w.duration for w in tl.writes])) / NS_PER_H if tl.writes else np.nan,
        "restart_cost": float(np.mean(completed_restarts)) / NS_PER_H if completed_restarts else np.nan,
        "queue_wait": float(np.mean(queue_waits)) / NS_PER_H if queue_waits else np.nan,
        "startup_time": first_init / NS_PER_H if first_init is not None and record.has_trainer_events else np.nan,
        "interruption_rate": n / runtime if runtime > 0 else np.nan,
    }
    if gpus:
        node_days = _node_days(tl, record.attempt_gpus if n_gpus is None else {}, gpus, gpus_per_node, runtime)
        low, high = poisson_rate_interval(n, node_days) if node_days > 0 else (np.nan, np.nan)
        values.update(node_day_rate=n / node_days if node_days > 0 else np.nan, node_day_rate_low=low,
                      node_day_rate_high=high)
    labels, counts = np.unique(reasons, return_counts=True) if n else (np.array([], str), np.array([], int))
    order = np.argsort(-counts, kind="stable")
    ds = xr.Dataset(
        {"time": ("component", [hours[c] for c in MEASURED_COMPONENTS]),
         "time_ns": ("component", np.array([-1 if tl.totals[c] is None else tl.totals[c] for c in MEASURED_COMPONENTS],
                                           dtype=np.int64)),
         "wall_ns": tl.end - tl.start,
         **{k: ((), v) for k, v in values.items()},
         **_per_interruption(inter, kinds, reasons, infrastructure, record.has_trainer_events),
         "interruptions_by_reason": ("reason", counts[order].astype(np.int64))},
        coords={"component": list(MEASURED_COMPONENTS), "interruption": np.arange(n), "reason": labels[order]},
        attrs={"relmodel_version": __version__, "sources": " + ".join(record.summary.sources),
               "n_gpus": -1 if not gpus else int(gpus), "gpus_per_node": gpus_per_node,
               "ended": int(tl.ended), "notes": "; ".join(tl.notes),
               "definition": "ettr = productive / wall; wall from the first attempt's start to the run's end, "
                             "queue waits after interruptions included", "taxonomy": tax.name},
    )
    for name in ("time", "wall", "runtime", "checkpoint_interval", "checkpoint_cost", "restart_cost", "queue_wait",
                 "startup_time", "interruption_runtime", "interruption_lost", "interruption_queue",
                 "interruption_restart"):
        ds[name].attrs["units"] = "h"
    ds["interruption_rate"].attrs["units"] = "1/h of runtime"
    if gpus:
        for name in ("node_day_rate", "node_day_rate_low", "node_day_rate_high"):
            ds[name].attrs["units"] = "1/node-day"
    return ds


def _node_days(tl: Timeline, attempt_gpus: dict, gpus: int, gpus_per_node: int, runtime_h: float) -> float:
    """The run's runtime in node-days: each attempt at its own size where sacct gives the sizes, else all at
    the run's."""
    if not attempt_gpus:
        return runtime_h / 24.0 * -(-gpus // gpus_per_node)
    node_ns = sum((a.end - a.start) * -(-attempt_gpus.get(a.start, gpus) // gpus_per_node) for a in tl.attempts)
    return node_ns / (24 * NS_PER_H)


def _per_interruption(inter: list, kinds, reasons, infrastructure: list, known: bool) -> dict:
    """Each interruption's variables: when and what, and what it cost in hours (NaN: unknown) and in exact
    ns (-1: unknown); its lost work is known only with the trainer's events."""
    exact = {"lost": [x.lost if known else -1 for x in inter], "queue": [x.queue_after for x in inter],
             "restart": [x.restart_after for x in inter]}
    return {
        "interruption_time": ("interruption",
                              np.array([x.time for x in inter], dtype=np.int64).astype("datetime64[ns]")),
        "interruption_runtime": ("interruption", np.array([x.runtime_at / NS_PER_H for x in inter], dtype=float)),
        "interruption_kind": ("interruption", kinds), "interruption_reason": ("interruption", reasons),
        **{f"interruption_{k}": ("interruption", np.array([v / NS_PER_H if v >= 0 else np.nan for v in ns],
                                                          dtype=float)) for k, ns in exact.items()},
        "interruption_restart_completed": ("interruption", np.array([x.restart_completed for x in inter], dtype=bool)),
        "interruption_infrastructure": ("interruption", np.array(infrastructure, dtype=bool)),
        **{f"interruption_{k}_ns": ("interruption", np.array(ns, dtype=np.int64)) for k, ns in exact.items()},
    }


def _state_and_cause(reason: str) -> tuple[str, str]:
    """An interruption's reason as (scheduler state, cause) for the taxonomy: "NODE_FAIL: xid 79" or free text."""
    head, _, rest = reason.partition(":")
    if head.strip().isupper() and " " not in head.strip():
        return head.strip(), rest.strip()
    return "FAILED", reason
