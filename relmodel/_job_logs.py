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

from . import _fast_csv
from ._errors import ParameterError
from ._checks import check_memory
from ._taxonomy import Taxonomy
from ._text import MISSING_TOKENS
from ._display import key_value_table
from ._units import short_repr
from ._taxonomy import load as load_taxonomy

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

    def __repr__(self) -> str:
        return (f"JobLog({len(self):,} jobs from {short_repr(self.summary.source, 80)} ({self.summary.format}), "
                f"taxonomy {self.taxonomy.name} v{self.taxonomy.version}"
                f"{', with node lists' if self.has_node_lists else ''})")

    def _repr_html_(self) -> str:
        ds = self.dataset
        rows = [("jobs", f"{len(self):,}"), ("from", f"{self.summary.source} ({self.summary.format})"),
                ("taxonomy", f"{self.taxonomy.name} v{self.taxonomy.version}"),
                ("node lists", "yes" if self.has_node_lists else "no")]
        if len(self):
            rows += [("GPUs a job", f"{int(ds.n_gpus.min())} to {int(ds.n_gpus.max())}"),
                     ("infrastructure failures", f"{int(ds.infrastructure.sum()):,}")]
        return key_value_table("JobLog", rows)

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
    if value.lower() in MISSING_TOKENS:
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
    """Parse a Slurm duration as hours (`parse_duration_seconds` in hours).

    Parameters
    ----------
    text, line, field
        As for `parse_duration_seconds`.

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
    """Parse a Slurm duration in seconds.

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
        Seconds; None when missing or ``INVALID``.

    Raises
    ------
    LogError
        On a duration that cannot be read.
    """
    value = text.strip()
    if value.lower() in MISSING_TOKENS or value.upper() == "INVALID":  # sacct prints INVALID for a negative time
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
    """Parse a non-negative integer as logged; None when missing (`line` and `field` as for `parse_time`)."""
    value = text.strip()
    if value.lower() in MISSING_TOKENS:
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
    if value.lower() in MISSING_TOKENS or value.lower() == "none assigned":
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


def read_log(path_or_text, format: str = "auto", *, taxonomy="meta-2024", errors: str = "raise",
             progress: bool | None = None) -> JobLog:
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
    progress : bool, optional
        A progress bar on stderr while a large log (over 16 MiB) is read.
        None (the default): on a terminal, unless the command line was given
        ``--quiet``.

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
    - Bytes that are not UTF-8 are read as U+FFFD (no number depends on
      them); ``summary.notes`` names the lines that held them.

    The log is read by columns, a block of lines at a time (pandas' C reader;
    each distinct value of a field parsed once), and, if any row is malformed
    or not plainly written, again line by line, which names the row: the two
    give the same `JobLog`.
    """
    if format not in FORMATS:
        raise ParameterError("format", f"must be one of {FORMATS} (got {format!r})")
    if errors not in ("raise", "skip"):
        raise ParameterError("errors", f"must be 'raise' or 'skip' (got {errors!r})")
    tax = load_taxonomy(taxonomy)
    log = _read_columns(path_or_text, format, tax, progress)
    return log if log is not None else _read_lines(path_or_text, format, tax, errors, progress)


def _read_lines(path_or_text, format: str, tax: Taxonomy, errors: str, progress: bool | None = False) -> JobLog:
    """`read_log` a line at a time: every row's fate, malformed ones named by their line."""
    from ._feedback import enabled, progress_bar

    text, source, undecodable = _read_text(path_or_text)
    lines = text.replace("\r\n", "\n").split("\n")  # only newlines end lines, so line numbers match editors
    del text
    first = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#")), None)
    if first is None:
        raise LogError(1, "empty log", "no header line")
    if format == "auto":
        format = _format_of(lines[first])
    summary = LogSummary(source=source, format=format)
    _note_undecodable(summary, undecodable)
    reader = _sacct_rows if format == "sacct" else _csv_rows
    rows = []
    node_index = _NodeIndex()
    bar = progress_bar(len(lines), "reading log", unit="line",
                       enabled_=enabled(progress) and len(lines) > _LINES_FOR_A_BAR)
    shown = 0
    for item in reader(lines, first, tax, summary, node_index):
        if summary.rows_read - shown >= _LINES_FOR_A_BAR:
            bar.update(summary.rows_read - shown)
            shown = summary.rows_read
        if isinstance(item, LogError):
            if errors == "raise":
                bar.close()
                raise item
            summary.errors.append(item)
            summary.skipped[f"malformed ({item.reason})"] += 1
        elif isinstance(item, str):
            summary.skipped[item] += 1
        else:
            rows.append(item)
    bar.close()
    rows = _merge_components(rows, summary)
    summary.rows_used = len(rows)
    return _to_joblog(rows, tax, summary, node_index)


_LINES_FOR_A_BAR = 100_000  # a log shorter than this is read line by line in about a second


def _format_of(header: str) -> str:
    """The format "auto" reads: sacct if the header has ``|`` and JobID, else CSV."""
    return "sacct" if "|" in header and "jobid" in header.lower().replace("_", "") else "csv"


def _note_undecodable(summary: LogSummary, lines: list):
    if lines:
        more = f" and {len(lines) - 1} more" if len(lines) > 1 else ""
        summary.notes[f"bytes that are not UTF-8, read as U+FFFD (line {lines[0]}{more})"] = len(lines)


# Reading a log holds about this many bytes per byte of it (text, lines, fields, rows).
_BYTES_PER_LOG_BYTE = 40


def _log_file(path_or_text) -> tuple[Path | None, int]:
    """(the log file and its size) that `path_or_text` names, or (None, 0) for the log's text.

    A path must be a regular file; a one-line string that names something else on disk is
    refused, not parsed as a log."""
    one_line = isinstance(path_or_text, str) and "\n" not in path_or_text and path_or_text.strip()
    if isinstance(path_or_text, Path) or (one_line and os.path.exists(path_or_text)):
        path = Path(path_or_text)
        try:
            info = path.stat()
        except OSError as err:
            raise LogError(0, "cannot read the log", f"{path}: {err.strerror}") from None
        if not stat.S_ISREG(info.st_mode):
            raise LogError(0, "cannot read the log", f"{path}: not a regular file (a directory, device or FIFO)")
        return path, info.st_size
    if isinstance(path_or_text, str):
        return None, 0
    raise TypeError(f"read_log takes a path or the log text (got {type(path_or_text).__name__})")


