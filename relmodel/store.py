"""A study's zarr store, kept the way a database keeps its data.

- One writer: a run holds an operating-system lock on ``<store>.lock`` for as
  long as it writes (`filelock`, which takes ``flock`` on POSIX: it assumes a
  filesystem with working advisory locks, a local disk or NFSv4 with locking,
  not a share that ignores them). A second run is refused at once, naming the
  store and both studies; ``<store>.lock.json`` says who holds the lock.
- Atomic creation: a new store is written in full under a hidden temporary
  name beside it, then renamed into place, so a store exists whole or not at
  all.
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
import hashlib
import json
import os
import shutil
import socket
import time
from contextlib import contextmanager
from pathlib import Path

try:
    import resource
except ImportError:  # not POSIX: no file size limit to check
    resource = None

import numpy as np

from ._extras import require
from .study import StudyError

ZARR_FORMAT = 2
DONE_DIR = "relmodel_done"
_CREATING = ".creating-"  # hidden sibling a new store is built under: .<name>.creating-<pid>


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
    """Return where a writer writes `path`: through a symbolic link to what it names, as
    its lock (`lock_path`) is taken there (else the lock would guard the target while the
    data replaced the link); any other path as given.

    Parameters
    ----------
    path : str or pathlib.Path
        An output path, existing or not.

    Returns
    -------
    pathlib.Path
        The path the data goes to.
    """
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
    path = Path(path)
    try:
        if path.is_dir():
            return "study_fingerprint" in json.loads((path / ".zattrs").read_text())
        if path.is_file() and path.suffix == ".nc":
            import h5py

            with h5py.File(path, "r") as f:
                return "study_fingerprint" in f.attrs
    except Exception:  # unreadable: not something we can call a study
        return False
    return False


@contextmanager
def exclusive(store: Path, fingerprint: str, label: str):
    """Hold the store's lock for the block, or refuse at once if another run holds it.

    Parameters
    ----------
    store : pathlib.Path
        The store (or ``.nc`` output) to write.
    fingerprint : str
        The study's fingerprint (`relmodel.study.Study.fingerprint`); "" for a
        writer that is not a study (``relmodel simulate --out``, say).
    label : str
        What names the writer to a person: the study's file, or the command;
        "" when it has none.

    Yields
    ------
    None

    Raises
    ------
    relmodel.study.StudyError
        If another run (of this study, another, or any command writing the
        same output, however spelled: `output_identity`) holds the lock: one
        line naming the store and both writers. Also if the folder the output
        resolves to does not exist, or its lock file cannot be made there.
    """
    require("filelock", "a study's store")
    from filelock import FileLock, Timeout

    if not lock_path(store).parent.is_dir():  # filelock would make the folders; a missing one is a wrong path
        raise StudyError(str(store), f"no such folder: {lock_path(store).parent}")
    lock = FileLock(lock_path(store), thread_local=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        try:  # a lock file that cannot be made at all is the place, not another run holding it
            with open(lock_path(store), "a"):
                pass
        except OSError as err:
            raise StudyError(str(store), f"cannot make its lock file {lock_path(store)} "
                                         f"({err.strerror or err}); choose another --out") from None
        raise StudyError(str(store), _busy_reason(store, fingerprint, label)) from None
    holder = lock_path(store).with_name(lock_path(store).name + ".json")
    try:
        _write_atomically(holder, json.dumps({
            "study_fingerprint": fingerprint, "study": label, "pid": os.getpid(), "host": socket.gethostname(),
            "since": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}))
        yield
    finally:
        holder.unlink(missing_ok=True)
        lock.release()


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

def create_atomically(store: Path, build) -> None:
    """Build a new store under a hidden temporary name, then rename it into place.

    Call with the store's lock held: leftovers of killed creations are removed.

    Parameters
    ----------
    store : pathlib.Path
        Where the store will be; it must not exist.
    build : callable
        Called with the temporary path; writes the whole store there.
    """
    for stale in store.parent.glob(f".{store.name}{_CREATING}*"):
        shutil.rmtree(stale, ignore_errors=True)
    building = store.with_name(f".{store.name}{_CREATING}{os.getpid()}")
    try:
        build(building)
    except BaseException:  # a full disk, a fault, ^C: nothing half-built is left (a kill leaves it to the next run)
        shutil.rmtree(building, ignore_errors=True)
        raise
    rename(building, store)


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
    digest = hashlib.sha256()
    for name in sorted(arrays):
        digest.update(name.encode() + b"\0")
        digest.update(_float_bytes(arrays[name]))
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
    digest = hashlib.sha256()
    for name in sorted(coords):
        values = np.asarray(coords[name].values)
        digest.update(f"{name}\0{','.join(coords[name].dims)}\0{values.shape}\0".encode())
        if values.dtype.kind == "f":
            digest.update(_float_bytes(values))
        elif values.dtype.kind in "iub":
            digest.update(np.ascontiguousarray(values, dtype="<i8").tobytes())
        else:
            digest.update("\x1f".join(map(str, values.ravel())).encode())
    return digest.hexdigest()


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
        Every chunk of the grid (`relmodel.sweep.chunk_regions`).
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
    """Record the store's status; "complete" also consolidates its metadata.

    Any other status removes consolidated metadata first, so that no reader
    takes a stale "complete" from it.

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
    group.attrs["status"] = status
    if status == "complete":
        group.attrs["completed"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        zarr.consolidate_metadata(store, zarr_format=ZARR_FORMAT)


def write_zarr(ds, path) -> None:
    """Write a Dataset as a zarr store that any zarr reader opens without a warning.

    Parameters
    ----------
    ds : xarray.Dataset
        The Dataset to write.
    path : str or pathlib.Path
        The store's folder; replaced if it exists.

    Raises
    ------
    relmodel._extras.MissingExtraError
        If zarr is not installed (``pip install 'relmodel[studies]'``).
    """
    require("zarr", "a .zarr output")
    ds.to_zarr(path, mode="w", zarr_format=ZARR_FORMAT, consolidated=True)


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


def write_netcdf(ds, path, groups=None, checksums: bool = False) -> None:
    """Write a Dataset (and optional groups) as netCDF under a temporary name, then rename it.

    A reader never meets a half-written file, a killed writer leaves only
    ``<path>.partial``, and a write that fails leaves nothing.

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
    partial = path.with_name(path.name + ".partial")
    check_room(path, sum(data.nbytes for data in (ds, *(groups or {}).values()) if data is not None))
    try:
        for group, data in {None: ds, **(groups or {})}.items():
            if data is None:
                continue
            encoding = {name: {"fletcher32": True} for name in data.data_vars} if checksums else None
            data.to_netcdf(partial, engine="h5netcdf", group=group, mode="w" if group is None else "a",
                           encoding=encoding)
        rename(partial, path)
    except Exception:  # a write that failed (not a kill) leaves nothing behind
        partial.unlink(missing_ok=True)
        raise

