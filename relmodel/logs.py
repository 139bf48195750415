"""Scheduler job logs: Slurm ``sacct --parsable2`` output, or a plain CSV.

`read_log` turns a log into a `JobLog`: one row per scheduler job attempt
(steps folded into their job, heterogeneous components merged), each tagged
with its job run (array tasks are runs of their own; repeated JobIDs, as in
requeue chains, belong to one run). Every row read is either used or counted
as skipped with a reason; a malformed row raises `LogError` (line number and
reason), or with ``errors="skip"`` is skipped and recorded.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import re
import stat
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import xarray as xr

from .errors import ParameterError, check_memory
from .taxonomy import Taxonomy
from .taxonomy import load as load_taxonomy

FORMATS = ("auto", "sacct", "csv")
MAX_NODES_PER_LIST = 1_000_000  # a node list that expands further is a typo, not a cluster
# Slurm states that end no job attempt, and why a row in one is skipped (counted, never dropped).
_NOT_FINISHED = ("RUNNING", "PENDING", "SUSPENDED", "REQUEUE_HOLD", "REQUEUE_FED", "REQUEUE_CRON", "STOPPED",
                 "SIGNALING", "STAGE_OUT", "COMPLETING", "CONFIGURING", "RESV_DEL_HOLD", "POWER_UP_NODE",
                 "UPDATE_DB")
_NOT_AN_END_STATE = {
    **{state: "not finished" for state in _NOT_FINISHED},
    # A resize closes the record of the job at its old size and opens one at the new size under the
    # same id: that part did not end, so it is no end state (its runtime is not counted either).
    "RESIZING": "resized, the part before a size change",
    # A federated job is submitted to several clusters; the siblings that did not run are revoked.
    "REVOKED": "revoked, a federation sibling that ran elsewhere",
    # Held for requeue by a site rule on the exit code: no end state to classify.
    "SPECIAL_EXIT": "special exit, held for requeue",
}
_MISSING = ("", "unknown", "none", "n/a", "na", "(null)", "null")
# JobID: job, array task (or pending range), het component, step, het step component (1234.0+1).
_JOB_ID = re.compile(r"^(\d+)(?:_(\d+|\[[^\]]*\]))?(?:\+(\d+))?(?:\.([A-Za-z0-9_\-]+)(?:\+\d+)?)?$")
# Slurm durations: [D-]HH:MM:SS, D-HH:MM, D-HH, MM:SS, and MM:SS.mmm (sub-second CPU times).
_DURATION = re.compile(r"^(?:(?P<days>\d{1,7})-(?P<dh>\d{1,2})(?::(?P<dm>\d{1,2})(?::(?P<ds>\d{1,2}))?)?"
                       r"|(?:(?P<h>\d{1,7}):)?(?P<m>\d{1,7}):(?P<s>\d{1,2}(?:\.\d{1,9})?))$")
_GPU_TRES_UNTYPED = re.compile(r"(?:^|,)\s*gres/gpu=([^,]*)")
_GPU_TRES_TYPED = re.compile(r"(?:^|,)\s*gres/gpu:[^=,]+=([^,]*)")
_NODE_TRES = re.compile(r"(?:^|,)\s*node=([^,]*)")
# End - Start of local times without a zone is off by the daylight-saving shift (at most an hour)
# when a job spans the change; Elapsed (epoch arithmetic) is not.
DST_SLACK_S = 3600.0
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class LogError(ParameterError):
    """A malformed job log row or header: ``.line`` (1-based) and ``.reason``.

    Parameters
    ----------
    line : int
        The 1-based source line (0 for the header or the whole log).
    reason : str
        A short reason, the key under which ``errors="skip"`` counts it.
    detail : str, default ""
        What was found, for the message.
    """

    def __init__(self, line: int, reason: str, detail: str = ""):
        super().__init__(f"line {line}", reason + (f": {detail}" if detail else ""))
        self.line, self.reason, self.detail = line, reason, detail


@dataclasses.dataclass
class LogSummary:
    """What happened to each row: used, folded (steps, components) or skipped, and why.

    Parameters
    ----------
    source : str
        The file read, or a description of the text.
    format : str
        The format read ("csv" or "sacct").
    rows_read : int, default 0
        Data rows read.
    rows_used : int, default 0
        Rows that became job attempts.
    rows_folded : int, default 0
        Rows folded into their job (job steps, heterogeneous components).
    skipped : collections.Counter
        Rows skipped, by reason.
    errors : list of LogError
        Malformed rows skipped under ``errors="skip"``.
    notes : collections.Counter
        Other remarks, by kind.
    """

    source: str
    format: str
    rows_read: int = 0
    rows_used: int = 0
    rows_folded: int = 0
    skipped: Counter = dataclasses.field(default_factory=Counter)  # reason -> count
    errors: list = dataclasses.field(default_factory=list)  # LogError of malformed rows skipped
    notes: Counter = dataclasses.field(default_factory=Counter)  # rows used, but not at face value: how -> count

    @property
    def rows_skipped(self) -> int:
        """Rows skipped, all reasons together."""
        return sum(self.skipped.values())

    def to_dict(self) -> dict:
        """Return the summary as plain JSON-ready values (the first 20 errors).

        Returns
        -------
        dict
            The counts, the skip reasons, the errors as text and the notes.
        """
        return {"source": self.source, "format": self.format, "rows_read": self.rows_read,
                "rows_used": self.rows_used, "rows_folded": self.rows_folded, "rows_skipped": self.rows_skipped,
                "skipped": dict(self.skipped), "errors": [str(e) for e in self.errors[:20]],
                "notes": dict(self.notes)}

    def __str__(self) -> str:
        why = ", ".join(f"{k}: {v}" for k, v in sorted(self.skipped.items()))
        notes = "; ".join(f"{k}: {v}" for k, v in sorted(self.notes.items()))
        return (f"{self.source} ({self.format}): {self.rows_read} rows, {self.rows_used} used, "
                f"{self.rows_folded} folded into their jobs, {self.rows_skipped} skipped" + (f" ({why})" if why else "")
                + (f"; {notes}" if notes else ""))


@dataclasses.dataclass
class JobLog:
    """A tidy job log.

    Parameters
    ----------
    dataset : xarray.Dataset
        Along dim ``job`` (one scheduler job attempt per entry): ``job_id``,
        ``run_id``, ``n_gpus`` and ``n_nodes`` (-1 when the log does not say),
        ``start``, ``end`` (datetime64, as logged; NaT when the log has neither),
        ``runtime_h`` (from sacct's Elapsed where the log has it, else
        end - start; see `read_log`), ``state`` (canonical end state), ``cause``,
        ``infrastructure`` (bool), ``nodelist`` (as logged, compressed),
        ``line`` (first source line).
    node_lists : NodeLists
        Node names, one tuple per job (empty when unknown), held compactly.
    summary : LogSummary
        What happened to each row.
    taxonomy : Taxonomy
        The taxonomy that classified the end states.
    """

    dataset: xr.Dataset
    node_lists: NodeLists
    summary: LogSummary
    taxonomy: Taxonomy

    def __len__(self) -> int:
        return self.dataset.sizes["job"]

    @property
    def has_node_lists(self) -> bool:
        """Whether the log gives any job's node list."""
        return self.node_lists.ids.size > 0


