"""Study stores never mix, lose or silently corrupt data: real processes, real
signals. Every case ends with the store bit-identical to an uninterrupted run,
or in a one-line refusal that leaves the first study's data intact."""

import errno
import os
import signal
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
import xarray as xr
import zarr

import relmodel as rm
from relmodel._store import DONE_DIR, SEAL_SIZE, SEAL_TAG, done_chunks, lock_path, netcdf_seal_problem
from relmodel._study import StudyError, parse_study
from relmodel._sweep import run_study

# Nine chunks of one point each: a run takes a few seconds, long enough to land
# signals and rivals in the middle of it.
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
seed = {seed}
chunk_points = 1
"""

# A child that runs `relmodel sweep` and kills itself (SIGKILL, as `kill -9`) at a
# named point: when `function` of `module` is called for the `nth` time with an
# argument that the regular expression `match` finds, just before or after the call.
KILLING_CHILD = """
import importlib, os, re, signal, sys
module_name, attribute, when, nth, match = sys.argv[1:6]
owner = importlib.import_module(module_name)
for part in attribute.split(".")[:-1]:
    owner = getattr(owner, part)
name = attribute.split(".")[-1]
real, calls = getattr(owner, name), [0]

def killing(*args, **kwargs):
    hit = any(re.search(match, str(arg)) for arg in args) if match else True
    if hit:
        calls[0] += 1
    if hit and calls[0] == int(nth) and when == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    result = real(*args, **kwargs)
    if hit and calls[0] == int(nth) and when == "after":
        os.kill(os.getpid(), signal.SIGKILL)
    return result

