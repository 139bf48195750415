"""Every output a command writes (`--out`, `--plot`, `bench --json`) is judged before any work
and written in one step: what relmodel did not write is never replaced (a link judged by its
target), a relmodel output only with `--overwrite`, and a fault (an exception, a full disk, the
file size limit, a kill) leaves the old output bit for bit, or nothing, and no temporary."""

import errno
import importlib
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import xarray as xr
from click.testing import CliRunner

import relmodel as rm
from relmodel._cli import main

SACCT = str(Path(__file__).parent / "data" / "sacct" / "slurm23_parsable2.txt")

# Each writer of --out: its command line, the suffixes it writes, and a flag that changes its output.
WRITERS = {
    "simulate": (["simulate", "--gpus", "8", "--n-jobs", "100", "--quiet"], (".zarr", ".nc"), ["--seed", "1"]),
    "fit": (["fit", SACCT, "--min-gpus", "1", "--quiet"], (".zarr", ".nc"), ["--confidence", "0.9"]),
    "cluster": (["cluster", "--gpus", "16", "--duration", "2h", "--quiet"], (".zarr", ".nc"), ["--seed", "1"]),
    "pipeline": (["pipeline", "--stages", "2", "--replicas", "2", "--microbatches", "2", "--quiet"], (".nc",),
                 ["--spares", "1"]),
}
OUTS = [(name, suffix) for name, (_, suffixes, _) in WRITERS.items() for suffix in suffixes]
# Each command that draws --plot (small runs).
PLOTTERS = {
    "fit": ["fit", SACCT, "--min-gpus", "1", "--quiet"],
    "cluster": ["cluster", "--gpus", "16", "--duration", "2h", "--quiet"],
    "pipeline": ["pipeline", "--stages", "2", "--replicas", "2", "--microbatches", "2", "--quiet"],
    "plan": ["plan", "--gpus", "64", "--n-jobs", "100", "--quiet"],
}


def invoke(args):
    return CliRunner().invoke(main, [str(a) for a in args])


def snapshot(path: Path) -> dict:
    """Every byte under `path` (a file or a folder), by relative name."""
    if path.is_file():
        return {"": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def temporaries(folder: Path) -> list:
    return sorted(p.name for p in folder.iterdir() if ".creating-" in p.name or ".replaced-" in p.name)


def write_out(tmp_path, name, suffix, *extra, out=None):
    args, _, _ = WRITERS[name]
    out = out or tmp_path / f"mine{suffix}"
    return invoke([*args, "--out", out, *extra]), out


def foreign(tmp_path, kind) -> Path:
    """Something the user has, that relmodel did not write."""
    if kind == "file":
        path = tmp_path / "notes"
        path.write_text("my notes\n")
    else:
        path = tmp_path / "folder"
        path.mkdir()
        (path / "notes.txt").write_text("my notes\n")
    return path


def assert_refused(result, flag="--out"):
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"Error: {flag}: ") and result.output.count("\n") == 1, result.output


# ---- what is there before the run -----------------------------------------------------------

@pytest.mark.parametrize("name, suffix", OUTS)
@pytest.mark.parametrize("kind", ["file", "folder"])
@pytest.mark.parametrize("through", ["path", "link"])
def test_a_foreign_file_or_folder_at_out_is_refused_and_untouched(tmp_path, name, suffix, kind, through):
    """`simulate --out mine.zarr` emptied the user's folder, `fit --out mine.nc` replaced a text
    file, with exit 0 (and the same through a link)."""
    there = foreign(tmp_path, kind)
    out = tmp_path / f"mine{suffix}"
    if through == "link":
        out.symlink_to(there)
    else:
        there.rename(out)
        there = out
    before = snapshot(there)
    for extra in ([], ["--overwrite"]):
        result, _ = write_out(tmp_path, name, suffix, *extra, out=out)
        assert_refused(result)
        assert "it was not touched" in result.output or "is a " in result.output
        assert snapshot(there) == before
    assert out.is_symlink() == (through == "link")
    assert not temporaries(tmp_path) and not list(tmp_path.glob("*.lock"))


@pytest.mark.parametrize("name, suffix", OUTS)
def test_a_relmodel_output_is_replaced_only_with_overwrite_through_its_link(tmp_path, name, suffix):
    """A link to a finished output is replaced only with --overwrite."""
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / f"kept{suffix}"
    first, _ = write_out(tmp_path, name, suffix, out=target)
    assert first.exit_code == 0, first.output
    before = snapshot(target)
    link = tmp_path / f"link{suffix}"
    link.symlink_to(target)
    for out in (target, link):
        refused, _ = write_out(tmp_path, name, suffix, *WRITERS[name][2], out=out)
        assert_refused(refused)
        assert "holds a relmodel output" in refused.output and "pass --overwrite" in refused.output
        assert snapshot(target) == before
    replaced, _ = write_out(tmp_path, name, suffix, *WRITERS[name][2], "--overwrite", out=link)
    assert replaced.exit_code == 0, replaced.output
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert snapshot(target) != before
    read = xr.open_zarr if suffix == ".zarr" else (lambda p: xr.open_dataset(p, engine="h5netcdf"))
    with read(link) as ds:
        assert ds.attrs["relmodel_version"] == rm.__version__
    assert not temporaries(tmp_path) and not temporaries(tmp_path / "real")