class NodeLists(Sequence):
    """Every job's node names, held compactly: a log of millions of jobs names
    tens of millions of nodes, but only as many distinct ones as the cluster has.

    ``node_lists[i]`` is job i's tuple of names (empty when unknown).

    Parameters
    ----------
    names : sequence of str
        Each distinct node once, in first-seen order.
    ids : array of int
        Indices into `names`, job after job.
    offsets : array of int
        Job i's nodes are ``ids[offsets[i]:offsets[i + 1]]`` (one more entry than jobs).
    """

    def __init__(self, names, ids, offsets):
        self.names = np.asarray(names, dtype=object)
        self.ids = np.asarray(ids, dtype=np.int32)
        self.offsets = np.asarray(offsets, dtype=np.int64)

    def __len__(self) -> int:
        return self.offsets.size - 1

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        i = range(len(self))[index]  # negative indices, and IndexError past the end
        return tuple(self.names[self.ids[self.offsets[i]:self.offsets[i + 1]]].tolist())

    def __eq__(self, other):
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == tuple(b) for a, b in zip(self, other))

    __hash__ = None

    def __repr__(self) -> str:
        return f"NodeLists({len(self)} jobs, {self.ids.size} node entries, {self.names.size} distinct nodes)"


class _NodeIndex:
    """Node names to ids while reading, each distinct compressed list expanded once."""

    def __init__(self):
        self.ids: dict[str, int] = {}
        self._lists: dict[str, np.ndarray] = {}

    def expand(self, text: str, line: int) -> np.ndarray:
        """The ids of `expand_nodelist(text)`; an empty array for no list."""
        found = self._lists.get(text)
        if found is None:
            ids = self.ids
            found = np.fromiter((ids.setdefault(name, len(ids)) for name in expand_nodelist(text, line)),
                                dtype=np.int32)
            self._lists[text] = found
        return found

    def node_lists(self, rows) -> NodeLists:
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([r.nodes.size for r in rows], out=offsets[1:])
        ids = np.concatenate([r.nodes for r in rows]) if rows else np.empty(0, np.int32)
        return NodeLists(list(self.ids), ids, offsets)


_NO_NODES = np.empty(0, dtype=np.int32)


# --------------------------------------------------------------------------- fields


def parse_time(text: str, line: int, field: str) -> float | None:
    """Parse a log time as seconds since the epoch (naive times are UTC).

    Parameters
    ----------
    text : str
        The time as logged (ISO 8601, as sacct prints it).
    line : int
        The source line, for errors.
    field : str
        The column, for errors.

    Returns
    -------
    float or None
        Seconds since the epoch; None when missing.

    Raises
    ------
    LogError
        On a time that cannot be read ("bad time format").
    """
    value = text.strip()
    if value.lower() in _MISSING:
        return None
    try:
        return float(value) if re.fullmatch(r"\d{1,12}(\.\d+)?", value) else _iso_seconds(value)
    except (ValueError, OverflowError, OSError):
        raise LogError(line, "bad time format", f"{field} {value!r}") from None


