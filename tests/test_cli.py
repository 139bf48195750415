"""The `relmodel` command line."""

import json

import pytest
import xarray as xr
from click.testing import CliRunner

from relmodel.cli import main


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_help_explains_units():
    result = invoke("simulate", "--help")
    assert result.exit_code == 0 and "5min" in result.output and "node-day" in result.output


def test_simulate_sweep_writes_netcdf_and_prints_a_table(tmp_path):
    out = tmp_path / "sweep.nc"
    result = invoke("simulate", "--gpus", "1024,4096", "--checkpoint-interval", "30min,1h", "--n-jobs", "2000",
                    "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "ettr_renewal" in result.output.splitlines()[0]
    ds = xr.open_dataset(out, engine="h5netcdf")
    assert ds.sizes["n_gpus"] == 2 and ds.sizes["checkpoint_interval"] == 2 and "ettr" in ds


def test_simulate_json_is_strict_json():
    result = invoke("simulate", "--gpus", "64", "--weibull-shape", "0.7", "--n-jobs", "500", "--json")
    assert result.exit_code == 0, result.output
    row = json.loads(result.output)["rows"][0]
    assert row["ettr_renewal"] is None and 0 < row["ettr"] <= 1


@pytest.mark.parametrize("args, flag", [
    (["--gpus", "0"], "--gpus"), (["--gpus", "8", "--checkpoint-cost", "5m"], "--checkpoint-cost"),
    (["--gpus", "8", "--checkpoint-interval", "0"], "--checkpoint-interval"),
    (["--gpus", "8", "--failure-rate", "nan"], "--failure-rate"),
    (["--gpus", "8", "--failure-rate", "-1"], "--failure-rate"),
    (["--gpus", "8", "--work", "3 fortnights"], "--work"),
    (["--gpus", "8", "--n-jobs", "0"], "--n-jobs"), (["--gpus", "8", "--out", "x.csv"], "--out"),
    (["--gpus", "8,8"], "--gpus"), (["--gpus", "8", "--threads", "999"], "--threads"),
])
def test_bad_input_is_a_usage_error_naming_the_flag(args, flag):
    result = invoke("simulate", *args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and flag in lines[0]
