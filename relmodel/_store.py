"""A study's zarr store, kept the way a database keeps its data.

- One writer: a run holds an operating-system lock on ``<store>.lock`` for as
  long as it writes (`filelock`, which takes ``flock`` on POSIX: it assumes a
  filesystem with working advisory locks, a local disk or NFSv4 with locking,
  not a share that ignores them). A second run is refused at once, naming the
  store and both studies; ``<store>.lock.json`` says who holds the lock. Both
  files are removed as the run finishes, the lock file while still held
  (`_acquire_named_lock` says why that is safe).
- Atomic creation: every output (a new store, a Dataset, a figure, a JSON
  report) is written in full under a hidden temporary name beside it, then
  renamed into place (an old folder exchanged with the new one), so an output
  exists whole or not at all, and a fault leaves the old one. Before that, an
  output path is judged (`judge_output`): what relmodel did not write there is
  never replaced.
- Verified chunks: a finished chunk has a marker (an empty zarr group under
  ``relmodel_done``) holding the SHA-256 of the chunk's values, made after
  the data and renamed into place last. `verify` reads every chunk back and
  names those that are missing, unreadable or altered.

Zarr format 2 throughout: format 3 has no specified string dtype yet (zarr
warns on every string coordinate), nor consolidated metadata. A finished
store has consolidated metadata, so a plain `xarray.open_zarr` opens it
without a warning.
"""

from __future__ import annotations

import datetime
import errno
import glob
import hashlib
import json
import os
import shutil
import socket
import sys
import time
from contextlib import contextmanager
from pathlib import Path

try:
    import resource
except ImportError:  # not POSIX: no file size limit to check
    resource = None

import numpy as np

from ._extras import require
from ._errors import ParameterError
from ._study import StudyError

ZARR_FORMAT = 2
DONE_DIR = "relmodel_done"
_CREATING = ".creating-"  # hidden sibling an output is written under: .<name>.creating-<pid>
_REPLACED = ".replaced-"  # hidden sibling an old folder waits under while the new one takes its place


# ---- one writer ------------------------------------------------------------------

WORKING_SUFFIX = ".partial.zarr"  # a .nc study runs in the zarr store <out>.partial.zarr


def output_identity(path) -> Path:
    """Return the one path that every spelling of an output stands for.

    Symbolic links, ``..`` and relative spellings resolved; the working store
    of a ``.nc`` study (``X.nc.partial.zarr``) stands for ``X.nc``, so that a
    run on either is a run on the same study.

    Parameters
    ----------
    path : str or pathlib.Path
        An output path, existing or not.

    Returns
    -------
    pathlib.Path
        The absolute path its writers lock.
    """
    real = Path(os.path.realpath(path))
    if real.name.endswith(".nc" + WORKING_SUFFIX):
        real = real.with_name(real.name[:-len(WORKING_SUFFIX)])
    return real


def write_path(path) -> Path:
    """Return where a writer writes the output `path`: through a symbolic link to what it names, as
    its lock (`lock_path`) is taken there (else the lock would guard the target while the
    data replaced the link); any other path as given."""
    path = Path(path)
    return output_identity(path) if path.is_symlink() else path


def lock_path(store: Path) -> Path:
    """Return the lock file of a store (beside it: zarr meets no foreign file inside).

    Parameters
    ----------
    store : pathlib.Path
        The store (or the ``.nc`` output a study ends in), in any spelling.

    Returns
    -------
    pathlib.Path
        ``<store>.lock`` beside its `output_identity`.
    """
    store = output_identity(store)
    return store.with_name(store.name + ".lock")


class OutputError(ParameterError):
    """An output path that a command refuses to write: something not its own is there, or
    its own output without leave to replace it; ``.parameter`` is the flag or parameter that
    named the path (``--out``, ``path``), ``.reason`` what is there and why it is not written."""


# Where each image format matplotlib writes has its signature: (offset, bytes), any of them.
# raw and rgba have none: an existing file there is never replaced (nothing says it is an image).
IMAGE_SIGNATURES = {
    "png": ((0, b"\x89PNG\r\n\x1a\n"),), "pdf": ((0, b"%PDF-"),), "eps": ((0, b"%!PS"),), "ps": ((0, b"%!PS"),),
    "jpg": ((0, b"\xff\xd8\xff"),), "jpeg": ((0, b"\xff\xd8\xff"),), "gif": ((0, b"GIF87a"), (0, b"GIF89a")),
    "tif": ((0, b"II*\x00"), (0, b"MM\x00*")), "tiff": ((0, b"II*\x00"), (0, b"MM\x00*")),
    "svgz": ((0, b"\x1f\x8b"),), "pgf": ((0, b"%% Creator: Matplotlib"),), "webp": ((8, b"WEBP"),),
    "avif": ((4, b"ftypavif"), (4, b"ftypavis")),
}


