"""What a reader of one trainer's own log is: how it recognises the log, and how it turns the log's
lines into a run's events (docs: user-guide/trainer-logs.md)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from datetime import timezone
from decimal import Decimal

import numpy as np

from .._events import MAX_STEP, NS_PER_H, EventRow, RunRecordError, event_columns, parse_instant, same_text

DETECT_LINES = 400  # a log is recognised from its first lines


@dataclasses.dataclass(frozen=True)
class TrainerFormat:
    """A trainer's log format.

    Parameters
    ----------
    name : str
        Its name for ``format=`` (``--format``), e.g. "megatron".
    title : str
        The trainers that write it, e.g. "Megatron-LM (and NeMo's Megatron path)".
    detect : callable
        ``detect(lines) -> bool``: whether the first `DETECT_LINES` lines are this format's.
    parse : callable
        ``parse(lines, path, zone) -> EventRow`` of columns (`event_columns`): the events of the whole
        log (every line of the file, in order; `zone` is the tzinfo of times written without one). A
        line it cannot read as it expects raises `RunRecordError` naming the path, the line and what
        was expected.
    reads : str
        The lines it uses, for the docs and ``--help``.
    cannot : str
        What the log does not say (e.g. when a write began), for the docs.
    """

    name: str
    title: str
    detect: Callable
    parse: Callable
    reads: str
    cannot: str


def event(path: str, line: int, time_ns: int, kind: str, *, step: int = -1, duration_ns: int = -1,
          wait_ns: int = -1, reason: str = "") -> EventRow:
    """One event read from line `line` of a trainer's log."""
    return EventRow(time_ns, kind, step, duration_ns, wait_ns, reason, "events", line, path)


def instant(text: str, zone, path: str, line: int) -> int:
    """A time as the log writes it (ISO 8601, Python logging's ``2024-01-01 00:00:00,123``, or epoch
    seconds), in ns since the epoch; without an offset, in `zone`."""
    return parse_instant(text, zone, path, line)


# A time as loggers print it, without an offset, in the years NumPy's datetime64[ns] holds: the times that
# `plain_instants` reads in bulk.
PLAIN_TIME = r"(?:19|20)\d\d-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?"