def _iso_seconds(value: str) -> float:
    stamp = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return (stamp - _EPOCH).total_seconds()


def parse_elapsed(text: str, line: int, field: str = "Elapsed") -> float | None:
    """Parse a Slurm duration as hours.

    Accepts what sacct prints: ``D-HH:MM:SS``, ``HH:MM:SS``, ``MM:SS`` and
    ``MM:SS.mmm``, and Slurm's other input forms ``D-HH`` and ``D-HH:MM``.

    Parameters
    ----------
    text : str
        The duration as logged.
    line : int
        The source line, for errors.
    field : str, default "Elapsed"
        The column, for errors.

    Returns
    -------
    float or None
        Hours; None when missing (or Slurm's ``INVALID``).

    Raises
    ------
    LogError
        On a duration that cannot be read.
    """
    seconds = parse_duration_seconds(text, line, field)
    return None if seconds is None else seconds / 3600.0


def parse_duration_seconds(text: str, line: int, field: str = "Elapsed") -> float | None:
    """Parse a Slurm duration in seconds (see `parse_elapsed`).

    Parameters
    ----------
    text : str
        The duration as logged.
    line : int
        The source line, for errors.
    field : str, default "Elapsed"
        The column, for errors.

    Returns
    -------
    float or None
        Seconds; None when missing or ``INVALID``.

    Raises
    ------
    LogError
        On a duration that cannot be read.
    """
    value = text.strip()
    if value.lower() in _MISSING or value.upper() == "INVALID":  # sacct prints INVALID for a negative time
        return None
    match = _DURATION.match(value)
    if match is None:
        raise LogError(line, "bad time format", f"{field} {value!r} (expected [D-]HH:MM:SS or MM:SS)")
    g = match.groupdict()
    if g["days"] is not None:  # D-HH[:MM[:SS]]: every field below days is bounded
        hours, minutes, seconds = int(g["dh"]), int(g["dm"] or 0), int(g["ds"] or 0)
        if hours >= 24 or minutes >= 60 or seconds >= 60:
            raise LogError(line, "bad time format", f"{field} {value!r}")
        return float(int(g["days"]) * 86400 + hours * 3600 + minutes * 60 + seconds)
    hours, minutes, seconds = int(g["h"] or 0), int(g["m"]), float(g["s"])
    if seconds >= 60 or (g["h"] is not None and minutes >= 60):
        raise LogError(line, "bad time format", f"{field} {value!r}")
    return hours * 3600 + minutes * 60 + seconds


def parse_count(text: str, line: int, field: str) -> int | None:
    """Parse a non-negative integer.

    Parameters
    ----------
    text : str
        The number as logged.
    line : int
        The source line, for errors.
    field : str
        The column, for errors.

    Returns
    -------
    int or None
        The count; None when missing.

    Raises
    ------
    LogError
        On anything but a non-negative integer ("bad number").
    """
    value = text.strip()
    if value.lower() in _MISSING:
        return None
    if not re.fullmatch(r"\d{1,12}", value):
        raise LogError(line, "bad number", f"{field} {value!r}")
    return int(value)


def expand_nodelist(text: str, line: int = 0) -> tuple[str, ...]:
    """Expand a Slurm host list: ``node[001-004,007],gpu-a[1-2]`` -> node001 ... gpu-a2.

    Parameters
    ----------
    text : str
        The compressed host list.
    line : int, default 0
        The source line, for errors.

    Returns
    -------
    tuple of str
        The node names, in order.

    Raises
    ------
    LogError
        On a malformed list or one too long to expand.
    """
    value = text.strip()
    if value.lower() in _MISSING or value.lower() == "none assigned":
        return ()
    if value.count("[") > 16:  # also bounds the recursion of _expand_one
        raise LogError(line, "bad node list", f"too many bracket groups in {value[:60]!r}")
    names: list[str] = []
    for part in _split_top_level(value, line):
        names.extend(_expand_one(part, line))
        if len(names) > MAX_NODES_PER_LIST:
            raise LogError(line, "bad node list", f"{value[:60]!r} expands to more than {MAX_NODES_PER_LIST} nodes")
    return tuple(names)


_FLAT_BRACKETS = re.compile(r"(?:[^\[\]]|\[[^\[\]]*\])*")
_TOP_LEVEL_COMMA = re.compile(r",(?![^\[]*\])")


def _split_top_level(value: str, line: int) -> list[str]:
    if _FLAT_BRACKETS.fullmatch(value):  # balanced, none nested: split on the commas outside brackets
        parts = _TOP_LEVEL_COMMA.split(value)
        if any(not p.strip() for p in parts):
            raise LogError(line, "bad node list", f"empty name in {value[:60]!r}")
        return [p.strip() for p in parts]
    parts, depth, current = [], 0, []  # malformed: find what to say, a character at a time
    for char in value:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if depth < 0 or depth > 1:
            raise LogError(line, "bad node list", repr(value[:60]))
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise LogError(line, "bad node list", f"unbalanced brackets in {value[:60]!r}")
    parts.append("".join(current))
    if any(not p.strip() for p in parts):
        raise LogError(line, "bad node list", f"empty name in {value[:60]!r}")
    return [p.strip() for p in parts]