def relmodel_attrs(path, suffix: str | None = None) -> dict | None:
    """Return the root attributes of a relmodel Dataset output at `path`, or None.

    Parameters
    ----------
    path : str or pathlib.Path
        A ``.zarr`` folder or a ``.nc`` file.
    suffix : {".zarr", ".nc"}, optional
        Its format, where not its own suffix (the link that named it says).

    Returns
    -------
    dict or None
        The attributes where they name relmodel as the writer (``relmodel_version``,
        which every command's Dataset carries, or a study's ``study_fingerprint``);
        None for anything else (nothing there, another Dataset, a file that does not read).
    """
    path = Path(path)
    suffix = suffix or path.suffix
    try:
        if path.is_dir() and suffix == ".zarr":
            attrs = json.loads((path / ".zattrs").read_text())
        elif path.is_file() and suffix == ".nc":
            if netcdf_seal_problem(path):  # damaged: HDF5 could loop for ever reading it
                return None
            import h5py

            with h5py.File(path, "r") as f:
                attrs = {key: f.attrs[key] for key in ("study_fingerprint", "relmodel_version", "title")
                         if key in f.attrs}
        else:
            return None
    except Exception:  # unreadable: nothing we can call ours
        return None
    return attrs if isinstance(attrs, dict) and ({"study_fingerprint", "relmodel_version"} & set(attrs)) else None


def holds_study(path) -> bool:
    """Whether `path` holds a relmodel study (a study's zarr store or netCDF file), finished or not.

    Parameters
    ----------
    path : str or pathlib.Path
        An output path.

    Returns
    -------
    bool
        True where its attributes carry a study fingerprint; False for anything
        else (nothing there, another Dataset, a file that does not read).
    """
    return "study_fingerprint" in (relmodel_attrs(path) or {})


def _is_kind(path: Path, kind: str, suffix: str) -> bool:
    """Whether the existing `path` is an output of `kind` (in the format `suffix` names) that a
    writer of that kind may replace; a Dataset is judged by its `relmodel_attrs`, not here."""
    if not path.is_file():
        return False
    with open(path, "rb") as f:
        head = f.read(4096)
    if not head:  # an empty file holds nothing to lose
        return True
    if kind == "json":
        try:
            json.loads(path.read_bytes())
        except (OSError, ValueError):
            return False
        return True
    fmt = suffix.lstrip(".").lower()
    if fmt == "svg":  # text: an XML declaration or the element itself first
        return head.lstrip().startswith((b"<?xml", b"<svg")) and b"<svg" in head
    return any(head[at:at + len(sig)] == sig for at, sig in IMAGE_SIGNATURES.get(fmt, ()))


_WHAT = {"dataset": {".zarr": "relmodel zarr store", ".nc": "relmodel netCDF output"}, "json": "JSON file"}


def judge_output(path, kind: str, *, parameter: str, overwrite: bool = True) -> Path:
    """Judge an output path before anything is written there; return where the output goes.

    A symbolic link is followed and its target judged, in the format the
    link's own suffix names. Nothing there: written.
    An output of the same kind there (a relmodel Dataset for ``"dataset"``, an
    image of the suffix's format for ``"figure"``, a JSON document for
    ``"json"``; an empty file for either of the last two) is replaced when
    `overwrite` allows it. Anything else (a folder, another file, a store
    relmodel did not write) is refused and left as it is, whatever `overwrite`
    says.

    Parameters
    ----------
    path : str or pathlib.Path
        The output path as given.
    kind : {"dataset", "figure", "json"}
        What will be written: a Dataset (``.zarr`` folder or ``.nc`` file, by
        suffix), a figure (its format by suffix), or a JSON report.
    parameter : str
        The flag or parameter that named the path, named in a refusal.
    overwrite : bool, default True
        Whether an output of this kind there may be replaced (a command's
        ``--overwrite``; figures and JSON reports are redrawn without one).

    Returns
    -------
    pathlib.Path
        Where to write: through a link, its target (`write_path`).

    Raises
    ------
    OutputError
        If the path holds something that is not an output of this kind, or an
        output of this kind and `overwrite` is False.
    """
    given, path = Path(path), write_path(path)
    suffix = given.suffix
    recover_interrupted(path)
    if not path.exists():
        return path
    shown = f"{given} (a link to {path})" if given != path else str(path)
    found = "a folder" if path.is_dir() else "a file"
    if kind == "dataset" and path.is_dir() != (suffix == ".zarr"):
        raise OutputError(parameter, f"{shown} is {found}; a {suffix} output is "
                                     f"{'a folder' if suffix == '.zarr' else 'a file'}. It was not touched: choose "
                                     f"another {parameter}")
    # A .nc file's attributes are read after its whole seal is checked: once, for both questions.
    attrs = relmodel_attrs(path, suffix) if kind == "dataset" else None
    ours = attrs is not None if kind == "dataset" else _is_kind(path, kind, suffix)
    if not ours:
        what = _WHAT["dataset"][suffix] if kind == "dataset" else _WHAT.get(kind) or f"{suffix[1:].upper()} image"
        raise OutputError(parameter, f"{shown} is {found} that is not a {what}; it was not touched (choose another "
                                     f"{parameter}, or move it away)")
    if not overwrite:
        attrs = attrs or {}
        what = ("a relmodel study" if "study_fingerprint" in attrs
                else f"a relmodel output ({attrs['title']})" if attrs.get("title") else "a relmodel output")
        raise OutputError(parameter, f"{shown} holds {what}; it was not replaced (pass --overwrite to replace it, "
                                     f"or choose another {parameter})")
    return path