def plain_instants(texts: list, lines: np.ndarray, zone, path: str) -> np.ndarray:
    """``[instant(t, zone, path, line) ...]`` of times matching `PLAIN_TIME`, read in one NumPy pass.

    Where one is no valid time, or falls in an hour in which `zone`'s offset changes, those are read one by
    one with `instant`, which refuses the first (in the file's order) that it cannot read, naming its line.
    """
    readable = texts
    if any("," in t for t in texts):  # Python logging's decimal comma, which NumPy does not read
        readable = [t.replace(",", ".") for t in texts]
    try:
        naive = np.array(readable, dtype="datetime64[ns]").view(np.int64)
    except ValueError:
        return np.fromiter((instant(t, zone, path, line) for t, line in zip(texts, lines.tolist())), np.int64,
                           len(texts))
    if zone is None or zone is timezone.utc:
        return naive
    hours, which = np.unique(naive // NS_PER_H, return_inverse=True)
    offsets = np.zeros(hours.size, dtype=np.int64)
    changes = np.zeros(hours.size, dtype=bool)  # hours not read with one offset
    for k, hour in enumerate(hours.tolist()):
        begins = hour * NS_PER_H
        try:
            first, last = (parse_instant(str(np.datetime64(begins + at, "ns")), zone, "", 0)
                           for at in (0, NS_PER_H - 1))
        except RunRecordError:
            changes[k] = True
            continue
        changes[k] = last - first != NS_PER_H - 1
        offsets[k] = begins - first
    instants = naive - offsets[which]
    for k in np.flatnonzero(changes[which]).tolist():
        instants[k] = instant(texts[k], zone, path, int(lines[k]))
    return instants


def step_number(text: str, path: str, line: int, what: str, field: str = "step") -> int:
    """A step as a log writes it (digits, at most `MAX_STEP`), or `RunRecordError` naming the line and `field`."""
    if not text.isdigit() or len(text) > 19 or int(text) > MAX_STEP:
        raise RunRecordError(path, line, field, f"{what} {text!r} is not a step number")
    return int(text)


QUICK_CHUNK = 1 << 16  # lines matched at a time: bounds the matches held


class LineReader:
    """What reads a trainer's log line by line into its `AttemptEvents` (``self.run``), as `read_lines`
    hands it the lines: a subclass reads one line (``read(number, raw)``) and takes a run of step lines
    (``step_lines(first_number, time_texts, step_texts)``, passing them to `AttemptEvents.step_lines`)."""

    def __init__(self, path: str, zone):
        self.path, self.zone = path, zone
        self.run = AttemptEvents(path, zone)

    def quick(self) -> bool:
        """Whether a step line now only adds a step (the attempt is open and past its first step)."""
        return self.run.is_open and self.run.started

    def time(self, text: str, line: int) -> int:
        """A time of line `line` (`instant`)."""
        return instant(text, self.zone, self.path, line)


def read_lines(lines: list, reader, quick_line: re.Pattern, needs: str = "") -> None:
    """Hand a log's lines to `reader` in order: each to ``reader.read(number, raw)``, but a run of step lines
    in their common form (`quick_line` matches them, its groups the time, matching `PLAIN_TIME`, and the step,
    of 1 to 18 digits; they contain `needs`) together to ``reader.step_lines(first_number, time_texts,
    step_texts)`` while ``reader.quick()`` says that such a line now only adds a step (`AttemptEvents.step_lines`).
    """
    try:
        for first in range(0, len(lines), QUICK_CHUNK):
            chunk = lines[first:first + QUICK_CHUNK]
            # Only the groups are kept: a chunk's match objects held at once make the garbage collector walk them.
            found = [m.group(1, 2) if m is not None and needs in m.string else None
                     for m in map(quick_line.match, chunk)]
            breaks = np.flatnonzero(np.fromiter((f is None for f in found), bool, len(chunk)))
            k = 0
            while k < len(chunk):
                end = int(breaks[np.searchsorted(breaks, k)]) if breaks.size and breaks[-1] >= k else len(chunk)
                if end > k and reader.quick():
                    run = found[k:end]
                    reader.step_lines(first + k + 1, [f[0] for f in run], [f[1] for f in run])
                    k = end
                else:
                    reader.read(first + k + 1, chunk[k])
                    k += 1
    except RunRecordError:
        reader.run.settle()  # a step line before the line refused may hold the first fault
        raise


MAX_REASON = 120  # characters of an error kept as a failure's reason
RANK_PREFIXES = r"(?:\[(?:rank|default)?\d+\]:\s?)*"  # what torchrun --tee prints before a rank's line
_RANK_PREFIX = re.compile("^" + RANK_PREFIXES)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NCCL_TIMEOUT = re.compile(r"Watchdog caught collective operation timeout|NCCL\b.*\btim(?:ed|ing) ?out", re.IGNORECASE)
_CUDA_ERROR = re.compile(r"CUDA error: (.+)")
_DECIMAL = re.compile(r"\d{1,12}(?:\.\d{1,9})?")
_ROOT_CAUSE = "Root Cause (first observed failure):"  # torchrun's summary when it gives up on the workers
_ROOT_CAUSE_TIME = re.compile(r"time\s*:\s*(\d{4}-\d\d-\d\d)_(\d\d:\d\d:\d\d)")
_EXCEPTION = re.compile(r"([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure|Timeout))(?::\s*(.*))?")


def plain_line(line: str) -> str:
    """A log line without the ``[rank0]:`` torchrun's ``--tee`` puts before each rank's output, nor colour codes."""
    return _RANK_PREFIX.sub("", _ANSI.sub("", line))


def printed_ns(text: str, unit_ns: int, path: str, line: int, field: str) -> int:
    """A duration printed as a decimal number of units of `unit_ns` ns (10**9: seconds), exactly, in ns."""
    if not _DECIMAL.fullmatch(text):
        raise RunRecordError(path, line, field, f"{text!r} is not a duration")
    return int(Decimal(text) * unit_ns)


class ErrorLines:
    """Follows a log's error output line by line: a traceback's exception, an NCCL timeout, a CUDA error."""

    def __init__(self):
        self.in_traceback = False

    def reason(self, text: str) -> str:
        """The failure that `text` (a line, as `plain_line` gives it) shows; "" where it shows none."""
        text = text.strip()
        if text.startswith("Traceback (most recent call last)"):
            self.in_traceback = True
            return ""
        if _NCCL_TIMEOUT.search(text):
            self.in_traceback = False
            return "NCCL timeout"
        cuda = _CUDA_ERROR.search(text)
        if cuda:
            self.in_traceback = False
            return f"CUDA error: {cuda[1].strip()}"[:MAX_REASON]
        exception = _EXCEPTION.fullmatch(text) if self.in_traceback else None
        if exception:
            self.in_traceback = False
            return (exception[1] + (f": {exception[2].strip()}" if exception[2] else ""))[:MAX_REASON]
        return ""


class AttemptEvents:
    """The events of a trainer's log, gathered attempt by attempt as its reader meets them.

    An attempt's failure is the first error its lines show after its last progress (a step printed after an
    error shows that the error was not fatal). Error output carries no time: the failure is placed at the last
    time the log printed before it, or where torchrun's summary follows, at the time it gives for the root
    cause (when it saw the first worker fail). An attempt that reached the trainer's own end of training ends
    there, after any write that followed that line; an error after it (in teardown) is not a failure of the run.

    Parameters
    ----------
    path : str
        The log, for events and errors.
    zone : datetime.tzinfo or None
        The zone of times written without one.
    """

    def __init__(self, path: str, zone):
        self.path, self.zone, self.rows = path, zone, []
        # Step lines taken in bulk: (len(rows) when the run began, its first line, its length) a run; their
        # time texts and steps, read together at the end (`settle`).
        self.runs, self.run_times, self.run_steps = [], [], []
        self.settled = None
        self.root_cause = False  # within torchrun's root-cause summary
        self.errors = ErrorLines()
        self.is_open = self.started = False
        self.last_time = None  # the attempt's latest time printed
        self.failure = self.ending = None

    def add(self, line: int, time_ns: int, kind: str, **fields) -> None:
        """An event of the open attempt."""
        self.rows.append(event(self.path, line, time_ns, kind, **fields))
        if kind in ("checkpoint_written", "checkpoint_restored") and self.ending is not None:
            self.ending = (self.ending[0], max(self.ending[1], time_ns))

    def seen(self, time_ns: int) -> None:
        """A time the log printed in the open attempt."""
        self.last_time = time_ns

    def start(self, line: int, time_ns: int) -> None:
        """A (re)start of the trainer: the previous attempt, if any, ends."""
        self.close()
        self.is_open, self.started, self.last_time = True, False, time_ns
        self.add(line, time_ns, "attempt_start")

    def first_step(self, line: int, time_ns: int, step: int) -> None:
        """The end of the attempt's initialisation, before the training step `step`."""
        self.started, self.failure = True, None
        self.add(line, time_ns, "first_step", step=step)

    def step(self, line: int, time_ns: int, step: int) -> None:
        """Training progress: the attempt's first step where its initialisation's end was not printed."""
        self.failure = None
        if self.started:
            self.add(line, time_ns, "step", step=step)
        else:
            self.first_step(line, time_ns, step)

    def step_lines(self, first: int, times: list, steps: list) -> None:
        """Step lines `first`, `first` + 1, ... of the open attempt past its first step (`read_lines`), as `step`
        would take each: the last one's time is read now, the others with it at the end (`settle`)."""
        self.runs.append((len(self.rows), first, len(times)))
        self.run_times += times
        self.run_steps += map(int, steps)
        self.failure, self.last_time = None, instant(times[-1], self.zone, self.path, first + len(times) - 1)

    def settle(self) -> EventRow:
        """The step lines taken in bulk, as columns; the first (in the file's order) whose time is refused
        raises `RunRecordError`."""
        if self.settled is None:
            lengths = np.array([n for _, _, n in self.runs], dtype=np.int64)
            starts = np.array([first for _, first, _ in self.runs], dtype=np.int64)
            offsets = np.repeat(np.cumsum(lengths) - lengths, lengths)
            lines = np.repeat(starts, lengths) + np.arange(lengths.sum()) - offsets
            time_ns = plain_instants(self.run_times, lines, self.zone, self.path)
            self.settled = step_columns(time_ns, np.array(self.run_steps, dtype=np.int64), lines, self.path)
            self.run_times = self.run_steps = None
        return self.settled

    def error(self, line: int, text: str) -> None:
        """A line that may show an error: the attempt's first one after its last progress is its failure."""
        reason = self.errors.reason(text)
        if reason:
            self.failed(line, reason)
        else:
            self.summary(line, text)

    def summary(self, line: int, text: str) -> None:
        """A line of torchrun's summary: its root cause's time places the attempt's failure."""
        text = text.strip()
        if text == _ROOT_CAUSE:
            self.root_cause = True
            return
        found = _ROOT_CAUSE_TIME.fullmatch(text) if self.root_cause else None
        if found and self.failure is not None:
            self.root_cause = False
            at = instant(f"{found[1]} {found[2]}", self.zone, self.path, line)
            if at >= self.failure[1]:
                self.failure = (self.failure[0], at, self.failure[2])

    def failed(self, line: int, reason: str) -> None:
        """An error shown at `line`."""
        if not self.is_open or self.failure is not None or self.ending is not None:
            return
        if self.last_time is None:
            raise RunRecordError(self.path, line, "time", f"{reason!r} ends an attempt that printed no time: "
                                                          "when it failed is not known")
        self.failure = (line, self.last_time, reason)

    def planned(self, line: int, time_ns: int, reason: str) -> None:
        """A planned stop of the trainer (an exit it was asked for)."""
        self.add(line, time_ns, "interruption", reason=reason)
        self.is_open = False

    def ended(self, line: int, time_ns: int) -> None:
        """The trainer's own end of training."""
        self.ending = (line, time_ns)

    def close(self) -> None:
        """The open attempt ends: at the run's end, or its failure where its lines show one."""
        if self.is_open and self.ending is not None:
            self.add(self.ending[0], self.ending[1], "run_end")
        elif self.is_open and self.failure is not None:
            line, time_ns, reason = self.failure
            self.add(line, time_ns, "failure", reason=reason)
        self.is_open, self.failure, self.ending, self.last_time, self.root_cause = False, None, None, None, False

    def finish(self) -> EventRow:
        """The events of the whole log, as columns, in the order in which they were met."""
        self.close()
        rows, steps = event_columns(self.rows), self.settle()
        if not self.runs:
            return rows
        # Row i follows the step lines of the runs begun at or before it; a run's lines follow the rows before it.
        runs_at = np.array([at for at, _, _ in self.runs], dtype=np.int64)
        lengths = np.array([n for _, _, n in self.runs], dtype=np.int64)
        steps_before = np.concatenate([[0], np.cumsum(lengths)])
        row_place = np.arange(len(self.rows)) + steps_before[np.searchsorted(runs_at, np.arange(len(self.rows)),
                                                                             side="right")]
        step_place = np.repeat(runs_at, lengths) + np.arange(steps_before[-1])
        order = np.empty(row_place.size + step_place.size, dtype=np.int64)
        order[row_place], order[step_place] = np.arange(row_place.size), row_place.size + np.arange(step_place.size)
        return EventRow(*(np.concatenate(column)[order] for column in zip(rows, steps)))


def step_columns(time_ns: np.ndarray, steps: np.ndarray, lines: np.ndarray, path: str) -> EventRow:
    """`step` events read from lines `lines` of `path`, as columns."""
    n, none = lines.size, np.full(lines.size, -1, dtype=np.int64)
    return EventRow(time_ns, same_text(n, "step"), steps, none, none, same_text(n, ""), same_text(n, "events"),
                    lines, same_text(n, path))
