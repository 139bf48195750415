"""What the trainers that log through Python's `logging` share: a record's time where its line begins,
and a run's attempts from such lines (HF Trainer, Lightning)."""

from __future__ import annotations

import re

from .._events import EventRow
from ._format import AttemptEvents, instant, plain_line


# Python logging's %(asctime)s (default datefmt "2024-01-01 00:00:00,123", or ISO 8601) where a record begins: at
# the line's start, bracketed, after transformers' explicit "[LEVEL|file.py:N] " prefix, or behind a progress
# bar's fragment (tqdm draws on the same stream with no newline, so a record can start mid-line after it).
_PROGRESS_FRAGMENT = r"(?:[^\r\n]*?\d+/\d+ \[[^\]]*\])?"
_LOGGED_TIME = re.compile(_PROGRESS_FRAGMENT + r"(?:\[[A-Z]+\|[^\]]*\] )?\[?"
                          r"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?)\]?")
LOGGED_TIME_FORMATS = ('a line beginning with Python logging\'s "%(asctime)s" (e.g. logging.basicConfig(format='
                       '"%(asctime)s %(levelname)s %(name)s: %(message)s")), bracketed or not, or transformers\' '
                       '"[%(levelname)s|%(filename)s:%(lineno)s] %(asctime)s >> %(message)s"')


def logged_time(text: str):
    """The time a Python logging record's line begins with, and the rest of the line; None for a line without."""
    match = _LOGGED_TIME.match(text)
    return (match[1], text[match.end():]) if match else None


class LoggedRun(AttemptEvents):
    """The events of a log written through Python logging, attempt by attempt (`AttemptEvents`).

    An attempt starts at the first timed line of the file and at the first one after a failure. A failure is a
    line that shows an error (`ErrorLines`: a traceback's exception, an NCCL timeout, a CUDA error); none has a
    time, so it is placed at the attempt's last timed line (the latest instant the log shows the process alive),
    and it ends the attempt there (later errors, other ranks' too, are its echoes). The first step, known only at
    the end of the trainer's set-up messages, is held until a line past them (`flush_first_step`). It is made as
    `AttemptEvents` is.
    """

    def __init__(self, path: str, zone):
        super().__init__(path, zone)
        self.last: tuple[int, int] | None = None  # (time_ns, line) of the latest timed line
        self.held_first_step: tuple[int, int, int] | None = None  # (time_ns, line, step) until set-up ends
        self.record_open = False  # only blank lines since the last timed one: a message that began there runs on

    def timed(self, time_text: str, line: int) -> int:
        """A timed line: it opens an attempt where none runs; its time in ns."""
        at = instant(time_text, self.zone, self.path, line)
        if not self.is_open:
            self.held_first_step = None
            self.start(line, at)
        self.seen(at)
        self.last, self.errors.in_traceback = (at, line), False
        return at

    def hold_first_step(self, time_ns: int, line: int, step: int) -> None:
        """The set-up is over at least by `time_ns` (a later set-up line moves it)."""
        self.held_first_step = (time_ns, line, step)

    def flush_first_step(self) -> None:
        """A line past the set-up: the first step held is the attempt's."""
        if self.held_first_step is not None:
            at, line, step = self.held_first_step
            self.first_step(line, at, step)
            self.held_first_step = None

    def untimed(self, text: str, line: int) -> None:
        """A line without a time: read it for an error."""
        reason = self.errors.reason(plain_line(text))
        if reason:
            self.fail(line, reason)

    def fail(self, line: int, reason: str) -> None:
        """The running attempt fails at its last timed line, and ends."""
        if self.is_open:
            self.flush_first_step()
            self.failed(line, reason)
            self.close()

    def end(self, line: int, time_ns: int) -> None:
        """The trainer's own end of training."""
        self.flush_first_step()
        self.ended(line, time_ns)
        self.close()

    def finish(self) -> EventRow:
        """The events, once every line is read, as columns."""
        self.flush_first_step()
        return super().finish()


def read_logged(lines: list, log) -> EventRow:
    """The events of a log's lines, each timed one handed to ``log.timed(time_text, message, line)`` and each other
    to ``log.untimed(text, line)``; ``log.run`` is its `LoggedRun`."""
    run = log.run
    for number, text in enumerate(lines, 1):
        stamped = logged_time(text)
        if stamped:
            log.timed(stamped[0], stamped[1], number)
            run.record_open = True
        else:
            log.untimed(text, number)
            run.record_open = run.record_open and not text.strip()
    return run.finish()