_BRACKET_GROUP = re.compile(r"^([^\[\]]*)\[([^\[\]]*)\](.*)$")
_RANGE = re.compile(r"(\d{1,9})(?:-(\d{1,9}))?")
_PLAIN_NUMBERS = re.compile(r"\d{1,9}(?:,\d{1,9})*")  # each one node, its name the prefix and the digits


def _expand_one(part: str, line: int) -> list[str]:
    match = _BRACKET_GROUP.match(part)
    if match is None:
        if "[" in part or "]" in part or any(c.isspace() for c in part):
            raise LogError(line, "bad node list", repr(part[:60]))
        return [part]
    prefix, ranges, rest = match.groups()
    if not rest and _PLAIN_NUMBERS.fullmatch(ranges):  # the common case: single numbers, names as written
        return [prefix + number for number in ranges.split(",")]
    tails = _expand_one(rest, line) if rest else [""]
    out = []
    for item in ranges.split(","):
        bounds = _RANGE.fullmatch(item.strip())
        if bounds is None:
            raise LogError(line, "bad node list", f"range {item!r} in {part[:60]!r}")
        low, high = bounds.group(1), bounds.group(2) or bounds.group(1)
        if int(high) < int(low) or (int(high) - int(low) + 1) * len(tails) > MAX_NODES_PER_LIST:
            raise LogError(line, "bad node list", f"range {item!r} in {part[:60]!r}")
        width = len(low) if low.startswith("0") else 0
        if rest:
            out.extend(f"{prefix}{i:0{width}d}{tail}" for i in range(int(low), int(high) + 1) for tail in tails)
        else:  # the common case: nothing after the brackets
            out.extend([f"{prefix}{i:0{width}d}" for i in range(int(low), int(high) + 1)])
    return out


# --------------------------------------------------------------------------- reading


@dataclasses.dataclass
class _Row:
    line: int
    job_id: str  # job as the scheduler names it, steps and het components stripped
    run_id: str
    start: float | None
    end: float | None
    state: str
    raw_state: str
    cause: str
    n_gpus: int | None
    n_nodes: int | None
    nodes: np.ndarray  # node ids (`_NodeIndex`)
    nodelist: str = ""
    runtime_s: float | None = None  # from Elapsed where the log has it, else End - Start
    component: str | None = None  # heterogeneous-job component ("0" of 123+0)


def read_log(path_or_text, format: str = "auto", *, taxonomy="meta-2024", errors: str = "raise") -> JobLog:
    """Read a scheduler job log.

    Parameters
    ----------
    path_or_text : str or pathlib.Path
        A path to a log file, or the log's text itself (a string with a
        newline, or one that names no file).
    format : {"auto", "sacct", "csv"}, default "auto"
        "auto" (sacct if the header has ``|`` and JobID, else CSV),
        "sacct" (``sacct --parsable2`` or ``-p``: pipe-separated with a header;
        reportseff's ``^|^`` delimiter too) or "csv" (columns ``job_id``,
        ``n_gpus`` or ``n_nodes``, ``start``, ``end``, ``state``, optional
        ``cause`` and ``nodes``).
    taxonomy : Taxonomy or str, default "meta-2024"
        A `Taxonomy` or a preset name or path; classifies end states.
    errors : {"raise", "skip"}, default "raise"
        "raise": a malformed row raises `LogError`; "skip": it is skipped and
        recorded in ``summary.errors`` and ``summary.skipped``.

    Returns
    -------
    JobLog
        The tidy log.

    Raises
    ------
    LogError
        On a malformed header, or a malformed row with ``errors="raise"``.

    Notes
    -----
    How sacct columns are read (column names are case-insensitive):

    - Runtime: ``Elapsed`` (or ``ElapsedRaw``, seconds) where the log has it,
      else ``End - Start``. Slurm computes Elapsed from epoch seconds (minus
      time suspended), whereas Start and End are local times without a zone,
      so ``End - Start`` is off by the daylight-saving shift for a job that
      spans the change. Start and End are kept as written (read as UTC). A row
      is malformed ("end before start") only when ``End - Start`` falls short
      of Elapsed by more than an hour (`DST_SLACK_S`). A log may have Elapsed
      and no Start (or no End).
    - Nodes: ``AllocNodes`` (when > 0), else ``NNodes``, else ``node=`` in
      AllocTRES, else the length of ``NodeList``.
    - GPUs, all job totals: the allocation (``AllocTRES``, then the older
      ``AllocGRES``) where the log has one; else the request (``ReqTRES``);
      else an ``NGPUs`` column. In TRES, ``gres/gpu=N`` is the total and typed
      entries (``gres/gpu:a100=N``) are summed only without it; AllocGRES
      reads ``gpu:N``, ``gpu:TYPE:N`` (an ``(IDX:...)`` suffix is ignored). A
      non-empty allocation without GPUs means 0 GPUs. ``ReqGRES`` is not read:
      it keeps the ``--gres`` request as written, which counts per node.
    - States: the first word (``CANCELLED by 123`` is CANCELLED), mapped by the
      taxonomy (its aliases: BOOT_FAIL is NODE_FAIL, DEADLINE is TIMEOUT in the
      presets). Rows in a state that ends no attempt are skipped and counted by
      reason: not finished (RUNNING, PENDING, SUSPENDED, REQUEUE_HOLD, ...),
      resized (RESIZING: the part of a job before a size change), revoked
      (REVOKED: a federation sibling that ran elsewhere), special exit
      (SPECIAL_EXIT). Any other state word is malformed ("unknown state").
    - Jobs that never started (no Start, or without a Start column a
      CANCELLED row with zero Elapsed) are skipped as "never started".
    """
    if format not in FORMATS:
        raise ParameterError("format", f"must be one of {FORMATS} (got {format!r})")
    if errors not in ("raise", "skip"):
        raise ParameterError("errors", f"must be 'raise' or 'skip' (got {errors!r})")
    tax = load_taxonomy(taxonomy)
    text, source = _read_text(path_or_text)
    lines = text.replace("\r\n", "\n").split("\n")  # only newlines end lines, so line numbers match editors
    first = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#")), None)
    if first is None:
        raise LogError(1, "empty log", "no header line")
    if format == "auto":
        header = lines[first]
        format = "sacct" if "|" in header and "jobid" in header.lower().replace("_", "") else "csv"
    summary = LogSummary(source=source, format=format)
    reader = _sacct_rows if format == "sacct" else _csv_rows
    rows = []
    node_index = _NodeIndex()
    for item in reader(lines, first, tax, summary, node_index):
        if isinstance(item, LogError):
            if errors == "raise":
                raise item
            summary.errors.append(item)
            summary.skipped[f"malformed ({item.reason})"] += 1
        elif isinstance(item, str):
            summary.skipped[item] += 1
        else:
            rows.append(item)
    rows = _merge_components(rows, summary)
    summary.rows_used = len(rows)
    return _to_joblog(rows, tax, summary, node_index)


