"""Workloads: the synthetic generator and the ElasticFlow trace reader (real traces
are read in place from ../shared/data and the tests skip when it is absent)."""

import csv
import warnings
from pathlib import Path

import numpy as np
import pytest

import relmodel.elastic as el

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "elasticflow"
needs_traces = pytest.mark.skipif(not (DATA / "195job.csv").is_file(),
                                  reason=f"ElasticFlow traces not found at {DATA}")
HEADER = "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration"


def write_trace(tmp_path, *rows, header=HEADER):
    path = tmp_path / "trace.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


GOOD = ["a,7200,1000,resnet50,9000,128,4,600", "b,3600,2000,bert,9000,64,1,900", "c,10800,500,vgg16,20000,256,8,300"]


# -- the synthetic generator ------------------------------------------------------
def test_synthetic_workload_is_seeded_and_its_parameters_are_kept():
    a = el.synthetic_workload(6, "12h", seed=3)
    b = el.synthetic_workload(6, "12h", seed=3)
    c = el.synthetic_workload(6, "12h", seed=4)
    assert a.jobs == b.jobs and a.jobs != c.jobs
    times = np.array([j.submit_time for j in a.jobs])
    assert np.all(np.diff(times) > 0) and times[-1] < 12
    assert a.attrs["arrival_rate_per_h"] == 6 and a.attrs["seed"] == 3 and a.attrs["n_jobs"] == len(a)
    for job in a.jobs:
        el.check_job(job, 64)  # every generated job is valid on 64 GPUs
        assert job.min_batch <= job.batch <= job.max_batch


def test_a_longer_window_only_appends_jobs():
    short = el.synthetic_workload(10, "6h", seed=1)
    long = el.synthetic_workload(10, "12h", seed=1)
    assert long.jobs[:len(short)] == short.jobs and len(long) > len(short)


def test_poisson_arrival_count_is_plausible():
    counts = [len(el.synthetic_workload(20, "10h", seed=s)) for s in range(20)]
    # 200 expected per window, standard deviation 14.1: the mean of 20 windows within 4 standard errors
    assert abs(np.mean(counts) - 200) < 4 * np.sqrt(200 / 20)