@pytest.mark.parametrize("name", ["simulate", "fit"])
def test_another_commands_output_is_replaced_with_overwrite(tmp_path, name):
    """Any relmodel output (a study too: tests/test_stores.py) is replaced with --overwrite."""
    other = "fit" if name == "simulate" else "simulate"
    assert write_out(tmp_path, other, ".nc")[0].exit_code == 0
    assert_refused(write_out(tmp_path, name, ".nc")[0])
    result, out = write_out(tmp_path, name, ".nc", "--overwrite")
    assert result.exit_code == 0, result.output
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert ds.attrs["title"] == {"simulate": "relmodel Monte Carlo job timelines",
                                     "fit": "failure rate fitted from a job log"}[name]


def test_the_judging_is_done_before_any_work(tmp_path, monkeypatch):
    """The refusal comes from the command line's reading, before the simulation runs."""
    def no_work(*args, **kwargs):
        raise AssertionError("the simulation ran")

    monkeypatch.setattr(importlib.import_module("relmodel._simulate"), "simulate", no_work)
    (tmp_path / "mine.nc").write_text("notes")
    assert_refused(write_out(tmp_path, "simulate", ".nc", "--overwrite")[0])


def test_an_output_that_appears_during_the_run_is_judged_again_under_the_lock(tmp_path, monkeypatch):
    """The judging at write time: a file made between the start and the write is not replaced."""
    module = importlib.import_module("relmodel._simulate")  # (the package's `simulate` is the function)
    out = tmp_path / "late.nc"
    real = module.simulate

    def then_a_file_appears(*args, **kwargs):
        out.write_text("made meanwhile")
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "simulate", then_a_file_appears)
    result, _ = write_out(tmp_path, "simulate", ".nc", "--overwrite", out=out)
    assert_refused(result)
    assert out.read_text() == "made meanwhile" and not temporaries(tmp_path)


# ---- figures and JSON reports ---------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(PLOTTERS))
def test_plot_redraws_an_image_and_refuses_anything_else(tmp_path, name):
    """An image of the suffix's format (or an empty file) is redrawn, through a link too; a
    folder, a text file or a link to one is refused before any work and left as it was."""
    args = PLOTTERS[name]
    png = tmp_path / "fig.png"
    assert invoke([*args, "--plot", png]).exit_code == 0
    assert png.read_bytes().startswith(b"\x89PNG")
    for kind in ("file", "folder"):
        there = foreign(tmp_path, kind)
        before = snapshot(there)
        link = tmp_path / f"{kind}.png"
        link.symlink_to(there)
        assert_refused(invoke([*args, "--plot", link]), "--plot")
        assert snapshot(there) == before and link.is_symlink()
        itself = there.rename(tmp_path / f"{kind}-itself.png")
        assert_refused(invoke([*args, "--plot", itself]), "--plot")
        assert snapshot(itself) == before
    png.write_bytes(b"\x89PNG\r\n\x1a\n an older figure")
    link = tmp_path / "link.png"
    link.symlink_to(png)
    assert invoke([*args, "--plot", link]).exit_code == 0
    assert link.is_symlink() and png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n\0")
    empty = tmp_path / "empty.png"
    empty.touch()
    assert invoke([*args, "--plot", empty]).exit_code == 0 and empty.read_bytes().startswith(b"\x89PNG")
    assert not temporaries(tmp_path)


@pytest.mark.parametrize("content, replaced", [
    (b"", True), (b'{"old": "report"}', True), (b"not json", False), (None, False)])
def test_a_json_report_replaces_json_only(tmp_path, content, replaced):
    """`bench --json PATH` wrote over any file there, after minutes of measuring."""
    from relmodel._store import OutputError, write_json_file

    path = tmp_path / "report.json"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    if replaced:
        write_json_file('{"new": 1}', path, parameter="json_path")
        assert json.loads(path.read_text()) == {"new": 1}
    else:
        before = snapshot(path)
        with pytest.raises(OutputError, match="^json_path: .* it was not touched"):
            write_json_file('{"new": 1}', path, parameter="json_path")
        assert snapshot(path) == before
        assert_refused(invoke(["bench", "--json", path]), "--json")
    assert not temporaries(tmp_path)


