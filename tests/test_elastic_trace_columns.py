"""ElasticFlow traces read by columns (the first path of `read_elasticflow`) give the
same jobs as row by row (`_rows`, which names a malformed row); a trace with a row
it cannot vouch for goes row by row."""

import contextlib
import dataclasses
import tempfile
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relmodel.elastic as el
from relmodel import _fast_csv
from relmodel.elastic import _traces as traces

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "elasticflow"
HEADER = "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration"
_PLAIN = {"submission_time": ["0", "3600", "3715485", "86400", "17"], "num_iteration": ["1", "3249", "75043", "0"],
          "model_name": list(el.FITTED_MODELS), "batch_size": ["32", "64", "128", "256", "0", "5", "7"],
          "num_gpu": ["1", "2", "8", "64", "0"], "deadline": ["9000", ""], "duration": ["600", ""]}
# Written otherwise, each still a number (or model) `_number` takes: read once per distinct value.
_OTHER = {"submission_time": ["12.5", " 7200 ", "-3600", "1e3", "1_000", "0x10", "inf", "abc", ""],
          "num_iteration": ["10.0", "-10", "1e2", "10.5", "9007199254740993", "x"],
          "model_name": [" bert ", "alexnet", ""],
          "batch_size": ["64.0", "1e300", " 128", "-64", "18446744073709551616"],
          "num_gpu": ["4.0", "-1", "four"], "deadline": ["nan", "1e9"], "duration": ["inf", "12"]}


@st.composite
def traces_text(draw, plain=True):
    columns = draw(st.permutations(HEADER.split(",")))
    if draw(st.booleans()):
        columns = [c for c in columns if c not in ("deadline", "duration")] + draw(st.sampled_from([[], ["extra"]]))
    lines = [",".join(columns)]
    for k in range(draw(st.integers(0, 40))):
        row = []
        for name in columns:
            pool = _PLAIN.get(name, ["x"]) + ([] if plain else _OTHER.get(name, []))
            row.append(f"job{draw(st.integers(0, 5))}-{k}" if name == "job_id" else draw(st.sampled_from(pool)))
        lines.append(",".join(row))
    for _ in range(draw(st.integers(0, 2))):
        lines.insert(draw(st.integers(1, len(lines))), draw(st.sampled_from(["", "  "])))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return newline.join(lines) + draw(st.sampled_from([newline, ""]))


@contextlib.contextmanager
def _row_by_row():
    with mock.patch.object(traces, "_elasticflow_columns", return_value=None):
        yield


def _read(path, **kwargs):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", el.TraceWarning)
            return el.read_elasticflow(path, **kwargs)
    except ValueError as err:  # TraceError, or another parameter's error
        return err


def _same_workload(a, b):
    assert a.attrs == b.attrs and a.jobs == b.jobs
    for x, y in zip(a.jobs, b.jobs):  # the same values, and of the same types (int stays int)
        assert [type(getattr(x, f.name)) for f in dataclasses.fields(x)] == \
            [type(getattr(y, f.name)) for f in dataclasses.fields(y)]


def _check(text, block, plain, **kwargs):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.csv"
        path.write_text(text, newline="")
        with mock.patch.object(_fast_csv, "BLOCK_BYTES", block):
            columns = traces._elasticflow_columns(path, dict(el.FITTED_MODELS), False)
            by_columns = _read(path, **kwargs)
        with _row_by_row():
            by_rows = _read(path, **kwargs)
    if isinstance(by_rows, ValueError):
        assert type(by_columns) is type(by_rows) and str(by_columns) == str(by_rows)
        return
    if plain:
        assert columns is not None, "a plain trace was read row by row"
    _same_workload(by_columns, by_rows)


@settings(max_examples=150)
@given(traces_text(), st.sampled_from([64, 1 << 24]), st.sampled_from([None, "1h", "30d"]),
       st.sampled_from(["first", 0, 3600.0]), st.sampled_from([(0.5, 2.0), (0.3, 1.7), (0.75, 1.25)]))
