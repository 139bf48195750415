"""A training run's record: one time-ordered list of events in integer nanoseconds since the epoch (UTC),
so that every duration measured from it is exact; its vocabulary, its instants, and the trainer-events CSV
and JSON Lines files, whose malformed rows raise `RunRecordError` naming the file, the line and the field.
`_read.read_run` assembles a record from these files, trainers' own logs and sacct."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import re
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import NamedTuple
from decimal import Decimal, InvalidOperation
from pathlib import Path

import numpy as np
import xarray as xr

from .. import _fast_csv
from .._display import key_value_table
from .._errors import ParameterError
from .._text import MISSING_TOKENS
from .._units import format_hours, short_repr

# What each event says (docs: user guide, "A run's record").
EVENT_KINDS = (
    "attempt_start",  # the scheduler started an attempt (the job's processes)
    "first_step",  # the first training step after a (re)start: initialisation is over
    "checkpoint_written",  # a checkpoint write ended; duration_s: its blocking time, wait_s: the wait before it
    "checkpoint_restored",  # an attempt restored the checkpoint of `step` (0: the run's start)
    "failure",  # an unexpected interruption, `reason` where known; wait_s: a wait for persistence it cut short
    "interruption",  # a planned one (maintenance, a preemption asked for)
    "step",  # training progress at that time (informative)
    "run_end",  # training finished
)
COLUMNS = ("time", "event", "step", "duration_s", "wait_s", "reason")
MAX_SECONDS = 10**9  # a duration_s or wait_s past ~31 years is a unit slip, not a checkpoint
MAX_STEP = 2**62
# Instants as int64 ns since the epoch reach 1677-09-21 .. 2262-04-11.
_NS_RANGE = (-(2**63) + 1, 2**63 - 1)
NS_PER_S = 10**9
NS_PER_H = 3600 * NS_PER_S
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ISO = re.compile(r"(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?)(?:[.,](\d{1,9}))?(Z|z|[+-]\d{2}:?\d{2})?")
_EPOCH_NUMBER = re.compile(r"[+-]?\d{1,12}(?:\.\d{1,9})?")


class RunRecordError(ParameterError):
    """A malformed run record: ``.path``, ``.line`` (1-based; 0: the whole file) and ``.field``.

    Parameters
    ----------
    path : str
        The file.
    line : int
        The line at fault (0 for the file as a whole).
    field : str
        The column or key at fault ("" for the row as a whole).
    reason : str
        What is wrong.
    """

    def __init__(self, path: str, line: int, field: str, reason: str):
        where = f"{path}, line {line}" if line else str(path)
        super().__init__(field or "record", reason, where=where)
        self.path, self.line, self.field = str(path), line, field


@dataclasses.dataclass
class RecordSummary:
    """What happened to each row read: used, or skipped and why, and remarks on rows used.

    Parameters
    ----------
    sources : list of str
        The files read.
    rows_read : int
        Rows read (events and attempts).
    rows_used : int
        Rows that became events.
    skipped : collections.Counter
        Rows not used, by reason.
    notes : collections.Counter
        Rows used, but not at face value: how.
    """

    sources: list = dataclasses.field(default_factory=list)
    rows_read: int = 0
    rows_used: int = 0
    skipped: Counter = dataclasses.field(default_factory=Counter)
    notes: Counter = dataclasses.field(default_factory=Counter)

    def to_dict(self) -> dict:
        """Return the summary as JSON-ready values.

        Returns
        -------
        dict
            Sources, counts, skip reasons and notes.
        """
        return {"sources": list(self.sources), "rows_read": self.rows_read, "rows_used": self.rows_used,
                "rows_skipped": sum(self.skipped.values()), "skipped": dict(self.skipped), "notes": dict(self.notes)}

    def __str__(self) -> str:
        skipped = sum(self.skipped.values())
        why = ", ".join(f"{k}: {v}" for k, v in sorted(self.skipped.items()))
        notes = "; ".join(f"{k}: {v}" for k, v in sorted(self.notes.items()))
        return (f"{' + '.join(self.sources)}: {self.rows_read} rows, {self.rows_used} used, {skipped} skipped"
                + (f" ({why})" if why else "") + (f"; {notes}" if notes else ""))


@dataclasses.dataclass
class RunRecord:
    """One training run as a time-ordered list of events.

    Parameters
    ----------
    events : xarray.Dataset
        Along dim ``event``: ``time`` (datetime64[ns], UTC), ``time_ns``
        (int64 ns since the epoch), ``kind`` (one of `EVENT_KINDS`), ``step``
        (-1 where not given), ``duration_s`` and ``wait_s`` (NaN where not
        given), the same exact in ``duration_ns`` and ``wait_ns`` (int64, -1
        where not given), ``reason``, ``source`` ("events" or "sacct"),
        ``file`` (the file it was read from) and ``line``.
    n_gpus : int or None
        GPUs of the run (from sacct, or given), None where unknown.
    summary : RecordSummary
        What happened to each row read.
    attempt_gpus : dict, optional
        GPUs of each attempt where sacct gives them, by the attempt's start
        (ns since the epoch): attempts of different sizes then count their
        own node-days.
    """

    events: xr.Dataset
    n_gpus: int | None
    summary: RecordSummary
    attempt_gpus: dict = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return self.events.sizes["event"]

    def _summary_rows(self) -> list[tuple[str, str]]:
        kinds = self.events.kind.values
        ns = self.events.time_ns.values
        span = format_hours(float(ns.max() - ns.min()) / 3.6e12) if ns.size else "no time"
        count = {kind: f"{int(np.count_nonzero(kinds == kind)):,}" for kind in ("attempt_start", "failure",
                                                                                  "checkpoint_written")}
        return [("events", f"{len(self):,}"), ("attempts", count["attempt_start"]), ("failures", count["failure"]),
                ("checkpoints written", count["checkpoint_written"]), ("span", span),
                ("GPUs", "unknown" if self.n_gpus is None else f"{self.n_gpus:,}"),
                ("from", " + ".join(self.summary.sources))]

    def __repr__(self) -> str:
        rows = dict(self._summary_rows())
        return (f"RunRecord({rows['events']} events: {rows['attempts']} attempts, {rows['failures']} failures over "
                f"{rows['span']}, {rows['GPUs']} GPUs, from {short_repr(rows['from'], 80)})")

    def _repr_html_(self) -> str:
        return key_value_table("RunRecord", self._summary_rows())

    @property
    def has_trainer_events(self) -> bool:
        """Whether the record has the trainer's own events (first steps, checkpoints)."""
        return bool(np.isin(self.events.kind.values, ("first_step", "checkpoint_written", "checkpoint_restored",
                                                      "step")).any())

    def to_csv(self, path) -> Path:
        """Write the events as a trainer-events CSV that `read_run` reads back to the same record.

        Parameters
        ----------
        path : str or pathlib.Path
            The file to write: a header of `COLUMNS`, then a row an event.

        Returns
        -------
        pathlib.Path
            The file written.
        """
        path = Path(path)
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(COLUMNS)
            writer.writerows(self._rows())
        return path

    def to_jsonl(self, path) -> Path:
        """Write the events as JSON Lines (one object an event) that `read_run` reads back.

        Parameters
        ----------
        path : str or pathlib.Path
            The file to write: an object an event, of its fields that are not empty.

        Returns
        -------
        pathlib.Path
            The file written.
        """
        path = Path(path)
        with path.open("w", encoding="utf-8") as f:
            for values in self._rows():
                row = dict(zip(COLUMNS, values))
                f.write(json.dumps({k: v for k, v in row.items() if v != ""}) + "\n")
        return path

    def _rows(self):
        """The events as the fields of their rows, in `COLUMNS` order."""
        for i in range(len(self)):
            yield _event_row(self.events, i)