# Reading a log holds about this many bytes per byte of it (text, lines, fields, rows).
_BYTES_PER_LOG_BYTE = 40


def _read_text(path_or_text) -> tuple[str, str]:
    """(text, source): a path is read if it is a regular file that fits in memory;
    a one-line string that names something else on disk is refused, not parsed as a log."""
    one_line = isinstance(path_or_text, str) and "\n" not in path_or_text and path_or_text.strip()
    if isinstance(path_or_text, Path) or (one_line and os.path.exists(path_or_text)):
        path = Path(path_or_text)
        try:
            info = path.stat()
            if not stat.S_ISREG(info.st_mode):
                raise LogError(0, "cannot read the log", f"{path}: not a regular file (a directory, device or FIFO)")
            check_memory("log", info.st_size * _BYTES_PER_LOG_BYTE, f"reading {info.st_size} bytes of log would")
            # Undecodable bytes (a job name in Latin-1) become U+FFFD: no number depends on them.
            return path.read_text(encoding="utf-8-sig", errors="replace"), str(path)
        except OSError as err:
            raise LogError(0, "cannot read the log", f"{path}: {err.strerror}") from None
    if isinstance(path_or_text, str):
        return path_or_text, "<text>"
    raise TypeError(f"read_log takes a path or the log text (got {type(path_or_text).__name__})")


def _split_job_id(raw: str, line: int):
    """(job, run, het component, step) of a Slurm JobID."""
    match = _JOB_ID.match(raw.strip())
    if match is None:
        raise LogError(line, "bad job id", repr(raw[:60]))
    job, task, het, step = match.groups()
    run = job if task is None else f"{job}_{task}"
    return run, het, step


def _state(raw: str, tax: Taxonomy, line: int) -> tuple[str | None, str]:
    """(canonical state, or None for a state that ends no attempt; the scheduler's word) of e.g. 'CANCELLED by 1'."""
    word = raw.strip().split(" ", 1)[0].upper() if raw.strip() else ""
    if not word:
        raise LogError(line, "missing field", "State is empty")
    canonical = tax.canonical_state(word)
    if canonical is None and word not in _NOT_AN_END_STATE:
        raise LogError(line, "unknown state", repr(raw.strip()[:60]))
    return canonical, word


def _not_an_end_state(word: str) -> str:
    """The skip reason of a row whose state ends no attempt."""
    return f"{_NOT_AN_END_STATE[word]} ({word})"


def _iso(seconds: float) -> str:
    try:
        return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return repr(seconds)


def _split_fields(line_text: str, sep: str, n: int, line: int) -> list[str]:
    fields = line_text.split(sep)
    if len(fields) < n:
        raise LogError(line, "missing field", f"{len(fields)} fields, the header has {n}")
    if len(fields) > n:
        raise LogError(line, "extra field", f"{len(fields)} fields, the header has {n}")
    return fields


