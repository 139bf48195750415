"""A flag that only acts with another one is refused without it (exit 2, one line naming
the flag as typed), never silently ignored; with its partner it runs. A missing extra is
the environment's fault (exit 1, naming what to install), whether a flag or its output
needs it."""

import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from relmodel import data
from relmodel._cli import main

SACCT = Path(__file__).parent / "data" / "sacct" / "slurm23_parsable2.txt"
TRACE_195 = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "elasticflow" / "195job.csv"
PIPELINE = ["pipeline", "--stages", "2", "--replicas", "2", "--microbatches", "2", "--failures", "0..1"]
CLUSTER = ["cluster", "--gpus", "16", "--duration", "2h"]
SIMULATE = ["simulate", "--gpus", "8", "--n-jobs", "100"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


# (command line, the flag its one line names); each refused before any work.
REFUSED = [
    ([*SIMULATE, "--overwrite"], "--overwrite"),
    ([*SIMULATE, "--backend", "cython", "--threads", "2"], "--threads"),
    (["compare", "--gpus", "8", "--n-jobs", "100", "--overwrite"], "--overwrite"),
    (["fit", "--example", "--overwrite"], "--overwrite"),
    (["sweep", "study.toml", "--out", "s.zarr", "--x", "n_gpus"], "--x"),
    (["sweep", "study.toml", "--out", "s.zarr", "--y", "n_gpus"], "--y"),
    (["sweep", "study.toml", "--out", "s.zarr", "--workers", "2"], "--workers"),
    (["sweep", "study.toml", "--out", "s.zarr", "--scheduler", "tcp://localhost:1", "--workers", "2"], "--workers"),
    (["sweep", "--verify", "s.zarr", "--scheduler", "dask-local"], "--scheduler"),
    (["sweep", "--verify", "s.zarr", "--plot", "s.png"], "--plot"),
    ([*PIPELINE, "--seed", "3"], "--seed"),
    ([*PIPELINE, "--strategies", "restart", "--spares", "4"], "--spares"),
    ([*PIPELINE, "--strategies", "restart", "--oobleck-min-stages", "1"], "--oobleck-min-stages"),
    ([*PIPELINE, "--strategies", "restart", "--bamboo-slowdown", "2"], "--bamboo-slowdown"),
    ([*PIPELINE, "--strategies", "restart", "--reroute-delay", "0.5"], "--reroute-delay"),
    ([*PIPELINE, "--strategies", "restart", "--method", "heuristic"], "--method"),
    ([*PIPELINE, "--overwrite"], "--overwrite"),
    ([*CLUSTER, "--repair-time", "1h"], "--repair-time"),
    ([*CLUSTER, "--restart-cost", "1h"], "--restart-cost"),
    ([*CLUSTER, "--trace", TRACE_195, "--seed", "3"], "--seed"),
    ([*CLUSTER, "--policy", "fifo", "--objective", "speedup"], "--objective"),
    ([*CLUSTER, "--policy", "fifo", "--reoptimize-every", "1h"], "--reoptimize-every"),
    ([*CLUSTER, "--policy", "fifo", "--admission", "optimizer"], "--admission"),
    ([*CLUSTER, "--policy", "fifo", "--pause", "1min"], "--pause"),
    ([*CLUSTER, "--policy", "fixed-batch", "--batch-range", "1,2"], "--batch-range"),
    ([*CLUSTER, "--max-wait", "1h"], "--max-wait"),
    ([*CLUSTER, "--overwrite"], "--overwrite"),
    (["run", "show", "--example", "--run", "7001"], "--run"),
    (["run", "predict", "--example", "--run", "7001"], "--run"),
    (["run", "show", "--sacct", SACCT, "--format", "megatron"], "--format"),
    (["run", "replay", data.path("run-events.csv"), "--runs", "100"], "--runs"),
]


@pytest.mark.parametrize("args, flag", REFUSED, ids=[" ".join(map(str, a[:1] + a[-2:])) for a, _ in REFUSED])
def test_a_flag_without_its_partner_is_refused_naming_it(args, flag):
    result = invoke(*args)
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith(f"Error: {flag}: "), result.output


STUDY = ('[fixed]\nfailure_rate = 6.5e-3\nwork = "1d"\n[sweep]\nn_gpus = [64, 128]\n'
         'checkpoint_interval = ["1h", "2h"]\n[run]\nn_jobs = 100\nseed = 1\n')


# The refused flags with their partners: each runs.
WITH_PARTNER = [
    [*SIMULATE, "--quiet", "--out", "{tmp}/s.nc", "--overwrite"],
    [*SIMULATE, "--quiet", "--backend", "numba", "--threads", "1"],
    ["compare", "--gpus", "8", "--n-jobs", "100", "--quiet", "--out", "{tmp}/c.nc", "--overwrite"],
    ["fit", "--example", "--quiet", "--out", "{tmp}/f.nc", "--overwrite"],
    ["sweep", "{tmp}/study.toml", "--out", "{tmp}/s.zarr", "--quiet", "--plot", "{tmp}/s.png", "--x",
     "checkpoint_interval", "--y", "n_gpus"],
    [*PIPELINE, "--quiet", "--run-duration", "1d", "--runs", "5", "--seed", "3", "--strategies", "spare,restart"],
    [*PIPELINE, "--quiet", "--strategies", "spare", "--spares", "1"],
    [*PIPELINE, "--quiet", "--strategies", "oobleck,bamboo", "--oobleck-min-stages", "1", "--bamboo-slowdown", "2"],
    [*PIPELINE, "--quiet", "--strategies", "recycle", "--reroute-delay", "0.5", "--method", "heuristic",
     "--out", "{tmp}/p.nc", "--overwrite"],
    [*CLUSTER, "--quiet", "--failure-rate", "1", "--repair-time", "1h", "--restart-cost", "5min"],
    [*CLUSTER, "--quiet", "--policy", "elastic", "--objective", "speedup", "--reoptimize-every", "1h",
     "--admission", "optimizer", "--pause", "1min", "--batch-range", "1,2", "--unplaceable", "queue",
     "--max-wait", "1h", "--out", "{tmp}/e.nc", "--overwrite"],
    ["cluster", "--gpus", "64", "--quiet", "--trace", TRACE_195, "--duration", "6h", "--failure-rate", "1",
     "--seed", "3"],
    ["run", "show", "--sacct", SACCT, "--run", "7001"],
    ["run", "show", data.path("run-events.csv"), "--format", "events"],
    ["run", "replay", "--example", "--runs", "100"],
]


@pytest.mark.parametrize("args", WITH_PARTNER, ids=[" ".join(map(str, a[:2])) for a in WITH_PARTNER])
def test_the_same_flags_with_their_partner_run(args, tmp_path):
    (tmp_path / "study.toml").write_text(STUDY)
    result = invoke(*[str(a).format(tmp=tmp_path) for a in args])
    assert result.exit_code == 0, result.output


def test_workers_without_dask_names_the_extra_to_install(monkeypatch):
    from relmodel import _extras

    monkeypatch.setattr(_extras, "available", lambda module: module != "distributed")
    result = invoke("sweep", "study.toml", "--out", "s.zarr", "--scheduler", "dask-local", "--workers", "2")
    assert result.exit_code == 1, result.output
    assert result.output.strip() == "Error: --workers needs dask[distributed]: pip install 'relmodel[studies]'"


@pytest.mark.parametrize("args, module", [
    ([*SIMULATE, "--out", "{tmp}/x.zarr"], "zarr"),
    ([*SIMULATE, "--out", "{tmp}/x.nc"], "h5netcdf"),
    (["sweep", "study.toml", "--out", "{tmp}/x.zarr"], "zarr"),
    ([*CLUSTER, "--out", "{tmp}/x.nc"], "filelock"),
])
def test_an_output_whose_package_is_missing_is_the_environments_fault(args, module, monkeypatch, tmp_path):
    """Found while the flag is read, before any work: exit 1 (an install to make), not 2."""
    from relmodel import _extras

    monkeypatch.setattr(_extras, "available", lambda name: name != module)
    result = invoke(*[str(a).format(tmp=tmp_path) for a in args])
    assert result.exit_code == 1, result.output
    line = result.output.strip()
    assert line.startswith("Error: --out") and f"needs {module}: pip install 'relmodel[studies]'" in line, line


# Extreme values on each command: what overflows or has no value is handled (a result, a
# refusal, or relmodel's own warning), never a NumPy warning on stderr under --quiet.
EXTREMES = [
    ["simulate", "--gpus", "1024", "--failure-rate", "1e6", "--quiet"],
    ["simulate", "--gpus", "1000000000", "--quiet"],
    ["simulate", "--gpus", "1024", "--checkpoint-cost", "1e308h", "--quiet"],
    ["simulate", "--gpus", "1024", "--failure-rate", "1e-300", "--n-jobs", "100", "--quiet"],
    ["simulate", "--gpus", "1024", "--checkpoint-interval", "1e308h", "--restart-cost", "1e308h", "--n-jobs", "100",
     "--quiet"],
    ["compare", "--gpus", "1,1024", "--failure-rate", "0,1e-300", "--checkpoint-cost", "0", "--restart-cost", "0",
     "--n-jobs", "100", "--quiet"],
    ["plan", "--gpus", "1024", "--checkpoint-cost", "1e308h", "--n-jobs", "100", "--quiet"],
    ["plan", "--gpus", "1024", "--failure-rate", "1e-300", "--target-ettr", "0.99", "--n-jobs", "100", "--quiet"],
    ["plan", "--gpus", "1024", "--checkpoint-cost", "0", "--restart-cost", "0", "--n-jobs", "100", "--quiet"],
    [*PIPELINE, "--fwd", "1e308", "--quiet"],
    [*PIPELINE, "--run-duration", "14d", "--failure-rate", "1e-300", "--runs", "10", "--quiet"],
    [*CLUSTER, "--failure-rate", "1e-300", "--quiet"],
    [*CLUSTER, "--checkpoint-cost", "0", "--failure-rate", "1e6", "--quiet"],
    ["run", "predict", "--example", "--failure-rate", "1e-300", "--runs", "100"],
    ["run", "predict", "--example", "--gpus", "1", "--runs", "100"],
    ["run", "replay", "--example", "--checkpoint-cost", "0", "--restart-cost", "0", "--queue-wait", "0",
     "--runs", "100"],
]


@pytest.mark.parametrize("args", EXTREMES, ids=[" ".join(a[:1] + a[-4:]) for a in EXTREMES])
def test_extreme_values_leak_no_numpy_warning(args):
    with warnings.catch_warnings():
        warnings.simplefilter("always")  # as a user's shell shows them: printed, not raised
        result = invoke(*args)
    assert result.exit_code in (0, 1, 2), result.output
    assert "RuntimeWarning" not in result.output and "encountered" not in result.output, result.output
