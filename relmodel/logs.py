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
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import xarray as xr

from .taxonomy import Taxonomy
from .taxonomy import load as load_taxonomy

FORMATS = ("auto", "sacct", "csv")
MAX_NODES_PER_LIST = 1_000_000  # a node list that expands further is a typo, not a cluster
_NOT_FINISHED = ("RUNNING", "PENDING", "SUSPENDED", "RESIZING", "REQUEUE_HOLD", "REQUEUE_FED", "SPECIAL_EXIT",
                 "STOPPED", "SIGNALING", "STAGE_OUT", "COMPLETING", "CONFIGURING", "REVOKED")
_MISSING = ("", "unknown", "none", "n/a", "na", "(null)", "null")
_JOB_ID = re.compile(r"^(\d+)(?:_(\d+|\[[^\]]*\]))?(?:\+(\d+))?(?:\.([A-Za-z0-9_\-]+))?$")
_ELAPSED = re.compile(r"^(?:(\d{1,6})-)?(?:(\d{1,6}):)?(\d{1,6}):(\d{1,6}(?:\.\d{1,9})?)$")
_GPU_TRES = re.compile(r"gres/gpu(?::[^=,]+)?=(\d+)")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class LogError(ValueError):
    """A malformed job log row or header: ``.line`` (1-based) and ``.reason``."""

    def __init__(self, line: int, reason: str, detail: str = ""):
        super().__init__(f"line {line}: {reason}" + (f": {detail}" if detail else ""))
        self.line, self.reason, self.detail = line, reason, detail


@dataclasses.dataclass
class LogSummary:
    """What happened to each row: used, folded (steps, components) or skipped, and why."""

    source: str
    format: str
    rows_read: int = 0
    rows_used: int = 0
    rows_folded: int = 0
    skipped: Counter = dataclasses.field(default_factory=Counter)  # reason -> count
    errors: list = dataclasses.field(default_factory=list)  # LogError of malformed rows skipped

    @property
    def rows_skipped(self) -> int:
        return sum(self.skipped.values())

    def to_dict(self) -> dict:
        return {"source": self.source, "format": self.format, "rows_read": self.rows_read,
                "rows_used": self.rows_used, "rows_folded": self.rows_folded, "rows_skipped": self.rows_skipped,
                "skipped": dict(self.skipped), "errors": [str(e) for e in self.errors[:20]]}

    def __str__(self) -> str:
        why = ", ".join(f"{k}: {v}" for k, v in sorted(self.skipped.items()))
        return (f"{self.source} ({self.format}): {self.rows_read} rows, {self.rows_used} used, "
                f"{self.rows_folded} folded into their jobs, {self.rows_skipped} skipped" + (f" ({why})" if why else ""))


@dataclasses.dataclass
class JobLog:
    """A tidy job log.

    Attributes
    ----------
    dataset : xarray.Dataset along dim ``job`` (one scheduler job attempt per
        entry): ``job_id``, ``run_id``, ``n_gpus`` and ``n_nodes`` (-1 when the
        log does not say), ``start``, ``end`` (datetime64), ``runtime_h``,
        ``state`` (canonical end state), ``cause``, ``infrastructure`` (bool),
        ``nodelist`` (as logged, compressed), ``line`` (first source line).
    node_lists : tuple of tuples of node names, one per job (empty when unknown)
    summary : `LogSummary`
    taxonomy : the `Taxonomy` that classified the end states
    """

    dataset: xr.Dataset
    node_lists: tuple
    summary: LogSummary
    taxonomy: Taxonomy

    def __len__(self) -> int:
        return self.dataset.sizes["job"]

    @property
    def has_node_lists(self) -> bool:
        return any(self.node_lists)


# --------------------------------------------------------------------------- fields


def parse_time(text: str, line: int, field: str) -> float | None:
    """Seconds since the epoch (naive times are UTC); None when missing."""
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