def _sacct_rows(lines, first, tax, summary, node_index):
    header_text = lines[first]
    sep = "^|^" if "^|^" in header_text else "|"  # reportseff runs sacct with --delimiter=^|^
    header = [h.strip() for h in header_text.split(sep)]
    lower = {h.lower(): i for i, h in enumerate(header)}
    id_column = "jobid" if "jobid" in lower else "jobidraw"
    for need in (id_column, "state"):
        if need not in lower:
            raise LogError(first + 1, "missing field", f"the header has no {need!r} column ({header_text[:80]!r})")
    has_elapsed = "elapsed" in lower or "elapsedraw" in lower
    if not has_elapsed and not ("start" in lower and "end" in lower):
        missing = "start" if "start" not in lower else "end"
        raise LogError(first + 1, "missing field", f"the header has no Elapsed or ElapsedRaw column, and no "
                                                   f"{missing!r} column for End - Start ({header_text[:80]!r})")
    cause_column = next((c for c in ("cause", "admincomment", "comment", "reason") if c in lower), None)
    parents: dict[str, _Row | None] = {}  # None: the job's row was skipped; its steps fold into nothing
    for index in range(first + 1, len(lines)):
        text = lines[index]
        if not text.strip():
            continue
        summary.rows_read += 1
        line = index + 1
        try:
            get = _getter(_split_fields(text, sep, len(header), line), lower)
            run, het, step = _split_job_id(get(id_column), line)
            key = f"{run}+{het}"
            if step is not None:
                if key not in parents:
                    yield "step without its job"
                    continue
                summary.rows_folded += 1
                parent = parents[key]
                if parent is not None and not parent.nodes.size and get("nodelist"):
                    parent.nodes = node_index.expand(get("nodelist"), line)
                    parent.nodelist = get("nodelist").strip() if parent.nodes.size else ""
                continue
            parents[key] = None  # later steps belong to the latest attempt, used or not
            state, word = _state(get("state"), tax, line)
            if state is None:
                yield _not_an_end_state(word)
                continue
            times = _sacct_times(get, lower, state, line, summary)
            if times is None:
                yield "never started"
                continue
            start, end, runtime = times
            nodes = node_index.expand(get("nodelist"), line) if "nodelist" in lower else _NO_NODES
            n_nodes = _sacct_nodes(get, lower, nodes, line)
            n_gpus = _sacct_gpus(get, lower, line)
            cause = get(cause_column).strip() if cause_column is not None else ""
        except LogError as err:
            yield err
            continue
        row = _Row(line, run if het is None else key, run, start, end, state, word, cause, n_gpus, n_nodes, nodes,
                   get("nodelist").strip() if nodes.size else "", runtime_s=runtime, component=het)
        parents[key] = row
        yield row


def _sacct_times(get, lower, state, line, summary):
    """(start, end, runtime in seconds) of a finished sacct row; None when the job never started."""
    start = parse_time(get("start"), line, "Start") if "start" in lower else None
    end = parse_time(get("end"), line, "End") if "end" in lower else None
    elapsed = parse_duration_seconds(get("elapsed"), line, "Elapsed") if "elapsed" in lower else None
    if elapsed is None and "elapsedraw" in lower:
        raw = parse_count(get("elapsedraw"), line, "ElapsedRaw")
        elapsed = None if raw is None else float(raw)
    if "start" in lower:
        if start is None:
            return None
    elif elapsed == 0 and state == "CANCELLED":  # no Start column: cancelled without runtime never ran
        return None
    if elapsed is not None:
        if start is not None and end is not None:
            wall = end - start
            # Elapsed leaves out time suspended (so it may be shorter); it exceeds End - Start only
            # by the daylight-saving shift of local times.
            if wall < elapsed - DST_SLACK_S:
                reason = "end before start" if wall < 0 else "elapsed longer than end - start"
                raise LogError(line, reason, f"start {_iso(start)}, end {_iso(end)}, Elapsed {elapsed:g} s")
            if wall != elapsed:
                summary.notes["runtime from Elapsed, not End - Start (a DST change or suspension)"] += 1
        elif start is not None:
            end = start + elapsed
        elif end is not None:
            start = end - elapsed
        return start, end, elapsed
    if start is None or end is None:
        if state == "CANCELLED":
            return None
        missing = "Start" if start is None else "End"
        raise LogError(line, "missing field", f"{missing} is missing for a finished job, and Elapsed too")
    if end < start:
        raise LogError(line, "end before start", f"start {_iso(start)}, end {_iso(end)}")
    return start, end, end - start


def _sacct_nodes(get, lower, nodes, line) -> int | None:
    """Node count: AllocNodes (when > 0), NNodes, node= in AllocTRES, the node list; None if none says."""
    if "allocnodes" in lower:
        alloc = parse_count(get("allocnodes"), line, "AllocNodes")
        if alloc:  # 0 for a job never allocated: no answer
            return alloc
    if "nnodes" in lower:
        count = parse_count(get("nnodes"), line, "NNodes")
        if count is not None:
            return count
    match = _NODE_TRES.search(get("alloctres"))
    if match:
        count = parse_count(match.group(1), line, "AllocTRES node")
        if count:
            return count
    return len(nodes) or None


