"""Read a run's record from its files: the trainer-events CSV or JSON Lines, the trainers' own logs (any
number of files, one an attempt or with restarts), and/or a Slurm ``sacct`` export of its attempts. Every
row read is used or counted as skipped with its reason (docs: user-guide/run-record.md)."""

from __future__ import annotations

from datetime import timedelta, timezone
from pathlib import Path

import numpy as np

from .._checks import check_integer
from .._errors import ParameterError
from .._job_logs import LogError, read_log
from .._taxonomy import read_small_bytes
from .._text import utf8_bytes
from ._events import (_EPOCH, NS_PER_S, EventRow, RecordSummary, RunRecord, RunRecordError, event_columns,
                      events_dataset, events_file_columns, parse_instant)
from ._trainers import DETECT_LINES, TRAINER_FORMATS, LogLines

BOUNDARY_KINDS = ("attempt_start", "failure", "interruption", "run_end")  # what sacct also says
MAX_RECORD_FILE_BYTES = 512 * 2**20
# An sacct end state that is a planned interruption rather than a failure.
_PLANNED_STATES = ("PREEMPTED", "REQUEUED", "TIMEOUT", "CANCELLED")


def read_run(events=None, *, sacct=None, run=None, n_gpus: int | None = None, tz: str | None = "UTC",
             format: str = "auto") -> RunRecord:
    """Read a training run's record: the trainer's events, the scheduler's attempts, or both.

    Parameters
    ----------
    events : str, pathlib.Path or sequence of them, optional
        The trainer's side of the run: a CSV (header with at least ``time``
        and ``event``; also ``step``, ``duration_s``, ``wait_s``, ``reason``)
        or JSON Lines file (one object an event, the same keys) of its events,
        where ``event`` is one of `EVENT_KINDS`, or the trainer's own log (see
        `format`). Several files are one run: a file an attempt (such as
        Slurm's ``slurm-%j.out``), or files each with restarts. Rows may come
        in any order: events are sorted by time (ties keep the file's order).
    sacct : str or pathlib.Path, optional
        A Slurm ``sacct --parsable2`` export of the run's attempts (e.g.
        ``sacct --name NAME -P -o JobID,State,Start,End,Elapsed,AllocTRES,...``).
        Its attempts give the run's boundaries: each attempt's start, and its
        end as a ``failure`` (or an ``interruption`` for PREEMPTED, REQUEUED,
        TIMEOUT and CANCELLED), or ``run_end`` where the last one COMPLETED.
        With both files, the trainer's own boundary events are then not used
        (counted as skipped).
    run : str or sequence of str, optional
        The sacct JobIDs (or requeue chains) of the run; all attempts in the
        file when not given.
    n_gpus : int, optional
        GPUs of the run; taken from sacct's allocation where not given.
    tz : str, default "UTC"
        The IANA zone of times written without an offset, in both files.
        sacct prints local times without one: name the cluster's zone (a time
        the DST change repeats or skips is then refused rather than guessed).
    format : str, default "auto"
        What the events files are: "events" (the CSV or JSON Lines above), a
        trainer's log by name (``relmodel.record.TRAINER_FORMATS`` lists
        them), or "auto": each file recognised from its first lines (one that
        is none of them is refused, naming what was expected).

    Returns
    -------
    RunRecord
        The events, time-ordered, and what happened to each row.

    Raises
    ------
    RunRecordError
        On a malformed file or row (the message names the file, line and field).
    ParameterError
        On a bad argument (no file given, an unknown zone, a bad n_gpus).
    """
    if events is None and sacct is None:
        raise ParameterError("events", "give the trainer's events, an sacct export (sacct=), or both")
    zone = _zone(tz)
    summary = RecordSummary()
    columns = event_columns([])
    if events is not None:
        columns = _trainer_events(events, format, zone, summary)
    gpus, attempt_gpus = None, {}
    if sacct is not None:
        boundary = np.isin(columns.kind, BOUNDARY_KINDS)
        if boundary.any():
            summary.skipped["trainer boundary events (sacct gives the attempts)"] += int(boundary.sum())
            columns = _take(columns, ~boundary)
        sacct_rows, gpus, attempt_gpus = _sacct_events(Path(sacct), run, zone, summary)
        columns = _concatenate([columns, event_columns(sacct_rows)])
        if attempt_gpus:
            summary.notes["attempts of different sizes: the largest is the run's, node-days counted per "
                          "attempt"] += 1
    summary.rows_used += int(np.count_nonzero(columns.source == "events"))
    if n_gpus is not None:
        gpus = check_integer("n_gpus", n_gpus, 1, 10**9)
    if not columns.line.size:
        raise RunRecordError(" + ".join(summary.sources), 0, "", "no events")
    ds = events_dataset(_in_time_order(columns), {"sources": " + ".join(summary.sources),
                                  **({"sacct_file": str(sacct)} if sacct is not None else {})})
    return RunRecord(events=ds, n_gpus=gpus, summary=summary, attempt_gpus=attempt_gpus if n_gpus is None else {})


