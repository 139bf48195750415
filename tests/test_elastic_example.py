"""examples/elastic_load_sweep.py runs (quick mode) and writes what it promises."""

import subprocess
import sys
from pathlib import Path

import xarray as xr

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "data" / "elasticflow"


def test_elastic_load_sweep(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "elastic_load_sweep.py"), "--quick",
                             "--out", str(tmp_path)], check=True, capture_output=True, text=True, timeout=600)
    sweep = xr.open_dataset(tmp_path / "elastic_load_sweep.nc", engine="h5netcdf")
    assert {"policy", "arrival_rate", "seed", "batch_scaling"} <= set(sweep.dims)
    light = sweep.sel(arrival_rate=sweep.arrival_rate.min())
    assert (light.completed == light.submitted).all()  # light load: every policy completes every job
    assert (sweep.completed_ratio >= 1).all() and (sweep.jct_ratio < 1).all()
    fails = xr.open_dataset(tmp_path / "elastic_failures.nc", engine="h5netcdf")
    lost = fails.gpu_hours_lost_failures.sum("seed")
    assert (lost.sel(policy="elastic") < lost.sel(policy="fifo")).all()
    assert (tmp_path / "elastic_load_sweep.png").stat().st_size > 10_000
    if (TRACES / "195job.csv").is_file():
        trace = xr.open_dataset(tmp_path / "elastic_trace_195job.nc", engine="h5netcdf")
        assert trace.sizes["job"] == 195 and (trace.completed.sel(unplaceable="queue") == 195).all()
        assert (tmp_path / "elastic_trace_195job.png").is_file()
    else:
        assert "trace replay skipped" in result.stdout