def parse_elapsed(text: str, line: int) -> float | None:
    """Slurm ``[D-][HH:]MM:SS`` as hours; None when missing."""
    value = text.strip()
    if value.lower() in _MISSING:
        return None
    match = _ELAPSED.match(value)
    if match is None:
        raise LogError(line, "bad time format", f"Elapsed {value!r} (expected [D-]HH:MM:SS)")
    days, hours, minutes, seconds = match.groups()
    if int(minutes) >= 60 and hours is not None or float(seconds) >= 60:
        raise LogError(line, "bad time format", f"Elapsed {value!r}")
    return int(days or 0) * 24 + int(hours or 0) + int(minutes) / 60 + float(seconds) / 3600


def parse_count(text: str, line: int, field: str) -> int | None:
    """A non-negative integer; None when missing."""
    value = text.strip()
    if value.lower() in _MISSING:
        return None
    if not re.fullmatch(r"\d{1,12}", value):
        raise LogError(line, "bad number", f"{field} {value!r}")
    return int(value)


def expand_nodelist(text: str, line: int = 0) -> tuple[str, ...]:
    """Expand a Slurm host list: ``node[001-004,007],gpu-a[1-2]`` -> node001 ... gpu-a2."""
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


def _split_top_level(value: str, line: int) -> list[str]:
    if "[" not in value and "]" not in value:  # the common case, without a character loop
        parts = [p.strip() for p in value.split(",")]
        if not all(parts):
            raise LogError(line, "bad node list", f"empty name in {value[:60]!r}")
        return parts
    parts, depth, current = [], 0, []
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


def _expand_one(part: str, line: int) -> list[str]:
    match = re.match(r"^([^\[\]]*)\[([^\[\]]*)\](.*)$", part)
    if match is None:
        if "[" in part or "]" in part or any(c.isspace() for c in part):
            raise LogError(line, "bad node list", repr(part[:60]))
        return [part]
    prefix, ranges, rest = match.groups()
    tails = _expand_one(rest, line) if rest else [""]
    out = []
    for item in ranges.split(","):
        bounds = re.fullmatch(r"(\d{1,9})(?:-(\d{1,9}))?", item.strip())
        if bounds is None:
            raise LogError(line, "bad node list", f"range {item!r} in {part[:60]!r}")
        low, high = bounds.group(1), bounds.group(2) or bounds.group(1)
        if int(high) < int(low) or (int(high) - int(low) + 1) * len(tails) > MAX_NODES_PER_LIST:
            raise LogError(line, "bad node list", f"range {item!r} in {part[:60]!r}")
        width = len(low) if low.startswith("0") else 0
        out.extend(f"{prefix}{i:0{width}d}{tail}" for i in range(int(low), int(high) + 1) for tail in tails)
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
    nodes: tuple
    nodelist: str = ""


def read_log(path_or_text, format: str = "auto", *, taxonomy="meta-2024", errors: str = "raise") -> JobLog:
    """Read a scheduler job log.

    Parameters
    ----------
    path_or_text : a path (str or Path) to a log file, or the log's text itself
        (a string with a newline, or one that names no file).
    format : "auto" (sacct if the header has ``|`` and JobID, else CSV),
        "sacct" (``sacct --parsable2``: pipe-separated with a header) or "csv"
        (columns ``job_id``, ``n_gpus`` or ``n_nodes``, ``start``, ``end``,
        ``state``, optional ``cause`` and ``nodes``).
    taxonomy : a `Taxonomy` or a preset name or path; classifies end states.
    errors : "raise" (default): a malformed row raises `LogError`; "skip": it is
        skipped and recorded in ``summary.errors`` and ``summary.skipped``.

    Returns
    -------
    JobLog
    """
    if format not in FORMATS:
        raise ValueError(f"format: must be one of {FORMATS} (got {format!r})")
    if errors not in ("raise", "skip"):
        raise ValueError(f"errors: must be 'raise' or 'skip' (got {errors!r})")
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
    for item in reader(lines, first, tax, summary):
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
    return _to_joblog(rows, tax, summary)


