"""Study stores never mix, lose or silently corrupt data: real processes, real
signals. Every case ends with the store bit-identical to an uninterrupted run,
or in a one-line refusal that leaves the first study's data intact."""

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import xarray as xr
import zarr

import relmodel as rm
from relmodel.store import DONE_DIR, done_chunks, lock_path
from relmodel.study import StudyError, parse_study
from relmodel.sweep import run_study

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
from relmodel.cli import main
main(sys.argv[6:])
"""

# (module, function, before/after, nth call, an argument containing): the kill points.
KILL_POINTS = {
    "template written to its hidden folder, not yet renamed into place":
        ("relmodel.store", "rename", "before", 1, r"\.creating-\d+$"),
    "template's arrays written, marker folder not yet made":
        ("xarray", "Dataset.to_zarr", "after", 1, ""),
    "store created, no chunk computed": ("relmodel.sweep", "compute_chunk", "before", 1, ""),
    # 11 outputs a chunk: the 27th write into the store is the third chunk's sixth array.
    "halfway through a chunk's arrays": ("zarr", "Array.__setitem__", "after", 27, r"/s\.zarr/"),
    "a chunk's data written, its marker not made": ("relmodel.store", "ChunkWriter.mark_done", "before", 3, ""),
    "a marker's checksum written, the marker not renamed into place":
        ("relmodel.store", "rename", "before", 2, r"\.zgroup\.partial$"),
    "every chunk written, status not set": ("relmodel.store", "set_status", "before", 1, "^complete$"),
    "status set, metadata not consolidated": ("zarr", "consolidate_metadata", "before", 1, ""),
}
NC_KILL_POINTS = {
    ".nc written under its temporary name, not renamed": ("relmodel.store", "rename", "before", 1, r"\.nc\.partial$"),
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
        lambda out: not out.exists() and out.with_name("s.nc.partial").exists(),
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
    return [sys.executable, "-m", "relmodel.cli", "sweep", str(study_file), "--out", str(out), "--quiet"]


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
import relmodel.sweep as sweep
release, real = sys.argv[1], sweep.compute_chunk

def waiting(*args, **kwargs):
    while not os.path.exists(release):
        time.sleep(0.01)
    return real(*args, **kwargs)

sweep.compute_chunk = waiting
from relmodel.cli import main
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
    import relmodel.sweep as sweep

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
    assert not (tmp_path / "s.nc.partial.zarr").exists() and not (tmp_path / "s.nc.partial").exists()


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
    checked = run_cli([sys.executable, "-m", "relmodel.cli", "sweep", "--verify", str(out)], tmp_path)
    assert checked.returncode == 1 and checked.stdout.count("chunk-") == 4
    assert "4 chunk(s) not whole" in one_line_error(checked.stderr)
    with pytest.warns(RuntimeWarning, match="3 finished chunk"):
        run_study(parse_study(STUDY.format(seed=1)), out, progress=False)
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])
    assert rm.verify_study(out) == {}


def test_a_netcdf_study_is_checked_by_its_hdf5_checksums(tmp_path, references):
    out = tmp_path / "s.nc"
    run_study(parse_study(STUDY.format(seed=1)), out, progress=False)
    assert rm.verify_study(out) == {}
    xr.testing.assert_identical(data(rm.open_study(out)), references[1])
    raw = bytearray(out.read_bytes())
    values = np.ascontiguousarray(references[1].ettr.values).tobytes()
    at = raw.find(values[:16])  # the ettr values, stored uncompressed: flip one bit of one
    assert at > 0
    raw[at + 3] ^= 1
    out.write_bytes(bytes(raw))
    assert list(rm.verify_study(out)) == ["file"]


def test_refusals_are_one_line_and_debug_shows_the_traceback(tmp_path):
    junk = tmp_path / "junk.zarr"
    junk.mkdir()
    (junk / "data.bin").write_bytes(b"\0" * 10)
    study_file = write_study(tmp_path)
    refused = run_cli(sweep_command(study_file, junk), tmp_path)
    assert refused.returncode != 0 and "not a relmodel study store" in one_line_error(refused.stderr)
    debug = run_cli([sys.executable, "-m", "relmodel.cli", "--debug", *sweep_command(study_file, junk)[3:]],
                    tmp_path)
    assert debug.returncode == refused.returncode and "Traceback" in debug.stderr
    assert debug.stderr.strip().splitlines()[-1] == refused.stderr.strip()
    missing = run_cli([sys.executable, "-m", "relmodel.cli", "sweep", "--verify", str(tmp_path / "none.zarr")],
                      tmp_path)
    assert missing.returncode != 0 and "no such study store" in one_line_error(missing.stderr)


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