setattr(owner, name, killing)
from relmodel._cli import main
main(sys.argv[6:])
"""

# (module, function, before/after, nth call, an argument containing): the kill points.
KILL_POINTS = {
    "template written to its hidden folder, not yet renamed into place":
        ("relmodel._store", "rename", "before", 1, r"\.creating-\d+$"),
    "template's arrays written, marker folder not yet made":
        ("xarray", "Dataset.to_zarr", "after", 1, ""),
    "store created, no chunk computed": ("relmodel._sweep", "compute_chunk", "before", 1, ""),
    # 11 outputs a chunk: the 27th write into the store is the third chunk's sixth array.
    "halfway through a chunk's arrays": ("zarr", "Array.__setitem__", "after", 27, r"/s\.zarr/"),
    "a chunk's data written, its marker not made": ("relmodel._store", "ChunkWriter.mark_done", "before", 3, ""),
    "a marker's checksum written, the marker not renamed into place":
        ("relmodel._store", "rename", "before", 2, r"\.zgroup\.partial$"),
    "every chunk written, status not set": ("relmodel._store", "set_status", "before", 1, "^complete$"),
    "status set, metadata not consolidated": ("zarr", "consolidate_metadata", "before", 1, ""),
}
NC_KILL_POINTS = {
    ".nc written under its temporary name, not renamed":
        ("relmodel._store", "rename", "before", 1, r"\.s\.nc\.creating-\d+$"),
    ".nc renamed into place, working store not removed": ("shutil", "rmtree", "before", 1, r"s\.nc\.partial\.zarr$"),
}


def _status(out):
    return zarr.open_group(out, mode="r", use_consolidated=False).attrs["status"]


# What each kill point leaves on disk: proof that the kill landed where its name says.
LEFT_BEHIND = {
    "template written to its hidden folder, not yet renamed into place":
        lambda out: not out.exists() and any((c / DONE_DIR).exists() for c in out.parent.glob(".s.zarr.creating-*")),
    "template's arrays written, marker folder not yet made":
        lambda out: not out.exists() and any(not (c / DONE_DIR).exists() for c in out.parent.glob(".s.zarr.creating-*")),
    "store created, no chunk computed": lambda out: out.exists() and not done_chunks(out),
    "halfway through a chunk's arrays": lambda out: len(done_chunks(out)) == 2,
    "a chunk's data written, its marker not made": lambda out: len(done_chunks(out)) == 2,
    "a marker's checksum written, the marker not renamed into place":
        lambda out: len(done_chunks(out)) == 1 and any((out / DONE_DIR).glob("*/.zgroup.partial")),
    "every chunk written, status not set": lambda out: len(done_chunks(out)) == 9 and _status(out) == "running",
    "status set, metadata not consolidated":
        lambda out: _status(out) == "complete" and not (out / ".zmetadata").exists(),
    ".nc written under its temporary name, not renamed":
        lambda out: not out.exists() and any(out.parent.glob(".s.nc.creating-*")),
    ".nc renamed into place, working store not removed":
        lambda out: out.exists() and out.with_name("s.nc.partial.zarr").exists(),
}


def data(ds):
    return ds.load().drop_attrs()


def write_study(folder, seed=1):
    path = folder / f"study-{seed}.toml"
    path.write_text(STUDY.format(seed=seed))
    return path


def sweep_command(study_file, out):
    return [sys.executable, "-m", "relmodel._cli", "sweep", str(study_file), "--out", str(out), "--quiet"]


def run_cli(args, cwd):
    # Outside the checkout: the child imports the installed relmodel, as pytest does.
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=600,
                          env={**os.environ, "NUMBA_NUM_THREADS": "1"})


def one_line_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    """Uninterrupted runs of the study, seeds 1 and 2, in this process."""
    folder = tmp_path_factory.mktemp("references")
    out = {}
    for seed in (1, 2):
        path = folder / f"seed-{seed}.zarr"
        run_study(parse_study(STUDY.format(seed=seed)), path, progress=False)
        out[seed] = data(rm.open_study(path))
    return out


# ---- one writer -----------------------------------------------------------------------

@pytest.mark.parametrize("offset", [0.1, 0.4, 1.0])
def test_two_studies_started_apart_on_one_store(tmp_path, references, offset):
    files = {seed: write_study(tmp_path, seed) for seed in (1, 2)}
    out = tmp_path / "shared.zarr"
    env = {**os.environ, "NUMBA_NUM_THREADS": "1"}
    first = subprocess.Popen(sweep_command(files[1], out), stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    time.sleep(offset)
    second = subprocess.Popen(sweep_command(files[2], out), stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    results = {1: (first.wait(timeout=600), first.stderr.read()), 2: (second.wait(timeout=600), second.stderr.read())}
    winners = [seed for seed, (code, _) in results.items() if code == 0]
    assert len(winners) == 1, results  # whichever took the lock first; never both
    loser = 3 - winners[0]
    code, stderr = results[loser]
    assert code != 0
    line = one_line_error(stderr)
    fingerprints = {seed: parse_study(STUDY.format(seed=seed)).fingerprint() for seed in (1, 2)}
    assert str(out) in line and fingerprints[1] in line and fingerprints[2] in line, line
    xr.testing.assert_identical(data(rm.open_study(out)), references[winners[0]])


# A child that runs `relmodel sweep` but, before its first chunk (lock held, store
# created), waits until the file named first exists: a rival meets it mid-run for sure.
PAUSING_CHILD = """
import os, sys, time
import relmodel._sweep as sweep
release, real = sys.argv[1], sweep.compute_chunk

def waiting(*args, **kwargs):
    while not os.path.exists(release):
        time.sleep(0.01)
    return real(*args, **kwargs)