def _read_text(path_or_text) -> tuple[str, str]:
    if isinstance(path_or_text, Path) or (isinstance(path_or_text, str) and "\n" not in path_or_text
                                           and path_or_text.strip() and os.path.isfile(path_or_text)):
        path = Path(path_or_text)
        try:
            return path.read_text(encoding="utf-8", errors="replace"), str(path)
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
    """(canonical state or None when not finished, scheduler word) of e.g. 'CANCELLED by 123'."""
    word = raw.strip().split(" ", 1)[0].upper() if raw.strip() else ""
    if not word:
        raise LogError(line, "missing field", "State is empty")
    canonical = tax.canonical_state(word)
    if canonical is None:
        if word in _NOT_FINISHED:
            return None, word
        raise LogError(line, "unknown state", repr(raw.strip()[:60]))
    return canonical, word


def _finish_times(start, end, elapsed_h, line):
    if start is not None and end is None and elapsed_h is not None:
        end = start + elapsed_h * 3600.0
    if start is not None and end is not None and end < start:
        raise LogError(line, "end before start", f"start {_iso(start)}, end {_iso(end)}")
    return start, end


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


def _sacct_rows(lines, first, tax, summary):
    header = [h.strip() for h in lines[first].split("|")]
    lower = {h.lower(): i for i, h in enumerate(header)}
    for need in ("jobid", "state", "start"):
        if need not in lower:
            raise LogError(first + 1, "missing field", f"the header has no {need!r} column ({lines[first][:80]!r})")
    if "end" not in lower and "elapsed" not in lower:
        raise LogError(first + 1, "missing field", "the header has neither End nor Elapsed")
    cause_col = next((c for c in ("cause", "admincomment", "comment", "reason") if c in lower), None)
    parents: dict[str, _Row] = {}
    for index in range(first + 1, len(lines)):
        text = lines[index]
        if not text.strip():
            continue
        summary.rows_read += 1
        line = index + 1
        try:
            get = _getter(_split_fields(text, "|", len(header), line), lower)
            run, het, step = _split_job_id(get("jobid"), line)
            if step is not None:
                parent = parents.get(f"{run}+{het}")
                if parent is None:
                    yield "step without its job"
                    continue
                summary.rows_folded += 1
                if not parent.nodes and get("nodelist"):
                    parent.nodes = expand_nodelist(get("nodelist"), line)
                    parent.nodelist = get("nodelist").strip() if parent.nodes else ""
                continue
            state, word = _state(get("state"), tax, line)
            start = parse_time(get("start"), line, "Start")
            end = parse_time(get("end"), line, "End") if "end" in lower else None
            elapsed = parse_elapsed(get("elapsed"), line) if "elapsed" in lower else None
            start, end = _finish_times(start, end, elapsed, line)
            n_nodes = parse_count(get("nnodes"), line, "NNodes") if "nnodes" in lower else None
            n_gpus = _gpus_from_tres(get("alloctres") or get("reqtres"), line)
            if n_gpus is None and "ngpus" in lower:
                n_gpus = parse_count(get("ngpus"), line, "NGPUs")
            nodes = expand_nodelist(get("nodelist"), line) if "nodelist" in lower else ()
            cause = get(cause_col).strip() if cause_col is not None else ""
        except LogError as err:
            yield err
            continue
        row = _Row(line, run if het is None else f"{run}+{het}", run, start, end, state, word, cause,
                   n_gpus, n_nodes if n_nodes is not None else (len(nodes) or None), nodes,
                   get("nodelist").strip() if nodes else "")
        parents[f"{run}+{het}"] = row  # later steps belong to the latest attempt
        verdict = _verdict(row)
        yield verdict if verdict else row


def _getter(fields: list, columns: dict):
    """get(name): the row's field in column `name` (lower case), or "" if the log has no such column."""
    return lambda name: fields[columns[name]] if name in columns else ""


def _gpus_from_tres(tres: str, line: int) -> int | None:
    if not tres.strip():
        return None
    exact = re.search(r"gres/gpu=([^,]*)", tres)
    if exact:
        value = exact.group(1).strip()
        if not value.isdigit():
            raise LogError(line, "bad number", f"gres/gpu={value!r}")
        return int(value)
    typed = _GPU_TRES.findall(tres)
    return sum(int(v) for v in typed) if typed else 0


