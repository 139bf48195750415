"""`relmodel cluster` (registered here on a bare group of the project's kind, as
relmodel._cli registers it)."""

import json
from pathlib import Path

import click
import warnings

import pytest
import xarray as xr
from click.testing import CliRunner

from relmodel._cli_shared import OneLineErrors
from relmodel.elastic._cli import cluster

TRACE_195 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "elasticflow" / "195job.csv"


@click.group(cls=OneLineErrors)
def group():
    """relmodel, as far as this test needs it."""


group.add_command(cluster)


def invoke(*args):
    return CliRunner().invoke(group, ["cluster", *args])


def test_table_plot_and_dataset(tmp_path):
    plot, out = tmp_path / "cluster.png", tmp_path / "cluster.nc"
    result = invoke("--gpus", "32", "--arrival-rate", "6", "--duration", "6h", "--seed", "1", "--policy", "all",
                    "--failure-rate", "1", "--plot", str(plot), "--out", str(out))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "1 failures per node-day" in lines[0] and lines[1].split()[:3] == ["policy", "completed", "dropped"]
    assert [line.split()[0] for line in lines[2:5]] == ["elastic", "fixed-batch", "fifo"]
    assert plot.stat().st_size > 10_000
    ds = xr.open_dataset(out, engine="h5netcdf")
    assert ds.sizes["policy"] == 3 and ds.attrs["seed"] == 1 and ds.attrs["n_gpus"] == 32


def test_json_has_the_documented_shape():
    result = invoke("--gpus", "64", "--arrival-rate", "6", "--duration", "4h", "--seed", "1", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert list(doc["policies"]) == ["elastic", "fixed-batch", "fifo"]
    for row in doc["policies"].values():
        assert {"completed", "dropped", "mean_jct_h", "p90_jct_h", "gpu_hours_lost_failures"} <= set(row)
        assert row["completed"] + row["dropped"] + row["rejected"] == row["submitted"]
    assert doc["attrs"]["workload_arrival_rate_per_h"] == 6.0 and doc["rejected_jobs"] == []


def test_one_policy():
    doc = json.loads(invoke("--policy", "fifo", "--duration", "2h", "--json").output)
    assert list(doc["policies"]) == ["fifo"]


@pytest.mark.parametrize("args, message", [
    (["--gpus", "0"], "Error: --gpus: must be an integer in [1, "),
    (["--arrival-rate", "0"], "Error: --arrival-rate: must be a finite number > 0"),
    (["--duration", "5m"], "Error: --duration: unknown unit 'm'"),
    (["--pause", "-1s"], "Error: --pause: must be a finite duration >= 0 (got -1s)"),
    (["--failure-rate", "1e-3", "--repair-time", "-5min"],
     "Error: --repair-time: must be a finite duration >= 0 (got -5min)"),
    (["--checkpoint-interval", "0.5s"], "Error: --checkpoint-interval: must be at least 1s (got 0.5s)"),
    (["--failure-rate", "-1"], "Error: --failure-rate: must be >= 0"),
    (["--batch-range", "2"], "Error: --batch-range: expected LOW,HIGH"),
    (["--batch-range", "2,4"], "Error: --batch-range: need 0 < low <= 1 <= high"),
    (["--out", "x.csv"], "Error: --out: unknown suffix"),
    (["--trace", "no/such.csv"], "Error: --trace: no such file"),
    # A zero window is the user's own value: refused, never replaced by the 24 h default
    (["--duration", "0"], "Error: --duration: must be a finite number > 0"),
    (["--duration", "0s"], "Error: --duration: must be a finite number > 0"),
    (["--trace", str(TRACE_195), "--duration", "0s"], "Error: --duration: must be a finite number > 0"),
])
def test_bad_input_is_one_line_naming_the_flag(args, message):
    result = invoke(*args)
    assert result.exit_code == 2
    assert result.output.startswith(message) and len(result.output.strip().splitlines()) == 1


def test_a_malformed_trace_names_its_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"
                    "a,0,100,bert,1,64,1,10\nb,10,100,bert,1,64,x,10\n")
    result = invoke("--trace", str(path))
    assert result.exit_code == 2 and "Error: --trace: bad.csv line 3: num_gpu: 'x' is not a number" in result.output
    assert invoke("--trace", str(path), "--arrival-rate", "3").output.startswith("Error: --arrival-rate: not used")