def test_model_mix_and_per_gpu_batches():
    work = el.synthetic_workload(20, "10h", seed=2, model_mix={"bert": 1, "gpt2": 3}, batch_scaling="per-gpu")
    names = [j.model.name for j in work.jobs]
    assert set(names) == {"bert", "gpt2"} and names.count("gpt2") > 2 * names.count("bert")
    assert any(j.batch > j.model.max_local_batch for j in work.jobs)  # big jobs' batches need several GPUs
    assert all(j.batch // j.gpus in j.model.batch_sizes for j in work.jobs)
    assert work.attrs["model_mix"] == "bert:1,gpt2:3" and work.attrs["batch_scaling"] == "per-gpu"


@pytest.mark.parametrize("kwargs, name", [
    ({"arrival_rate": 0}, "arrival_rate"), ({"duration": "-1h"}, "duration"),
    ({"model_mix": {"alexnet": 1}}, "model_mix"),
    ({"batch_range_factor": (2, 4)}, "batch_range_factor"), ({"seed": -1}, "seed"),
    ({"batch_scaling": "local"}, "batch_scaling"),
])
def test_generator_errors_name_the_parameter(kwargs, name):
    args = {"arrival_rate": 6, "duration": "1h", **kwargs}
    with pytest.raises(ValueError, match=f"^{name}: "):
        el.synthetic_workload(**args)


# -- the trace reader ---------------------------------------------------------------
def test_trace_rows_become_jobs(tmp_path):
    work = el.read_elasticflow(write_trace(tmp_path, *GOOD))
    assert [j.job_id for j in work.jobs] == ["b", "a", "c"]  # sorted by submission
    assert [j.submit_time for j in work.jobs] == [0.0, 1.0, 2.0]  # hours from the first submission
    b = work.jobs[0]
    assert b.model is el.FITTED_MODELS["bert"] and b.work == 2000 * 64 and b.gpus == 1
    assert (b.min_batch, b.max_batch) == (32, 128)
    assert work.attrs["time_origin_s"] == 3600 and work.attrs["trace_file"] == "trace.csv"
    window = el.read_elasticflow(write_trace(tmp_path, *GOOD), window="1.5h", batch_range_factor=(1, 1))
    assert [j.job_id for j in window.jobs] == ["b", "a"] and window.jobs[0].min_batch == 64


@pytest.mark.parametrize("bad_row, column, text", [
    ("d,abc,1000,resnet50,9000,128,4,600", "submission_time", "'abc' is not a number"),
    ("d,7200,1000,resnet50,9000,128,four,600", "num_gpu", "'four' is not a number"),
    ("d,7200,10.5,resnet50,9000,128,4,600", "num_iteration", "not a whole number"),
    ("d,7200,1000,alexnet,9000,128,4,600", "model_name", "unknown model 'alexnet'"),
    ("d,7200,1000,resnet50,9000,128", "row", "6 fields, the header has 8"),
    (",7200,1000,resnet50,9000,128,4,600", "job_id", "empty"),
    ("d,7200,1000,resnet50,9000,128,4,inf", "duration", "not finite"),
    ("d,7200,1000,resnet50,9000,1e300,4,600", "batch_size", "beyond 2**53"),
    ("d,7200,1000,resnet50,9000,18446744073709551616,4,600", "batch_size", "beyond 2**53"),
])
def test_malformed_rows_are_reported_with_their_line(tmp_path, bad_row, column, text):
    path = write_trace(tmp_path, GOOD[0], GOOD[1], bad_row, GOOD[2])
    with pytest.raises(el.JobTraceError) as err:
        el.read_elasticflow(path)
    assert err.value.line == 4 and err.value.column == column
    assert str(err.value).startswith(f"trace.csv line 4: {column}: ") and text in str(err.value)


def test_line_numbers_count_blank_lines(tmp_path):
    path = write_trace(tmp_path, GOOD[0], "", GOOD[1], "x,1,1,resnet50,1,64,1")
    with pytest.raises(el.JobTraceError, match="^trace.csv line 5: row: "):
        el.read_elasticflow(path)


def test_missing_columns_are_reported(tmp_path):
    with pytest.raises(el.JobTraceError, match="line 1: num_gpu: missing column"):
        el.read_elasticflow(write_trace(tmp_path, "a,0,1,bert,1,64,1", header=HEADER.replace(",num_gpu", "")))


def test_skip_mode_keeps_the_good_rows_and_lists_the_bad(tmp_path):
    path = write_trace(tmp_path, GOOD[0], "d,7200,1000,alexnet,9000,128,4,600", GOOD[1], "e,1,x,bert,1,64,1,1")
    with pytest.warns(el.TraceWarning, match="2 malformed row"):
        work = el.read_elasticflow(path, errors="skip")
    assert len(work) == 2 and work.attrs["skipped_lines"] == [3, 5]


def test_parseable_but_invalid_rows_are_rejected_at_submission(tmp_path):
    path = write_trace(tmp_path, *GOOD, "neg,5000,-10,bert,9000,64,1,10", "huge,5000,10,bert,9000,64,128,10")
    ds = el.simulate_cluster(el.read_elasticflow(path), n_gpus=16)
    assert (ds.rejected == 2).all() and (ds.completed == 3).all()
    reasons = " ".join(ds.rejection_reason.values)
    assert "job 'neg': work" in reasons and "job 'huge': gpus" in reasons


def test_job_csv_rows_become_jobs(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text("submit_time,model,work,batch,gpus,min_batch,max_batch,max_gpus,job_id\n"
                    "90min,resnet50,1e8,128,4,64,512,16,r\n"
                    "0.5,bert,2e7,64,,,,,\n")
    work = el.read_job_trace(path)
    assert [j.job_id for j in work.jobs] == ["line3", "r"] and work.attrs["workload"] == "job CSV jobs.csv"
    bert, resnet = work.jobs
    assert bert.submit_time == 0.5 and bert.gpus == 1 and (bert.min_batch, bert.max_batch) == (32, 128)
    assert resnet.submit_time == 1.5 and (resnet.min_batch, resnet.max_batch, resnet.max_gpus) == (64, 512, 16)
    assert resnet.work == 1e8 and resnet.model is el.FITTED_MODELS["resnet50"]


@pytest.mark.parametrize("row, column", [
    ("5 parsecs,bert,1e6,64", "submit_time"), ("1,bert,lots,64", "work"), ("1,bert,1e6,64.5", "batch"),
    ("1,llama,1e6,64", "model"), ("1,bert,1e6", "row"),
])
def test_job_csv_errors_name_the_line(tmp_path, row, column):
    path = tmp_path / "jobs.csv"
    path.write_text(f"submit_time,model,work,batch\n0,bert,1e6,64\n{row}\n")
    with pytest.raises(el.JobTraceError, match=f"^jobs.csv line 3: {column}: "):
        el.read_job_trace(path)


def test_a_byte_order_mark_is_dropped_and_a_file_that_is_not_utf8_names_its_line(tmp_path):
    """A BOM (spreadsheets write one) spoiled the header invisibly; Latin-1 gave a bare codec error."""
    path = tmp_path / "jobs.csv"
    path.write_bytes(b"\xef\xbb\xbfsubmit_time,model,work,batch\n0,bert,1e6,64\n")
    assert [j.batch for j in el.read_job_trace(path).jobs] == [64]
    path.write_bytes(b"submit_time,model,work,batch\n0,bert,1e6,64\n1,r\xe9snet,1e6,64\n")
    with pytest.raises(el.JobTraceError, match=r"^jobs.csv line 3: encoding: not UTF-8 text \(byte 0xe9\)"):
        el.read_job_trace(path)


def test_no_arithmetic_warning_from_a_rejected_job_or_a_vanishing_arrival_rate(tmp_path):
    """gpus=0 leaked divide-by-zero warnings; a subnormal arrival rate an overflow (tests turn them into errors)."""
    path = tmp_path / "jobs.csv"
    path.write_text("submit_time,model,work,batch,gpus\n0,resnet50,1e6,64,0\n")
    ds = el.simulate_cluster(el.read_job_trace(path), n_gpus=16)
    assert (ds.rejected == 1).all() and "gpus" in str(ds.rejection_reason.values[0])
    assert len(el.synthetic_workload(1e-320, "4h", seed=0).jobs) == 0


def test_a_submit_time_too_late_for_a_float_to_time_the_job_is_rejected(tmp_path):
    """At 1e300 h the job's run vanished in rounding: completed with JCT 0."""
    path = tmp_path / "jobs.csv"
    path.write_text("submit_time,model,work,batch\n1e300,resnet50,1e6,64\n")
    ds = el.simulate_cluster(el.read_job_trace(path), n_gpus=16)
    assert (ds.completed == 0).all() and "submit_time" in str(ds.rejection_reason.values[0])


def test_unknown_trace_format(tmp_path):
    path = write_trace(tmp_path, "1,2,3", header="a,b,c")
    with pytest.raises(el.JobTraceError, match="line 1: header: neither an ElasticFlow trace"):
        el.read_job_trace(path)
    assert len(el.read_job_trace(write_trace(tmp_path, *GOOD))) == 3


# -- the real traces ---------------------------------------------------------------
@needs_traces
def test_195job_trace_replays_under_every_policy():
    work = el.read_elasticflow(DATA / "195job.csv")
    assert len(work) == 195 and work.jobs[0].submit_time == 0.0
    ds = el.simulate_cluster(work, n_gpus=64)
    assert (ds.rejected == 0).all() and (ds.submitted == 195).all()
    assert int(ds.completed.sel(policy="elastic")) == 195
    assert float(ds.jct_mean.sel(policy="elastic")) < float(ds.jct_mean.sel(policy="fixed-batch"))
    assert ds.attrs["workload_trace_file"] == "195job.csv"


@needs_traces
def test_the_catalogue_reproduces_the_trace_durations():
    rows = list(csv.DictReader((DATA / "195job.csv").open()))
    rel = []
    for r in rows:
        model = el.FITTED_MODELS[r["model_name"]]
        step = float(model.step_time(int(r["num_gpu"]), int(r["batch_size"])))
        rel.append(abs(step * int(r["num_iteration"]) / float(r["duration"]) - 1))
    assert np.median(rel) < 0.05 and np.max(rel) < 0.2


@needs_traces
def test_the_catalogue_is_the_fit_to_the_traces():
    points = {}
    for path in sorted(DATA.glob("*.csv")):
        with path.open() as f:
            for r in csv.DictReader(f):
                key = (r["model_name"], int(r["batch_size"]), int(r["num_gpu"]))
                points.setdefault(key, []).append(float(r["duration"]) / int(r["num_iteration"]))
    for name, model in el.FITTED_MODELS.items():
        keys = [k for k in points if k[0] == name]
        g = [k[2] for k in keys]
        b = [k[1] for k in keys]
        fit = el.fit_parametric(name, g, b, [np.median(points[k]) for k in keys])
        for term in ("t_fixed", "t_sample", "t_log", "t_ring", "t_hop"):
            assert getattr(fit, term) == pytest.approx(getattr(model, term), rel=2e-3, abs=1e-7), (name, term)
        assert sorted(set(b)) == list(model.batch_sizes)


@needs_traces
def test_a_full_cluster_trace_reads_without_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        work = el.read_elasticflow(DATA / "cluster10.csv")
    assert len(work) == 260
    ds = el.simulate_cluster(work, n_gpus=64)
    assert (ds.rejected == 0).all() and (ds.completed + ds.dropped == 260).all()