def _csv_rows(lines, first, tax, summary):
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
            try:
                fields = next(csv.reader([text]))
            except csv.Error as err:
                raise LogError(line, "bad csv", str(err)) from None
            if len(fields) != n:
                raise LogError(line, "missing field" if len(fields) < n else "extra field",
                               f"{len(fields)} fields, the header has {n}")
            get = _getter(fields, lower)
            job_id = get("job_id").strip()
            if not job_id:
                raise LogError(line, "missing field", "job_id is empty")
            state, word = _state(get("state"), tax, line)
            start = parse_time(get("start"), line, "start")
            end = parse_time(get("end"), line, "end")
            start, end = _finish_times(start, end, None, line)
            n_gpus = parse_count(get("n_gpus"), line, "n_gpus") if "n_gpus" in lower else None
            n_nodes = parse_count(get("n_nodes"), line, "n_nodes") if "n_nodes" in lower else None
            nodes = expand_nodelist(get("nodes"), line) if "nodes" in lower else ()
            if n_gpus is None and n_nodes is None and not nodes and state is not None and start is not None:
                raise LogError(line, "missing field", "neither n_gpus nor n_nodes is given")
        except LogError as err:
            yield err
            continue
        run = job_id.split(".", 1)[0].split("+", 1)[0]
        row = _Row(line, job_id, run, start, end, state, word, get("cause").strip(), n_gpus,
                   n_nodes if n_nodes is not None else (len(nodes) or None), nodes,
                   get("nodes").strip() if nodes else "")
        verdict = _verdict(row)
        yield verdict if verdict else row


def _verdict(row: _Row) -> str | LogError | None:
    """Why a row is not used: a reason to count (never dropped silently), an error, or None."""
    if row.state is None:
        return f"not finished ({row.raw_state})"
    if row.start is None:
        return "never started"
    if row.end is None:
        if row.state == "CANCELLED":
            return "never started"
        return LogError(row.line, "missing field", "End is missing for a finished job")
    return None


def _merge_components(rows: list, summary: LogSummary) -> list:
    """Merge heterogeneous-job components (``123+0``, ``123+1``) into one job attempt."""
    out, by_key = [], {}
    for row in rows:
        if "+" not in row.job_id:
            out.append(row)
            continue
        key = (row.run_id, row.start)
        first = by_key.get(key)
        if first is None:
            row.job_id = row.run_id
            by_key[key] = row
            out.append(row)
            continue
        summary.rows_folded += 1
        first.n_gpus = _add(first.n_gpus, row.n_gpus)
        first.n_nodes = _add(first.n_nodes, row.n_nodes)
        first.nodes = first.nodes + row.nodes
        first.nodelist = ",".join(n for n in (first.nodelist, row.nodelist) if n)
        first.end = max(first.end, row.end)
        if row.state == "NODE_FAIL" or (row.state == "FAILED" and first.state != "NODE_FAIL"):
            first.state, first.cause = row.state, row.cause or first.cause
    return out


def _add(a, b):
    return None if a is None and b is None else (a or 0) + (b or 0)


def _to_joblog(rows: list, tax: Taxonomy, summary: LogSummary) -> JobLog:
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
            "runtime_h": ("job", (end - start) / 3600.0),
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
    return JobLog(dataset=ds, node_lists=tuple(r.nodes for r in rows), summary=summary, taxonomy=tax)


def _datetimes(seconds: np.ndarray) -> np.ndarray:
    # Out-of-range years (fuzzed input) are kept as NaT rather than overflowing.
    ok = np.isfinite(seconds) & (np.abs(seconds) < 2**62 / 1e9)
    out = np.full(seconds.shape, np.datetime64("NaT"), dtype="datetime64[s]")
    out[ok] = np.round(seconds[ok]).astype(np.int64).astype("datetime64[s]")
    return out
