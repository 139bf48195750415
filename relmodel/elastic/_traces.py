"""Trace readers: the ElasticFlow CSV format, and a job CSV with the job model's
own fields. Malformed rows are reported with their line number (the header is
line 1); rows that parse but describe an invalid job are kept, for the
simulator to reject at submission.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import gc
import io
import math
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .._docparts import fill_doc_parts
from .. import _fast_csv
from .._text import NotUTF8Error, decode_utf8
from .._errors import ParameterError
from .._units import to_hours
from ._jobs import Job
from ._throughput import CURVE_FAMILIES, DEFAULT_COMM, DEFAULT_SATURATION, FITTED_MODELS, curve_models, roofline_model
from ._workloads import MAX_BATCH, Workload, _check_factors, _models_for, _positive, batch_range

ELASTICFLOW_COLUMNS = ("job_id", "submission_time", "num_iteration", "model_name", "batch_size", "num_gpu")
JOB_CSV_COLUMNS = ("submit_time", "model", "work", "batch")
JOB_CSV_OPTIONAL = ("job_id", "gpus", "min_batch", "max_batch", "min_local_batch", "max_local_batch", "min_gpus",
                    "max_gpus", "noise_scale")
_REAL_COLUMNS = ("noise_scale",)  # optional columns that are not whole numbers
JOB_CSV_CURVE_COLUMNS = ("curve", "saturation", "comm")  # optional too: the row's throughput-curve family

# Docstring parts that several docstrings share, written once: a docstring names one as %(name)s.
_DOC_PARTS = {
    "workload_returns": """\
Returns
-------
Workload
    The jobs.""",
    "row_raises": """\