def _sacct_gpus(get, lower, line) -> int | None:
    """Total GPUs of the job: the allocation, else the request, else an NGPUs column (see `read_log`)."""
    allocated = []
    if "alloctres" in lower:
        allocated.append(_gpus_from_tres(get("alloctres"), line, "AllocTRES"))
    if "allocgres" in lower:
        # Slurm before 19.05 leaves AllocGRES empty for a job allocated no GRES: that is 0 GPUs.
        allocated.append(_gpus_from_gres(get("allocgres"), line, "AllocGRES") or 0)
    with_gpus = [count for count in allocated if count]
    if with_gpus:
        return with_gpus[0]
    if any(count is not None for count in allocated):
        return 0  # an allocation that holds no GPU
    # ReqGRES is not read: it keeps the request as written, per node for --gres, so it is no total.
    if "reqtres" in lower:
        requested = _gpus_from_tres(get("reqtres"), line, "ReqTRES")
        if requested is not None:
            return requested
    if "ngpus" in lower:
        return parse_count(get("ngpus"), line, "NGPUs")
    return None


def _getter(fields: list, columns: dict):
    """get(name): the row's field in column `name` (lower case), or "" if the log has no such column."""
    return lambda name: fields[columns[name]] if name in columns else ""


def _gpu_count(value: str, line: int, field: str) -> int:
    value = value.strip()
    if not value.isdigit():
        raise LogError(line, "bad number", f"{field} GPU count {value!r}")
    return int(value)


def _gpus_from_tres(tres: str, line: int, field: str = "TRES") -> int | None:
    """GPUs in a TRES string (``cpu=8,gres/gpu=4,gres/gpu:a100=4,node=1``); None when it is empty.

    ``gres/gpu=N`` is the total; only without it do the typed counts ``gres/gpu:TYPE=N`` add up.
    """
    if tres.strip().lower() in _MISSING:
        return None
    untyped = _GPU_TRES_UNTYPED.findall(tres)
    if untyped:
        return _gpu_count(untyped[0], line, field)
    return sum(_gpu_count(v, line, field) for v in _GPU_TRES_TYPED.findall(tres))


def _gpus_from_gres(gres: str, line: int, field: str = "GRES") -> int | None:
    """GPUs in an AllocGRES string (``gpu:2``, ``gpu:a100:8``, ``gpu:tesla:4(IDX:0-3)``); None when empty.

    Slurm before 19.05 wrote AllocGRES as the per-node count times the node count, a job total.
    An untyped ``gpu:N`` is the total; only without one do typed counts add up. A TRES-style
    value (``gres/gpu=8``, as later versions print) is read as TRES.
    """
    if gres.strip().lower() in _MISSING:
        return None
    if "gres/" in gres:
        return _gpus_from_tres(gres, line, field)
    untyped, typed = [], []
    for item in re.sub(r"\([^)]*\)", "", gres).split(","):  # drop (IDX:0,1) before splitting on commas
        parts = [p.strip() for p in item.split(":")]
        if parts[0].lower() != "gpu":
            continue  # mps, shard, other resources
        if len(parts) == 1:
            untyped.append(1)
        elif len(parts) == 2 and parts[1].isdigit():
            untyped.append(int(parts[1]))
        elif len(parts) == 2:
            typed.append(1)  # gpu:TYPE is one GPU of that type
        else:
            typed.append(_gpu_count(parts[-1], line, field))
    return untyped[0] if untyped else sum(typed)


def _csv_rows(lines, first, tax, summary, node_index):
    try:
        header_fields = next(csv.reader([lines[first]]))
    except csv.Error as err:
        raise LogError(first + 1, "bad csv", f"header: {err}") from None
    lower = {h.strip().lower(): i for i, h in enumerate(header_fields)}
    missing = [c for c in ("job_id", "start", "end", "state") if c not in lower]
    if "n_gpus" not in lower and "n_nodes" not in lower:
        missing.append("n_gpus or n_nodes")
    if missing:
        raise LogError(first + 1, "missing field", f"the header lacks {', '.join(missing)} ({lines[first][:80]!r})")
    n = len(header_fields)
    for index in range(first + 1, len(lines)):
        text = lines[index]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        summary.rows_read += 1
        line = index + 1
        try:
            if '"' in text or "\r" in text:  # quoting (or a stray carriage return): the csv module's rules
                try:
                    fields = next(csv.reader([text]))
                except csv.Error as err:
                    raise LogError(line, "bad csv", str(err)) from None
            else:  # what csv.reader gives for such a line, a tenth of the time
                fields = text.split(",")
            if len(fields) != n:
                raise LogError(line, "missing field" if len(fields) < n else "extra field",
                               f"{len(fields)} fields, the header has {n}")
            get = _getter(fields, lower)
            job_id = get("job_id").strip()
            if not job_id:
                raise LogError(line, "missing field", "job_id is empty")
            state, word = _state(get("state"), tax, line)
            if state is None:
                yield _not_an_end_state(word)
                continue
            start = parse_time(get("start"), line, "start")
            end = parse_time(get("end"), line, "end")
            if start is not None and end is not None and end < start:
                raise LogError(line, "end before start", f"start {_iso(start)}, end {_iso(end)}")
            n_gpus = parse_count(get("n_gpus"), line, "n_gpus") if "n_gpus" in lower else None
            n_nodes = parse_count(get("n_nodes"), line, "n_nodes") if "n_nodes" in lower else None
            nodes = node_index.expand(get("nodes"), line) if "nodes" in lower else _NO_NODES
            if n_gpus is None and n_nodes is None and not nodes.size and start is not None:
                raise LogError(line, "missing field", "neither n_gpus nor n_nodes is given")
        except LogError as err:
            yield err
            continue
        run, _, component = job_id.split(".", 1)[0].partition("+")
        row = _Row(line, job_id, run, start, end, state, word, get("cause").strip(), n_gpus,
                   n_nodes if n_nodes is not None else (len(nodes) or None), nodes,
                   get("nodes").strip() if nodes.size else "",
                   runtime_s=None if start is None or end is None else end - start, component=component or None)
        verdict = _verdict(row)
        yield verdict if verdict else row