def _read_text(path_or_text) -> tuple[str, str, list]:
    """(text, source, the lines that are not UTF-8) of a log file that fits in memory, or of the text."""
    path, size = _log_file(path_or_text)
    if path is None:
        return path_or_text, "<text>", []
    check_memory("log", size * _BYTES_PER_LOG_BYTE, f"reading {size} bytes of log would")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise LogError(0, "cannot read the log", f"{path}: {err.strerror}") from None
    # As a text file reads: CRLF, and a CR alone, end a line.
    data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data
    try:
        return data.decode("utf-8-sig"), str(path), []
    except UnicodeDecodeError:
        # Undecodable bytes (a job name in Latin-1) become U+FFFD: no number depends on them.
        return data.decode("utf-8-sig", errors="replace"), str(path), _fast_csv.undecodable_lines(data)


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


def _sacct_header(header_text: str, line: int):
    """(separator, number of fields, column name -> index, JobID column, cause column) of a sacct header."""
    sep = "^|^" if "^|^" in header_text else "|"  # reportseff runs sacct with --delimiter=^|^
    header = [h.strip() for h in header_text.split(sep)]
    lower = {h.lower(): i for i, h in enumerate(header)}
    id_column = "jobid" if "jobid" in lower else "jobidraw"
    for need in (id_column, "state"):
        if need not in lower:
            raise LogError(line, "missing field", f"the header has no {need!r} column ({header_text[:80]!r})")
    has_elapsed = "elapsed" in lower or "elapsedraw" in lower
    if not has_elapsed and not ("start" in lower and "end" in lower):
        missing = "start" if "start" not in lower else "end"
        raise LogError(line, "missing field", f"the header has no Elapsed or ElapsedRaw column, and no "
                                              f"{missing!r} column for End - Start ({header_text[:80]!r})")
    cause_column = next((c for c in ("cause", "admincomment", "comment", "reason") if c in lower), None)
    return sep, len(header), lower, id_column, cause_column


def _sacct_rows(lines, first, tax, summary, node_index):
    sep, n_fields, lower, id_column, cause_column = _sacct_header(lines[first], first + 1)
    parents: dict[str, _Row | None] = {}  # None: the job's row was skipped; its steps fold into nothing
    for index in range(first + 1, len(lines)):
        text = lines[index]
        if not text.strip():
            continue
        summary.rows_read += 1
        line = index + 1
        try:
            get = _getter(_split_fields(text, sep, n_fields, line), lower)
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
    if tres.strip().lower() in MISSING_TOKENS:
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
    if gres.strip().lower() in MISSING_TOKENS:
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


def _csv_header(header_text: str, line: int):
    """(number of fields, column name -> index) of a CSV log's header."""
    try:
        header_fields = next(csv.reader([header_text]))
    except csv.Error as err:
        raise LogError(line, "bad csv", f"header: {err}") from None
    lower = {h.strip().lower(): i for i, h in enumerate(header_fields)}
    missing = [c for c in ("job_id", "start", "end", "state") if c not in lower]
    if "n_gpus" not in lower and "n_nodes" not in lower:
        missing.append("n_gpus or n_nodes")
    if missing:
        raise LogError(line, "missing field", f"the header lacks {', '.join(missing)} ({header_text[:80]!r})")
    return len(header_fields), lower


def _csv_rows(lines, first, tax, summary, node_index):
    n, lower = _csv_header(lines[first], first + 1)
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
    return _joblog({
        "job_id": [r.job_id for r in rows], "run_id": [r.run_id for r in rows],
        "n_gpus": [-1 if r.n_gpus is None else r.n_gpus for r in rows],
        "n_nodes": [-1 if r.n_nodes is None else r.n_nodes for r in rows],
        "start": [r.start for r in rows], "end": [r.end for r in rows],
        "runtime_s": [np.nan if r.runtime_s is None else r.runtime_s for r in rows],
        "state": [r.state for r in rows], "cause": [r.cause for r in rows],
        "infrastructure": [tax.is_infrastructure(r.state, r.cause) for r in rows],
        "nodelist": [r.nodelist for r in rows], "line": [r.line for r in rows],
    }, tax, summary, node_index.node_lists(rows))


def _joblog(c: dict, tax: Taxonomy, summary: LogSummary, node_lists: NodeLists) -> JobLog:
    """The `JobLog` of columns (lists or arrays, one entry per job attempt; None or NaN where unknown)."""
    ds = xr.Dataset(
        {
            "job_id": ("job", np.array(c["job_id"], dtype=object).astype(str)),
            "run_id": ("job", np.array(c["run_id"], dtype=object).astype(str)),
            "n_gpus": ("job", np.array(c["n_gpus"], dtype=np.int64)),
            "n_nodes": ("job", np.array(c["n_nodes"], dtype=np.int64)),
            "start": ("job", _datetimes(np.array(c["start"], dtype=float))),
            "end": ("job", _datetimes(np.array(c["end"], dtype=float))),
            "runtime_h": ("job", np.array(c["runtime_s"], dtype=float) / 3600.0),
            "state": ("job", np.array(c["state"], dtype=object).astype(str)),
            "cause": ("job", np.array(c["cause"], dtype=object).astype(str)),
            "infrastructure": ("job", np.array(c["infrastructure"], dtype=bool)),
            # As logged (compressed); a fixed-width string array of expanded lists would be huge.
            "nodelist": ("job", np.array(c["nodelist"], dtype=object)),
            "line": ("job", np.array(c["line"], dtype=np.int64)),
        },
        coords={"job": np.arange(len(c["line"]))},
        attrs={"source": summary.source, "format": summary.format, "taxonomy": tax.name,
               "taxonomy_version": tax.version, "rows_read": summary.rows_read, "rows_used": summary.rows_used,
               "rows_skipped": summary.rows_skipped},
    )
    ds.runtime_h.attrs["units"] = "h"
    return JobLog(dataset=ds, node_lists=node_lists, summary=summary, taxonomy=tax)


def _datetimes(seconds: np.ndarray) -> np.ndarray:
    # Out-of-range years (fuzzed input) are kept as NaT rather than overflowing.
    ok = np.isfinite(seconds) & (np.abs(seconds) < 2**62 / 1e9)
    out = np.full(seconds.shape, np.datetime64("NaT"), dtype="datetime64[s]")
    out[ok] = np.round(seconds[ok]).astype(np.int64).astype("datetime64[s]")
    return out


# --------------------------------------------------------------------------- reading by columns
# `read_log`'s first path: the log read a block of lines at a time (`_fast_csv`), each distinct
# value of a field parsed once by the functions above (times and job ids in bulk where plainly
# written), the rows' fates worked out on arrays. A malformed row, or one it cannot vouch for,
# sends the whole log to `_read_lines`, which names it: either path gives the same JobLog.