@pytest.mark.skipif(not TRACE_195.is_file(), reason=f"ElasticFlow traces not found at {TRACE_195.parent}")
def test_trace_replay():
    result = invoke("--trace", str(TRACE_195), "--duration", "12h", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["attrs"]["workload_trace_file"] == "195job.csv" and doc["attrs"]["workload_window_h"] == 12.0
    assert 0 < doc["policies"]["elastic"]["submitted"] < 195


def test_a_job_csv_trace(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text("submit_time,model,work,batch,gpus\n0,resnet50,1e8,128,4\n10min,bert,1e7,64,1\n"
                    "20min,bert,-1,64,1\n")
    doc = json.loads(invoke("--trace", str(path), "--gpus", "16", "--json").output)
    assert doc["policies"]["elastic"]["completed"] == 2 and doc["policies"]["fifo"]["rejected"] == 1
    assert doc["rejected_jobs"][0]["job_id"] == "line4" and "work" in doc["rejected_jobs"][0]["reason"]


@pytest.mark.parametrize("args, flag", [(["--gpus", "1000000"], "--gpus"),
                                        (["--arrival-rate", "16384"], "--arrival-rate")])
def test_oversized_runs_are_refused_naming_the_flag(args, flag):
    result = invoke(*args)
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: {flag}:") and "Traceback" not in result.output


def test_queue_admission_and_curve_flags_reach_the_simulation():
    result = invoke("--arrival-rate", "40", "--duration", "6h", "--unplaceable", "queue", "--max-wait", "1h",
                    "--admission", "optimizer", "--reoptimize-every", "30min", "--curve", "roofline",
                    "--objective", "speedup", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    attrs = doc["attrs"]
    assert attrs["max_wait_h"] == 1.0 and attrs["admission"] == "optimizer" and attrs["reoptimize_every_h"] == 0.5
    assert attrs["workload_curve"] == "roofline" and attrs["objective"] == "speedup"
    assert any(row["timeouts"] > 0 for row in doc["policies"].values())
    for row in doc["policies"].values():
        assert row["completed"] + row["dropped"] + row["rejected"] + row["unfinished"] == row["submitted"]


@pytest.mark.parametrize("args, message", [
    (["--max-wait", "1h"], "Error: --max-wait: only acts with --unplaceable queue"),
    (["--unplaceable", "queue", "--max-wait", "-1h"], "Error: --max-wait: must be a duration >= 0 (got -1h)"),
    (["--reoptimize-every", "0s"], "Error: --reoptimize-every: must be a finite duration > 0 (got 0s)"),
    (["--admission", "lottery"], "Error: --admission: 'lottery' is not one of 'first-fit', 'optimizer'"),
    (["--curve", "linear"], "Error: --curve: 'linear' is not one of 'fitted', 'roofline'"),
])
def test_bad_queue_flags_name_the_flag(args, message):
    result = invoke("--duration", "1h", *args)
    assert result.exit_code == 2
    assert result.output.startswith(message) and len(result.output.strip().splitlines()) == 1, result.output


@pytest.mark.parametrize("every", ["1e-6s", "0.2s"])  # refused up front; stopped when the run gets there
def test_a_reoptimisation_interval_too_short_for_the_run_is_refused(every):
    """`--reoptimize-every 1e-6s` is refused naming the flag, rather than running on silently for minutes."""
    result = invoke("--gpus", "16", "--arrival-rate", "2", "--duration", "4h", "--reoptimize-every", every)
    assert result.exit_code == 2 and "--reoptimize-every:" in result.output and "re-optimisations" in result.output


@pytest.mark.parametrize("args, flag", [(["--duration", "1e308h"], "--duration"),
                                        (["--arrival-rate", "1e9"], "--arrival-rate")])
def test_a_synthetic_workload_too_large_blames_the_flag_that_made_it_so(args, flag):
    result = CliRunner().invoke(cluster, args)
    assert result.exit_code == 2
    assert f"Error: {flag}: " in result.output and "inf" not in result.output


def test_a_plot_of_a_run_where_no_job_completes_warns_of_nothing(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "No artists with labels found" among them
        result = invoke("--gpus", "16", "--duration", "2h", "--failure-rate", "1e6", "--checkpoint-cost", "0",
                        "--quiet", "--plot", str(tmp_path / "f.png"))
    assert result.exit_code == 0, result.output
    assert "Warning" not in result.output and (tmp_path / "f.png").stat().st_size > 0


def test_a_figure_where_no_job_completes_says_so(tmp_path):
    import matplotlib
    import xarray as xr

    matplotlib.use("Agg")
    from relmodel.elastic._plot import cluster_figure

    result = invoke("--gpus", "16", "--duration", "2h", "--failure-rate", "1e6", "--checkpoint-cost", "0",
                    "--quiet", "--out", str(tmp_path / "c.nc"))
    assert result.exit_code == 0, result.output
    with xr.open_dataset(tmp_path / "c.nc") as ds:
        fig = cluster_figure(ds.load())
    assert "no job completed under any policy" in [t.get_text() for ax in fig.axes for t in ax.texts]


def test_a_run_whose_nodes_would_fail_past_the_limit_is_refused_before_it_starts():
    result = invoke("--failure-rate", "1000", "--gpus", "16384", "--duration", "3w", "--quiet")
    assert result.exit_code == 2
    assert "Error: --failure-rate: 2048 nodes failing every 1.44min (and back after 2h) fail some 5.1e+05 times" \
        in result.output and "(limit 10,000)" in result.output
