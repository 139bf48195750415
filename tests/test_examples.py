"""Every example runs (quick mode) and writes what it promises."""

import subprocess
import sys
from pathlib import Path

import xarray as xr

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_ettr_projection(tmp_path):
    subprocess.run([sys.executable, str(EXAMPLES / "ettr_projection.py"), "--quick", "--out", str(tmp_path)],
                   check=True, capture_output=True, text=True, timeout=600)
    ds = xr.open_dataset(tmp_path / "ettr_projection.nc", engine="h5netcdf")
    assert set(ds.dims) == {"mitigation", "failure_rate", "n_gpus"}
    assert (ds.ettr_renewal.sel(mitigation="baseline").diff("n_gpus") < 0).all()  # bigger jobs lose more
    assert (tmp_path / "ettr_projection.png").stat().st_size > 10_000


def test_example_study_file_is_valid():
    from relmodel.study import load_study

    study = load_study(EXAMPLES / "study.toml")
    assert study.scenario.dims == ("n_gpus", "checkpoint_interval") and study.scenario.size == 60