@contextmanager
def exclusive(store: Path, fingerprint: str, label: str):
    """Hold the store's lock for the block, or refuse at once if another run holds it.

    Parameters
    ----------
    store : pathlib.Path
        The store (or ``.nc`` output) to write.
    fingerprint : str
        The study's fingerprint (`relmodel._study.Study.fingerprint`); "" for a
        writer that is not a study (``relmodel simulate --out``, say).
    label : str
        What names the writer to a person: the study's file, or the command;
        "" when it has none.

    Yields
    ------
    None

    Raises
    ------
    relmodel._study.StudyError
        If another run (of this study, another, or any command writing the
        same output, however spelled: `output_identity`) holds the lock: one
        line naming the store and both writers. Also if the folder the output
        resolves to does not exist, or its lock file cannot be made there.
    """
    require("filelock", "a study's store")
    path = lock_path(store)
    if not path.parent.is_dir():  # filelock would make the folders; a missing one is a wrong path
        raise StudyError(str(store), f"no such folder: {path.parent}")
    lock = _acquire_named_lock(path)
    if lock is None:
        try:  # a lock file that cannot be made at all is the place, not another run holding it
            with open(path, "a"):
                pass
        except OSError as err:
            raise StudyError(str(store), f"cannot make its lock file {path} "
                                         f"({err.strerror or err}); choose another --out") from None
        raise StudyError(str(store), _busy_reason(store, fingerprint, label)) from None
    holder = path.with_name(path.name + ".json")
    try:
        _write_atomically(holder, json.dumps({
            "study_fingerprint": fingerprint, "study": label, "pid": os.getpid(), "host": socket.gethostname(),
            "since": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}))
        yield
    finally:
        holder.unlink(missing_ok=True)
        # Removed while still held, so that nothing is left beside the output: a run that
        # opened this file meanwhile finds it gone once it locks it, and locks the new one.
        path.unlink(missing_ok=True)
        lock.release()


class _LockFileReplaced(Exception):
    """The file locked is no longer the one at the lock's path: its holder removed it on finishing."""


LOCK_ATTEMPTS = 5  # each retry follows a holder that finished at that moment; a busy lock answers at once


def _acquire_named_lock(path: Path):
    """Lock `path` without waiting: the FileLock held, or None when another run holds it.

    The lock is the file at `path` itself (not an earlier file of that name that
    its holder removed on release, `exclusive`): after locking, the open file must
    still be the one the path names, or the lock is dropped and taken again.
    """
    from filelock import FileLock, Timeout

    def same_file(fd: int):
        try:
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                return
        except FileNotFoundError:
            pass
        raise _LockFileReplaced

    for _ in range(LOCK_ATTEMPTS):
        lock = FileLock(path, thread_local=False, on_acquired=same_file)
        try:
            lock.acquire(timeout=0)
            return lock
        except _LockFileReplaced:
            continue
        except Timeout:  # held; or a file removed between opening and locking it (filelock then declines it)
            if path.exists():
                return None
    return None


def _busy_reason(store: Path, fingerprint: str, label: str) -> str:
    holder = _holder(lock_path(store).with_name(lock_path(store).name + ".json"))
    this = writer_name(label, fingerprint)
    if fingerprint and holder.get("study_fingerprint") == fingerprint:
        return (f"another run of this study ({this}; pid {holder.get('pid')} on {holder.get('host')}) "
                f"is writing it; wait for it to finish (it leaves the same store)")
    other = (writer_name(holder.get("study", ""), holder["study_fingerprint"]) if "study_fingerprint" in holder
             else "a run that has not said which")
    return f"is being written by another run ({other}); this one ({this}) was not started: choose another --out"


def writer_name(label: str, fingerprint: str) -> str:
    """Name a writer to a person: a study (`study_name`), or a command without a fingerprint.

    Parameters
    ----------
    label : str
        The study file, or the command (``"relmodel simulate"``), or "".
    fingerprint : str
        The study's fingerprint; "" for a command that writes no study.

    Returns
    -------
    str
        For example ``"study.toml, fingerprint 83b73dd716219be6"`` or ``"relmodel simulate"``.
    """
    return study_name(label, fingerprint) if fingerprint else (label or "a relmodel command")


