"""What a reader of one trainer's own log is: how it recognises the log, and how it turns the log's
lines into a run's events (docs: user-guide/trainer-logs.md)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from decimal import Decimal

import numpy as np

from .._events import MAX_STEP, EventRow, RunRecordError, event_columns, parse_instant, same_text

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


def step_number(text: str, path: str, line: int, what: str, field: str = "step") -> int:
    """A step as a log writes it (digits, at most `MAX_STEP`), or `RunRecordError` naming the line and `field`."""
    if not text.isdigit() or len(text) > 19 or int(text) > MAX_STEP:
        raise RunRecordError(path, line, field, f"{what} {text!r} is not a step number")
    return int(text)


MAX_REASON = 120  # characters of an error kept as a failure's reason
_RANK_PREFIX = re.compile(r"^(?:\[(?:rank|default)?\d+\]:\s?)+")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NCCL_TIMEOUT = re.compile(r"Watchdog caught collective operation timeout|NCCL\b.*\btim(?:ed|ing) ?out", re.IGNORECASE)
_CUDA_ERROR = re.compile(r"CUDA error: (.+)")
_DECIMAL = re.compile(r"\d{1,12}(?:\.\d{1,9})?")
_ROOT_CAUSE = "Root Cause (first observed failure):"  # torchrun's summary when it gives up on the workers
_ROOT_CAUSE_TIME = re.compile(r"time\s*:\s*(\d{4}-\d\d-\d\d)_(\d\d:\d\d:\d\d)")
_EXCEPTION = re.compile(r"([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure|Timeout))(?::\s*(.*))?")


def plain_line(line: str) -> str:
    """A log line without the ``[rank0]:`` torchrun's ``--tee`` puts before each rank's output, nor colour codes."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    return _RANK_PREFIX.sub("", line) if line.startswith("[") else line


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
        self.runs = []  # step lines taken together: (len(rows) when the run began, its first line, times, steps)
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

    def step_lines(self, first: int, time_ns: np.ndarray, steps: np.ndarray) -> None:
        """Step lines `first`, `first` + 1, ... of the open attempt past its first step, as `step` would take
        each (`read_lines`)."""
        self.runs.append((len(self.rows), first, time_ns.copy(), steps.copy()))
        self.failure, self.last_time = None, int(time_ns[-1])

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
        rows = event_columns(self.rows)
        if not self.runs:
            return rows
        lengths = np.array([steps.size for _, _, _, steps in self.runs], dtype=np.int64)
        # Row i follows the step lines of the runs begun at or before it; a run's lines follow the rows before it.
        runs_at = np.array([at for at, _, _, _ in self.runs], dtype=np.int64)
        steps_before = np.concatenate([[0], np.cumsum(lengths)])
        row_place = np.arange(len(self.rows)) + steps_before[np.searchsorted(runs_at, np.arange(len(self.rows)),
                                                                             side="right")]
        step_place = np.repeat(runs_at, lengths) + np.arange(steps_before[-1])
        size = row_place.size + step_place.size
        events = step_columns(np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64),
                              np.empty(size, dtype=np.int64), self.path)  # then each row put in its place
        for column, values in zip(events, rows):
            column[row_place] = values
        events.time_ns[step_place] = np.concatenate([time_ns for _, _, time_ns, _ in self.runs])
        events.step[step_place] = np.concatenate([steps for _, _, _, steps in self.runs])
        events.line[step_place] = np.concatenate([np.arange(first, first + steps.size)
                                                  for _, first, _, steps in self.runs])
        return events


def step_columns(time_ns: np.ndarray, steps: np.ndarray, lines: np.ndarray, path: str) -> EventRow:
    """`step` events read from lines `lines` of `path`, as columns."""
    n = lines.size
    duration_ns, wait_ns = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    return EventRow(time_ns, same_text(n, "step"), steps, duration_ns, wait_ns, same_text(n, ""),
                    same_text(n, "events"), lines, same_text(n, path))
