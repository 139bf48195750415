"""Every example runs (quick mode) and writes its Dataset and figure, so none rots."""

import subprocess
import sys
from pathlib import Path

import pytest
import xarray as xr

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py"))
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="module")
def run_example(tmp_path_factory):
    """Runs an example once per session (quick mode) and returns (process result, output folder)."""
    done = {}

    def run(script):
        if script not in done:
            out = tmp_path_factory.mktemp(Path(script).stem)
            done[script] = subprocess.run([sys.executable, str(EXAMPLES / script), "--quick", "--out", str(out)],
                                          capture_output=True, text=True, timeout=600), out
        return done[script]
    return run


@pytest.mark.parametrize("script", SCRIPTS)
def test_example_runs_and_writes_its_outputs(script, run_example):
    result, out = run_example(script)
    assert result.returncode == 0, result.stderr[-3000:]
    stem = Path(script).stem
    assert (out / f"{stem}.png").stat().st_size > 10_000
    ds = xr.open_dataset(out / f"{stem}.nc", engine="h5netcdf")
    assert ds.data_vars and "relmodel_version" in ds.attrs


# The docs gallery runs an example's code in the examples folder with neither `__file__` nor
# the module docstring (it shows the docstring as text). CI builds the docs without running
# the gallery: this runs what differs there, the module's top and its parser, in that way.
_AS_THE_GALLERY_DOES = """
import ast, sys
script = sys.argv[1]
tree = ast.parse(open(script).read())
if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant):
    del tree.body[0]
sys.argv = [script, "--help"]
exec(compile(tree, script, "exec"), {"__name__": "__main__"})
"""


@pytest.mark.parametrize("script", SCRIPTS)
def test_example_starts_as_the_docs_gallery_runs_it(script):
    result = subprocess.run([sys.executable, "-c", _AS_THE_GALLERY_DOES, script], capture_output=True, text=True,
                            cwd=EXAMPLES, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("usage: ") and "--out" in result.stdout


def test_ettr_projection_shape(run_example):
    _, out = run_example("ettr_projection.py")
    ds = xr.open_dataset(out / "ettr_projection.nc", engine="h5netcdf")
    assert set(ds.dims) == {"mitigation", "failure_rate", "n_gpus"}
    assert (ds.ettr_renewal.sel(mitigation="baseline").diff("n_gpus") < 0).all()  # bigger jobs lose more


def test_large_run_rate_has_an_exact_poisson_interval(run_example):
    _, out = run_example("large_run_54_days.py")
    ds = xr.open_dataset(out / "large_run_54_days.nc", engine="h5netcdf")
    low, high = ds.attrs["failure_rate_ci95"]
    rate = ds.attrs["failure_rate_per_node_day"]
    assert rate == pytest.approx(419 / (2048 * 54)) and low < rate < high
    assert ds.ettr.max() > 0.9 > ds.ettr.min()  # the published ETTR > 0.9 is inside the map


def test_example_study_file_is_valid():
    from relmodel._study import load_study

    study = load_study(EXAMPLES / "study.toml")
    assert study.scenario.dims == ("n_gpus", "checkpoint_interval") and study.scenario.size == 60


def test_elastic_regimes_json(run_example):
    import json

    _, out = run_example("elastic_regimes.py")
    doc = json.loads((out / "elastic_regimes.json").read_text())
    assert doc["paper"] == {"completed_ratio": 2.0, "jct_ratio": 10.0}
    rows = doc["regimes"]
    assert len(rows) == 16 and {r["curve"] for r in rows} == {"fitted", "roofline"}
    assert {r["statistical_efficiency"] for r in rows} == {True, False}
    for r in rows:
        assert {"completed_ratio", "jct_ratio", "drop_ratio"} <= set(r)
        if r["width"] == 1:  # no batch range: the elastic policy is the fixed-batch one, job for job
            assert r["completed_ratio"] == r["jct_ratio"] == r["capacity_ratio"] == 1.0
            assert r["completed"]["elastic"] == r["completed"]["fixed-batch"]
        assert r["completed"]["elastic"] + r["dropped"]["elastic"] <= r["submitted"]
        assert r["capacity_ratio"] >= 1.0  # the elastic options include the fixed batch's
    light = {(r["curve"], r["statistical_efficiency"]): r for r in rows if r["width"] == 64 and r["load"] == 0.5}
    assert all(r["jct_ratio"] > 2 for (_, eff), r in light.items() if not eff)  # idle GPUs: elastic spreads out
    for curve in ("fitted", "roofline"):  # larger batches cost samples: elastic's low-load edge shrinks
        assert light[curve, True]["jct_ratio"] < light[curve, False]["jct_ratio"]
    ds = xr.open_dataset(out / "elastic_regimes.nc", engine="h5netcdf")
    assert set(ds.completed.dims) == {"curve", "width", "load", "queue", "admission", "statistical_efficiency",
                                      "seed", "policy"}


def test_pipeline_failures_orders_the_strategies_and_runs_the_traces(run_example):
    result, out = run_example("pipeline_failures.py")
    assert "recycle" in result.stdout and "14-day runs" in result.stdout
    steady = xr.open_dataset(out / "pipeline_failures.nc", engine="h5netcdf")
    assert set(steady.dims) >= {"strategy", "n_failures"}
    frac = steady.fraction_of_ideal
    assert float(frac.sel(strategy="recycle", n_failures=4)) > float(frac.sel(strategy="oobleck", n_failures=4))
    assert float(frac.sel(strategy="oobleck", n_failures=4)) > float(frac.sel(strategy="bamboo", n_failures=4))
    runs = xr.open_dataset(out / "pipeline_failures.nc", engine="h5netcdf", group="runs")
    assert set(runs.dims) == {"strategy", "n_failures", "bound"} and float(runs.time_fraction.sum()) == \
        pytest.approx(1.0)
    if (DATA / "spot-traces" / "p3-trace.csv").exists():
        traces = xr.open_dataset(out / "pipeline_failures.nc", engine="h5netcdf", group="traces")
        assert "p3-trace" in traces.trace.values


def test_elastic_load_sweep_writes_what_it_promises(run_example):
    result, out = run_example("elastic_load_sweep.py")
    sweep = xr.open_dataset(out / "elastic_load_sweep.nc", engine="h5netcdf")
    assert {"policy", "arrival_rate", "seed", "batch_scaling"} <= set(sweep.dims)
    light = sweep.sel(arrival_rate=sweep.arrival_rate.min())
    assert (light.completed == light.submitted).all()  # light load: every policy completes every job
    assert (sweep.completed_ratio >= 1).all() and (sweep.jct_ratio < 1).all()
    fails = xr.open_dataset(out / "elastic_failures.nc", engine="h5netcdf")
    lost = fails.gpu_hours_lost_failures.sum("seed")
    assert (lost.sel(policy="elastic") < lost.sel(policy="fifo")).all()
    if (DATA / "elasticflow" / "195job.csv").is_file():
        trace = xr.open_dataset(out / "elastic_trace_195job.nc", engine="h5netcdf")
        assert trace.sizes["job"] == 195 and (trace.completed.sel(unplaceable="queue") == 195).all()
        assert (out / "elastic_trace_195job.png").is_file()
    else:
        assert "trace replay skipped" in result.stdout