def _take(columns: EventRow, index) -> EventRow:
    """The events at `index` (integers or a mask) of events as columns."""
    return EventRow(*(c[index] for c in columns))


def _in_time_order(columns: EventRow) -> EventRow:
    """The events sorted by time, ties in their order (a stable sort; no copy where they are in order)."""
    if np.all(columns.time_ns[1:] >= columns.time_ns[:-1]):
        return columns
    return _take(columns, np.argsort(columns.time_ns, kind="stable"))


def _concatenate(parts: list) -> EventRow:
    """Events as columns, one part after another (one part as it is)."""
    if len(parts) == 1:
        return parts[0]
    return EventRow(*(np.concatenate(c) for c in zip(*parts))) if parts else event_columns([])


def _zone(tz):
    if tz is None or tz == "UTC":
        return timezone.utc
    if not isinstance(tz, str):
        return tz
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ParameterError("tz", f"{tz!r} is no time zone (an IANA name such as 'Europe/Paris', or 'UTC')") from None


def _read_bytes(path: Path) -> bytes:
    """The file's UTF-8 bytes (`utf8_bytes`)."""
    try:
        return utf8_bytes(read_small_bytes(path, MAX_RECORD_FILE_BYTES))
    except (OSError, ValueError) as err:
        raise RunRecordError(str(path), 0, "", f"cannot read the events: {err}") from None


def _is_events_file(lines: list) -> bool:
    """Whether a file's first line is a trainer-events CSV header or JSON Lines object (time and event)."""
    first = next((t.strip().lower() for t in lines if t.strip()), "")
    if first.startswith("{"):
        return '"event"' in first.replace(" ", "")
    return {"time", "event"} <= {h.strip() for h in first.split(",")}


def _trainer_log_rows(fmt, lines: list, name: str, zone, summary: RecordSummary) -> EventRow:
    """The events of one trainer's log as columns, and its lines counted: those with no event are its
    other output."""
    columns = fmt.parse(lines, name, zone)
    summary.rows_read += len(lines)
    with_event = np.zeros(len(lines) + 1, dtype=bool)
    with_event[columns.line] = True
    summary.skipped[f"{fmt.name} log lines with no event (the trainer's other output)"] += (
        len(lines) - int(np.count_nonzero(with_event)))
    return columns


def _head(data: bytes) -> list:
    """The first `DETECT_LINES` lines of UTF-8 `data`, as ``str.splitlines`` gives them."""
    end = -1
    for _ in range(DETECT_LINES):  # a cut after a line feed is a cut between lines
        end = data.find(b"\n", end + 1)
        if end < 0:
            break
    return (data if end < 0 else data[:end + 1]).decode("utf-8").splitlines()[:DETECT_LINES]


def _file_rows(path: Path, fmt: str, zone, summary: RecordSummary) -> EventRow:
    """The events of one file as columns, in the format given or recognised."""
    name = str(path)
    data = _read_bytes(path)
    if fmt == "auto":
        head = _head(data)
        fmt = "events" if _is_events_file(head) else next(
            (f.name for f in TRAINER_FORMATS.values() if f.detect(head)), "")
        if not fmt:
            expected = "".join(f"; or the log of {f.title} (format {f.name!r})" for f in TRAINER_FORMATS.values())
            first = next((t.strip() for t in head if t.strip()), "")
            raise RunRecordError(name, 0, "format", f"not a record relmodel reads (it begins {first[:60]!r}): expected "
                                                    f"the trainer-events CSV or JSON Lines (time and event){expected}")
    summary.sources.append(name)
    if fmt == "events":
        text = data.decode("utf-8")
        del data  # the text holds it again
        return events_file_columns(text, name, zone, summary)
    return _trainer_log_rows(TRAINER_FORMATS[fmt], LogLines.of(data), name, zone, summary)