# Reading by columns holds up to about this many bytes per byte of log (a block's strings, a few
# numbers and codes per row, every node of every list, and the JobLog): 4 for the synthetic sacct
# log of benches/bench_readers.py, 10 for its CSV log, with 18 nodes per job.
_COLUMN_BYTES_PER_LOG_BYTE = 12


def _read_columns(path_or_text, format: str, tax: Taxonomy, progress) -> JobLog | None:
    """`read_log` by columns; None where the log needs `_read_lines`."""
    from ._feedback import enabled

    path, size = _log_file(path_or_text)
    if path is None:
        try:
            source, name = path_or_text.encode("utf-8"), "<text>"
        except UnicodeEncodeError:  # lone surrogates: only as text, line by line
            return None
    else:
        check_memory("log", size * _COLUMN_BYTES_PER_LOG_BYTE, f"reading {size} bytes of log would")
        source, name = path, str(path)
    reader, undecodable = None, []
    try:
        for data, first_line in _fast_csv.blocks(source, bom=path is not None, universal=path is not None,
                                                 progress=enabled(progress), desc="reading log"):
            data, bad = _fast_csv.utf8(data, first_line)
            undecodable += bad
            if reader is None:
                found = _header_in(data, first_line)
                if found is None:  # blank lines and comments so far
                    continue
                header, line, start = found
                kind = _format_of(header) if format == "auto" else format
                try:
                    reader = (_SacctColumns if kind == "sacct" else _CsvColumns)(header, line, tax)
                except LogError:  # a header the per-line reader refuses, and says why
                    return None
                first_line, data = line + 1, data[start:]
            reader.add(*_fast_csv.parse(reader.separated(data), first_line, **reader.layout))
        if reader is None:
            return None
        summary = LogSummary(source=name, format=reader.format)
        _note_undecodable(summary, undecodable)
        return reader.joblog(summary)
    except (_fast_csv.Doubt, _Malformed, OSError):
        return None


class _Malformed(Exception):
    """A row the per-line reader would call malformed: it reads the log again, and names it."""


def _header_in(data: bytes, first_line: int):
    """(header, its line, the offset after it) of the first line that is neither blank nor a
    comment; None if the block has none."""
    start, line = 0, first_line
    while start < len(data):
        end = data.index(b"\n", start)
        text = data[start:end].decode("utf-8")
        if text.strip() and not text.lstrip().startswith("#"):
            return text, line, end + 1
        start, line = end + 1, line + 1
    return None


def _or_malformed(read):
    """read(value, line, field), a LogError as `_MALFORMED`."""
    def safe(value):
        try:
            return read(value, 0, "")
        except LogError:
            return _MALFORMED
    return safe


_MALFORMED = object()


def _floats(values: np.ndarray, read) -> tuple[np.ndarray, np.ndarray]:
    """(read(value) as floats, NaN for None; which are malformed), read once per distinct value."""
    results, codes = _fast_csv.per_value(values, _or_malformed(read))
    bad = np.array([r is _MALFORMED for r in results], dtype=bool)
    floats = np.array([np.nan if r is None or r is _MALFORMED else r for r in results], dtype=float)
    return floats[codes], bad[codes]