def _holder(path: Path, patience_s: float = 5.0) -> dict:
    """Who holds the lock, as its holder wrote it down just after taking it: waits out
    that moment (and a dead run's stale note), then gives up on a name."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            holder = json.loads(path.read_text())
            if holder.get("host") != socket.gethostname() or _alive(int(holder["pid"])):
                return holder
        except (OSError, ValueError, KeyError, TypeError):
            pass
        if time.monotonic() > deadline:
            return {}
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def study_name(label: str, fingerprint: str) -> str:
    """Name a study to a person: its file (when it has one) and its fingerprint.

    Parameters
    ----------
    label : str
        The study file, or "".
    fingerprint : str
        The study's fingerprint.

    Returns
    -------
    str
        For example ``"study.toml, fingerprint 83b73dd716219be6"``.
    """
    return f"{label}, fingerprint {fingerprint}" if label else f"fingerprint {fingerprint}"


# ---- atomic creation ---------------------------------------------------------------

def _temporary(path: Path, role: str = _CREATING) -> Path:
    return path.with_name(f".{path.name}{role}{os.getpid()}")


def _leftovers(path: Path, role: str):
    """Hidden siblings of `path` left by writers that are no longer running (killed)."""
    for left in path.parent.glob(f".{glob.escape(path.name)}{role}*"):
        pid = left.name.rpartition(role)[2]
        if pid.isdigit() and not _alive(int(pid)):
            yield left


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def recover_interrupted(path) -> None:
    """Undo what a killed writer of `path` left: its hidden temporaries are removed, and an old
    folder it had moved aside to put a new one in place is put back where that never happened.

    Parameters
    ----------
    path : str or pathlib.Path
        An output path (through a link, its target: `write_path`).
    """
    path = Path(path)
    if not path.parent.is_dir():
        return
    for aside in _leftovers(path, _REPLACED):
        if path.exists() or path.is_symlink():  # the new one made it into place: the old is done with
            _remove(aside)
        else:
            os.rename(aside, path)
    for left in _leftovers(path, _CREATING):
        _remove(left)


def write_atomically(path, write) -> None:
    """Write an output (a file, or a folder such as a zarr store) under a hidden temporary
    name beside it, then put it in place in one step.

    A file is replaced by one rename. An existing folder is exchanged with the new one
    in one step where the system can (Linux ``renameat2``), else moved aside first and
    put back if the new one does not make it. A fault (an exception, a full disk, the
    file size limit) removes the temporary and leaves the old output, or nothing; a
    kill leaves a hidden temporary, which the next write of the path removes
    (`recover_interrupted`).

    Parameters
    ----------
    path : str or pathlib.Path
        The output's final path (judged already: `judge_output`).
    write : callable
        Called with the temporary path; writes the whole output there.
    """
    path = Path(path)
    recover_interrupted(path)
    building = _temporary(path)
    try:
        write(building)
        if building.is_dir() and path.is_dir() and not path.is_symlink():
            _replace_folder(building, path)
        else:
            rename(building, path)
    except BaseException:  # nothing half-built is left (a kill leaves it to the next run)
        _remove(building)
        raise


def _replace_folder(new: Path, old: Path) -> None:
    """Put the folder `new` in the place of the folder `old`; the old one is removed."""
    if _exchange(new, old):  # now `new` names the old folder
        _remove(new)
        return
    aside = _temporary(old, _REPLACED)
    os.rename(old, aside)
    try:
        rename(new, old)
    except BaseException:
        os.rename(aside, old)
        raise
    _remove(aside)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where the
    system or filesystem cannot."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except AttributeError:  # a C library without it
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def create_atomically(store: Path, build) -> None:
    """Build a new store under a hidden temporary name, then rename it into place.

    Call with the store's lock held (`write_atomically`: leftovers of killed
    creations are removed).

    Parameters
    ----------
    store : pathlib.Path
        Where the store will be; it must not exist.
    build : callable
        Called with the temporary path; writes the whole store there.
    """
    write_atomically(store, build)


def save_figure(fig, path, parameter: str = "path") -> None:
    """Save a figure to `path` in the format its suffix names, judged and written as every
    output is (`judge_output`, `write_atomically`): an image of that format there is
    replaced, anything else refused; a fault leaves the old image or nothing.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure.
    path : str, pathlib.Path or file object
        The image file (a file object is written as given, in the default format).
    parameter : str, default "path"
        What named the path, named in a refusal.

    Raises
    ------
    OutputError
        If `path` holds something that is not an image of its format.
    """
    if not isinstance(path, (str, os.PathLike)):  # a file object: the caller's to judge
        fig.savefig(path, dpi=120)
        return
    fmt = Path(path).suffix.lstrip(".").lower()  # as named: a link's target may have another suffix
    path = judge_output(path, "figure", parameter=parameter)
    write_atomically(path, lambda temporary: fig.savefig(temporary, dpi=120, format=fmt))


def write_json_file(text: str, path, parameter: str = "path") -> None:
    """Write a JSON report to `path`, judged and written as every output is (`judge_output`,
    `write_atomically`): a JSON file there is replaced, anything else refused.

    Parameters
    ----------
    text : str
        The JSON document.
    path : str or pathlib.Path
        The file.
    parameter : str, default "path"
        What named the path, named in a refusal.

    Raises
    ------
    OutputError
        If `path` holds something that is not a JSON document.
    """
    path = judge_output(path, "json", parameter=parameter)
    write_atomically(path, lambda temporary: Path(temporary).write_text(text))


def rename(source: Path, target: Path) -> None:
    """Move a file or folder into place in one step that a kill cannot split.

    Parameters
    ----------
    source : pathlib.Path
        What was written under a temporary name.
    target : pathlib.Path
        Its place (replaced if a file; on the same filesystem).
    """
    os.replace(source, target)


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    rename(partial, path)


# ---- verified chunks -----------------------------------------------------------------

def chunk_id(region) -> str:
    """Name a chunk by its first grid index along each sweep dim.

    Parameters
    ----------
    region : tuple of tuple of int
        ``(start, stop)`` per sweep dim.

    Returns
    -------
    str
        ``"chunk-<start>-<start>..."`` (``"chunk-0"`` for a grid without sweep dims).
    """
    return "chunk-" + "-".join(f"{a}" for a, _ in region) if region else "chunk-0"


def checksum(arrays: dict) -> str:
    """SHA-256 of a chunk's values: every output in name order, as float64 in C order,
    every NaN as the one quiet NaN (a format may store another NaN's bits than were computed).

    Parameters
    ----------
    arrays : dict of str to numpy.ndarray
        One array per output.

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    return _sha256_by_name(arrays, lambda name, values: (name.encode() + b"\0", _float_bytes(values)))


def _sha256_by_name(mapping, entry_bytes) -> str:
    """SHA-256 of each entry's ``entry_bytes(name, value)`` pieces, the entries in name order
    (so that the digest does not depend on the mapping's order)."""
    digest = hashlib.sha256()
    for name in sorted(mapping):
        for piece in entry_bytes(name, mapping[name]):
            digest.update(piece)
    return digest.hexdigest()


def _float_bytes(values) -> bytes:
    """Little-endian float64 in C order, every NaN as the one quiet NaN."""
    values = np.asarray(values, dtype="<f8")
    return np.ascontiguousarray(np.where(np.isnan(values), np.nan, values), dtype="<f8").tobytes()


COORDS_ATTR = "coords_sha256"  # the store attribute holding `coords_checksum` of its coordinates


def coords_checksum(coords) -> str:
    """SHA-256 of a study's coordinates: each in name order, with its dims and values.

    Numbers are hashed as little-endian float64 or int64, anything else (labels)
    as its text, so the digest does not depend on how a format stores them.

    Parameters
    ----------
    coords : mapping of str to xarray.DataArray
        The coordinates (``Dataset.coords``).

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    return _sha256_by_name(coords, _coordinate_bytes)


def _coordinate_bytes(name: str, coord) -> tuple[bytes, bytes]:
    """A coordinate's name, dims and shape, then its values (`coords_checksum` says how)."""
    values = np.asarray(coord.values)
    header = f"{name}\0{','.join(coord.dims)}\0{values.shape}\0".encode()
    if values.dtype.kind == "f":
        return header, _float_bytes(values)
    if values.dtype.kind in "iub":
        return header, np.ascontiguousarray(values, dtype="<i8").tobytes()
    return header, "\x1f".join(map(str, values.ravel())).encode()


def coordinate_problems(ds) -> dict[str, str]:
    """Check a study's coordinates against the checksum recorded when it was created.

    Parameters
    ----------
    ds : xarray.Dataset
        The study, as read (coordinates and attrs).

    Returns
    -------
    dict of str to str
        ``{"coordinates": why}`` when they cannot be read or do not match;
        empty when they match, or when no checksum was recorded (a study
        written before relmodel 0.2.1; a RuntimeWarning says they are not checked).
    """
    recorded = ds.attrs.get(COORDS_ATTR)
    if recorded is None:
        import warnings

        warnings.warn("the study's coordinates are not checked: it was written before relmodel 0.2.1 recorded "
                      "their checksum", RuntimeWarning, stacklevel=3)
        return {}
    try:
        found = coords_checksum(ds.coords)
    except Exception as err:  # a coordinate's chunk that fails to decode
        return {"coordinates": f"unreadable: {type(err).__name__}: {err}".splitlines()[0]}
    if found != recorded:
        return {"coordinates": "altered or lost: the grid's coordinates do not match their checksum (a coordinate "
                               "file deleted or changed?)"}
    return {}


CONTENT_ATTR = "content_sha256"  # the study attribute holding `content_record`, as JSON text
# What decides how a variable's stored values decode (xarray keeps these in its encoding).
DECODING = ("dtype", "_FillValue", "missing_value", "scale_factor", "add_offset", "units", "calendar", "coordinates")
# The attributes a study had before its content was recorded: one more means a damaged record's name.
UNRECORDED_STUDY_ATTRS = frozenset({"title", "relmodel_version", "created", "study_fingerprint", "study_file",
                                    "study_source", "seed", "n_jobs", "backend", "max_failures", "rng", "chunks",
                                    "status", COORDS_ATTR, "completed"})
VALUES_ALTERED = "values altered: they do not match their checksum"
UNREADABLE = "unreadable: "
_SLAB_BYTES = 64 * 2**20  # values are hashed a slab of this size at a time


def content_record(ds, values: bool = True) -> dict:
    """What a reader of a study gets, as digests: every variable's dims, dtype, shape,
    attributes, decoding (`DECODING`) and (for data variables) values, and every study attribute.

    Each attribute, decoding key and data variable's values has its own SHA-256,
    so that a mismatch names what changed. Coordinates' values are `coords_checksum`'s.
    Values are read a slab of whole on-disk chunks at a time: one pass, bounded memory.

    Parameters
    ----------
    ds : xarray.Dataset
        The study, as read (lazily or loaded).
    values : bool, default True
        Also the data variables' values; False reads no data.

    Returns
    -------
    dict
        ``{"attrs": {name: digest}, "variables": {name: {"dims", "dtype", "shape",
        "attrs", "decoding"[, "values"]}}}``, JSON-ready.
    """
    variables = {}
    for name, variable in ds.variables.items():
        entry = {"dims": list(variable.dims), "dtype": variable.dtype.str, "shape": list(variable.shape),
                 "attrs": _digests(variable.attrs),
                 "decoding": _digests({key: variable.encoding[key] for key in DECODING if key in variable.encoding})}
        if values and name in ds.data_vars:
            try:
                entry["values"] = _values_digest(variable)
            except Exception as err:  # a chunk that fails to read or decode
                entry["values"] = f"{UNREADABLE}{type(err).__name__}: {err}".splitlines()[0]
        variables[name] = entry
    return {"attrs": _digests({k: v for k, v in ds.attrs.items() if k != CONTENT_ATTR}), "variables": variables}


def _digests(mapping) -> dict[str, str]:
    return {key: hashlib.sha256(_canonical(value).encode()).hexdigest()[:32] for key, value in mapping.items()}


def _canonical(value) -> str:
    """An attribute's value as JSON text, the same whichever format held it (netCDF reads a list
    as an array, and one of one element as its element)."""
    if isinstance(value, np.dtype):
        return json.dumps(value.str)
    if isinstance(value, (np.ndarray, np.generic)):
        value = value.tolist()
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    return json.dumps(value, sort_keys=True, default=str)


def _values_digest(variable) -> str:
    digest = hashlib.sha256()
    if variable.ndim == 0:
        digest.update(_value_bytes(variable.values))
        return digest.hexdigest()
    chunk = (variable.encoding.get("chunks") or variable.encoding.get("chunksizes") or (1,))[0]
    row_bytes = max(1, variable.dtype.itemsize * int(np.prod(variable.shape[1:])))
    rows = max(chunk, _SLAB_BYTES // row_bytes // chunk * chunk)
    for start in range(0, variable.shape[0], rows):
        digest.update(_value_bytes(variable[start:start + rows].values))
    return digest.hexdigest()


def _value_bytes(values) -> bytes:
    """Values in C order, little-endian, every NaN as the one quiet NaN; text as UTF-8."""
    values = np.asarray(values)
    if values.dtype.kind == "f":
        little = values.dtype.newbyteorder("<")
        return np.ascontiguousarray(np.where(np.isnan(values), np.nan, values), dtype=little).tobytes()
    if values.dtype.kind in "iubmM":
        return np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<")).tobytes()
    return "\x1f".join(map(str, values.ravel())).encode()


def record_content(ds) -> str:
    """`content_record` as the JSON text kept in the study's `CONTENT_ATTR`.

    Parameters
    ----------
    ds : xarray.Dataset
        The finished study, as read.

    Returns
    -------
    str
        Compact JSON.
    """
    record = content_record(ds)
    unreadable = [name for name, entry in record["variables"].items()
                  if entry.get("values", "").startswith(UNREADABLE)]
    if unreadable:
        raise OSError(f"{', '.join(unreadable)} cannot be read back: {record['variables'][unreadable[0]]['values']}")
    return json.dumps(record, separators=(",", ":"), sort_keys=True)


def content_problems(ds, values: bool = True) -> dict[str, str]:
    """Check what a study reads as against the record made when it was finished (`record_content`).

    Parameters
    ----------
    ds : xarray.Dataset
        The study, as read (its data variables are read in full).
    values : bool, default True
        Also check the data variables' values; False reads no data.

    Returns
    -------
    dict of str to str
        By variable name (``"attributes"`` for the study's own), what differs:
        its dims, dtype, shape, values, an attribute or a decoding key (named),
        or a variable lost or not recorded; ``{"attributes": ...}`` when the
        record itself does not read; a variable's values "unreadable: ..." when
        they fail to read or decode. Empty when all matches, when the study is not finished (its chunks
        vouch for it), or when no record was kept (a study finished before
        relmodel recorded it: a RuntimeWarning says its content is not checked).
    """
    text = ds.attrs.get(CONTENT_ATTR)
    if text is None and ds.attrs.get("status") != "complete":
        return {}
    if text is None:
        unknown = sorted(set(ds.attrs) - UNRECORDED_STUDY_ATTRS)
        if unknown:
            return {"attributes": f"its content record ({CONTENT_ATTR}) is missing and it has attributes relmodel "
                                  f"does not write ({', '.join(unknown)}): altered"}
        import warnings

        warnings.warn("the study's variables and attributes are checked by their chunks and coordinates only: it was "
                      f"finished before relmodel recorded its content ({CONTENT_ATTR})", RuntimeWarning, stacklevel=3)
        return {}
    try:
        recorded = json.loads(text)
        recorded_attrs, recorded_variables = dict(recorded["attrs"]), dict(recorded["variables"])
    except (TypeError, ValueError, KeyError) as err:
        return {"attributes": f"its content record ({CONTENT_ATTR}) does not read ({type(err).__name__}): altered"}
    found = content_record(ds, values)
    problems = {}
    attrs = _mapping_problems("attribute", recorded_attrs, found["attrs"])
    if attrs:
        problems["attributes"] = "; ".join(attrs)
    for name in sorted(set(recorded_variables) | set(found["variables"])):
        if name not in found["variables"]:
            problems[name] = "lost: the variable was recorded and is not in the study"
            continue
        if name not in recorded_variables:
            problems[name] = "not recorded: a variable the finished study did not have"
            continue
        was, now = recorded_variables[name], found["variables"][name]
        differences = [f"{key} altered (recorded {was.get(key)}, read {now[key]})"
                       for key in ("dims", "dtype", "shape") if was.get(key) != now[key]]
        differences += _mapping_problems("attribute", was.get("attrs", {}), now["attrs"])
        differences += _mapping_problems("decoding attribute", was.get("decoding", {}), now["decoding"])
        if values and was.get("values") != now.get("values"):
            differences.append(now["values"] if now["values"].startswith(UNREADABLE) else VALUES_ALTERED)
        if differences:
            problems[name] = "; ".join(differences)
    return problems


def _mapping_problems(kind: str, recorded: dict, found: dict) -> list[str]:
    return [f"{kind} {key} " + ("lost" if key not in found else "not recorded (added)" if key not in recorded
                                else "altered")
            for key in sorted(set(recorded) | set(found)) if recorded.get(key) != found.get(key)]


class ChunkWriter:
    """Writes finished chunks into an open store: the data, then the chunk's marker.

    Plain zarr slice assignment: the template already fixed dtypes, fill values
    and dimension names, and reopening the store through xarray for every chunk
    costs tens of milliseconds.

    Parameters
    ----------
    store : pathlib.Path
        The study's zarr store.
    outputs : sequence of str
        The arrays written.
    """

    def __init__(self, store: Path, outputs):
        import zarr

        self.store = store
        group = zarr.open_group(store, mode="r+", zarr_format=ZARR_FORMAT, use_consolidated=False)
        self.arrays = {name: group[name] for name in outputs}

    def write(self, region, arrays: dict):
        """Write one chunk's arrays to their region, then mark the chunk done.

        Parameters
        ----------
        region : tuple of tuple of int
            ``(start, stop)`` grid indices per sweep dim.
        arrays : dict of str to numpy.ndarray
            One array per output, shaped like the region.
        """
        index = tuple(slice(a, b) for a, b in region)
        for name, value in arrays.items():
            self.arrays[name][index] = value
        self.mark_done(region, checksum(arrays))

    def mark_done(self, region, digest: str):
        """Make the chunk's marker: its checksum first, the group's metadata renamed into place last.

        Parameters
        ----------
        region : tuple of tuple of int
            The chunk.
        digest : str
            `checksum` of its values.
        """
        folder = self.store / DONE_DIR / chunk_id(region)
        folder.mkdir(exist_ok=True)
        _write_atomically(folder / ".zattrs", json.dumps({"sha256": digest}))
        _write_atomically(folder / ".zgroup", json.dumps({"zarr_format": ZARR_FORMAT}))


def done_chunks(store: Path) -> dict[str, str]:
    """Return the chunks whose marker exists, with the checksum each recorded.

    Parameters
    ----------
    store : str or pathlib.Path
        The study's zarr store.

    Returns
    -------
    dict of str to str
        Chunk id (`chunk_id`) to SHA-256; a marker whose checksum cannot be
        read is left out (its chunk is not done).
    """
    done = {}
    for group in (Path(store) / DONE_DIR).glob("*/.zgroup"):
        try:
            done[group.parent.name] = json.loads((group.parent / ".zattrs").read_text())["sha256"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return done


def unmark(store: Path, ids) -> None:
    """Remove the markers of chunks to compute again (their data stays until overwritten).

    Parameters
    ----------
    store : pathlib.Path
        The study's zarr store.
    ids : iterable of str
        Chunk ids.
    """
    for cid in ids:
        shutil.rmtree(Path(store) / DONE_DIR / cid, ignore_errors=True)


def verify(store: Path, regions, outputs) -> dict[str, str]:
    """Read every chunk back and check it against its recorded checksum.

    Parameters
    ----------
    store : pathlib.Path
        The study's zarr store.
    regions : iterable of tuple of tuple of int
        Every chunk of the grid (`relmodel._study.chunk_regions`).
    outputs : sequence of str
        The arrays of the store.

    Returns
    -------
    dict of str to str
        Chunk id to what is wrong with it ("not computed", "unreadable: ...",
        "altered or lost: ..."), for every chunk that is not whole; empty for a
        sound store.
    """
    import zarr

    group = zarr.open_group(store, mode="r", zarr_format=ZARR_FORMAT, use_consolidated=False)
    recorded = done_chunks(store)
    problems = {}
    for region in regions:
        cid = chunk_id(region)
        if cid not in recorded:
            problems[cid] = "not computed"
            continue
        index = tuple(slice(a, b) for a, b in region)
        try:
            values = {name: group[name][index] for name in outputs}
        except Exception as err:  # a truncated or garbled chunk file fails to decode
            problems[cid] = f"unreadable: {type(err).__name__}: {err}".splitlines()[0]
            continue
        if checksum(values) != recorded[cid]:
            problems[cid] = "altered or lost: its values do not match their checksum (a chunk file deleted or changed?)"
    return problems


def consolidated_readable(store: Path) -> bool:
    """Whether the store's consolidated metadata is there and reads (a kill, or damage, may leave it out).

    Parameters
    ----------
    store : pathlib.Path
        The study's zarr store.

    Returns
    -------
    bool
        False where ``.zmetadata`` is missing or is not JSON; `set_status` writes it anew.
    """
    try:
        json.loads((Path(store) / ".zmetadata").read_text())
    except (OSError, ValueError):
        return False
    return True


def set_status(store: Path, status: str) -> None:
    """Record the store's status; "complete" also records its content (`record_content`)
    and consolidates its metadata.

    Any other status removes consolidated metadata and the content record
    first, so that no reader takes a stale "complete" or record from them.

    Parameters
    ----------
    store : pathlib.Path
        The study's zarr store.
    status : {"running", "complete"}
        The new status.
    """
    import zarr

    if status != "complete":
        (Path(store) / ".zmetadata").unlink(missing_ok=True)
    group = zarr.open_group(store, mode="r+", zarr_format=ZARR_FORMAT, use_consolidated=False)
    group.attrs.pop(CONTENT_ATTR, None)
    group.attrs["status"] = status
    if status == "complete":
        import xarray as xr

        group.attrs["completed"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        with xr.open_zarr(store, consolidated=False) as ds:
            group.attrs[CONTENT_ATTR] = record_content(ds)
        zarr.consolidate_metadata(store, zarr_format=ZARR_FORMAT)


def write_zarr(ds, path) -> None:
    """Write a Dataset as a zarr store that any zarr reader opens without a warning.

    Parameters
    ----------
    ds : xarray.Dataset
        The Dataset to write.
    path : str or pathlib.Path
        The store's folder; replaced if it exists, in one step once the new
        store is whole (`write_atomically`): a fault leaves the old store or nothing.

    Raises
    ------
    relmodel._extras.MissingExtraError
        If zarr is not installed (``pip install 'relmodel[studies]'``).
    """
    require("zarr", "a .zarr output")
    write_atomically(path, lambda temporary: ds.to_zarr(temporary, mode="w-", zarr_format=ZARR_FORMAT,
                                                        consolidated=True))


def check_room(path: Path, nbytes: int):
    """Refuse a file of about `nbytes` that the disk or the file size limit
    (ulimit -f) cannot hold, before writing: HDF5 cut off mid-write can crash
    the process (a segfault at exit), not only raise.

    Parameters
    ----------
    path : pathlib.Path
        The file to write.
    nbytes : int
        The data it holds; the file takes about this much and some metadata.

    Raises
    ------
    OSError
        EFBIG or ENOSPC, with the sizes.
    """
    need = int(nbytes * 1.05) + 2**20
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0] if resource is not None else -1
    if limit not in (-1, getattr(resource, "RLIM_INFINITY", -1)) and need > limit:
        raise OSError(errno.EFBIG, f"the file size limit (ulimit -f) is {limit} bytes; this file needs about "
                                   f"{need} bytes")
    free = shutil.disk_usage(path.parent).free
    if need > free:
        raise OSError(errno.ENOSPC, f"{free} bytes free on its disk; this file needs about {need} bytes")


# A netCDF file relmodel writes ends in this line after HDF5's own end of file
# (where every HDF5 and netCDF reader ignores it): the SHA-256 of all bytes before
# it. HDF5 checksums only some of its metadata, and a damaged byte elsewhere can
# send its reader into an endless loop, so a file is checked before HDF5 reads it.
SEAL_TAG = b"\nrelmodel-sha256 "
SEAL_SIZE = len(SEAL_TAG) + 64 + 1
_READ_BLOCK = 1 << 20


def _sha256_of_head(f, size: int) -> str:
    digest = hashlib.sha256()
    f.seek(0)
    while size > 0:
        block = f.read(min(_READ_BLOCK, size))
        if not block:
            break
        digest.update(block)
        size -= len(block)
    return digest.hexdigest()


def seal_netcdf(path) -> None:
    """Append the seal (`SEAL_TAG`, the SHA-256 of the file so far) to a netCDF file just written."""
    with open(path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        seal = SEAL_TAG + _sha256_of_head(f, size).encode() + b"\n"
        f.seek(size)
        f.write(seal)


def netcdf_seal_problem(path) -> str | None:
    """Why a netCDF file's bytes are not those relmodel wrote, or None.

    None also for a file without a seal (written by another program, or by an
    earlier relmodel; a program that edits a file in place drops it): such a file
    is read as it is, with HDF5's own checks only.
    """
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        if size < SEAL_SIZE:
            return None
        f.seek(size - SEAL_SIZE)
        seal = f.read(SEAL_SIZE)
        if not (seal.startswith(SEAL_TAG) and seal.endswith(b"\n")):
            return None
        recorded = seal[len(SEAL_TAG):-1]
        if recorded != _sha256_of_head(f, size - SEAL_SIZE).encode():
            return ("its bytes do not match the SHA-256 written at its end (the file was damaged or altered "
                    "after it was written)")
    return None


def write_netcdf(ds, path, groups=None, checksums: bool = False) -> None:
    """Write a Dataset (and optional groups) as netCDF under a hidden temporary name, then rename it.

    A reader never meets a half-written file, a killed writer leaves only a
    hidden ``.<name>.creating-<pid>`` (removed by the next write of the path),
    and a write that fails leaves the old file or nothing (`write_atomically`).
    The file ends in its seal (`seal_netcdf`), checked before HDF5 reads it.

    Parameters
    ----------
    ds : xarray.Dataset
        The root group.
    path : str or pathlib.Path
        The ``.nc`` file; replaced if it exists.
    groups : dict of str to xarray.Dataset, optional
        Further groups by name (None values are left out).
    checksums : bool, default False
        HDF5 fletcher32 checksums on every variable, so that a damaged file
        fails to read.

    Raises
    ------
    relmodel._extras.MissingExtraError
        If h5netcdf is not installed (``pip install 'relmodel[studies]'``).
    """
    require("h5netcdf", "a .nc output")
    path = Path(path)
    check_room(path, SEAL_SIZE + sum(data.nbytes for data in (ds, *(groups or {}).values()) if data is not None))

    def write(partial):
        for group, data in {None: ds, **(groups or {})}.items():
            if data is None:
                continue
            encoding = {name: {"fletcher32": True} for name in data.data_vars} if checksums else None
            data.to_netcdf(partial, engine="h5netcdf", group=group, mode="w" if group is None else "a",
                           encoding=encoding)
        seal_netcdf(partial)

    write_atomically(path, write)
