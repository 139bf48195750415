"""What a reader of one trainer's own log is: how it recognises the log, and how it turns the log's
lines into a run's events (docs: user-guide/trainer-logs.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from .._events import EventRow, parse_instant

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
        ``parse(lines, path, zone) -> list of EventRow``: the events of the whole log (every line of
        the file, in order; `zone` is the tzinfo of times written without one). A line it cannot
        read as it expects raises `RunRecordError` naming the path, the line and what was expected.
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