def _trainer_events(events, fmt: str, zone, summary: RecordSummary) -> EventRow:
    """The events of one file, or of several (one an attempt, or each with restarts), as one run.

    An attempt's file that stops with neither a failure nor the run's end, with a later file to come,
    ends in a failure of unknown cause at its last event (the log stopped: the process died).
    """
    if fmt not in ("auto", "events", *TRAINER_FORMATS):
        raise ParameterError("format", f"{fmt!r} is not 'auto', 'events' or one of {', '.join(TRAINER_FORMATS)}")
    paths = [events] if isinstance(events, (str, Path)) else list(events)
    if not paths:
        raise ParameterError("events", "no file given")
    parts = []
    for p in paths:
        parts.append(_in_time_order(_file_rows(Path(p), fmt, zone, summary)))
    parts = sorted((part for part in parts if part.line.size), key=lambda part: part.time_ns[0])
    for k, part in enumerate(parts[:-1]):
        last = _take(part, [-1])
        if last.kind[0] not in ("failure", "interruption", "run_end"):
            none = np.array([-1], dtype=np.int64)
            parts[k] = _concatenate([part, last._replace(kind=np.array(["failure"], dtype=object), step=none,
                                                         duration_ns=none, wait_ns=none,
                                                         reason=np.array([""], dtype=object))])
            summary.notes["an attempt's log stops with no failure or end: a failure of unknown cause there"] += 1
    return _concatenate(parts)


def _sacct_events(path: Path, run, zone, summary: RecordSummary):
    """Boundary events of the run's attempts, the run's GPUs (its largest attempt's), and each attempt's
    GPUs by its start where the attempts' sizes differ."""
    name = str(path)
    try:
        log = read_log(path, taxonomy="meta-2024")
    except LogError as err:
        raise RunRecordError(name, err.line, "", f"{err.reason}" + (f": {err.detail}" if err.detail else "")) from None
    ds = log.dataset
    summary.sources.append(name)
    summary.rows_read += log.summary.rows_read
    for reason, count in log.summary.skipped.items():
        summary.skipped[f"sacct: {reason}"] += count
    summary.skipped["sacct: job steps (folded into their job)"] += log.summary.rows_folded
    keep = np.ones(ds.sizes["job"], bool)
    if run is not None:
        wanted = {str(r).strip() for r in (run.split(",") if isinstance(run, str) else run)}
        keep = np.isin(ds.run_id.values, list(wanted)) | np.isin(ds.job_id.values, list(wanted))
        if not keep.any():
            raise RunRecordError(name, 0, "run", f"no attempt of {sorted(wanted)} (runs in the file: "
                                                 f"{sorted(set(ds.run_id.values.tolist()))[:10]})")
        summary.skipped["sacct: another run"] += int((~keep).sum())
    ds = ds.isel(job=np.flatnonzero(keep))
    order = np.argsort(ds.start.values, kind="stable")
    events, attempt_gpus = [], {}
    gpus = sorted({int(g) for g in ds.n_gpus.values if g > 0})
    for position, i in enumerate(order):
        line = int(ds.line.values[i])
        start, end = ds.start.values[i], ds.end.values[i]
        if np.isnat(start) or np.isnat(end):
            raise RunRecordError(name, line, "Start" if np.isnat(start) else "End",
                                 "an attempt needs its start and end")
        state, cause = str(ds.state.values[i]), str(ds.cause.values[i])
        start_ns, end_ns = (_in_zone(int(x.astype("datetime64[ns]").astype(np.int64)), zone, name, line, field)
                            for x, field in ((start, "Start"), (end, "End")))
        events.append(EventRow(start_ns, "attempt_start", -1, -1, -1, "", "sacct", line, name))
        if ds.n_gpus.values[i] > 0:
            attempt_gpus[start_ns] = int(ds.n_gpus.values[i])
        last = position == len(order) - 1
        if state == "COMPLETED":
            if not last:
                raise RunRecordError(name, line, "State", "an attempt COMPLETED before the run's last attempt")
            kind = "run_end"
        else:
            kind = "interruption" if state in _PLANNED_STATES else "failure"
        events.append(EventRow(end_ns, kind, -1, -1, -1, state + (f": {cause}" if cause else "")
                               if kind != "run_end" else "", "sacct", line, name))
    summary.rows_used += len(order)
    return events, (gpus[-1] if gpus else None), attempt_gpus if len(gpus) > 1 else {}


def _in_zone(ns: int, zone, path: str, line: int, field: str) -> int:
    """An instant that the log reader took as UTC (sacct prints local times without a zone) read in `zone`."""
    if zone is timezone.utc:
        return ns
    seconds, fraction = divmod(ns, NS_PER_S)
    naive = (_EPOCH + timedelta(seconds=seconds)).replace(tzinfo=None)
    return parse_instant(naive.isoformat(), zone, path, line, field) + fraction