def _times(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`parse_time` of a column: (seconds, NaN for None; which are malformed)."""
    return _in_bulk(values, *_fast_csv.iso_seconds(values), parse_time)


def _counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`parse_count` of a column, as floats."""
    numbers, plain = _fast_csv.whole_numbers(values, max_digits=12)
    return _in_bulk(values, numbers.astype(float), plain, parse_count)


def _durations(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`parse_duration_seconds` of a column: HH:MM:SS and D-HH:MM:SS in bulk."""
    lengths, points = _fast_csv.codepoints(values, 12)
    hours, ok_h = _fast_csv.digits_at(points, lengths, 8, 2)
    minutes, ok_m = _fast_csv.digits_at(points, lengths, 5, 2)
    seconds, ok_s = _fast_csv.digits_at(points, lengths, 2, 2)
    plain = ok_h & ok_m & ok_s & (_fast_csv.char_at(points, lengths, 6) == 58) \
        & (_fast_csv.char_at(points, lengths, 3) == 58) & (minutes < 60) & (seconds < 60)
    days, dated = np.zeros(values.size, dtype=np.int64), np.zeros(values.size, dtype=bool)
    for width in range(1, 4):  # D-HH:MM:SS: days of 1 to 3 digits, hours below 24
        count, ok_d = _fast_csv.digits_at(points, lengths, 9 + width, width)
        these = ok_d & (lengths == 9 + width) & (_fast_csv.char_at(points, lengths, 9) == 45) & (hours < 24)
        days, dated = np.where(these, count, days), dated | these
    plain &= (lengths == 8) | dated
    total = (days * 86400 + hours * 3600 + minutes * 60 + seconds).astype(float)
    return _in_bulk(values, total, plain, parse_duration_seconds)


def _in_bulk(values: np.ndarray, numbers: np.ndarray, plain: np.ndarray, read) -> tuple[np.ndarray, np.ndarray]:
    """(numbers, NaN for None; which are malformed): `numbers` where `plain`, else read(value)
    once per distinct value."""
    numbers = np.where(plain, numbers, np.nan)
    bad = np.zeros(values.size, dtype=bool)
    if not plain.all():
        numbers[~plain], bad[~plain] = _floats(values[~plain], read)
    return numbers, bad


def _plain_job_ids(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(which JobIDs are JOB[_TASK][.STEP], digits and an alphanumeric step, at most 24
    characters; which of those have a step)."""
    lengths, c = _fast_csv.codepoints(values, 24)
    position = np.arange(24)[None, :]
    digit, underscore, dot = (c >= 48) & (c <= 57), c == 95, c == 46
    alnum = digit | ((c >= 65) & (c <= 90)) | ((c >= 97) & (c <= 122))
    has_dot = dot.any(axis=1)
    first_dot = np.where(has_dot, dot.argmax(axis=1), lengths)
    before = position < first_dot[:, None]
    after = (position > first_dot[:, None]) & (position < lengths[:, None])
    plain = (lengths >= 1) & (lengths <= 24) & digit[:, 0]
    plain &= (before <= (digit | underscore)).all(axis=1) & ((underscore & before).sum(axis=1) <= 1)
    plain &= np.take_along_axis(digit, np.maximum(first_dot - 1, 0)[:, None], axis=1)[:, 0]
    plain &= (after <= alnum).all(axis=1) & (~has_dot | (lengths > first_dot + 1))
    return plain, has_dot


class _Columns:
    """What the two formats' column readers share: per-row arrays kept a block at a time,
    tables of distinct strings, node lists, and the JobLog of the rows used."""

    format = ""

    def __init__(self, tax: Taxonomy, lower: dict, tabled, plain):
        self.tax, self.lower = tax, lower
        self.names = {name: lower[name] for name in (*tabled, *plain) if name is not None and name in lower}
        self.tables = {name: _fast_csv.Table() for name in tabled if name in self.names}
        self.parts: dict[str, list] = {}
        self.expanded: dict[int, np.ndarray | None] = {}  # node list -> its node numbers (None: malformed)
        self.node_keys = _NodeKeys()
        self.usecols = sorted(set(self.names.values()))

    def separated(self, data: bytes) -> bytes:
        return data

    def keep(self, **arrays):
        for name, array in arrays.items():
            self.parts.setdefault(name, []).append(array)

    def column(self, name: str, dtype=None) -> np.ndarray:
        """Column `name` of every row so far (its blocks joined once)."""
        parts = self.parts.get(name)
        if not parts:
            return np.empty(0, dtype=dtype)
        if len(parts) > 1:
            parts[:] = [np.concatenate(parts)]
        return parts[0]

    def codes(self, columns: dict, name: str) -> np.ndarray:
        """The row's numbers in the table of column `name` (-1 for a column the log lacks)."""
        if name not in self.names:
            return np.full(len(next(iter(columns.values()))), -1, dtype=np.int32)
        return self.tables[name].codes(columns[self.names[name]])

    def text(self, name: str, number: int) -> str:
        """Column `name`'s value numbered `number`: what `_getter` gives ("" for a column the log lacks)."""
        return self.tables[name].values[number] if number >= 0 else ""

    def expansions(self, numbers: np.ndarray, column: str) -> np.ndarray:
        """Node counts of the node lists `numbers` (-1 for a malformed list), each expanded once."""
        unique, inverse = np.unique(numbers, return_inverse=True)
        new = [k for k in unique.tolist() if k not in self.expanded]
        for start in range(0, len(new), _LISTS_AT_A_TIME):  # bounds the arrays of one expansion
            chunk = new[start:start + _LISTS_AT_A_TIME]
            self.expanded.update(zip(chunk, self.node_keys.expand([self.text(column, k) for k in chunk])))
        counts = np.array([-1 if self.expanded[k] is None else self.expanded[k].size for k in unique.tolist()],
                          dtype=np.int64)
        return counts[inverse]

    def stripped(self, name: str) -> np.ndarray:
        """Column `name`'s distinct values stripped, then "" (at -1: a row, or a log, without it)."""
        values = self.tables[name].values if name in self.tables else []
        return np.array([v.strip() for v in values] + [""], dtype=object)

    def getter(self, codes: dict, row: int):
        """get(name) of row `row`, as `_getter` gives it, from the tabled columns' numbers `codes`."""
        return lambda name: self.text(name, int(codes[name][row])) if name in codes else ""

    def words(self) -> list:
        """(canonical state or None, the scheduler's word) of each distinct State; None if malformed."""
        def word(raw):
            try:
                return _state(raw, self.tax, 0)
            except LogError:
                return None
        return [word(raw) for raw in self.tables["state"].values]

    def per_combination(self, rows: np.ndarray, keys: list, read) -> np.ndarray:
        """read(row) once per distinct combination of `keys` (arrays over `rows`), for all `rows`;
        -1 for None; raises `_Malformed` on a LogError."""
        import pandas as pd

        combined = np.zeros(rows.size, dtype=np.int64)
        for key in keys:
            key = key.astype(np.int64)
            combined = pd.factorize(combined * (int(key.max(initial=0)) + 2) + key + 1)[0].astype(np.int64)
        numbers, first = np.unique(combined, return_index=True)
        values = np.empty(numbers.size, dtype=np.int64)
        for k, row in enumerate(rows[first].tolist()):
            try:
                value = read(row)
            except LogError:
                raise _Malformed from None
            values[k] = -1 if value is None else value
        return values[np.searchsorted(numbers, combined)]

    def node_lists(self, events: np.ndarray, numbers: np.ndarray, used: np.ndarray) -> NodeLists:
        """The NodeLists of the rows used, whose node lists are numbered `used` (-1: none). The
        nodes are numbered as the per-line reader numbers them: in order of first sight, list
        after list in the order of the rows `events` (each a row whose list it expanded, numbered
        `numbers`)."""
        import pandas as pd

        order = pd.unique(numbers[np.argsort(events, kind="stable")]).astype(np.int64)
        arrays = [self.expanded[k] for k in order.tolist()] + [_NO_NODES]
        nodes = np.concatenate(arrays)
        names: dict[str, int] = {}
        ids = np.zeros(len(self.node_keys) + 1, dtype=np.int32)
        for number in _first_seen(nodes, len(self.node_keys)).tolist():
            ids[number] = names.setdefault(self.node_keys.name(number), len(names))
        ids = ids[nodes]
        slot = np.full(int(max(order.max(initial=-1), used.max(initial=-1))) + 2, -1, dtype=np.int64)
        slot[order] = np.arange(order.size)  # a list's place in `arrays`; -1 (the last, empty): none
        lengths = np.array([a.size for a in arrays], dtype=np.int64)
        place = slot[used]
        return _segments(list(names), ids, (np.cumsum(lengths) - lengths)[place], lengths[place])

    @staticmethod
    def skipped(summary: LogSummary, words: list, state: np.ndarray, unended: np.ndarray, reasons: list):
        """Count in `summary.skipped`, in the order of their first rows (as the per-line reader does),
        the rows `unended` (by their state's reason: numbers `state` into `words`) and `reasons`
        ((rows, reason) pairs)."""
        reason_of = [_not_an_end_state(w[1]) if w is not None and w[0] is None else "" for w in words]
        number = {reason: k for k, reason in enumerate(dict.fromkeys(reason_of))}
        by_reason = np.array([number[r] for r in reason_of], dtype=np.int64)[state[unended]]
        rows = np.flatnonzero(unended)
        reasons = reasons + [(rows[by_reason == k], reason) for reason, k in number.items()]
        for _, reason, count in sorted((rows[0], reason, rows.size) for rows, reason in reasons if rows.size):
            summary.skipped[reason] += count

    def finish(self, c: dict, components: np.ndarray, summary: LogSummary, node_lists: NodeLists) -> JobLog:
        """Merge heterogeneous components (`_merge_components` on the rows that have one: not
        None in `components`) and build the JobLog of columns `c` (arrays over the rows used)."""
        het = np.flatnonzero(np.not_equal(components, None))
        if het.size:
            c, node_lists = self.merged(c, het, components, summary, node_lists)
        import pandas as pd

        summary.rows_used = c["line"].size
        states, state_names = pd.factorize(c["state"])
        causes, cause_names = pd.factorize(c["cause"])
        pairs, inverse = np.unique(states.astype(np.int64) * max(len(cause_names), 1) + causes, return_inverse=True)
        c["infrastructure"] = np.array([self.tax.is_infrastructure(state_names[k // len(cause_names)],
                                                                   cause_names[k % len(cause_names)])
                                        for k in pairs.tolist()], dtype=bool)[inverse]
        return _joblog(c, self.tax, summary, node_lists)

    @staticmethod
    def merged(c: dict, het: np.ndarray, components: list, summary: LogSummary, node_lists: NodeLists):
        """(columns, NodeLists) with `_merge_components` applied to the rows `het`."""
        def known(value, missing=None):
            return None if value == missing or value != value else value  # NaN, or `missing`: None

        ids, offsets = node_lists.ids, node_lists.offsets
        rows = [_Row(int(c["line"][i]), c["job_id"][i], c["run_id"][i], known(float(c["start"][i])),
                     known(float(c["end"][i])), c["state"][i], "", c["cause"][i], known(int(c["n_gpus"][i]), -1),
                     known(int(c["n_nodes"][i]), -1), ids[offsets[i]:offsets[i + 1]], c["nodelist"][i],
                     runtime_s=known(float(c["runtime_s"][i])), component=components[i])
                for i in het.tolist()]
        kept = {id(row) for row in _merge_components(rows, summary)}
        keep = np.ones(c["line"].size, dtype=bool)
        starts, lengths = offsets[:-1].copy(), np.diff(offsets)
        pool = [ids]
        at = ids.size
        for i, row in zip(het.tolist(), rows):
            if id(row) not in kept:
                keep[i] = False
                continue
            for name, value in (("job_id", row.job_id), ("end", row.end), ("runtime_s", row.runtime_s),
                                ("state", row.state), ("cause", row.cause), ("nodelist", row.nodelist)):
                c[name][i] = np.nan if value is None else value
            c["n_gpus"][i] = -1 if row.n_gpus is None else row.n_gpus
            c["n_nodes"][i] = -1 if row.n_nodes is None else row.n_nodes
            pool.append(row.nodes)
            starts[i], lengths[i] = at, row.nodes.size
            at += row.nodes.size
        return ({k: v[keep] for k, v in c.items()},
                _segments(node_lists.names, np.concatenate(pool), starts[keep], lengths[keep]))


def _segments(names, pool: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> NodeLists:
    """NodeLists whose job i has the nodes ``pool[starts[i]:starts[i] + lengths[i]]``."""
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    kind = np.int32 if offsets[-1] < 2**31 and pool.size < 2**31 else np.int64
    index = np.repeat((starts - offsets[:-1]).astype(kind), lengths)
    index += np.arange(index.size, dtype=kind)
    return NodeLists(names, pool[index], offsets)


def _latest_parent(key: np.ndarray, step: np.ndarray) -> np.ndarray:
    """For each row, the latest row before it with the same key that is no step (-1: none)."""
    n = key.size
    order = np.lexsort((np.arange(n), key))
    latest = np.maximum.accumulate(np.where(step[order], -1, np.arange(n)))  # in `order`
    same = (latest >= 0) & (key[order][np.maximum(latest, 0)] == key[order])
    parent = np.empty(n, dtype=np.int64)
    parent[order] = np.where(same, order[np.maximum(latest, 0)], -1)
    return parent


class _SacctColumns(_Columns):
    """A sacct log by columns: `_sacct_rows`, `_sacct_times`, `_sacct_nodes` and `_sacct_gpus` on arrays."""

    format = "sacct"

    def __init__(self, header: str, line: int, tax: Taxonomy):
        self.sep, n_fields, lower, self.id_column, self.cause_column = _sacct_header(header, line)
        super().__init__(tax, lower, ("state", "nodelist", "allocnodes", "nnodes", "alloctres", "allocgres", "reqtres",
                                      "ngpus", self.cause_column), (self.id_column, "start", "end", "elapsed",
                                                                    "elapsedraw"))
        self.layout = {"sep": "\x1f" if self.sep == "^|^" else "|", "n_fields": n_fields, "usecols": self.usecols,
                       "quoted": False, "comments": False}
        self.keys: dict[tuple, int] = {}  # (run, het component) -> number
        self.runs: list[str] = []
        self.components: list = []

    def separated(self, data: bytes) -> bytes:
        if self.sep != "^|^":
            return data
        if b"\x1f" in data:
            raise _fast_csv.Doubt(0, "a unit separator in a ^|^ log")
        return data.replace(b"^|^", b"\x1f")

    def job(self, raw: str) -> tuple[int, bool]:
        """(number of the job's run+het key, whether a step) of a JobID; (-1, False) if malformed."""
        try:
            run, het, step = _split_job_id(raw, 0)
        except LogError:
            return -1, False
        return self.number(run, het), step is not None

    def number(self, run: str, het: str | None = None) -> int:
        """The number of a run's key (run and het component), numbering a new one."""
        number = self.keys.get((run, het))
        if number is None:
            number = self.keys[(run, het)] = len(self.runs)
            self.runs.append(run)
            self.components.append(het)
        return number

    def jobs(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(key numbers, steps) of a JobID column (-1: malformed): JOB[_TASK][.STEP] in bulk, the
        rest once per distinct value (`job`)."""
        import pandas as pd

        key, step = np.full(values.size, -1, dtype=np.int64), np.zeros(values.size, dtype=bool)
        plain, dots = _plain_job_ids(values)
        if plain.any():
            runs = values[plain].copy()
            dotted = np.flatnonzero(dots[plain])
            runs[dotted] = [run.partition(".")[0] for run in runs[dotted].tolist()]
            codes, uniques = pd.factorize(runs)
            key[plain] = np.array([self.number(run) for run in uniques.tolist()], dtype=np.int64)[codes]
            step[plain] = dots[plain]
        if not plain.all():
            jobs, codes = _fast_csv.per_value(values[~plain], self.job)
            key[~plain] = np.array([j[0] for j in jobs], dtype=np.int64)[codes]
            step[~plain] = np.array([j[1] for j in jobs], dtype=bool)[codes]
        return key, step

    def add(self, columns: dict, lines: np.ndarray):
        names = self.names
        key, step = self.jobs(columns[names[self.id_column]])
        part = {"line": lines, "key": key, "step": step}
        for name in ("start", "end"):
            if name in names:
                part[name], part[name + "_bad"] = _times(columns[names[name]])
        if "elapsed" in names:
            part["elapsed"], part["elapsed_bad"] = _durations(columns[names["elapsed"]])
        if "elapsedraw" in names:
            part["elapsedraw"], part["elapsedraw_bad"] = _counts(columns[names["elapsedraw"]])
        self.keep(**part, **{name: self.codes(columns, name) for name in self.tables})

    def joblog(self, summary: LogSummary) -> JobLog:
        line, key, step = self.column("line", np.int64), self.column("key", np.int64), self.column("step", bool)
        n = summary.rows_read = line.size
        codes = {name: self.column(name, np.int32) for name in self.tables}
        state, words = codes["state"], self.words()
        if (key < 0).any() or (~step & np.array([w is None for w in words], dtype=bool)[state]).any():
            raise _Malformed
        ends = np.array([w is not None and w[0] is not None for w in words], dtype=bool)[state]
        ended, unended = ~step & ends, ~step & ~ends
        canonical = np.array([w[0] if w is not None and w[0] else "" for w in words], dtype=object)[state]
        start, end, runtime, never, notes = self.times(n, ended, canonical == "CANCELLED")
        live = ended & ~never
        rows = np.flatnonzero(live)
        nodelist = codes.get("nodelist", np.full(n, -1, dtype=np.int32))
        own = np.zeros(n, dtype=np.int64)  # nodes in the row's own list
        if "nodelist" in codes:
            own[rows] = self.expansions(nodelist[rows], "nodelist")
            if (own < 0).any():
                raise _Malformed
        n_nodes = np.full(n, -1, dtype=np.int64)
        n_nodes[rows] = self.per_combination(
            rows, [codes.get(k, np.full(n, -1))[rows] for k in ("allocnodes", "nnodes", "alloctres")] + [own[rows]],
            lambda row: _sacct_nodes(self.getter(codes, row), self.lower, range(own[row]), 0))
        n_gpus = np.full(n, -1, dtype=np.int64)
        n_gpus[rows] = self.per_combination(
            rows, [codes.get(k, np.full(n, -1))[rows] for k in ("alloctres", "allocgres", "reqtres", "ngpus")],
            lambda row: _sacct_gpus(self.getter(codes, row), self.lower, 0))

        steps = np.flatnonzero(step)
        parent = _latest_parent(key, step)[steps]
        summary.rows_folded = int((parent >= 0).sum())
        listed, events = self.step_lists(nodelist, own, live, steps[parent >= 0], parent[parent >= 0])
        self.skipped(summary, words, state, unended, [(np.flatnonzero(never), "never started"),
                                                      (steps[parent < 0], "step without its job")])
        if notes:
            summary.notes["runtime from Elapsed, not End - Start (a DST change or suspension)"] += notes

        run = np.array(self.runs, dtype=object)[key[rows]]
        c = {"job_id": run.copy(), "run_id": run, "n_gpus": n_gpus[rows], "n_nodes": n_nodes[rows],
             "start": start[rows], "end": end[rows], "runtime_s": runtime[rows], "state": canonical[rows],
             "cause": self.stripped(self.cause_column)[codes.get(self.cause_column, np.full(n, -1))[rows]],
             "nodelist": self.stripped("nodelist")[listed[rows]], "line": line[rows]}
        node_lists = self.node_lists(events, nodelist[events], listed[rows])
        return self.finish(c, np.array(self.components + [None], dtype=object)[key[rows]], summary, node_lists)

    def step_lists(self, nodelist, own, live, folded, parent) -> tuple[np.ndarray, np.ndarray]:
        """(the node list each row takes, -1 for none; the rows whose lists were expanded, in
        order): a job's own, or if it has no nodes, that of its first step that has some
        (`_sacct_rows`); steps `folded` are folded into rows `parent`."""
        listed = np.where(own > 0, nodelist, -1)
        events = np.flatnonzero(live & (own > 0))
        if "nodelist" not in self.tables or not folded.size:
            return listed, events
        written = np.array([v != "" for v in self.tables["nodelist"].values], dtype=bool)
        asks = live[parent] & (own[parent] == 0) & written[nodelist[folded]]
        asking, parent = folded[asks], parent[asks]
        counts = self.expansions(nodelist[asking], "nodelist")
        asking, parent, counts = asking[counts != 0], parent[counts != 0], counts[counts != 0]
        _, first = np.unique(parent, return_index=True)
        if (counts[first] < 0).any():
            raise _Malformed
        listed[parent[first]] = nodelist[asking[first]]
        return listed, np.concatenate([events, asking[first]])

    def times(self, n: int, ended: np.ndarray, cancelled: np.ndarray):
        """(start, end, runtime in seconds, never started, DST notes) of the rows, as `_sacct_times`
        reads each ended row; raises `_Malformed` on a row it would refuse."""
        def column(name):
            if name not in self.names:
                return np.full(n, np.nan), np.zeros(n, dtype=bool)
            return self.column(name, float), self.column(name + "_bad", bool)

        (start, start_bad), (end, end_bad), (elapsed, elapsed_bad) = map(column, ("start", "end", "elapsed"))
        bad = start_bad | end_bad | elapsed_bad
        if "elapsedraw" in self.names:
            raw, raw_bad = column("elapsedraw")
            from_raw = np.isnan(elapsed) & ~elapsed_bad
            bad |= from_raw & raw_bad
            elapsed = np.where(from_raw, raw, elapsed)
        if (ended & bad).any():
            raise _Malformed
        if "start" in self.names:
            never = ended & np.isnan(start)
        else:  # no Start column: cancelled without runtime never ran
            never = ended & (elapsed == 0) & cancelled
        live = ended & ~never
        has_start, has_end, has_elapsed = ~np.isnan(start), ~np.isnan(end), ~np.isnan(elapsed)
        both = live & has_elapsed & has_start & has_end
        wall = end - start
        if (both & (wall < elapsed - DST_SLACK_S)).any():
            raise _Malformed
        notes = int((both & (wall != elapsed)).sum())
        end = np.where(live & has_elapsed & has_start & ~has_end, start + elapsed, end)
        start = np.where(live & has_elapsed & ~has_start & has_end, end - elapsed, start)
        runtime = np.where(has_elapsed, elapsed, np.nan)
        plain = live & ~has_elapsed
        missing = plain & ~(has_start & has_end)
        if (missing & ~cancelled).any():
            raise _Malformed
        full = plain & has_start & has_end
        if (full & (end < start)).any():
            raise _Malformed
        return start, end, np.where(full, end - start, runtime), never | missing, notes


class _CsvColumns(_Columns):
    """A CSV log by columns: `_csv_rows` and `_verdict` on arrays."""

    format = "csv"

    def __init__(self, header: str, line: int, tax: Taxonomy):
        n_fields, lower = _csv_header(header, line)
        super().__init__(tax, lower, ("state", "n_gpus", "n_nodes", "nodes", "cause"), ("job_id", "start", "end"))
        self.layout = {"sep": ",", "n_fields": n_fields, "usecols": self.usecols, "quoted": True, "comments": True}

    @staticmethod
    def job(raw: str) -> tuple[str, str, str | None]:
        """(job id, run, het component or None) of a job_id field, as `_csv_rows` reads it."""
        job_id = raw.strip()
        run, _, component = job_id.split(".", 1)[0].partition("+")
        return job_id, run, component or None

    def add(self, columns: dict, lines: np.ndarray):
        values = columns[self.names["job_id"]]
        plain, dots = _plain_job_ids(values)  # JOB[_TASK][.STEP]: the run before the dot, no component
        part = {"line": lines, "job": values.copy(), "run": values.copy(),
                "component": np.full(values.size, None, dtype=object)}
        dotted = np.flatnonzero(plain & dots)
        part["run"][dotted] = [v.partition(".")[0] for v in values[dotted].tolist()]
        if not plain.all():
            jobs, codes = _fast_csv.per_value(values[~plain], self.job)
            jobs = np.array(jobs + [("", "", None)], dtype=object)[:-1]  # (n, 3), even where a run is ""
            for k, name in enumerate(("job", "run", "component")):
                part[name][~plain] = jobs[codes, k]
        for name in ("start", "end"):
            part[name], part[name + "_bad"] = _times(columns[self.names[name]])
        self.keep(**part, **{name: self.codes(columns, name) for name in self.tables})

    def counts(self, codes: dict, name: str, rows: np.ndarray) -> np.ndarray:
        """`parse_count` of column `name` at `rows` (-1 for None, or for a column the log lacks)."""
        if name not in codes:
            return np.full(rows.size, -1, dtype=np.int64)
        values = [_or_malformed(parse_count)(v) for v in self.tables[name].values]
        if any(v is _MALFORMED for v in values):
            values = [-2 if v is _MALFORMED else v for v in values]
        counts = np.array([-1 if v is None else v for v in values] + [-1], dtype=np.int64)[codes[name][rows]]
        if (counts == -2).any():
            raise _Malformed
        return counts

    def joblog(self, summary: LogSummary) -> JobLog:
        line, job = self.column("line", np.int64), self.column("job", object)
        n = summary.rows_read = line.size
        codes = {name: self.column(name, np.int32) for name in self.tables}
        state, words = codes["state"], self.words()
        if (job == "").any() or np.array([w is None for w in words], dtype=bool)[state].any():
            raise _Malformed
        ended = np.array([w[0] is not None for w in words], dtype=bool)[state]
        canonical = np.array([w[0] or "" for w in words], dtype=object)[state]
        start, end = self.column("start", float), self.column("end", float)
        if (ended & (self.column("start_bad", bool) | self.column("end_bad", bool) | (end < start))).any():
            raise _Malformed
        rows = np.flatnonzero(ended)
        n_gpus, n_nodes = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
        n_gpus[rows], n_nodes[rows] = self.counts(codes, "n_gpus", rows), self.counts(codes, "n_nodes", rows)
        nodes = codes.get("nodes", np.full(n, -1, dtype=np.int32))
        count = np.zeros(n, dtype=np.int64)
        if "nodes" in codes:
            count[rows] = self.expansions(nodes[rows], "nodes")
            if (count < 0).any():
                raise _Malformed
        started, finished = ~np.isnan(start), ~np.isnan(end)
        cancelled = canonical == "CANCELLED"
        if (ended & (n_gpus < 0) & (n_nodes < 0) & (count == 0) & started).any() \
                or (ended & started & ~finished & ~cancelled).any():
            raise _Malformed
        used = np.flatnonzero(ended & started & finished)
        self.skipped(summary, words, state, ~ended, [(np.flatnonzero(ended & ~(started & finished)),
                                                      "never started")])
        listed = np.where(count > 0, nodes, -1)
        events = np.flatnonzero(ended & (count > 0))  # expanded before the verdict, used or not
        c = {"job_id": job[used], "run_id": self.column("run", object)[used], "n_gpus": n_gpus[used],
             "n_nodes": np.where(n_nodes[used] >= 0, n_nodes[used], np.where(count[used] > 0, count[used], -1)),
             "start": start[used], "end": end[used], "runtime_s": end[used] - start[used],
             "state": canonical[used], "cause": self.stripped("cause")[codes.get("cause", np.full(n, -1))[used]],
             "nodelist": self.stripped("nodes")[listed[used]], "line": line[used]}
        node_lists = self.node_lists(events, nodes[events], listed[used])
        return self.finish(c, self.column("component", object)[used], summary, node_lists)


# A node list the column reader expands in bulk: parts PREFIX[RANGES] or NAME, no spaces.
_NODE_PART = r"[^\[\],\s]*\[[0-9]{1,9}(?:-[0-9]{1,9})?(?:,[0-9]{1,9}(?:-[0-9]{1,9})?)*\]|[^\[\],\s]+"
_PLAIN_NODE_LIST = re.compile(rf"(?:{_NODE_PART})(?:,(?:{_NODE_PART}))*")
_BRACKETS = re.compile(r"\[[^\]]*\]")
_KEY_BASE = 10**9  # a node in a range is format * _KEY_BASE + index (at most 9 digits)
_LISTS_AT_A_TIME = 8192


def _first_seen(numbers: np.ndarray, n: int, chunk: int = 1 << 16) -> np.ndarray:
    """The distinct values of `numbers` (0 to n - 1) in the order they first appear; a chunk
    at a time, until every value present has been seen (most appear early)."""
    present = int(np.count_nonzero(np.bincount(numbers, minlength=n)))
    seen = np.zeros(n, dtype=bool)
    found = []
    for start in range(0, numbers.size, chunk):
        new = numbers[start:start + chunk]
        new = new[~seen[new]]
        if new.size:
            distinct, first = np.unique(new, return_index=True)
            found.append(distinct[np.argsort(first)])
            seen[distinct] = True
            if sum(f.size for f in found) == present:
                break
    return np.concatenate(found) if found else np.empty(0, dtype=numbers.dtype)


def _sums(groups: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Sums of int64 `values` by group (0 to n - 1), exact."""
    order = np.argsort(groups, kind="stable")
    sums = np.zeros(n, dtype=np.int64)
    present, starts = np.unique(groups[order], return_index=True)
    if present.size:
        sums[present] = np.add.reduceat(values[order], starts)
    return sums


class _NodeKeys:
    """Node lists expanded to numbers, a node's number its place among the distinct nodes seen
    (int32). A node of a range is first a key, format (prefix and zero padding) times `_KEY_BASE`
    plus index, and a node written out minus one minus a name's number: names are made only
    for distinct nodes (`name`)."""

    def __init__(self):
        self.formats: dict[tuple, int] = {}  # (prefix, width) -> number
        self.format_list: list[tuple] = []
        self.names: dict[str, int] = {}
        self.name_list: list[str] = []
        self.nodes: dict[int, int] = {}  # key -> number
        self.node_keys: list[int] = []

    def __len__(self) -> int:
        return len(self.node_keys)

    def name(self, number: int) -> str:
        """The node name of a node number."""
        key = self.node_keys[number]
        if key < 0:
            return self.name_list[-key - 1]
        prefix, width = self.format_list[key // _KEY_BASE]
        return f"{prefix}{key % _KEY_BASE:0{width}d}"

    def numbered(self, keys: np.ndarray) -> np.ndarray:
        """The node numbers of keys."""
        import pandas as pd

        codes, distinct = pd.factorize(keys)
        lut = np.array([self._number(self.nodes, self.node_keys, key) for key in distinct.tolist()] + [0],
                       dtype=np.int32)
        return lut[codes]

    def _number(self, table: dict, items: list, key) -> int:
        number = table.get(key)
        if number is None:
            number = table[key] = len(items)
            items.append(key)
        return number

    def expand(self, texts: list) -> list:
        """Each text's node numbers, in the order `expand_nodelist` gives its names; None where
        it is malformed."""
        out: list = [None] * len(texts)
        parts = []  # (text, prefix, ranges; None for a name written out)
        for k, text in enumerate(texts):
            value = text.strip()
            if value.lower() in MISSING_TOKENS or value.lower() == "none assigned":
                out[k] = _NO_NODES
                continue
            if value.count("[") <= 16 and _PLAIN_NODE_LIST.fullmatch(value):
                masked = _BRACKETS.sub(lambda m: m.group().replace(",", ";"), value)  # split outside brackets
                for part in masked.split(","):
                    prefix, bracket, ranges = part.partition("[")
                    parts.append((k, prefix, ranges[:-1].replace(";", ",") if bracket else None))
                continue
            try:  # none assigned, or a list of another form: one name at a time
                names = expand_nodelist(value)
            except LogError:
                continue
            out[k] = self.numbered(np.array([-self._number(self.names, self.name_list, n) - 1 for n in names],
                                            dtype=np.int64))
        if parts:
            self._ranges(parts, out)
        return out

    def _ranges(self, parts: list, out: list):
        """The keys of the texts of `parts` (their PREFIX[RANGES] and NAME parts), into `out`."""
        text_of = np.array([p[0] for p in parts], dtype=np.int64)
        ranged = np.array([p[2] is not None for p in parts], dtype=bool)
        # Every range of every part at once: runs of digits, a dash before each high end.
        buf = np.frombuffer(";".join(p[2] for p in parts if p[2] is not None).encode("ascii"), dtype=np.uint8)
        digit = ((buf >= 48) & (buf <= 57)).astype(np.int8)
        edges = np.diff(np.concatenate(([0], digit, [0])))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        lengths = ends - starts
        values = np.zeros(starts.size, dtype=np.int64)
        for k in range(9):  # digit k of every number that has one
            longer = np.flatnonzero(lengths > k)
            values[longer] = values[longer] * 10 + (buf[starts[longer] + k] - 48)
        high_end = (starts > 0) & (buf[np.maximum(starts - 1, 0)] == ord("-"))
        low = np.flatnonzero(~high_end)
        high = np.where(np.append(high_end, False)[low + 1], low + 1, low)
        first, count = values[low], values[high] - values[low] + 1
        width = np.where(buf[starts[low]] == ord("0"), lengths[low], 0)
        item_part = np.flatnonzero(ranged)[np.searchsorted(np.flatnonzero(buf == ord(";")), starts[low])]
        # Malformed: a range backwards, or more nodes than a list may have (as `expand_nodelist`).
        total = np.bincount(text_of[~ranged], minlength=len(out)) + _sums(text_of[item_part], count, len(out))
        bad = total > MAX_NODES_PER_LIST
        bad[text_of[item_part[count < 1]]] = True
        count[bad[text_of[item_part]]] = 0
        sizes = (~ranged & ~bad[text_of]) + _sums(item_part, count, len(parts))
        # Formats, numbered once per distinct (prefix, width).
        prefixes: dict[str, int] = {}
        prefix_of = np.array([prefixes.setdefault(p[1], len(prefixes)) for p in parts], dtype=np.int64)
        pairs, inverse = np.unique(prefix_of[item_part] * 10 + width, return_inverse=True)
        prefix_list = list(prefixes)
        formats = np.array([self._number(self.formats, self.format_list, (prefix_list[pair // 10], pair % 10))
                            for pair in pairs.tolist()], dtype=np.int64)[inverse]
        # Keys, part after part: the nodes of the ranges in order, in the places names leave them.
        keys = np.repeat(formats * _KEY_BASE + first - (np.cumsum(count) - count), count)
        keys += np.arange(keys.size)
        names = np.flatnonzero(~ranged & ~bad[text_of])
        if names.size:
            offsets = np.cumsum(sizes) - sizes
            named = np.zeros(int(sizes.sum()), dtype=bool)
            named[offsets[names]] = True
            all_keys = np.empty(named.size, dtype=np.int64)
            all_keys[~named] = keys
            all_keys[named] = [-self._number(self.names, self.name_list, parts[j][1]) - 1 for j in names.tolist()]
            keys = all_keys
        keys = self.numbered(keys)
        bounds = np.concatenate(([0], np.cumsum(_sums(text_of, sizes, len(out)))))
        for k in np.unique(text_of).tolist():
            out[k] = None if bad[k] else keys[bounds[k]:bounds[k + 1]]