sweep.compute_chunk = waiting
from relmodel._cli import main
main(sys.argv[2:])
"""


def test_the_same_study_twice_at_once_writes_once(tmp_path, references):
    study_file = write_study(tmp_path)
    out = tmp_path / "s.zarr"
    release = tmp_path / "release"
    first = subprocess.Popen([sys.executable, "-c", PAUSING_CHILD, str(release), *sweep_command(study_file, out)[3:]],
                             stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                             env={**os.environ, "NUMBA_NUM_THREADS": "1"})
    holder = lock_path(out).with_name(lock_path(out).name + ".json")
    while not holder.exists() and first.poll() is None:
        time.sleep(0.02)
    second = run_cli(sweep_command(study_file, out), tmp_path)
    release.touch()
    assert first.wait(timeout=600) == 0, first.stderr.read()
    assert second.returncode != 0
    assert "another run of this study" in one_line_error(second.stderr)
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])


def test_two_threads_one_store(tmp_path, references, monkeypatch):
    import relmodel._sweep as sweep

    study = parse_study(STUDY.format(seed=1))
    out = tmp_path / "s.zarr"
    started, release, real = threading.Event(), threading.Event(), sweep.compute_chunk

    def waiting(*args, **kwargs):  # the first thread holds the lock, mid-run, until released
        started.set()
        release.wait()
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep, "compute_chunk", waiting)
    writer = threading.Thread(target=lambda: run_study(study, out, progress=False))
    writer.start()
    try:
        assert started.wait(timeout=600), "the first thread never reached its first chunk"
        with pytest.raises(StudyError, match="another run of this study"):
            run_study(study, out, progress=False)
    finally:
        release.set()
        writer.join()
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])


# ---- kills --------------------------------------------------------------------------

def kill_at(folder, points, point, name):
    """Run the study into `folder / name` in a child that dies at `point`; check what it left."""
    study_file, out = write_study(folder), folder / name
    module, function, when, nth, match = points[point]
    killed = run_cli([sys.executable, "-c", KILLING_CHILD, module, function, when, str(nth), match,
                      *sweep_command(study_file, out)[3:]], folder)
    assert killed.returncode == -signal.SIGKILL, (point, killed.returncode, killed.stderr[-2000:])
    assert LEFT_BEHIND[point](out)
    return study_file, out


@pytest.mark.parametrize("point", sorted(KILL_POINTS))
def test_a_kill_at_any_point_resumes_to_the_same_store(tmp_path, references, point):
    study_file, out = kill_at(tmp_path, KILL_POINTS, point, "s.zarr")
    resumed = run_cli(sweep_command(study_file, out), tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])
    assert rm.verify_study(out) == {}
    assert not list(tmp_path.glob(".s.zarr.creating-*"))  # no leftover of a killed creation


@pytest.mark.parametrize("point", sorted(NC_KILL_POINTS))
def test_a_kill_while_writing_netcdf_resumes_or_refuses(tmp_path, references, point):
    study_file, out = kill_at(tmp_path, NC_KILL_POINTS, point, "s.nc")
    again = run_cli(sweep_command(study_file, out), tmp_path)
    if out.exists() and again.returncode != 0:  # renamed before the kill: finished, and refused
        assert "exists" in one_line_error(again.stderr)
    else:
        assert again.returncode == 0, again.stderr
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])
    assert not (tmp_path / "s.nc.partial.zarr").exists() and not list(tmp_path.glob(".s.nc.creating-*"))


@pytest.mark.parametrize("chunks_done", [1, 4, 8])
def test_a_kill_in_the_middle_of_a_chunk_resumes_to_the_same_store(tmp_path, references, chunks_done):
    # Killed from outside once `chunks_done` of the nine chunks are done: wherever the
    # next chunk's work has got to (no wall-clock bound: the count decides).
    study_file = write_study(tmp_path)
    out = tmp_path / "s.zarr"
    child = subprocess.Popen(sweep_command(study_file, out), cwd=tmp_path,
                             env={**os.environ, "NUMBA_NUM_THREADS": "1"})
    while child.poll() is None and len(done_chunks(out)) < chunks_done:
        time.sleep(0.005)
    child.send_signal(signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL  # killed, not finished
    assert chunks_done <= len(done_chunks(out)) < 9
    resumed = run_cli(sweep_command(study_file, out), tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])


# ---- verified chunks ------------------------------------------------------------------

def test_deleted_truncated_and_altered_chunks_are_found_and_recomputed(tmp_path, references):
    study_file = write_study(tmp_path)
    out = tmp_path / "s.zarr"
    assert run_cli(sweep_command(study_file, out), tmp_path).returncode == 0
    (out / "ettr" / "0.0").unlink()  # deleted
    truncated = out / "wall_quantile" / "1.1.0"
    truncated.write_bytes(truncated.read_bytes()[:10])
    group = zarr.open_group(out, mode="r+", use_consolidated=False)
    group["ettr_se"][2, 2] = 0.5  # altered: a valid value, not the computed one
    (out / DONE_DIR / "chunk-2-0" / ".zattrs").write_text("{")  # a garbled marker: the chunk is not done
    problems = rm.verify_study(out)
    assert set(problems) == {"chunk-0-0", "chunk-1-1", "chunk-2-2", "chunk-2-0"}, problems
    assert problems["chunk-1-1"].startswith("unreadable") and problems["chunk-2-2"].startswith("altered")
    assert problems["chunk-2-0"] == "not computed"
    checked = run_cli([sys.executable, "-m", "relmodel._cli", "sweep", "--verify", str(out)], tmp_path)
    assert checked.returncode == 1 and checked.stdout.count("chunk-") == 4
    assert "4 chunk(s) not whole" in one_line_error(checked.stderr)
    with pytest.warns(RuntimeWarning, match="3 finished chunk"):
        run_study(parse_study(STUDY.format(seed=1)), out, progress=False)
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])
    assert rm.verify_study(out) == {}


def test_a_netcdf_study_is_checked_by_its_seal_and_by_its_hdf5_checksums(tmp_path, references):
    """The seal (the file's SHA-256 at its end) refuses a flipped value before HDF5 reads it; a
    file without one (another writer's, or an earlier relmodel's) is still checked by HDF5."""
    out = tmp_path / "s.nc"
    run_study(parse_study(STUDY.format(seed=1)), out, progress=False)
    assert rm.verify_study(out) == {}
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])
    raw = bytearray(out.read_bytes())
    assert raw[-SEAL_SIZE:].startswith(SEAL_TAG)
    with xr.open_dataset(out) as plain:  # any netCDF reader ignores the seal, whatever its engine
        xr.testing.assert_identical(data(plain), references[1])
    values = np.ascontiguousarray(references[1].ettr.values).tobytes()
    at = raw.find(values[:16])  # the ettr values, stored uncompressed: flip one bit of one
    assert at > 0
    raw[at + 3] ^= 1
    out.write_bytes(bytes(raw))
    assert rm.verify_study(out) == {"file": netcdf_seal_problem(out)} and "SHA-256" in rm.verify_study(out)["file"]
    with pytest.raises(StudyError, match="do not match the SHA-256 written at its end"):
        rm.open_study(out)
    out.write_bytes(bytes(raw[:-SEAL_SIZE]))
    assert netcdf_seal_problem(out) is None
    problems = rm.verify_study(out)
    assert list(problems) == ["file"] and problems["file"].startswith("unreadable: ettr")


# ---- every writer takes the lock -----------------------------------------------------------

def test_a_command_writing_a_study_being_run_is_refused_and_the_study_untouched(tmp_path, references):
    """`relmodel simulate --out s.zarr` during a sweep on s.zarr exited 0 and mixed the stores."""
    from click.testing import CliRunner

    from relmodel._cli import main
    from relmodel._store import exclusive

    out = finished_copy(tmp_path, "busy")
    for spelling in (out, tmp_path / "x" / ".." / out.name):
        (tmp_path / "x").mkdir(exist_ok=True)
        with exclusive(out, "83b73dd716219be6", "study.toml"):
            result = CliRunner().invoke(main, ["simulate", "--gpus", "8", "--n-jobs", "100", "--out", str(spelling),
                                               "--overwrite"])
        assert result.exit_code == 1 and "is being written by another run (study.toml" in result.output
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])


def test_a_netcdf_study_and_its_working_store_are_one_output(tmp_path):
    """`--out X.nc` and `--out X.nc.partial.zarr` started together both ran."""
    from relmodel._store import exclusive, lock_path

    nc = tmp_path / "X.nc"
    assert lock_path(nc.with_name("X.nc.partial.zarr")) == lock_path(nc)
    link = tmp_path / "link.nc"
    link.symlink_to(nc)
    assert lock_path(link) == lock_path(nc)
    with exclusive(nc, "aaaa", "a.toml"):
        with pytest.raises(StudyError, match="is being written by another run"):
            with exclusive(nc.with_name("X.nc.partial.zarr"), "bbbb", "b.toml"):
                pass


@pytest.mark.parametrize("command", [
    ["simulate", "--gpus", "8", "--n-jobs", "100"],
    ["pipeline", "--stages", "2", "--replicas", "2", "--microbatches", "2"],
])
def test_no_command_replaces_a_finished_study_without_overwrite(tmp_path, references, command):
    """`fit`, `simulate`, `cluster` and `pipeline --out finished.nc` replaced a study silently."""
    from click.testing import CliRunner

    from relmodel._cli import main

    out = finished_copy(tmp_path, "kept", ".nc")
    refused = CliRunner().invoke(main, [*command, "--out", str(out)])
    assert refused.exit_code == 2 and "holds a relmodel study; it was not replaced" in refused.output
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])
    replaced = CliRunner().invoke(main, [*command, "--out", str(out), "--overwrite"])
    assert replaced.exit_code == 0, replaced.output
    with pytest.raises(StudyError, match="not a relmodel study file"):
        rm.open_study(out)


# ---- stores that heal ---------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["markers folder", "array metadata", "garbled consolidated", "no consolidated"])
def test_a_damaged_store_is_rebuilt_by_the_next_run_to_the_same_bits(tmp_path, references, damage):
    """Every resume exited 70 before: KeyError 'ettr' (array metadata), FileNotFoundError
    (markers folder), JSONDecodeError (a garbled .zmetadata, which --verify called sound)."""
    import shutil

    out = finished_copy(tmp_path, "damaged")
    if damage == "markers folder":
        shutil.rmtree(out / DONE_DIR)
    elif damage == "array metadata":
        (out / "ettr" / ".zarray").unlink()
    elif damage == "garbled consolidated":
        (out / ".zmetadata").write_text("{garbled")
    else:
        (out / ".zmetadata").unlink()
    assert rm.verify_study(out) != {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # each names what it rebuilds or recomputes
        run_study(parse_study(STUDY.format(seed=1)), out, progress=False)
    assert rm.verify_study(out) == {}
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])


def test_a_netcdf_study_killed_before_its_metadata_was_consolidated_finishes(tmp_path, references):
    """Killed between "complete" and the consolidation, every resume exited 70 (".zmetadata")."""
    working = finished_copy(tmp_path, "X.nc.partial")
    (working / ".zmetadata").unlink()
    out = tmp_path / "X.nc"
    run_study(parse_study(STUDY.format(seed=1)), out, progress=False)
    assert not working.exists() and rm.verify_study(out) == {}
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])


def test_a_garbled_consolidated_metadata_reads_with_a_warning(tmp_path, references):
    out = finished_copy(tmp_path, "garbled")
    (out / ".zmetadata").write_text("{garbled")
    with pytest.warns(RuntimeWarning, match="consolidated metadata"):
        xr.testing.assert_identical(data(rm.open_study(out)), references[1])


# ---- checked reads -----------------------------------------------------------------------

def finished_copy(tmp_path, name, suffix=".zarr"):
    out = tmp_path / f"{name}{suffix}"
    run_study(parse_study(STUDY.format(seed=1)), out, progress=False)
    return out


def test_open_study_refuses_an_altered_or_deleted_chunk_and_can_read_unchecked(tmp_path, references):
    out = finished_copy(tmp_path, "altered")
    group = zarr.open_group(out, mode="r+", use_consolidated=False)
    group["ettr"][1, 0] = 0.5  # a valid value, not the computed one: read silently before
    with pytest.raises(StudyError, match="chunk-1-0: altered.*run its sweep again"):
        rm.open_study(out)
    assert float(rm.open_study(out, verify=False).ettr[1, 0]) == 0.5
    (out / "ettr" / "0.0").unlink()  # read as NaN before
    with pytest.raises(StudyError, match="chunk-0-0"):
        rm.open_study(out)


@pytest.mark.parametrize("damage", ["altered", "deleted"])
def test_damaged_coordinates_are_found_on_read_and_by_verify(tmp_path, references, damage):
    out = finished_copy(tmp_path, damage)
    if damage == "altered":
        group = zarr.open_group(out, mode="r+", use_consolidated=False)
        values = group["n_gpus"][:]
        values[2] = 0  # n_gpus=[1024 4096 0]: a change, never "every chunk matches"
        group["n_gpus"][:] = values
    else:
        for chunk in (out / "checkpoint_interval").glob("[0-9]*"):
            chunk.unlink()  # read as NaN, "every chunk matches"
    assert list(rm.verify_study(out)) == ["coordinates"]
    with pytest.raises(StudyError, match="coordinates: altered or lost.*delete it"):
        rm.open_study(out)
    checked = run_cli([sys.executable, "-m", "relmodel._cli", "sweep", "--verify", str(out)], tmp_path)
    assert checked.returncode == 1 and "coordinates not whole" in one_line_error(checked.stderr)


def test_a_netcdf_study_checks_its_coordinates_and_verify_refuses_other_files(tmp_path, references):
    out = finished_copy(tmp_path, "s", ".nc")
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        moved = ds.load().assign_coords(n_gpus=[1024, 4096, 0])
    moved.to_netcdf(tmp_path / "moved.nc", engine="h5netcdf")
    # (assign_coords also dropped the coordinate's units, which the study's content record names)
    problems = rm.verify_study(tmp_path / "moved.nc")
    assert set(problems) == {"coordinates", "n_gpus"} and problems["n_gpus"] == "attribute units lost"
    with pytest.raises(StudyError, match="coordinates"):
        rm.open_study(tmp_path / "moved.nc")
    simulated = tmp_path / "sim.nc"  # `relmodel simulate --out` over a study's name: "every chunk matches" before
    rm.simulate(rm.Scenario(n_gpus=8, failure_rate=1e-3, checkpoint_interval=1, work=10), n_jobs=100).to_netcdf(
        simulated, engine="h5netcdf")
    for check in (rm.verify_study, rm.open_study):
        with pytest.raises(StudyError, match="not a relmodel study file"):
            check(simulated)


def test_open_study_names_a_path_that_is_not_a_study(tmp_path):
    """KeyError, GroupNotFoundError or OSError before."""
    (tmp_path / "empty.zarr").mkdir()
    (tmp_path / "file.zarr").write_text("x")
    for path, message in ((tmp_path / "missing.zarr", "no such study store"), (tmp_path / "empty.zarr", "not a"),
                          (tmp_path / "file.zarr", "not a study store"), (tmp_path / "missing.nc", "no such")):
        with pytest.raises(StudyError, match=message):
            rm.open_study(path)


def test_refusals_are_one_line_and_debug_shows_the_traceback(tmp_path):
    junk = tmp_path / "junk.zarr"
    junk.mkdir()
    (junk / "data.bin").write_bytes(b"\0" * 10)
    study_file = write_study(tmp_path)
    refused = run_cli(sweep_command(study_file, junk), tmp_path)
    assert refused.returncode != 0 and "not a relmodel study store" in one_line_error(refused.stderr)
    debug = run_cli([sys.executable, "-m", "relmodel._cli", "--debug", *sweep_command(study_file, junk)[3:]],
                    tmp_path)
    assert debug.returncode == refused.returncode and "Traceback" in debug.stderr
    assert debug.stderr.strip().splitlines()[-1] == refused.stderr.strip()
    missing = run_cli([sys.executable, "-m", "relmodel._cli", "sweep", "--verify", str(tmp_path / "none.zarr")],
                      tmp_path)
    assert missing.returncode != 0 and "no such study store" in one_line_error(missing.stderr)


# ---- the environment: one line and exit status 1, nothing half made ---------------------

def test_a_netcdf_study_past_the_file_size_limit_is_refused_and_resumes_when_lifted(tmp_path, references):
    """Under `ulimit -f` the study is refused in one line, before HDF5 is cut off mid-write (tracebacks,
    then a segfault), and resumes once the limit is lifted."""
    import resource

    def small_file_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    study_file, out = write_study(tmp_path), tmp_path / "study.nc"
    limited = subprocess.run(sweep_command(study_file, out), capture_output=True, text=True, cwd=tmp_path,
                             timeout=600, env={**os.environ, "NUMBA_NUM_THREADS": "1"}, preexec_fn=small_file_limit)
    assert limited.returncode == 1, limited.stderr
    assert "file size limit (ulimit -f) is 200000 bytes" in one_line_error(limited.stderr)
    assert not out.exists() and not list(tmp_path.glob(".study.nc.creating-*"))
    assert run_cli(sweep_command(study_file, out), tmp_path).returncode == 0  # the chunks were kept
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])


@pytest.mark.parametrize("error, status", [
    (OSError(errno.ENOSPC, "No space left on device"), 1),  # the environment
    (FileNotFoundError(errno.ENOENT, "No such file or directory"), 70),  # a file of ours gone: our bug, not the disk's
])
def test_a_full_disk_is_one_line_and_exit_status_1(tmp_path, monkeypatch, error, status):
    from click.testing import CliRunner

    from relmodel._cli import main
    from relmodel._store import ChunkWriter

    def failing(self, region, arrays):
        raise error

    monkeypatch.setattr(ChunkWriter, "write", failing)
    out = tmp_path / "s.zarr"
    result = CliRunner().invoke(main, ["sweep", str(write_study(tmp_path)), "--out", str(out), "--quiet"])
    assert result.exit_code == status and result.output.count("\n") == 1, result.output
    assert (f"--out: cannot write {out}: No space left on device" if status == 1 else "internal error") in result.output


def test_an_unreachable_scheduler_is_refused_before_any_store_is_made(tmp_path, monkeypatch):
    """Refused naming the scheduler, before any store is made: no long wait, no blame on --out."""
    from click.testing import CliRunner

    from relmodel import _sweep as sweep
    from relmodel._cli import main

    monkeypatch.setattr(sweep, "_CONNECT_TIMEOUT", "1s")
    out = tmp_path / "s.zarr"
    result = CliRunner().invoke(main, ["sweep", str(write_study(tmp_path)), "--out", str(out),
                                       "--scheduler", "tcp://127.0.0.1:1", "--quiet"])
    assert result.exit_code == 1 and "--scheduler: cannot reach the Dask scheduler tcp://127.0.0.1:1" in result.output
    assert list(tmp_path.iterdir()) == [tmp_path / "study-1.toml"]


def test_a_store_whose_creation_fails_leaves_nothing_behind(tmp_path):
    from relmodel._store import create_atomically

    def build(path):
        path.mkdir()
        (path / "chunk").write_text("x")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError):
        create_atomically(tmp_path / "s.zarr", build)
    assert list(tmp_path.iterdir()) == []


# ---- Dask -----------------------------------------------------------------------------

def test_a_worker_killed_mid_task_does_not_change_the_store(tmp_path, references):
    from distributed import Client, LocalCluster

    study = parse_study(STUDY.format(seed=1))
    out = tmp_path / "dask.zarr"
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           env={"NUMBA_NUM_THREADS": "1"})
    client = Client(cluster)
    try:
        pids = client.run(os.getpid)
        runner = threading.Thread(target=lambda: run_study(study, out, scheduler=cluster.scheduler_address,
                                                           progress=False))
        runner.start()
        victim = None
        while victim is None and runner.is_alive():
            busy = [worker for worker, tasks in client.processing().items() if tasks and worker in pids]
            if busy and any("compute_chunk" in str(t) for t in client.processing()[busy[0]]):
                victim = busy[0]
            time.sleep(0.01)
        assert victim is not None, "no task was seen running"
        os.kill(pids[victim], signal.SIGKILL)
        runner.join(timeout=600)
        assert not runner.is_alive()
    finally:
        client.close()
        cluster.close()
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])
    assert rm.verify_study(out) == {}


def test_a_checksum_reads_every_nan_as_one():
    """A study whose jobs were all capped (NaN estimates) passes its own checksum on read, though
    x86 computes -NaN and the store gives back +NaN."""
    from relmodel._store import checksum

    values = np.array([1.0, np.nan, 2.0])
    negative = values.copy()
    negative[1] = -np.nan
    assert np.signbit(negative[1]) != np.signbit(values[1])
    assert checksum({"ettr": values}) == checksum({"ettr": negative})
    assert checksum({"ettr": values}) != checksum({"ettr": np.array([1.0, 0.0, 2.0])})


def _simulate_out(out):
    from click.testing import CliRunner

    from relmodel._cli import main

    return CliRunner().invoke(main, ["simulate", "--gpus", "8", "--n-jobs", "100", "--out", str(out)])


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_an_output_through_a_link_is_written_where_the_link_points(tmp_path, suffix):
    """The lock guarded the link's target while the data replaced the link."""
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / f"run{suffix}"
    link = tmp_path / f"link{suffix}"
    link.symlink_to(target)
    result = _simulate_out(link)
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and target.exists()
    read = (lambda p: xr.open_dataset(p, engine="h5netcdf")) if suffix == ".nc" else xr.open_zarr
    with read(link) as via_link, read(target) as direct:
        assert float(via_link["ettr"]) == float(direct["ettr"])


def test_a_dangling_link_to_a_missing_folder_is_refused_and_makes_nothing(tmp_path):
    """Taking the lock made the missing folder (filelock makes parents), then the data replaced the link."""
    link = tmp_path / "link.nc"
    link.symlink_to(tmp_path / "missing" / "run.nc")
    result = _simulate_out(link)
    assert result.exit_code == 1 and "no such folder" in result.output
    assert not (tmp_path / "missing").exists() and link.is_symlink()
    with pytest.raises(StudyError, match="no such folder"):
        with rm._store.exclusive(link, "", "test"):
            pass
    assert not (tmp_path / "missing").exists()


def test_a_folder_named_as_a_netcdf_output_is_refused_and_nothing_is_left(tmp_path):
    """It failed in the rename and left `<out>.partial` beside the folder."""
    folder = tmp_path / "out.nc"
    folder.mkdir()
    result = _simulate_out(folder)
    assert result.exit_code == 2 and "--out: " + str(folder) + " is a folder" in result.output
    with pytest.raises(OSError):
        rm._store.write_netcdf(xr.Dataset({"x": ("i", np.arange(3.0))}), folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.nc"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs a /proc, where no file can be made")
def test_a_place_where_no_lock_file_can_be_made_is_named_not_blamed_on_another_run():
    """`--out /proc/x.nc` said the output 'is being written by another run'. The command line now refuses
    the folder before any work; the store's own lock names the place too."""
    from pathlib import Path

    from relmodel._store import exclusive

    result = _simulate_out("/proc/x.nc")
    assert result.exit_code == 1 and "cannot write in /proc" in result.output
    assert "another run" not in result.output
    with pytest.raises(StudyError, match="cannot make its lock file") as refused:
        with exclusive(Path("/proc/x.nc"), "", "relmodel simulate"):
            pass
    assert "another run" not in str(refused.value)


# ---- the lock file goes with its writer -----------------------------------------------------

@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_a_finished_write_leaves_only_its_output(tmp_path, suffix):
    """`fit.nc.lock` and `study.zarr.lock` were left beside every output."""
    assert _simulate_out(tmp_path / f"out{suffix}").exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"out{suffix}"]
    study_out = tmp_path / "study" / f"s{suffix}"
    study_out.parent.mkdir()
    run_study(parse_study(STUDY.format(seed=1)), study_out, progress=False)
    assert sorted(p.name for p in study_out.parent.iterdir()) == [f"s{suffix}"]


