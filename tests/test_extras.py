"""The core install (no `relmodel[studies]`) plans and simulates; what needs the
extra says which extra to install."""

import subprocess
import sys

import pytest

import relmodel as rm
from relmodel import _extras
from relmodel._study import parse_study
from relmodel import open_study
from relmodel._sweep import run_study, write_zarr

STUDIES_MODULES = ("zarr", "h5netcdf", "h5py", "dask", "distributed", "numcodecs")

# Run in a child interpreter in which the studies extra cannot be imported.
WITHOUT_STUDIES = f"""
import sys
for name in {STUDIES_MODULES!r}:
    sys.modules[name] = None  # as if not installed: import fails, find_spec gives None
from relmodel._cli import main
sys.argv = ["relmodel", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("args", [
    ["plan", "--gpus", "1024", "--work", "2d", "--checkpoint-cost", "5min", "--target-ettr", "0.9", "--n-jobs", "200"],
    ["simulate", "--gpus", "64", "--work", "1d", "--n-jobs", "200"],
])
def test_the_core_install_plans_and_simulates(args, tmp_path):
    # Outside the checkout: the child imports the installed relmodel, as pytest does.
    done = subprocess.run([sys.executable, "-c", WITHOUT_STUDIES, *args], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ETTR" in done.stdout or "ettr" in done.stdout


def test_what_needs_the_studies_extra_names_it(monkeypatch, tmp_path):
    real = _extras.importlib.util.find_spec
    monkeypatch.setattr(_extras.importlib.util, "find_spec",
                        lambda name: None if name in ("zarr", "h5netcdf") else real(name))
    study = parse_study('[fixed]\nfailure_rate = 6.5e-3\nwork = "1d"\ncheckpoint_interval = "1h"\n[sweep]\nn_gpus = [8, 64]\n[run]\nn_jobs = 10\nseed = 0\n')
    ds = rm.simulate(study.scenario, n_jobs=10)
    for call in (lambda: run_study(study, tmp_path / "s.zarr", progress=False),
                 lambda: run_study(study, tmp_path / "s.nc", progress=False),
                 lambda: open_study(tmp_path / "s.nc"), lambda: write_zarr(ds, tmp_path / "d.zarr")):
        with pytest.raises(_extras.MissingExtraError, match=r"pip install 'relmodel\[studies\]'"):
            call()
    assert not (tmp_path / "s.zarr").exists()


@pytest.mark.parametrize("args", [
    ["simulate", "--gpus", "64", "--work", "1d", "--n-jobs", "200", "--out", "OUT/x.zarr"],
    ["simulate", "--gpus", "64", "--work", "1d", "--n-jobs", "200", "--out", "OUT/x.nc"],
    ["sweep", "STUDY", "--out", "OUT/s.zarr"],
    ["pipeline", "--out", "OUT/p.nc"],
])
def test_a_command_that_needs_the_extra_says_so_in_one_line(args, tmp_path):
    study = tmp_path / "study.toml"
    study.write_text('[fixed]\nfailure_rate = 6.5e-3\nwork = "1d"\ncheckpoint_interval = "1h"\n'
                     '[sweep]\nn_gpus = [8, 64]\n[run]\nn_jobs = 10\nseed = 0\n')
    args = [a.replace("OUT", str(tmp_path)).replace("STUDY", str(study)) for a in args]
    done = subprocess.run([sys.executable, "-c", WITHOUT_STUDIES, *args], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # an install to make: the environment's fault, not the flag's
    errors = done.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("Error:") and "relmodel[studies]" in errors[0], done.stderr
    assert not any(tmp_path.glob("*.zarr")) and not any(tmp_path.glob("*.nc"))