def format_instant(ns: int) -> str:
    """Format an instant as ISO 8601 UTC with nanoseconds: exact, and read back by `read_run`.

    Parameters
    ----------
    ns : int
        Nanoseconds since 1970-01-01T00:00:00Z.

    Returns
    -------
    str
        E.g. ``2024-01-01T00:00:00.000000001Z``.
    """
    seconds, frac = divmod(int(ns), NS_PER_S)
    stamp = (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{frac:09d}Z"


def _event_row(ds: xr.Dataset, i: int) -> list:
    step = int(ds.step.values[i])
    duration, wait = int(ds.duration_ns.values[i]), int(ds.wait_ns.values[i])
    return [format_instant(int(ds.time_ns.values[i])), str(ds.kind.values[i]), "" if step < 0 else step,
            _seconds_text(duration), _seconds_text(wait), str(ds.reason.values[i])]


def _seconds_text(ns: int) -> str:
    """Whole ns as exact decimal seconds ("" for -1: none)."""
    if ns < 0:
        return ""
    seconds, fraction = divmod(ns, NS_PER_S)
    return f"{seconds}.{fraction:09d}".rstrip("0").rstrip(".")


def parse_instant(value, zone, path: str, line: int, field: str = "time") -> int:
    """Parse a time as integer ns since the epoch (UTC).

    Accepted: ISO 8601 with a zone (``Z`` or an offset), ISO 8601 without one
    (local time in `zone`), or seconds since the epoch (up to 9 decimals).
    A local time that a daylight-saving change makes ambiguous (the repeated
    hour) or that does not exist (the skipped hour) is refused.

    Parameters
    ----------
    value : str, int or float
        The time as written.
    zone : datetime.tzinfo or None
        The zone of times written without one (None: UTC).
    path : str
        The file, for errors.
    line : int
        The line, for errors.
    field : str, default "time"
        The column, for errors.

    Returns
    -------
    int
        Nanoseconds since 1970-01-01T00:00:00Z.

    Raises
    ------
    RunRecordError
        On a time that cannot be read.
    """
    text = repr(value) if isinstance(value, float) else format(value, "f") if isinstance(value, Decimal) else (
        str(value).strip())
    if isinstance(value, bool):
        raise RunRecordError(path, line, field, f"{value!r} is not a time")
    if _EPOCH_NUMBER.fullmatch(text):
        try:
            return _in_range(int(Decimal(text) * NS_PER_S), text, path, line, field)
        except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
            pass
    match = _ISO.fullmatch(text)
    if not match:
        raise RunRecordError(path, line, field, f"{text!r} is not an ISO 8601 time or epoch seconds")
    try:
        stamp = datetime.fromisoformat(match[1].replace(" ", "T"))
    except ValueError:
        raise RunRecordError(path, line, field, f"{text!r} is not a valid date and time") from None
    fraction = int(match[2].ljust(9, "0")) if match[2] else 0
    offset = match[3]
    if offset:
        if offset in ("Z", "z"):
            stamp = stamp.replace(tzinfo=timezone.utc)
        else:
            sign = -1 if offset[0] == "-" else 1
            digits = offset[1:].replace(":", "")
            hours, minutes = int(digits[:2]), int(digits[2:])
            if hours > 23 or minutes > 59:
                raise RunRecordError(path, line, field, f"{text!r} has no valid UTC offset (at most 23:59)")
            stamp = stamp.replace(tzinfo=timezone(sign * timedelta(hours=hours, minutes=minutes)))
    else:
        zone = zone or timezone.utc
        early, late = stamp.replace(tzinfo=zone, fold=0), stamp.replace(tzinfo=zone, fold=1)
        # A fixed offset (UTC) has no daylight-saving change to check.
        if not isinstance(zone, timezone) and early.utcoffset() != late.utcoffset():
            raise RunRecordError(path, line, field, f"{text!r} is ambiguous or does not exist in {zone} (a "
                                                    f"daylight-saving change): write times in UTC or with an offset")
        stamp = early
    return _in_range((stamp - _EPOCH) // timedelta(seconds=1) * NS_PER_S + fraction, text, path, line, field)


def _in_range(ns: int, text: str, path: str, line: int, field: str) -> int:
    if not _NS_RANGE[0] <= ns <= _NS_RANGE[1]:
        raise RunRecordError(path, line, field, f"{text!r} is outside the years 1678-2261 that ns since the epoch hold")
    return ns


def _number(value, path, line, field, *, integer=False, most=MAX_SECONDS):
    """A finite number in [0, most], or None where missing."""
    if value is None or (isinstance(value, str) and value.strip().lower() in MISSING_TOKENS):
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        x = float(value)
        if integer and math.isfinite(x) and not x.is_integer():
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        kind = "a whole number" if integer else "a number"
        raise RunRecordError(path, line, field, f"{value!r} is not {kind}") from None
    if not (x >= 0 and math.isfinite(x)):
        raise RunRecordError(path, line, field, f"{value!r} must be finite and >= 0")
    if x > most:
        raise RunRecordError(path, line, field, f"{value!r} is above {most:g}" + (" s (a unit slip?)" if not integer
                                                                                    else ""))
    return int(x) if integer else x


def _seconds_ns(value, path, line, field):
    """A duration in seconds, as written, in whole ns (rounded past 9 decimals), or None where missing."""
    seconds = _number(value, path, line, field)
    if seconds is None:
        return None
    text = format(value, "f") if isinstance(value, Decimal) else str(value).strip() if isinstance(value, str) else (
        repr(float(value)))
    return int((Decimal(text) * NS_PER_S).to_integral_value())


def _rows(text: str, path: str):
    """(line, mapping) of each data row of CSV or JSON Lines text."""
    lines = text.splitlines()
    first = next((i for i, t in enumerate(lines) if t.strip()), None)
    if first is None:
        return
    if lines[first].lstrip().startswith("{"):
        yield from _json_rows(lines, first, path)
    else:
        yield from _csv_rows(lines, first, path)


class _Pairs(list):
    """A JSON object's (key, value) pairs in order, duplicates kept."""


def _json_rows(lines: list, first: int, path: str):
    for i in range(first, len(lines)):
        if not lines[i].strip():
            continue
        try:  # numbers from their text (times and durations exact to the nanosecond)
            row = json.loads(lines[i], parse_float=Decimal, object_pairs_hook=_Pairs)
        except json.JSONDecodeError as err:
            raise RunRecordError(path, i + 1, "", f"not a JSON object ({err.msg})") from None
        if not isinstance(row, _Pairs):
            raise RunRecordError(path, i + 1, "", "not a JSON object")
        yield i + 1, _mapping([str(k).strip().lower() for k, _ in row], [v for _, v in row], path, i + 1)


def _csv_rows(lines: list, first: int, path: str):
    reader = csv.reader(io.StringIO("\n".join(lines[first:])))
    try:
        header = [h.strip().lower() for h in next(reader)]
    except csv.Error as err:
        raise RunRecordError(path, first + 1, "", f"not a CSV header ({err})") from None
    for need in ("time", "event"):
        if need not in header:
            raise RunRecordError(path, first + 1, need, f"the header lacks the column {need!r} (it has {header})")
    _mapping(header, header, path, first + 1)
    while True:
        line = first + reader.line_num + 1  # where the row starts
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise RunRecordError(path, line, "", f"not a CSV row ({err}; an unterminated quote?)") from None
        if not any(f.strip() for f in fields):
            continue
        if len(fields) > len(header):
            raise RunRecordError(path, line, "", f"{len(fields)} fields, more than the header's {len(header)}")
        for name, value in zip(header, fields):
            if "\n" in value:
                raise RunRecordError(path, line, name, "an unterminated quote: the field runs on to line "
                                                       f"{first + reader.line_num}")
        yield line, dict(zip(header, fields))


def _mapping(names: list, values: list, path: str, line: int) -> dict:
    """A row's fields by name; a column of the record's named twice is refused (which one holds the value?)."""
    row = dict(zip(names, values))
    if len(row) < len(names):
        twice = sorted({n for n in names if names.count(n) > 1 and n in COLUMNS})
        if twice:
            raise RunRecordError(path, line, twice[0], f"named {names.count(twice[0])} times (names are read "
                                                       "without case and spaces)")
    return row


class EventRow(NamedTuple):
    """One event as read, before the events become a Dataset (a field a column)."""

    time_ns: int
    kind: str
    step: int  # -1: none
    duration_ns: int  # -1: none
    wait_ns: int  # -1: none
    reason: str
    source: str  # "events" (the trainer's) or "sacct"
    line: int
    file: str  # the file it was read from


_INTEGER_FIELDS = ("time_ns", "step", "duration_ns", "wait_ns", "line")


def event_columns(rows: list[EventRow]) -> EventRow:
    """Events as columns: an `EventRow` of arrays (int64, or object for the text fields)."""
    fields = list(zip(*rows)) if rows else [()] * len(EventRow._fields)
    return EventRow(*(np.array(values, dtype=np.int64 if name in _INTEGER_FIELDS else object)
                      for name, values in zip(EventRow._fields, fields)))


def events_file_columns(text: str, name: str, zone, summary: RecordSummary) -> EventRow:
    """The events of a trainer-events CSV or JSON Lines file, as columns (`event_columns`).

    A plain CSV is read by columns (`_csv_columns`); any other file, or a row that path cannot
    vouch for, is read row by row (`events_file_rows`), which names what is wrong.
    """
    try:
        columns = _csv_columns(text, name, zone)
    except _fast_csv.Doubt:
        return event_columns(events_file_rows(text, name, zone, summary))
    summary.rows_read += columns.line.size
    return columns


def events_file_rows(text: str, name: str, zone, summary: RecordSummary) -> list[EventRow]:
    """The rows of a trainer-events CSV or JSON Lines file."""
    events, shared = [], {kind: kind for kind in EVENT_KINDS}  # one str object a value, for the columns
    for line, row in _rows(text, name):
        summary.rows_read += 1
        kind = str(row.get("event", "")).strip().lower()
        if kind not in EVENT_KINDS:
            raise RunRecordError(name, line, "event", f"{row.get('event')!r} is not one of {', '.join(EVENT_KINDS)}")
        if row.get("time") is None or str(row.get("time")).strip() == "":
            raise RunRecordError(name, line, "time", "missing")
        at = parse_instant(row["time"], zone, name, line)
        step = _number(row.get("step"), name, line, "step", integer=True, most=MAX_STEP)
        duration = _seconds_ns(row.get("duration_s"), name, line, "duration_s")
        wait = _seconds_ns(row.get("wait_s"), name, line, "wait_s")
        if kind == "checkpoint_written" and (duration is None or step is None):
            raise RunRecordError(name, line, "duration_s" if duration is None else "step",
                                 "a checkpoint_written event needs its step and duration_s")
        if kind == "checkpoint_restored" and step is None:
            raise RunRecordError(name, line, "step", "a checkpoint_restored event needs the step restored")
        reason = row.get("reason")
        reason = "" if reason is None else str(reason).strip()
        reason = shared.setdefault(reason, reason)
        events.append(EventRow(at, shared[kind], -1 if step is None else step, -1 if duration is None else duration,
                               -1 if wait is None else wait, reason, "events", line, name))
    return events


def _seconds(ns: np.ndarray) -> np.ndarray:
    """Durations in ns as float seconds, NaN where none (-1)."""
    seconds = ns / NS_PER_S
    seconds[ns < 0] = np.nan
    return seconds


def events_dataset(columns: EventRow, attrs: dict) -> xr.Dataset:
    """The record's events, a variable a field of `EventRow` (see `RunRecord`): `columns` holds a
    sequence a field, in time order (arrays of int64 become the variables: not copied)."""
    time_ns = np.asarray(columns.time_ns, dtype=np.int64)
    duration_ns, wait_ns = (np.asarray(c, dtype=np.int64) for c in (columns.duration_ns, columns.wait_ns))
    # The text fields are object arrays of str: every reader gives a value as one str object shared by the
    # events that have it (a fixed-width str array would spend the longest value's width on every event).
    return xr.Dataset(
        {"time": ("event", time_ns.astype("datetime64[ns]")), "time_ns": ("event", time_ns),
         "kind": ("event", np.asarray(columns.kind, dtype=object)),
         "step": ("event", np.asarray(columns.step, dtype=np.int64)),
         "duration_s": ("event", _seconds(duration_ns)), "wait_s": ("event", _seconds(wait_ns)),
         "duration_ns": ("event", duration_ns), "wait_ns": ("event", wait_ns),
         "reason": ("event", np.asarray(columns.reason, dtype=object)),
         "source": ("event", np.asarray(columns.source, dtype=object)),
         "file": ("event", np.asarray(columns.file, dtype=object)),
         "line": ("event", np.asarray(columns.line, dtype=np.int64))},
        coords={"event": np.arange(time_ns.size)},
        attrs={"time_zone": "UTC", **attrs},
    )


# --------------------------------------------------------------------------- reading by columns
# The trainer-events CSV read a block of lines at a time (`_fast_csv`), the common forms of each
# field read in NumPy and any other value by the per-row functions above, once per distinct value.
# Anything else (a quote, a line break other than LF, a row of another length, a value refused, a
# checkpoint event lacking its step or duration) raises `Doubt`: the file is then read row by row.

_ODD_BYTES = np.isin(np.arange(256), [*range(0, 9), *range(11, 32), 34, 127])  # a quote; controls but tab and LF
_ODD_BREAKS = re.compile("[\x85\u2028\u2029]")  # the line breaks of str.splitlines past ASCII
_KIND_BYTES = [np.frombuffer(k.encode(), np.uint8) for k in EVENT_KINDS]


def _csv_columns(text: str, name: str, zone) -> EventRow:
    """The events of a plain trainer-events CSV as columns, in the file's order; `Doubt` where unsure."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise _fast_csv.Doubt(0, "not UTF-8") from None
    if _ODD_BYTES[np.frombuffer(data, np.uint8)].any() or (not data.isascii() and _ODD_BREAKS.search(text)):
        raise _fast_csv.Doubt(0, "quotes or line breaks other than LF")
    start, line = 0, 1
    while (end := data.find(b"\n", start)) >= 0 and not data[start:end].decode().strip():
        start, line = end + 1, line + 1
    end = len(data) if end < 0 else end
    header = [h.strip().lower() for h in data[start:end].decode().split(",")]
    if header[0].startswith("{") or not {"time", "event"} <= set(header) or any(
            header.count(c) > 1 for c in COLUMNS):
        raise _fast_csv.Doubt(line, "not a plain CSV header of the record's columns")
    data = data[end + 1:]
    reasons = _fast_csv.Table()
    parts = []
    for block, first_line in _fast_csv.blocks(data, bom=False):
        starts, ends, lines = _fast_csv.plain_fields(block, first_line + line, len(header))
        fields = {c: (starts[:, header.index(c)], ends[:, header.index(c)]) for c in COLUMNS if c in header}
        parts.append(_block_columns(block, fields, lines, reasons, name, zone))
    if not parts:
        return event_columns([])
    time_ns, kind, step, duration, wait, reason, lines = (np.concatenate(c) for c in zip(*parts))
    n = lines.size
    reason = np.array([r.strip() for r in reasons.values] or [""], dtype=object)[reason]
    return EventRow(time_ns, kind, step, duration, wait, reason, same_text(n, "events"), lines, same_text(n, name))


def same_text(n: int, text: str) -> np.ndarray:
    """An object array of `n` references to `text` (``np.full`` would make a str an element)."""
    column = np.empty(n, dtype=object)
    column.fill(text)
    return column


def _block_columns(block: bytes, fields: dict, lines: np.ndarray, reasons, name: str, zone) -> tuple:
    """One block's time_ns, kind, step, duration_ns, wait_ns, reason (codes in `reasons`) and line."""
    n = lines.size
    kind = _block_kinds(block, *fields["event"])
    time_ns = _block_times(block, *fields["time"], name, zone)
    missing = np.full(n, -1, dtype=np.int64)
    step = _block_numbers(block, *fields["step"], name, "step") if "step" in fields else missing
    duration = (_block_numbers(block, *fields["duration_s"], name, "duration_s") if "duration_s" in fields
                else missing)
    wait = _block_numbers(block, *fields["wait_s"], name, "wait_s") if "wait_s" in fields else missing
    if (((kind == "checkpoint_written") & ((duration < 0) | (step < 0))).any()
            or ((kind == "checkpoint_restored") & (step < 0)).any()):
        raise _fast_csv.Doubt(0, "a checkpoint event without its step or duration")
    reason = np.full(n, reasons.codes(np.array([""], dtype=object))[0], dtype=np.int32)
    if "reason" in fields:  # most rows give none
        given = fields["reason"][1] > fields["reason"][0]
        if given.any():
            reason[given] = reasons.codes(_texts(block, *fields["reason"], given))
    return time_ns, kind, step, duration, wait, reason, lines.astype(np.int64)


def _texts(block: bytes, starts: np.ndarray, ends: np.ndarray, which: np.ndarray) -> np.ndarray:
    """The fields `which` of a column as str (object array)."""
    return np.array([block[starts[k]:ends[k]].decode() for k in np.flatnonzero(which)] or [""],
                    dtype=object)[:int(which.sum())]


def _block_kinds(block: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The events' kinds (object array of the `EVENT_KINDS` strings); `Doubt` on any other."""
    lengths, points = _fast_csv.field_points(block, starts, ends, 20)
    code = np.full(lengths.size, -1, dtype=np.int64)
    for k, kind in enumerate(_KIND_BYTES):
        code[(lengths == kind.size) & (points[:, :kind.size] == kind).all(axis=1)] = k
    odd = code < 0
    if odd.any():  # capitals or spaces
        found = [v.strip().lower() for v in _texts(block, starts, ends, odd)]
        if any(k not in EVENT_KINDS for k in found):
            raise _fast_csv.Doubt(0, "an event not of the record's kinds")
        code[odd] = [EVENT_KINDS.index(k) for k in found]
    return np.array(EVENT_KINDS, dtype=object)[code]


def _block_times(block: bytes, starts: np.ndarray, ends: np.ndarray, name: str, zone) -> np.ndarray:
    """Instants (ns): ISO 8601 with Z (or naive, in UTC) in bulk, any other as `parse_instant` reads it."""
    ns, ok, naive = _fast_csv.iso_ns(*_fast_csv.field_points(block, starts, ends, 30))
    if not (zone is None or zone is timezone.utc):
        ok &= ~naive
    if not ok.all():
        ns[~ok] = _per_value(_texts(block, starts, ends, ~ok), lambda v: parse_instant(v, zone, name, 0))
    return ns


def _block_numbers(block: bytes, starts: np.ndarray, ends: np.ndarray, name: str, field: str) -> np.ndarray:
    """A step (whole number) or seconds (exact ns) column, -1 where missing; odd values read per value."""
    number, ok = _fast_csv.decimal_ns(*_fast_csv.field_points(block, starts, ends, 20))
    if field == "step":  # a whole number of "seconds" below 10**9 is the step
        ok &= number % NS_PER_S == 0
        number //= NS_PER_S
        read = lambda v: _number(v, name, 0, field, integer=True, most=MAX_STEP)  # noqa: E731
    else:
        read = lambda v: _seconds_ns(v, name, 0, field)  # noqa: E731
    empty = ends == starts
    number[empty] = -1
    odd = ~(ok | empty)
    if odd.any():
        number[odd] = _per_value(_texts(block, starts, ends, odd), read)
    return number


def _per_value(values: np.ndarray, read) -> np.ndarray:
    """`read` of each distinct value, as int64 (-1 for None); `Doubt` where it refuses one."""
    def exact(value):
        try:
            result = read(value)
        except RunRecordError:
            raise _fast_csv.Doubt(0, f"{value!r} refused") from None
        return -1 if result is None else result

    results, codes = _fast_csv.per_value(values, exact)
    return np.array(results, dtype=np.int64)[codes]

