"""Studies: study files, chunked stores, Dask, resume after a kill."""

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

import relmodel as rm
from relmodel._cli import main
from relmodel._study import StudyError, parse_study
from relmodel._store import DONE_DIR, done_chunks, write_zarr
from relmodel._study import chunk_regions
from relmodel._sweep import run_study
from relmodel._taxonomy import load as load_taxonomy

STUDY = """\
[fixed]
failure_rate = 6.5e-3
checkpoint_cost = "5min"
restart_cost = "10min"
work = "7d"
[sweep]
n_gpus = [1024, 4096, 16384]
checkpoint_interval = ["30min", "1h", "2h"]
[run]
n_jobs = 20000
seed = 1
chunk_points = 2
"""


def data(ds):
    return ds.load().drop_attrs()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    path = tmp_path_factory.mktemp("ref") / "ref.zarr"
    run_study(parse_study(STUDY), path, progress=False)
    return rm.open_study(path)


def test_store_layout_matches_the_issue(reference):
    assert reference.ettr.dims == ("n_gpus", "checkpoint_interval")
    assert reference.attrs["status"] == "complete" and reference.attrs["seed"] == 1
    assert reference.checkpoint_interval.attrs["units"] == "h"
    direct = rm.simulate(parse_study(STUDY).scenario, n_jobs=20000, seed=1)
    for name in ("ettr", "ettr_se", "wall_quantile", "time_mean", "failures_mean"):
        assert np.array_equal(reference[name].values, direct[name].values)  # same bits as simulate


def test_chunking_and_schedulers_give_identical_stores(tmp_path, reference):
    study = parse_study(STUDY)
    run_study(dataclasses.replace(study, chunk_points=9), tmp_path / "one_chunk.zarr", progress=False)
    xr.testing.assert_identical(data(rm.open_study(tmp_path / "one_chunk.zarr")), data(reference))
    run_study(study, tmp_path / "dask.zarr", scheduler="dask-local", n_workers=2, progress=False)
    xr.testing.assert_identical(data(rm.open_study(tmp_path / "dask.zarr")), data(reference))
    run_study(study, tmp_path / "study.nc", progress=False)
    xr.testing.assert_identical(data(rm.open_study(tmp_path / "study.nc")), data(reference))
    assert not (tmp_path / "study.nc.partial.zarr").exists()


def test_every_backend_gives_the_same_store_and_auto_resumes_a_numba_study(tmp_path, reference):
    """A study runs on "auto" by default (Cython while Numba compiles on a cold cache); pinned to
    either kernel it writes the same store, and "auto" keeps a Numba study's fingerprint."""
    study = parse_study(STUDY)
    assert study.backend == "auto" and parse_study(STUDY + 'backend = "cython"\n').backend == "cython"
    for backend in ("numba", "cython"):
        run_study(dataclasses.replace(study, backend=backend), tmp_path / f"{backend}.zarr", progress=False)
        xr.testing.assert_identical(data(rm.open_study(tmp_path / f"{backend}.zarr")), data(reference))
    assert dataclasses.replace(study, backend="numba").fingerprint() == study.fingerprint()
    with pytest.raises(StudyError, match="backend"):
        parse_study(STUDY + 'backend = "gpu"\n')


def test_a_killed_sweep_resumes_to_the_same_store(tmp_path, reference):
    slow = STUDY.replace("chunk_points = 2", "chunk_points = 1")  # 9 chunks, one point each
    study_file = tmp_path / "study.toml"
    study_file.write_text(slow)
    out = tmp_path / "killed.zarr"
    # Outside the checkout: the child imports the installed relmodel, as pytest does.
    command = [sys.executable, "-m", "relmodel._cli", "sweep", str(study_file), "--out", str(out), "--quiet"]
    proc = subprocess.Popen(command, env={**os.environ, "NUMBA_NUM_THREADS": "1"}, cwd=tmp_path)
    markers = out / DONE_DIR
    deadline = time.time() + 600  # 10x a cold-cache run on a busy machine: a hang, not a slow start
    while time.time() < deadline and proc.poll() is None:
        if markers.exists() and len(done_chunks(out)) >= 2:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n_done = len(done_chunks(out))
    assert 0 < n_done < 9, f"the kill should land part-way ({n_done} of 9 chunks done)"
    with pytest.warns(RuntimeWarning, match="not finished"):
        rm.open_study(out)
    result = CliRunner().invoke(main, ["sweep", str(study_file), "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    xr.testing.assert_identical(data(rm.open_study(out)), data(reference))


def test_chunks_without_a_marker_are_recomputed(tmp_path, reference):
    study = parse_study(STUDY)
    out = tmp_path / "s.zarr"
    run_study(study, out, progress=False)
    # A partly written chunk: garbage data and no marker.
    chunks = tuple(rm.open_study(out).attrs["chunks"])
    (a, b), (c, d) = next(chunk_regions(study.scenario.shape, chunks))
    xr.Dataset({"ettr": (("n_gpus", "checkpoint_interval"), np.full((b - a, d - c), -1.0))}).to_zarr(
        out, region={"n_gpus": slice(a, b), "checkpoint_interval": slice(c, d)}, consolidated=False)
    shutil.rmtree(out / DONE_DIR / "chunk-0-0")
    with pytest.warns(RuntimeWarning, match="1 of 6 chunks missing"):
        assert (rm.open_study(out).ettr == -1).sum() == (b - a) * (d - c)
    run_study(study, out, progress=False)
    xr.testing.assert_identical(data(rm.open_study(out)), data(reference))


def test_another_study_is_refused(tmp_path):
    out = tmp_path / "s.zarr"
    run_study(parse_study(STUDY), out, progress=False)
    with pytest.raises(StudyError, match="holds another study"):
        run_study(parse_study(STUDY.replace("seed = 1", "seed = 2")), out, progress=False)
    with pytest.raises(StudyError, match="scheduler"):
        run_study(parse_study(STUDY), tmp_path / "new.zarr", scheduler="slurm", progress=False)
    assert not (tmp_path / "new.zarr").exists()
    with pytest.raises(StudyError, match="not a relmodel study store"):
        (tmp_path / "junk.zarr").mkdir()
        run_study(parse_study(STUDY), tmp_path / "junk.zarr", progress=False)


@pytest.mark.parametrize("run, parameter", [({"n_workers": 0}, "n_workers"), ({"chunk_points": 0}, "chunk_points")])
def test_a_zero_given_in_python_is_refused_not_replaced_by_a_default(tmp_path, run, parameter):
    """n_workers=0 ran one worker per core, chunk_points=0 the default chunking."""
    study = parse_study(STUDY.replace("n_jobs = 20000", "n_jobs = 100"))
    study = dataclasses.replace(study, **{k: v for k, v in run.items() if k == "chunk_points"})
    with pytest.raises(rm.ScenarioError) as info:
        run_study(study, tmp_path / "s.zarr", scheduler="dask-local" if "n_workers" in run else "local",
                  progress=False, **{k: v for k, v in run.items() if k == "n_workers"})
    assert info.value.parameter == parameter and not (tmp_path / "s.zarr").exists()


def test_a_store_from_another_random_stream_is_not_resumed(tmp_path):
    """A store begun by a relmodel with another stream (an upgrade mid-study) is
    refused by name: its finished chunks and new ones would not be one run's bits."""
    import zarr

    out = tmp_path / "s.zarr"
    study = parse_study(STUDY)
    run_study(study, out, progress=False)
    group = zarr.open_group(out, mode="r+", use_consolidated=False)
    group.attrs.update(rng="relmodel-words-1: an older stream", relmodel_version="0.1.0")
    with pytest.raises(StudyError, match="relmodel 0.1.0 with the random stream 'relmodel-words-1'"):
        run_study(study, out, progress=False)


def test_a_store_with_other_time_components_is_not_resumed(tmp_path, monkeypatch):
    """A store begun before `persist_wait` joined time_mean (5 components) is refused by
    name: new chunks would not line up with the ones written."""
    from relmodel import _sweep as sweep

    out = tmp_path / "s.zarr"
    study = parse_study(STUDY)
    with monkeypatch.context() as patch:
        patch.setattr(sweep, "COMPONENTS", sweep.COMPONENTS[:5])
        sweep.open_or_create(study, out, STUDY)  # the template of a relmodel before checkpoint levels
    with pytest.raises(StudyError, match="whose time_mean has the components"):
        run_study(study, out, progress=False)


def test_compare_and_figures_work_on_a_study(tmp_path, reference):
    cmp = rm.compare(reference)
    assert np.all(np.abs(cmp.z_renewal) < 4)
    study_file = tmp_path / "study.toml"
    study_file.write_text(STUDY)
    png = tmp_path / "s.png"
    result = CliRunner().invoke(main, ["sweep", str(study_file), "--out", str(tmp_path / "s.zarr"), "--quiet",
                                       "--plot", str(png)])
    assert result.exit_code == 0, result.output
    assert png.stat().st_size > 10_000


def test_a_sweep_run_again_on_its_finished_store_says_it_computed_nothing(tmp_path):
    """Re-running a finished sweep printed 'wrote s.zarr' though it wrote nothing."""
    study_file = tmp_path / "study.toml"
    study_file.write_text(STUDY)
    out = tmp_path / "s.zarr"
    first = CliRunner().invoke(main, ["sweep", str(study_file), "--out", str(out)])
    assert first.exit_code == 0 and first.output.strip().splitlines()[-1] == f"wrote {out}", first.output
    # Its result in a line: the lowest and highest ETTR of the store and where they are.
    with rm.open_study(out) as ds:
        ds = ds.load()
        flat = ds.ettr.stack(point=["n_gpus", "checkpoint_interval"])
        low, high = flat[int(np.argmin(flat.values))], flat[int(np.argmax(flat.values))]
        typed = {0.5: "30min", 1.0: "1h", 2.0: "2h"}  # the study's intervals as its file types them
        expected = (f"ETTR from {float(low):.4f} at n_gpus={int(low.n_gpus)}, "
                    f"checkpoint_interval={typed[float(low.checkpoint_interval)]} to {float(high):.4f} at "
                    f"n_gpus={int(high.n_gpus)}, checkpoint_interval={typed[float(high.checkpoint_interval)]} "
                    "over 9 points")
    assert first.output.strip().splitlines()[-2] == expected
    again = CliRunner().invoke(main, ["sweep", str(study_file), "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert again.output.strip().splitlines()[-1] == f"{out} was finished: every chunk verified, none computed"
    report = {}
    run_study(parse_study(STUDY), out, progress=False, report=report)
    assert report == {"computed_chunks": 0}


@pytest.mark.parametrize("change, message", [
    (("checkpoint_cost = \"5min\"", "checkpoint_cost = \"5m\""), "line 3: [fixed] checkpoint_cost"),
    (("seed = 1", "seed = -1"), "line 11: [run] seed"),
    (("seed = 1", "seed = 1\nthreads = 2"), "line 12: [run] threads"),
    (("[run]", "[runs]"), "line 9: unknown section"),
    (("n_gpus = [1024, 4096, 16384]", "n_gpus = [1024, 0]"), "line 7: [sweep] n_gpus"),
    (("n_gpus = [1024, 4096, 16384]", "n_gpu = [1024]"), "line 7: [sweep] n_gpu"),
    (("checkpoint_interval = [\"30min\", \"1h\", \"2h\"]",
      "checkpoint_interval = { start = \"1h\", stop = \"0s\", num = 3, scale = \"log\" }"),
     "line 8: [sweep] checkpoint_interval"),
    (("work = \"7d\"\n", ""), "missing scenario field(s) work"),
    (("n_jobs = 20000", "n_jobs = 2e4"), "line 10: [run] n_jobs"),
    (("seed = 1", "seed = "), "not valid TOML"),
    (("n_gpus = [1024, 4096, 16384]", "n_gpus = { start = 8, stop = 1e30, num = 4 }"),
     "[sweep] n_gpus: must be an integer in [1, 2**32] (got 333333333333333316505293553664)"),
    (("n_gpus = [1024, 4096, 16384]", "n_gpus = { start = nan, stop = 64, num = 4 }"),
     "[sweep] n_gpus: start and stop must be finite"),
    (("n_gpus = [1024, 4096, 16384]", "n_gpus = { start = 8, stop = 64, num = 10000000000 }"),
     "[sweep] n_gpus: num must be at most 2**20"),
    # A value twice, or a range that rounds to fewer counts than asked, was collapsed without a word
    (("n_gpus = [1024, 4096, 16384]", "n_gpus = [1024, 4096, 1024]"),
     "line 7: [sweep] n_gpus: 1024 is given twice"),
    (("n_gpus = [1024, 4096, 16384]", "n_gpus = { start = 512, stop = 514, num = 10 }"),
     "line 7: [sweep] n_gpus: num = 10 rounds to 3 distinct counts from 512 to 514: ask for num = 3 or fewer"),
    # A duration without its unit is refused, as on the command line, never read as hours
    (("checkpoint_cost = \"5min\"", "checkpoint_cost = 300"), "line 3: [fixed] checkpoint_cost: 300 has no unit"),
    (("checkpoint_cost = \"5min\"", "checkpoint_cost = \"300\""), "line 3: [fixed] checkpoint_cost: 300 has no unit"),
    (("work = \"7d\"", "work = \"7d\"\nfast_checkpoints = [{interval = \"10min\", cost = 5, restart = \"3min\", "
                       "survives = 0.85}]"), "line 6: [fixed] fast_checkpoints: fast_checkpoints[0].cost: 5 has no unit"),
    (("checkpoint_interval = [\"30min\", \"1h\", \"2h\"]", "checkpoint_interval = [\"30min\", 1.5]"),
     "line 8: [sweep] checkpoint_interval: 1.5 has no unit"),
    (("checkpoint_interval = [\"30min\", \"1h\", \"2h\"]", "checkpoint_interval = { start = 1, stop = \"4h\", num = 3 }"),
     "line 8: [sweep] checkpoint_interval: 1 has no unit"),
])
def test_study_errors_name_the_key_and_line(change, message):
    with pytest.raises(StudyError) as info:
        parse_study(STUDY.replace(*change), name="study.toml")
    assert message in str(info.value)


def test_a_study_reads_a_bare_zero_duration_and_durations_with_units():
    study = parse_study(STUDY.replace("checkpoint_cost = \"5min\"", "checkpoint_cost = 0\nqueue_wait = \"0\""))
    assert study.scenario.checkpoint_cost == 0.0 and study.scenario.queue_wait == 0.0
    assert study.scenario.restart_cost == pytest.approx(1 / 6) and study.scenario.work == 168.0


def test_ranges_make_axes():
    study = parse_study(STUDY.replace(
        "checkpoint_interval = [\"30min\", \"1h\", \"2h\"]",
        "checkpoint_interval = { start = \"15min\", stop = \"4h\", num = 5, scale = \"log\" }").replace(
        "n_gpus = [1024, 4096, 16384]", "n_gpus = { start = 8, stop = 131072, num = 15, scale = \"log\" }"))
    np.testing.assert_allclose(study.sweep["checkpoint_interval"], [0.25, 0.5, 1, 2, 4])
    assert study.sweep["n_gpus"] == [2**k for k in range(3, 18)]


def test_cli_sweep_bad_input_is_one_line():
    result = CliRunner().invoke(main, ["sweep", "no-such-study.toml", "--out", "x.zarr"])
    assert result.exit_code == 2 and result.output.strip().count("\n") == 0 and "no-such-study.toml" in result.output


def test_stores_are_written_and_opened_without_a_warning(tmp_path):
    # zarr-v3 warns on every string coordinate and on consolidated metadata, and a
    # plain open_zarr warns on a store without it: the stores avoid all three.
    study = parse_study(STUDY.replace("n_jobs = 20000", "n_jobs = 200"))
    taxonomy = rm.simulate(rm.Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h", work="1d",
                                       failure_model=rm.TaxonomyMixture.from_taxonomy(load_taxonomy("meta-2024"), 6.5e-3)),
                          n_jobs=200)
    assert taxonomy.category.dtype.kind == "U"  # a string coordinate, the case zarr-v3 warns on
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_study(study, tmp_path / "study.zarr", progress=False)
        xr.open_zarr(tmp_path / "study.zarr").load()
        rm.open_study(tmp_path / "study.zarr").load()
        write_zarr(taxonomy, tmp_path / "taxonomy.zarr")
        reopened = xr.open_zarr(tmp_path / "taxonomy.zarr").load()
    assert [str(w.message) for w in caught] == []
    xr.testing.assert_identical(reopened, taxonomy)