def _verdict(row: _Row) -> str | LogError | None:
    """Why a CSV row is not used: a reason to count (never dropped silently), an error, or None."""
    if row.start is None:
        return "never started"
    if row.end is None:
        if row.state == "CANCELLED":
            return "never started"
        return LogError(row.line, "missing field", "End is missing for a finished job")
    return None


def _merge_components(rows: list, summary: LogSummary) -> list:
    """Merge heterogeneous-job components (``123+0``, ``123+1``) into one job attempt.

    Components of one attempt start together and each appears once; a component seen again, or a
    different start, opens the next attempt (a requeued het job repeats its components).
    """
    out, open_groups = [], {}
    for row in rows:
        if row.component is None:
            out.append(row)
            continue
        group = open_groups.get(row.run_id)
        if group is None or row.component in group[1] or row.start != group[0].start:
            row.job_id = row.run_id
            open_groups[row.run_id] = (row, {row.component})
            out.append(row)
            continue
        first, seen = group
        seen.add(row.component)
        summary.rows_folded += 1
        first.n_gpus = _add(first.n_gpus, row.n_gpus)
        first.n_nodes = _add(first.n_nodes, row.n_nodes)
        first.nodes = np.concatenate([first.nodes, row.nodes])
        first.nodelist = ",".join(n for n in (first.nodelist, row.nodelist) if n)
        first.end = _latest(first.end, row.end)
        first.runtime_s = _latest(first.runtime_s, row.runtime_s)
        if row.state == "NODE_FAIL" or (row.state == "FAILED" and first.state != "NODE_FAIL"):
            first.state, first.cause = row.state, row.cause or first.cause
    return out


def _latest(a, b):
    return a if b is None else b if a is None else max(a, b)


def _add(a, b):
    return None if a is None and b is None else (a or 0) + (b or 0)


def _to_joblog(rows: list, tax: Taxonomy, summary: LogSummary, node_index: _NodeIndex) -> JobLog:
    n = len(rows)
    start = np.array([r.start for r in rows], dtype=float)
    end = np.array([r.end for r in rows], dtype=float)
    ds = xr.Dataset(
        {
            "job_id": ("job", np.array([r.job_id for r in rows], dtype=object).astype(str)),
            "run_id": ("job", np.array([r.run_id for r in rows], dtype=object).astype(str)),
            "n_gpus": ("job", np.array([-1 if r.n_gpus is None else r.n_gpus for r in rows], dtype=np.int64)),
            "n_nodes": ("job", np.array([-1 if r.n_nodes is None else r.n_nodes for r in rows], dtype=np.int64)),
            "start": ("job", _datetimes(start)),
            "end": ("job", _datetimes(end)),
            "runtime_h": ("job", np.array([np.nan if r.runtime_s is None else r.runtime_s for r in rows],
                                          dtype=float) / 3600.0),
            "state": ("job", np.array([r.state for r in rows], dtype=object).astype(str)),
            "cause": ("job", np.array([r.cause for r in rows], dtype=object).astype(str)),
            "infrastructure": ("job", np.array([tax.is_infrastructure(r.state, r.cause) for r in rows], dtype=bool)),
            # As logged (compressed); a fixed-width string array of expanded lists would be huge.
            "nodelist": ("job", np.array([r.nodelist for r in rows], dtype=object)),
            "line": ("job", np.array([r.line for r in rows], dtype=np.int64)),
        },
        coords={"job": np.arange(n)},
        attrs={"source": summary.source, "format": summary.format, "taxonomy": tax.name,
               "taxonomy_version": tax.version, "rows_read": summary.rows_read, "rows_used": summary.rows_used,
               "rows_skipped": summary.rows_skipped},
    )
    ds.runtime_h.attrs["units"] = "h"
    return JobLog(dataset=ds, node_lists=node_index.node_lists(rows), summary=summary, taxonomy=tax)


def _datetimes(seconds: np.ndarray) -> np.ndarray:
    # Out-of-range years (fuzzed input) are kept as NaT rather than overflowing.
    ok = np.isfinite(seconds) & (np.abs(seconds) < 2**62 / 1e9)
    out = np.full(seconds.shape, np.datetime64("NaT"), dtype="datetime64[s]")
    out[ok] = np.round(seconds[ok]).astype(np.int64).astype("datetime64[s]")
    return out