@pytest.mark.parametrize("suffix, head, ours", [
    (".png", b"\x89PNG\r\n\x1a\nrest", True), (".png", b"GIF89a", False), (".pdf", b"%PDF-1.4\n", True),
    (".svg", b'<?xml version="1.0"?>\n<svg>', True), (".svg", b"<?xml version='1.0'?><html>", False),
    (".webp", b"RIFF\x00\x00\x00\x00WEBPVP8", True), (".raw", b"\xff" * 16, False), (".jpg", b"", True)])
def test_an_image_is_told_by_its_first_bytes(tmp_path, suffix, head, ours):
    from relmodel._store import OutputError, judge_output

    path = tmp_path / f"x{suffix}"
    path.write_bytes(head)
    if ours:
        assert judge_output(path, "figure", parameter="--plot") == path
    else:
        with pytest.raises(OutputError, match="not a .* image"):
            judge_output(path, "figure", parameter="--plot")


# ---- faults while writing ----------------------------------------------------------------

REAL_TO_ZARR = xr.Dataset.to_zarr


def _half_zarr(self, store, *args, **kwargs):
    """Write the first three variables of the store, then fail as a full disk does."""
    REAL_TO_ZARR(self[list(self.data_vars)[:3]], store, *args, **kwargs)
    raise OSError(errno.ENOSPC, "No space left on device")


def _half_netcdf(self, path, *args, **kwargs):
    Path(path).write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("name, suffix", OUTS)
@pytest.mark.parametrize("old", [True, False])
def test_a_full_disk_mid_write_leaves_the_old_output_or_nothing(tmp_path, monkeypatch, name, suffix, old):
    """It left X.zarr under its final name with 3 of 12 variables, or unreadable."""
    out = tmp_path / f"mine{suffix}"
    if old:
        assert write_out(tmp_path, name, suffix)[0].exit_code == 0
    before = snapshot(out) if old else None
    monkeypatch.setattr(xr.Dataset, *(("to_zarr", _half_zarr) if suffix == ".zarr" else ("to_netcdf", _half_netcdf)))
    result, _ = write_out(tmp_path, name, suffix, *WRITERS[name][2], "--overwrite")
    assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
    assert f"--out: cannot write {out}: No space left on device" in result.output
    assert (snapshot(out) == before) if old else not out.exists()
    assert not temporaries(tmp_path)


@pytest.mark.parametrize("name", sorted(PLOTTERS))
def test_a_full_disk_while_drawing_leaves_the_old_figure(tmp_path, monkeypatch, name):
    """A full disk during --plot left a 0-byte PNG (and `fit` exited 70, an internal error)."""
    from matplotlib.figure import Figure

    args = PLOTTERS[name]
    png = tmp_path / "fig.png"
    assert invoke([*args, "--plot", png]).exit_code == 0
    before = png.read_bytes()

    def full(self, fname, *a, **k):
        Path(fname).write_bytes(b"\x89PNG")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    result = invoke([*args, "--plot", png])
    assert result.exit_code == 1 and f"--plot: cannot write {png}: No space left on device" in result.output
    assert png.read_bytes() == before and not temporaries(tmp_path)


def _file_size_limit(limit):
    def apply():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    return apply


# The child runs the relmodel these tests import, wherever it lies.
CHILD_ENV = {**os.environ, "NUMBA_NUM_THREADS": "1", "PYTHONPATH": str(Path(rm.__file__).parent.parent)}