def test_plain_traces_read_alike_by_columns_and_by_rows(text, block, window, origin, factors):
    _check(text, block, True, window=window, time_origin=origin, batch_range_factor=factors)


@settings(max_examples=150)
@given(traces_text(plain=False), st.sampled_from([64, 1 << 24]), st.sampled_from(["raise", "skip"]),
       st.sampled_from([(0.5, 2.0), (1, 1), (0.3, 1.7), (0.3, 1e15)]))
def test_any_trace_reads_alike_or_goes_row_by_row(text, block, errors, factors):
    _check(text, block, False, errors=errors, batch_range_factor=factors)


def test_a_malformed_row_goes_row_by_row_which_names_its_line(tmp_path):
    path = tmp_path / "trace.csv"
    good, bad = "a,7200,1000,resnet50,9000,128,4,600\n", "d,7200,1000,alexnet,9000,128,4,600\n"
    path.write_text(HEADER + "\n" + good * 30 + bad)
    with mock.patch.object(_fast_csv, "BLOCK_BYTES", 128):
        assert traces._elasticflow_columns(path, dict(el.FITTED_MODELS), False) is None
        with pytest.raises(el.JobTraceError, match="^trace.csv line 32: model_name: unknown model 'alexnet'"):
            el.read_elasticflow(path)