Raises
------
JobTraceError
    On a malformed row with ``errors="raise"``.""",
}


class JobTraceError(ParameterError):
    """A malformed trace row; the message names the file, the line and the column.

    Parameters
    ----------
    path : str or pathlib.Path
        The trace file.
    line : int
        The 1-based line.
    column : str
        The column at fault.
    reason : str
        What is wrong.
    """

    def __init__(self, path, line: int, column: str, reason: str):
        super().__init__(column, reason, where=f"{Path(path).name} line {line}")
        self.path, self.line, self.column = str(path), line, column


class TraceWarning(UserWarning):
    """Malformed trace rows were skipped (errors="skip")."""


def read_job_trace(path, **kwargs) -> Workload:
    """Read an ElasticFlow trace or a job CSV, told apart by the header.

    Parameters
    ----------
    path : str or pathlib.Path
        The trace file.
    **kwargs
        Passed to `read_elasticflow` or `read_job_csv`.

    %(workload_returns)s

    Raises
    ------
    JobTraceError
        On a malformed file.
    """
    header = _header(Path(path))
    if "submit_time" in header:
        return read_job_csv(path, **kwargs)
    if "submission_time" in header:
        return read_elasticflow(path, **kwargs)
    raise JobTraceError(path, 1, "header", f"neither an ElasticFlow trace ({','.join(ELASTICFLOW_COLUMNS)}) nor a "
                                        f"job CSV ({','.join(JOB_CSV_COLUMNS)}, ...); got {','.join(header)}")


def read_elasticflow(path, *, models: Mapping | None = None, batch_range_factor=(0.5, 2.0), window=None,
                     errors: str = "raise", time_origin="first", curve: str = "fitted",
                     progress: bool | None = None) -> Workload:
    """Read the jobs of an ElasticFlow trace CSV.

    Columns job_id, submission_time (s), num_iteration, model_name, deadline,
    batch_size, num_gpu, duration. Each job's throughput model is
    ``models[model_name]``, its work num_iteration * batch_size samples, its batch
    range `batch_range_factor` times batch_size.

    A malformed row (missing or extra fields, a value that is not a number,
    an unknown model) raises `JobTraceError` naming the file, line and column, or
    with ``errors="skip"`` is left out (a `TraceWarning` says how many, and
    ``attrs["skipped_lines"]`` which). Values that parse but make an invalid job
    (no iterations, a batch that fits no GPU count) are kept: the simulator
    rejects those at submission.

    The trace is read by columns, a block of lines at a time (pandas' C
    reader), and, if a row is malformed or not plainly written, again row by
    row, which names it: the two give the same jobs.

    Parameters
    ----------
    path : str or pathlib.Path
        The trace file.
    models : mapping, optional
        Model name to throughput model; ``curve_models(curve)`` when None.
    batch_range_factor : tuple of float, default (0.5, 2.0)
        The batch range as factors of the submitted batch.
    window : float or str, optional
        Keep the jobs submitted within this duration of the origin.
    errors : {"raise", "skip"}, default "raise"
        What a malformed row does.
    time_origin : "first" or float, default "first"
        Times start at the first submission, or at this many seconds.
    curve : {"fitted", "roofline"}, default "fitted"
        The throughput-curve family (`CURVE_FAMILIES`) of the models, when
        `models` is None.
    progress : bool, optional
        A progress bar on stderr while a large trace (over 16 MiB) is read.
        None (the default): on a terminal, unless the command line was given
        ``--quiet``.

    %(workload_returns)s

    %(row_raises)s
    """
    path = Path(path)
    models, curve_name = _models_for(models, curve)
    factors = _check_factors(batch_range_factor)
    limit = None if window is None else _positive("window", window, duration=True)
    _check_errors(errors)
    columns = _elasticflow_columns(path, models, progress)
    if columns is not None:
        return _elasticflow_workload(path, columns, factors, limit, time_origin, curve_name)
    rows, skipped = _rows(path, ELASTICFLOW_COLUMNS, errors,
                          lambda line, get: _elasticflow_row(path, line, get, models))
    origin = _origin(time_origin, min((r[1] for r in rows), default=0.0))
    jobs = []
    for job_id, submit_s, iterations, model, batch, gpus in sorted(rows, key=lambda r: r[1]):
        t = (submit_s - origin) / 3600.0
        if t < 0 or (limit is not None and t >= limit):
            continue
        lo, hi = batch_range(batch, factors) if batch > 0 else (batch, batch)
        jobs.append(Job(model, float(iterations) * batch, batch, gpus, min_batch=lo, max_batch=hi,
                        submit_time=t, job_id=job_id))
    attrs = {"workload": f"ElasticFlow trace {path.name}", "trace_file": path.name, "n_rows": len(rows),
             "n_jobs": len(jobs), "time_origin_s": float(origin), "batch_range_factor": list(factors),
             "curve": curve_name, "skipped_lines": [line for line, _ in skipped]}
    if limit is not None:
        attrs["window_h"] = limit
    return Workload(tuple(jobs), attrs)


def read_job_csv(path, *, models: Mapping | None = None, batch_range_factor=(0.5, 2.0), window=None,
                 errors: str = "raise", curve: str = "fitted", progress: bool | None = None) -> Workload:
    """Read the jobs of a CSV with the job model's fields.

    Columns submit_time (hours, or with a unit: "90min"), model (a name in
    `models`), work (samples), batch; and optionally job_id, gpus (1), min_batch
    and max_batch (default: `batch_range_factor` times batch), min_local_batch,
    max_local_batch, min_gpus, max_gpus, noise_scale (samples: `Job.noise_scale`)
    (empty cells take the defaults).

    Optional columns choose each row's throughput curve:

    - curve: "fitted" or "roofline" (`CURVE_FAMILIES`); empty: `curve`. A
      fitted row's model is ``models[model]`` (`FITTED_MODELS` when None); a roofline
      row's is ``roofline_model(fitted, saturation, comm)`` of that fitted model
      (``ROOFLINE_MODELS[model]`` at the default saturation and comm).
    - saturation: the roofline saturation batch as a fraction of the memory
      bound, in (0, 1]; empty: 0.5. Only on a roofline row.
    - comm: the roofline communication per extra GPU, as a fraction of the
      single-GPU step, >= 0; empty: 0.02. Only on a roofline row.

    Parameters
    ----------
    path : str or pathlib.Path
        The CSV file.
    models : mapping, optional
        Model name to throughput model; `FITTED_MODELS` when None.
    batch_range_factor : tuple of float, default (0.5, 2.0)
        The default batch range as factors of the batch.
    window : float or str, optional
        Keep the jobs submitted within this duration of the first.
    errors : {"raise", "skip"}, default "raise"
        As in `read_elasticflow`.
    curve : {"fitted", "roofline"}, default "fitted"
        The family of rows with an empty curve cell; with `models` given, only
        "fitted".
    progress : bool, optional
        As in `read_elasticflow`.

    %(workload_returns)s

    %(row_raises)s
    """
    path = Path(path)
    _models_for(models, curve)  # refuses an unknown family, or one beside a models mapping
    model_of = _CurveModels(path, None if models is None else dict(models), curve)
    factors = _check_factors(batch_range_factor)
    limit = None if window is None else _positive("window", window, duration=True)
    _check_errors(errors)
    columns = _columns(path, JOB_CSV_COLUMNS, JOB_CSV_OPTIONAL + JOB_CSV_CURVE_COLUMNS,
                       lambda c, lines: _job_block(c, lines, model_of), progress)
    if columns is not None:
        return _job_csv_workload(path, columns, factors, limit, curve)
    rows, skipped = _rows(path, JOB_CSV_COLUMNS, errors, lambda line, get: _job_row(path, line, get, model_of))
    jobs = []
    for line, fields in sorted(rows, key=lambda r: (r[1]["submit_time"], r[0])):
        if limit is not None and fields["submit_time"] >= limit:
            continue
        if fields["batch"] > 0 and "min_batch" not in fields and "max_batch" not in fields:
            fields["min_batch"], fields["max_batch"] = batch_range(fields["batch"], factors)
        fields.setdefault("job_id", f"line{line}")
        jobs.append(Job(**fields))
    return _job_csv_result(path, tuple(jobs), len(rows), factors, limit, curve, [line for line, _ in skipped])


fill_doc_parts(_DOC_PARTS, read_job_trace, read_elasticflow, read_job_csv)


def _job_csv_result(path: Path, jobs: tuple, n_rows: int, factors, limit, curve: str, skipped: list) -> Workload:
    # The families the kept jobs use ("custom": a model of the models mapping with no family).
    families = sorted({getattr(j.model, "family", "custom") for j in jobs}) or [curve]
    attrs = {"workload": f"job CSV {path.name}", "trace_file": path.name, "n_rows": n_rows, "n_jobs": len(jobs),
             "batch_range_factor": list(factors), "curve": ",".join(families), "skipped_lines": skipped}
    if limit is not None:
        attrs["window_h"] = limit
    return Workload(jobs, attrs)


def _csv(path: Path, data: bytes):
    """A csv.reader over `data`, the file's bytes (UTF-8, a byte-order mark dropped)."""
    try:
        text = decode_utf8(data)
    except NotUTF8Error as err:
        raise JobTraceError(path, err.line, "encoding", err.reason) from None
    return csv.reader(io.StringIO(text, newline=""))


def _header(path: Path) -> list[str]:
    """The first row's fields: its line alone is read (the rows are read once, by `_rows`)."""
    with path.open("rb") as file:
        return [h.strip() for h in next(_csv(path, file.readline()), [])]


def _check_errors(errors: str):
    if errors not in ("raise", "skip"):
        raise ParameterError("errors", f"must be 'raise' or 'skip' (got {errors!r})")


def _origin(time_origin, first: float) -> float:
    """Seconds that times count from: the first submission (`first`) or `time_origin`."""
    if time_origin == "first":
        return first
    if isinstance(time_origin, (int, float)) and not isinstance(time_origin, bool) and math.isfinite(time_origin):
        return float(time_origin)
    raise ParameterError("time_origin", f"must be 'first' or a number of seconds (got {time_origin!r})")


def _rows(path: Path, required, errors: str, parse):
    """(parsed rows, [(line, message)] skipped) of a CSV; parse(line, get) reads one row."""
    _check_errors(errors)
    rows, skipped = [], []
    reader = _csv(path, path.read_bytes())
    header = [h.strip() for h in next(reader, [])]
    missing = [c for c in required if c not in header]
    if missing:
        raise JobTraceError(path, 1, missing[0], f"missing column(s) {', '.join(missing)}; "
                                               f"the header is {','.join(header) or '(empty)'}")
    col = {name: k for k, name in enumerate(header)}
    for fields in reader:
        line = reader.line_num
        if not fields or all(not v.strip() for v in fields):
            continue
        try:
            if len(fields) != len(header):
                raise JobTraceError(path, line, "row", f"{len(fields)} fields, the header has {len(header)}")
            rows.append(parse(line, lambda name, fields=fields: fields[col[name]].strip() if name in col else ""))
        except JobTraceError as err:
            if errors == "raise":
                raise
            skipped.append((line, str(err)))
    if skipped:
        warnings.warn(f"{len(skipped)} malformed row(s) of {path.name} skipped; first: {skipped[0][1]}",
                      TraceWarning, stacklevel=3)
    return rows, skipped


def _number(path, line, column, text, *, whole=False):
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise JobTraceError(path, line, column, f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise JobTraceError(path, line, column, f"{text!r} is not finite")
    if whole:
        if value != int(value):
            raise JobTraceError(path, line, column, f"{text!r} is not a whole number")
        if abs(value) > 2**53:
            raise JobTraceError(path, line, column, f"{text!r} is beyond 2**53, past any real count")
        return int(value)
    return value


def _model(path, line, column, name, models):
    if name not in models:
        raise JobTraceError(path, line, column, f"unknown model {name!r}; known: {', '.join(models)}")
    return models[name]


def _elasticflow_row(path, line, get, models):
    job_id = get("job_id")
    if not job_id:
        raise JobTraceError(path, line, "job_id", "empty")
    submit = _number(path, line, "submission_time", get("submission_time"))
    iterations = _number(path, line, "num_iteration", get("num_iteration"), whole=True)
    model = _model(path, line, "model_name", get("model_name"), models)
    batch = _number(path, line, "batch_size", get("batch_size"), whole=True)
    gpus = _number(path, line, "num_gpu", get("num_gpu"), whole=True)
    for optional in ("deadline", "duration"):
        if get(optional):
            _number(path, line, optional, get(optional))
    return job_id, submit, iterations, model, batch, gpus


class _CurveModels:
    """The throughput model of a job CSV row, from its model, curve, saturation and comm cells.

    Roofline models are derived once per (model, saturation, comm); without a
    models mapping, the catalogue's serve the default saturation and comm.
    """

    def __init__(self, path, models: dict | None, default_curve: str):
        self.path, self.default_curve = path, default_curve
        self.fitted = FITTED_MODELS if models is None else models
        self.derived = {} if models is not None else {
            (name, DEFAULT_SATURATION, DEFAULT_COMM): m for name, m in curve_models("roofline").items()}

    def __call__(self, line, get):
        path = self.path
        family = get("curve") or self.default_curve
        if family not in CURVE_FAMILIES:
            raise JobTraceError(path, line, "curve", f"unknown curve family {family!r}; known: "
                                                  f"{', '.join(CURVE_FAMILIES)}")
        fitted = _model(path, line, "model", get("model"), self.fitted)
        if family == "fitted":
            for column in ("saturation", "comm"):
                if get(column):
                    raise JobTraceError(path, line, column, "only with curve=roofline (this row's curve is fitted)")
            return fitted
        saturation = _number(path, line, "saturation", get("saturation")) if get("saturation") \
            else DEFAULT_SATURATION
        comm = _number(path, line, "comm", get("comm")) if get("comm") else DEFAULT_COMM
        key = (get("model"), saturation, comm)
        if key not in self.derived:
            try:
                self.derived[key] = roofline_model(fitted, saturation, comm)
            except ParameterError as err:  # saturation, comm, or a model with no single-GPU step time
                raise JobTraceError(path, line, err.parameter, err.reason) from None
        return self.derived[key]


def _job_row(path, line, get, model_of):
    try:
        submit = to_hours(get("submit_time"), "submit_time")
    except ValueError as err:
        raise JobTraceError(path, line, "submit_time", str(err).split(": ", 1)[1]) from None
    if not math.isfinite(submit):
        raise JobTraceError(path, line, "submit_time", f"{get('submit_time')!r} is not finite")
    fields = {"submit_time": submit, "model": model_of(line, get),
              "work": _number(path, line, "work", get("work")),
              "batch": _number(path, line, "batch", get("batch"), whole=True)}
    for name in JOB_CSV_OPTIONAL:
        if get(name):
            fields[name] = get(name) if name == "job_id" else _number(path, line, name, get(name),
                                                                      whole=name not in _REAL_COLUMNS)
    return line, fields


# --------------------------------------------------------------------------- reading by columns
# `read_elasticflow`'s first path: the trace read a block of lines at a time (`_fast_csv`), plain
# numbers in bulk and every other value once per distinct value by `_number`. A row that is
# malformed, or one it cannot vouch for, sends the trace to `_rows`, which names it.


def _columns(path: Path, required, optional, block, progress) -> dict | None:
    """The columns of a trace CSV, block(columns by name, lines) making each block's; None where
    the trace needs `_rows` (whose parse functions `block` applies by columns, raising JobTraceError
    or Doubt on a row it cannot vouch for)."""
    from .._feedback import enabled

    parts, col = [], None
    try:
        for data, first_line in _fast_csv.blocks(path, bom=True, progress=enabled(progress), desc="reading trace"):
            if not data.isascii():
                data.decode("utf-8")  # not UTF-8: `_rows` names the line
            if col is None:
                end = data.index(b"\n")
                header = data[:end].decode("utf-8")
                col = {name.strip(): k for k, name in enumerate(header.split(","))}
                if '"' in header or any(c not in col for c in required):
                    return None
                names = [c for c in (*required, *optional) if c in col]
                n_fields, data, first_line = header.count(",") + 1, data[end + 1:], first_line + 1
            columns, lines = _fast_csv.parse(data, first_line, sep=",", n_fields=n_fields,
                                             usecols=sorted({col[c] for c in names}), quoted=True, comments=False)
            parts.append(block({c: columns[col[c]] for c in names}, lines))
    except (_fast_csv.Doubt, JobTraceError, UnicodeDecodeError, OSError):
        return None
    if col is None:
        return None
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def _elasticflow_columns(path: Path, models: dict, progress) -> dict | None:
    """The columns of an ElasticFlow trace (job_id, submit_s, iterations, model, batch, gpus: one
    entry per row); None where the trace needs `_rows`."""
    return _columns(path, ELASTICFLOW_COLUMNS, ("deadline", "duration"),
                    lambda columns, _: _elasticflow_block(columns, models), progress)


def _elasticflow_block(columns: dict, models: dict) -> dict:
    """`_elasticflow_row` of a block's rows, by columns; JobTraceError or Doubt where a row is not plain."""
    job_id = np.array([v.strip() for v in columns["job_id"]], dtype=object)
    if (job_id == "").any():
        raise _fast_csv.Doubt(0, "an empty job_id")
    names, codes = _fast_csv.per_value(columns["model_name"], str.strip)
    model = np.array([_model("", 0, "model_name", name, models) for name in names] + [None], dtype=object)[codes]
    for optional in ("deadline", "duration"):
        if optional in columns:  # checked where given, not used
            _numbers(columns[optional], optional, whole=False, empty_too=True)
    return {"job_id": job_id, "submit_s": _numbers(columns["submission_time"], "submission_time", whole=False),
            "iterations": _numbers(columns["num_iteration"], "num_iteration", whole=True), "model": model,
            "batch": _numbers(columns["batch_size"], "batch_size", whole=True),
            "gpus": _numbers(columns["num_gpu"], "num_gpu", whole=True)}


def _numbers(values: np.ndarray, column: str, *, whole: bool, empty_too: bool = False, read=None) -> np.ndarray:
    """`_number` (or read(column, text)) of each value (stripped): plain digits (or decimals) in
    bulk, the rest once per distinct value."""
    if whole:
        numbers, plain = _fast_csv.whole_numbers(values)
    else:
        numbers, plain = _fast_csv.decimals(values)
    out = numbers.astype(np.int64 if whole else float)
    if not plain.all():
        def number(text):
            text = text.strip()
            if empty_too and not text:
                return 0
            return read(column, text) if read is not None else _number("", 0, column, text, whole=whole)

        results, codes = _fast_csv.per_value(values[~plain], number)
        out[~plain] = np.array(results + [0], dtype=out.dtype)[codes]
    return out


def _elasticflow_workload(path: Path, c: dict, factors, limit, time_origin, curve_name: str) -> Workload:
    """`read_elasticflow`'s jobs from its columns, as its row-by-row loop makes them."""
    submit = c["submit_s"]
    origin = _origin(time_origin, float(submit.min()) if submit.size else 0.0)
    order = np.argsort(submit, kind="stable")
    hours = (submit[order] - origin) / 3600.0
    kept = ~((hours < 0) | (hours >= limit if limit is not None else False))
    order, hours = order[kept], hours[kept]
    batch = c["batch"][order]
    ranged = batch > 0
    low, high = batch.copy(), batch.copy()
    low[ranged], high[ranged] = _batch_ranges(batch[ranged], factors)
    work = c["iterations"][order].astype(float) * batch
    with _collector_paused():
        jobs = tuple(Job(model, w, b, g, min_batch=lo, max_batch=hi, submit_time=t, job_id=j)
                     for model, w, b, g, lo, hi, t, j in zip(
                         c["model"][order].tolist(), work.tolist(), batch.tolist(), c["gpus"][order].tolist(),
                         low.tolist(), high.tolist(), hours.tolist(), c["job_id"][order].tolist()))
    attrs = {"workload": f"ElasticFlow trace {path.name}", "trace_file": path.name, "n_rows": int(submit.size),
             "n_jobs": len(jobs), "time_origin_s": float(origin), "batch_range_factor": list(factors),
             "curve": curve_name, "skipped_lines": []}
    if limit is not None:
        attrs["window_h"] = limit
    return Workload(jobs, attrs)


def _batch_ranges(batch: np.ndarray, factors) -> tuple[np.ndarray, np.ndarray]:
    """`batch_range` of positive batches, with its error for the first beyond 2**53."""
    beyond = batch * factors[1] > MAX_BATCH
    if beyond.any():
        batch_range(int(batch[np.argmax(beyond)]), factors)  # raises its error
    return (np.maximum(1, np.rint(batch * factors[0])).astype(np.int64),
            np.maximum(batch, np.rint(batch * factors[1])).astype(np.int64))


@contextlib.contextmanager
def _collector_paused():
    """No garbage collection while a million jobs are made: each collection of the oldest
    generation walks every object made so far (none of them in a cycle), and halved the time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


_JOB_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Job)}


def _job_block(columns: dict, lines: np.ndarray, model_of) -> dict:
    """`_job_row` of a block's rows, by columns (an optional value: None where its cell is empty)."""
    import pandas as pd

    # The model of each distinct (curve, model, saturation, comm).
    curves = ("curve", "model", "saturation", "comm")
    codes = [pd.factorize(columns[name]) if name in columns else (np.zeros(lines.size, dtype=np.int64), [""])
             for name in curves]
    combined = np.zeros(lines.size, dtype=np.int64)
    for number, distinct in codes:
        combined = combined * len(distinct) + number
    combos, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    models = [model_of(0, {name: str(distinct[number[row]]).strip() for name, (number, distinct)
                           in zip(curves, codes)}.get) for row in first.tolist()]
    out = {"line": lines, "model": np.array(models + [None], dtype=object)[inverse],
           "submit_time": _numbers(columns["submit_time"], "submit_time", whole=False, read=_hours),
           "work": _numbers(columns["work"], "work", whole=False),
           "batch": _numbers(columns["batch"], "batch", whole=True)}
    for name in JOB_CSV_OPTIONAL:
        if name in columns:
            texts, numbers = _fast_csv.per_value(columns[name], str.strip)
            stripped = np.array(texts + [""], dtype=object)[numbers]
            given = stripped != ""
            values = np.full(lines.size, None, dtype=object)
            values[given] = stripped[given] if name == "job_id" else np.array(
                _numbers(stripped[given], name, whole=name not in _REAL_COLUMNS).tolist() + [None], dtype=object)[:-1]
            out[name] = values
    return out


def _hours(column: str, text: str) -> float:
    """A submit_time cell in hours, as `_job_row` reads it."""
    try:
        hours = to_hours(text, column)
    except ValueError as err:
        raise JobTraceError("", 0, column, str(err)) from None
    if not math.isfinite(hours):
        raise JobTraceError("", 0, column, f"{text!r} is not finite")
    return hours


def _job_csv_workload(path: Path, c: dict, factors, limit, curve: str) -> Workload:
    """`read_job_csv`'s jobs from its columns, as its row-by-row loop makes them."""
    order = np.lexsort((c["line"], c["submit_time"]))
    if limit is not None:
        order = order[c["submit_time"][order] < limit]
    n = order.size

    def given(name, default):  # a Job field: the column where given, else its default
        values = c[name][order] if name in c else np.full(n, None, dtype=object)
        return np.where(np.equal(values, None), default, values)

    batch = c["batch"][order]
    low, high = given("min_batch", None), given("max_batch", None)
    ranged = (batch > 0) & np.equal(low, None) & np.equal(high, None)
    ranges = _batch_ranges(batch[ranged], factors)
    low[ranged], high[ranged] = (np.array(r.tolist() + [None], dtype=object)[:-1] for r in ranges)
    job_id = given("job_id", None)
    unnamed = np.flatnonzero(np.equal(job_id, None))
    job_id[unnamed] = [f"line{line}" for line in c["line"][order][unnamed].tolist()]
    fields = {"model": c["model"][order], "work": c["work"][order], "batch": batch, "min_batch": low,
              "max_batch": high, "submit_time": c["submit_time"][order], "job_id": job_id}
    for name in ("gpus", "min_local_batch", "max_local_batch", "min_gpus", "max_gpus"):
        fields[name] = given(name, _JOB_DEFAULTS[name])
    fields["noise_scale"] = given("noise_scale", None)
    with _collector_paused():  # positional, in the order of Job's fields
        jobs = tuple(Job(*args) for args in zip(*(fields[name].tolist() for name in _JOB_DEFAULTS)))
    return _job_csv_result(path, jobs, int(c["line"].size), factors, limit, curve, [])