def _cli(args, cwd, limit=None):
    return subprocess.run([sys.executable, "-m", "relmodel._cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=600, env=CHILD_ENV,
                          preexec_fn=None if limit is None else _file_size_limit(limit))


@pytest.mark.parametrize("command, flag, name", [
    ("simulate", "--out", "x.zarr"), ("simulate", "--out", "x.nc"), ("cluster", "--out", "x.zarr"),
    ("fit", "--plot", "x.png")])
def test_the_file_size_limit_leaves_the_old_output(tmp_path, command, flag, name):
    """Under `ulimit -f` the old output stays, and nothing half written takes its name."""
    args, _, change = WRITERS[command]
    out = tmp_path / name
    extra = ["--overwrite"] if flag == "--out" else []
    assert _cli([*args, flag, out], tmp_path).returncode == 0
    before = snapshot(out)
    limited = _cli([*args, *change, flag, out, *extra], tmp_path, limit=2048)
    assert limited.returncode == 1, limited.stderr
    assert limited.stderr.startswith(f"Error: {flag}: cannot write {out}: ") and limited.stderr.count("\n") == 1
    assert snapshot(out) == before and not temporaries(tmp_path)


# A child that runs `relmodel` and kills itself (SIGKILL) just before the `nth` call of a function.
KILLING_CHILD = """
import importlib, os, signal, sys
module_name, attribute, nth = sys.argv[1:4]
module = importlib.import_module(module_name)
real, calls = getattr(module, attribute), [0]

def killing(*args, **kwargs):
    calls[0] += 1
    if calls[0] == int(nth):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(*args, **kwargs)

setattr(module, attribute, killing)
if len(sys.argv) > 4 and sys.argv[4] == "--no-exchange":
    import relmodel._store
    relmodel._store._exchange = lambda a, b: False
    sys.argv.pop(4)
from relmodel._cli import main
main(sys.argv[4:])
"""


@pytest.mark.parametrize("suffix, point", [
    (".zarr", "written, not exchanged"), (".nc", "written, not renamed"),
    (".zarr", "old moved aside, new not in place")])
def test_a_kill_mid_write_leaves_the_old_output_and_the_next_run_cleans_up(tmp_path, suffix, point):
    out = tmp_path / f"x{suffix}"
    args = [*WRITERS["simulate"][0], "--out", out]
    assert _cli(args, tmp_path).returncode == 0
    before = snapshot(out)
    # The first `rename` puts the lock's holder note in place; the second, the output.
    where = {"written, not exchanged": ["relmodel._store", "_exchange", "1"],
             "written, not renamed": ["relmodel._store", "rename", "2"],
             "old moved aside, new not in place": ["relmodel._store", "rename", "2", "--no-exchange"]}[point]
    killed = subprocess.run([sys.executable, "-c", KILLING_CHILD, *where, *map(str, args), "--seed", "3",
                             "--overwrite"], capture_output=True, text=True, cwd=tmp_path, timeout=600, env=CHILD_ENV)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert temporaries(tmp_path), "the kill landed before anything was written"
    if point == "old moved aside, new not in place":
        assert not out.exists()  # the old one waits under a hidden name: put back by the next run
    else:
        assert snapshot(out) == before
    refused = _cli(args, tmp_path)  # without --overwrite: the old output is there again, and kept
    assert refused.returncode == 2 and "holds a relmodel output" in refused.stderr, refused.stderr
    assert snapshot(out) == before and not temporaries(tmp_path)
    assert _cli([*args, "--overwrite", "--seed", "3"], tmp_path).returncode == 0
    assert snapshot(out) != before and not temporaries(tmp_path)


def test_a_failed_write_of_a_folder_puts_the_old_one_back(tmp_path, monkeypatch):
    """Where no exchange in one step is available, the old folder moved aside comes back."""
    import relmodel._store as stores
    from relmodel._store import write_atomically

    old = tmp_path / "x.zarr"
    old.mkdir()
    (old / "a").write_text("old")
    monkeypatch.setattr(stores, "_exchange", lambda a, b: False)

    def refuse(source, target):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(stores, "rename", refuse)
    with pytest.raises(OSError):
        write_atomically(old, lambda tmp: (tmp.mkdir(), (tmp / "a").write_text("new")))
    assert snapshot(old) == {"a": b"old"} and not temporaries(tmp_path)


# ---- a folder where nothing can be written: refused before any work ---------------------------

UNWRITABLE = [pytest.param([*args, "--plot", "{folder}/fig.png"], "--plot", id=f"{name} --plot")
              for name, args in PLOTTERS.items()] + [
    pytest.param([*args, "--out", "{folder}/out" + suffixes[0]], "--out", id=f"{name} --out")
    for name, (args, suffixes, _) in WRITERS.items()] + [
    pytest.param(["bench", "--quick", "--json", "{folder}/bench.json"], "--json", id="bench --json")]


@pytest.mark.parametrize("args, flag", UNWRITABLE)
def test_an_output_in_a_folder_that_takes_no_file_is_refused_before_any_work(tmp_path, monkeypatch, args, flag):
    """`--plot` into a read-only folder ended in an internal error after the work (`bench --json`: 40 s of it)."""
    import tempfile

    folder = tmp_path / "read-only"
    folder.mkdir()
    real = tempfile.NamedTemporaryFile

    def refused_in_folder(*a, dir=None, **k):
        if dir is not None and Path(dir) == folder:
            raise PermissionError(errno.EACCES, "Permission denied", str(folder))
        return real(*a, dir=dir, **k)

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", refused_in_folder)
    result = invoke([a.format(folder=folder) for a in args])
    assert result.exit_code == 1, result.output
    assert result.output == f"Error: {flag}: cannot write in {folder} (Permission denied); choose another {flag}\n"
    assert not list(folder.iterdir())


def test_the_writability_probe_leaves_nothing(tmp_path):
    result = invoke([*PLOTTERS["plan"], "--plot", tmp_path / "fig.png"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.png"]