def test_a_plain_trace_is_read_by_columns(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text(HEADER + "\n" + "a,7200,1000,resnet50,9000,128,4,600\nb,3600,2000,bert,9000,64,1,900\n")
    with mock.patch.object(traces, "_rows", side_effect=AssertionError("read row by row")):
        work = el.read_elasticflow(path)
    assert [j.job_id for j in work.jobs] == ["b", "a"] and work.jobs[1].work == 128_000.0


@pytest.mark.skipif(not (DATA / "195job.csv").is_file(), reason=f"ElasticFlow traces not found at {DATA}")
def test_the_real_traces_read_alike():
    for path in sorted(DATA.glob("*.csv")):
        with _row_by_row():
            by_rows = el.read_elasticflow(path)
        _same_workload(el.read_elasticflow(path), by_rows)


def test_whole_numbers_and_the_bulk_reader_agree_with_float():
    values = np.array(["0", "007", "123456789012345", "1234567890123456", "", " 1", "1.0", "-1", "٣"], dtype=object)
    numbers, plain = _fast_csv.whole_numbers(values)
    assert plain.tolist() == [True, True, True, False, False, False, False, False, False]
    assert numbers[:3].tolist() == [0, 7, 123456789012345]


JOB_HEADER = ["submit_time", "model", "work", "batch", "job_id", "gpus", "min_batch", "max_batch", "min_local_batch",
              "max_local_batch", "min_gpus", "max_gpus", "curve", "saturation", "comm", "noise_scale", "extra"]
_JOB_CELLS = {"submit_time": ["0", "0.5", "90min", "2h", " 3 ", "1e300", "inf", "5 parsecs", "-1", "12"],
              "model": list(el.FITTED_MODELS) + ["llama", ""], "work": ["1e6", "2000", "1e8", "lots", "-5"],
              "batch": ["64", "128", "0", "5", "64.5", "-64", "1e300"], "job_id": ["", "r", "a b"],
              "gpus": ["", "4", "x"], "min_batch": ["", "32"], "max_batch": ["", "512"], "min_local_batch": ["", "2"],
              "max_local_batch": ["", "64"], "min_gpus": ["", "1"], "max_gpus": ["", "16"],
              "curve": ["", "fitted", "roofline", "bogus"], "saturation": ["", "0.5", "0.8", "2"],
              "comm": ["", "0.02", "0.1", "-1"], "noise_scale": ["", "256", "1e4", "0.5", "-3", "big"],
              "extra": ["x"]}


# Only values `_job_row` takes.
_JOB_PLAIN = {"submit_time": ["0", "0.5", "90min", "2h", " 3 ", "12"], "model": list(el.FITTED_MODELS),
              "work": ["1e6", "2000", "1e8"], "batch": ["64", "128", "0", "5", "7"], "job_id": ["", "r", "a b"],
              "gpus": ["", "4"], "curve": ["", "fitted", "roofline"], "saturation": ["", "0.5", "0.8"],
              "comm": ["", "0.02", "0.1"], "noise_scale": ["", "256", "1e4"]}


@st.composite
def job_csv_texts(draw, plain=True):
    columns = ["submit_time", "model", "work", "batch"] + draw(st.lists(st.sampled_from(JOB_HEADER[4:]), unique=True))
    columns = draw(st.permutations(columns))
    rows = []
    for _ in range(draw(st.integers(0, 30))):
        cells = []
        for name in columns:
            pool = _JOB_PLAIN.get(name, _JOB_CELLS[name]) if plain else _JOB_CELLS[name]
            cells.append(draw(st.sampled_from(pool)))
        if plain and ("curve" not in columns or cells[columns.index("curve")] != "roofline"):
            cells = ["" if n in ("saturation", "comm") else v for n, v in zip(columns, cells)]
        rows.append(",".join(cells))
    return "\n".join([",".join(columns)] + rows) + "\n"


@settings(max_examples=80)
@given(job_csv_texts(plain=False), st.sampled_from([64, 1 << 24]), st.sampled_from([None, "1h"]),
       st.sampled_from(["fitted", "roofline"]), st.sampled_from(["raise", "skip"]))
def test_job_csvs_read_alike_by_columns_and_by_rows(text, block, window, curve, errors):
    _check_jobs(text, block, window=window, curve=curve, errors=errors)


@settings(max_examples=40)
@given(job_csv_texts(plain=True), st.sampled_from([(0.3, 1.7), (0.5, 2.0)]))
def test_job_csv_batch_ranges_round_alike(text, factors):
    _check_jobs(text, 1 << 24, batch_range_factor=factors)


def _check_jobs(text, block, **kwargs):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "jobs.csv"
        path.write_text(text)
        with mock.patch.object(_fast_csv, "BLOCK_BYTES", block):
            by_columns = _read_jobs(path, **kwargs)
        with mock.patch.object(traces, "_columns", return_value=None):
            by_rows = _read_jobs(path, **kwargs)
    if isinstance(by_rows, ValueError):
        assert type(by_columns) is type(by_rows) and str(by_columns) == str(by_rows)
    else:
        _same_workload(by_columns, by_rows)


@settings(max_examples=60)
@given(job_csv_texts(plain=True), st.sampled_from([None, "1h"]))
def test_plain_job_csvs_are_read_by_columns(text, window):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "jobs.csv"
        path.write_text(text)
        with mock.patch.object(traces, "_rows", side_effect=AssertionError("read row by row")):
            by_columns = _read_jobs(path, window=window)
        with mock.patch.object(traces, "_columns", return_value=None):
            by_rows = _read_jobs(path, window=window)
    if not isinstance(by_rows, ValueError):  # a batch beyond 2**53 after the factors
        _same_workload(by_columns, by_rows)


def _read_jobs(path, **kwargs):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", el.TraceWarning)
            return el.read_job_csv(path, **kwargs)
    except ValueError as err:
        return err


@given(st.lists(st.text(alphabet="0123456789.", max_size=18) | st.sampled_from(["-1", "1e3", " 1", "inf", "٣"])))
def test_decimals_read_in_bulk_as_float_does(texts):
    numbers, plain = _fast_csv.decimals(np.array(texts, dtype=object))
    for text, number, read in zip(texts, numbers, plain):
        digits = text.replace(".", "", 1)
        assert read == (digits.isascii() and digits.isdigit() and len(digits) <= 15)
        if read:
            assert number == float(text)