def test_a_lock_taken_on_a_removed_lock_file_is_dropped_and_taken_again(tmp_path, monkeypatch):
    """A run that opened the lock file just before its holder removed it locks a dead file: it must
    see that the path names another file now, and lock that one."""
    from relmodel import _store

    path = tmp_path / "out.nc.lock"
    other = tmp_path / "elsewhere"
    other.touch()
    real_stat, calls = os.stat, []

    def stat_as_if_replaced(name, *args, **kwargs):  # the lock's path names another file, once
        if str(name) == str(path):
            calls.append(name)
            name = other if len(calls) == 1 else name
        return real_stat(name, *args, **kwargs)

    monkeypatch.setattr(_store.os, "stat", stat_as_if_replaced)
    lock = _store._acquire_named_lock(path)
    monkeypatch.setattr(_store.os, "stat", real_stat)
    assert lock is not None and lock.is_locked and len(calls) == 2
    assert _store._acquire_named_lock(path) is None  # held: another taker is refused
    lock.release()


def test_the_lock_file_is_removed_while_still_held(tmp_path, monkeypatch):
    """Removed after its release, a new taker could lock it while a third made and locked a new one."""
    from relmodel import _store

    out, seen = tmp_path / "out.nc", []
    real = _store._acquire_named_lock

    def recording(path):
        lock = real(path)
        release = lock.release
        lock.release = lambda *a, **k: (seen.append(path.exists()), release(*a, **k))
        return lock

    monkeypatch.setattr(_store, "_acquire_named_lock", recording)
    with _store.exclusive(out, "", "writer"):
        assert _store.lock_path(out).exists()
    assert seen == [False] and not _store.lock_path(out).exists()


WRITERS_IN_TURN = """
import os, sys
from pathlib import Path
from relmodel._store import exclusive
from relmodel._study import StudyError
out, inside, rounds = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
held = 0
while held < rounds:
    try:
        with exclusive(out, "", "writer"):
            os.close(os.open(inside, os.O_CREAT | os.O_EXCL))  # fails if another writer is inside
            os.unlink(inside)
            held += 1
    except StudyError:
        pass
"""


def test_writers_taking_turns_are_never_inside_together(tmp_path):
    """Each release removes the lock file; three processes take it 100 times each, one at a time."""
    out, inside = tmp_path / "out.nc", tmp_path / "inside"
    writers = [subprocess.Popen([sys.executable, "-c", WRITERS_IN_TURN, str(out), str(inside), "100"],
                                stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for writer in writers:
        _, stderr = writer.communicate(timeout=600)
        assert writer.returncode == 0, stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []
