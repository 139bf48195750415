"""Studies at scale: a grid cut into chunks, each simulated (here, or on Dask
workers) and written to its region of a zarr store as soon as it is done.

Same bits everywhere: a chunk's random streams are keyed by the global
scenario index of each grid point, never by chunk or worker, so the store does
not depend on chunking, scheduler or the number of workers. The store itself
(one writer, atomic creation, verified chunks) is `relmodel._store`: a run
holds the store's lock throughout, reads every finished chunk back against its
checksum, and computes again exactly the chunks that are missing or damaged.
A `.nc` study runs in a working zarr store and becomes netCDF at the end,
written under a temporary name and renamed.
"""

from __future__ import annotations

import errno
import itertools
import math
import os
import shutil
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import xarray as xr

from . import _labels as labels
from . import _store as stores
from ._extras import require
from ._feedback import ticking
from ._engine import COMPONENTS, RNG_SCHEME, RNG_STREAM, check_run_memory, estimate, row_extents
from ._errors import parameter_and_reason
from ._checks import bytes_text, check_integer, check_memory
from ._scenario import Scenario
from ._simulate import simulate
from ._store import DONE_DIR, ZARR_FORMAT, chunk_id, write_zarr  # noqa: F401  write_zarr: re-exported
from ._study import RUN_BOUNDS, Study, StudyError, chunk_regions, chunk_shape, default_chunk_points
from ._study_reader import refuse_damaged, store_problems

QUANTILES = (0.05, 0.5, 0.95)
MAX_LOCAL_WORKERS = 2**12  # worker processes of one machine's dask-local cluster
_CONNECT_TIMEOUT = "10s"  # to a remote Dask scheduler


# ---- one chunk: pure computation, runs anywhere --------------------------------

def compute_chunk(study: Study, region, n_threads: int | None = None, progress=None) -> dict[str, np.ndarray]:
    """Simulate the grid points of one region of a study's grid.

    Pure computation, run anywhere (here or on a Dask worker): each grid
    point's random streams are keyed by its global scenario index, so the
    result does not depend on the chunking.

    Parameters
    ----------
    study : Study
        The study whose grid the region is part of.
    region : tuple of tuple of int
        ``(start, stop)`` grid indices per sweep dim, as `chunk_regions` yields.
    n_threads : int, optional
        Numba threads for this chunk; None keeps the process's setting.
    progress : callable, optional
        Called with the jobs done after each kernel call (`engine.run`), for a progress bar.

    Returns
    -------
    dict of str to numpy.ndarray
        One float64 array per output in ``study.outputs``, shaped like the
        region (then any extra dim of the output: quantile, component,
        category or level), in the output's units (hours for times).
    """
    sc = study.scenario
    ranges = [range(a, b) for a, b in region]
    # The points as the engine takes them, a block at a time: a chunk's Scenario objects never all at once.
    grid = np.meshgrid(*[np.arange(a, b) for a, b in region], indexing="ij")
    keys = np.ravel_multi_index(grid, sc.shape).ravel() if region else np.zeros(1, dtype=np.int64)
    _, est = estimate((sc.point(i) for i in itertools.product(*ranges)), study.n_jobs, study.seed, study.backend,
                      scenario_keys=keys, quantiles=QUANTILES, max_failures=study.max_failures,
                      n_threads=n_threads, progress=progress)
    region_shape = tuple(len(r) for r in ranges)
    return {name: est[name].reshape(region_shape + est[name].shape[1:]).astype(np.float64)
            for name in study.outputs}


def _warm_up(backend: str):
    """Load (or compile) the kernels once per worker, before any task."""
    simulate(Scenario(n_gpus=8, failure_rate=1.0, checkpoint_interval=1, work=2), n_jobs=8, backend=backend)
    return True


# ---- the store -----------------------------------------------------------------

_CATALOGUE = {**labels.SIMULATED, **labels.SIMULATED_BY_CATEGORY, **labels.SIMULATED_BY_LEVEL}


def _extra_shapes(study: Study) -> dict[str, tuple[int, ...]]:
    """Each output's shape past the sweep dims (quantile, component, category or level)."""
    sc = study.scenario
    extent = {"quantile": len(QUANTILES), "component": len(COMPONENTS), "category": len(sc.taxonomy or ()),
              "level": len(sc.fast_checkpoints or ()) + 1}
    return {name: tuple(extent[d] for d in _CATALOGUE[name].extra_dims) for name in study.outputs}


def _template(study: Study, chunks) -> xr.Dataset:
    import dask.array as da

    sc = study.scenario
    data_vars = {}
    for name, extra in _extra_shapes(study).items():
        variable = _CATALOGUE[name]
        data_vars[name] = (sc.dims + variable.extra_dims,
                           da.full(sc.shape + extra, np.nan, chunks=tuple(chunks) + extra), variable.attrs)
    return xr.Dataset(data_vars, coords=labels.grid_coords(sc, quantiles=QUANTILES, components=COMPONENTS))


# Bytes of bookkeeping a chunk takes while a study runs (its region, marker, task in the
# store's template), and on disk at least (its files: one block each, per output).
_CHUNK_BYTES = 16 * 2**10
_CHUNK_FILE_BYTES = 4 * 2**10
# Bytes a grid point of a chunk in flight takes beside its run: its key, and its
# outputs as computed, reshaped and written.
_CHUNK_POINT_BYTES = 64


def _point_values(study: Study) -> int:
    """float64 values a grid point has in the store: one per output, times its extra dims."""
    return sum(math.prod(extra) for extra in _extra_shapes(study).values())


def check_study_size(study: Study, chunks, out: Path, new: bool):
    """Refuse, before the store is made or any chunk run, a study past the memory budget
    (a chunk in flight, every chunk's bookkeeping) or, for a new store, the free disk.

    Raises
    ------
    StudyError
        Naming `chunk_points` (a chunk past the budget) or the sweep (too many chunks).
    OSError
        ENOSPC, naming `out`, if the store would not fit on its disk.
    """
    sc = study.scenario
    n_categories, n_levels = row_extents(sc)
    chunk_points = math.prod(chunks)
    n_chunks = math.prod(-(-n // c) for n, c in zip(sc.shape, chunks))
    try:
        check_run_memory(chunk_points, study.n_jobs, n_categories, False, n_levels,
                         per_row=_CHUNK_POINT_BYTES * _point_values(study))
    except ValueError as err:
        raise StudyError("chunk_points", f"a chunk of {chunk_points} grid points: "
                                         f"{parameter_and_reason(err)[1]}; set fewer chunk_points") from None
    try:
        check_memory("sweep", n_chunks * _CHUNK_BYTES, f"the bookkeeping of {n_chunks} chunks would")
    except ValueError as err:
        raise StudyError("sweep", f"{sc.size} grid points in chunks of {chunk_points}: "
                                  f"{parameter_and_reason(err)[1]}; sweep fewer points, or set more "
                                  "chunk_points") from None
    if new:
        need = 8 * sc.size * _point_values(study) + n_chunks * len(study.outputs) * _CHUNK_FILE_BYTES
        folder = next((p for p in (out, *out.parents) if p.exists()), Path("."))
        free = shutil.disk_usage(folder).free
        if need > free:
            raise OSError(errno.ENOSPC, f"the study's {sc.size} grid points need up to {bytes_text(need)} of disk "
                                        f"(before compression); {bytes_text(free)} is free there", str(out))


def _store_attrs(study: Study, source: str, label: str, chunks) -> dict:
    return labels.provenance(
        "relmodel study", study_fingerprint=study.fingerprint(), study_file=label, study_source=source,
        seed=study.seed, n_jobs=study.n_jobs, backend=study.backend, max_failures=study.max_failures,
        rng=RNG_SCHEME, chunks=list(chunks), status="running")


def open_or_create(study: Study, store: Path, source: str, label: str = "") -> tuple:
    """Open a study's zarr store, or create it (atomically) with an empty template.

    A new store gets every output variable (filled with NaN), the coordinates,
    the study's attributes and the folder of chunk markers; no data. Call with
    the store's lock held (`relmodel._store.exclusive`).

    Parameters
    ----------
    study : Study
        The study the store holds.
    store : pathlib.Path
        The store's folder.
    source : str
        The study file's text, kept in the store's attributes.
    label : str, default ""
        The study file's name, kept in the attributes and named in refusals.

    Returns
    -------
    tuple of int
        The store's chunk size along each sweep dim, in grid points.

    Raises
    ------
    StudyError
        If `store` exists and is not a relmodel study store, or holds a study
        with another fingerprint.
    """
    import zarr

    if not store.exists():
        target = default_chunk_points(study.n_jobs) if study.chunk_points is None else study.chunk_points
        chunks = chunk_shape(study.scenario.shape, target)
        check_study_size(study, chunks, store, new=True)
        template = _template(study, chunks)
        template.attrs = {**_store_attrs(study, source, label, chunks),
                          stores.COORDS_ATTR: stores.coords_checksum(template.coords)}

        def build(path):
            template.to_zarr(path, mode="w", compute=False, consolidated=False, zarr_format=ZARR_FORMAT)
            zarr.open_group(path, mode="r+", zarr_format=ZARR_FORMAT).create_group(DONE_DIR)

        stores.create_atomically(store, build)
        return chunks
    try:
        group = zarr.open_group(store, mode="r", zarr_format=ZARR_FORMAT, use_consolidated=False)
        attrs = dict(group.attrs)
        chunks = tuple(int(c) for c in attrs["chunks"])
    except Exception as err:  # not a zarr group, or not one of ours
        reason = f"{type(err).__name__}: {err}".splitlines()[0]
        raise StudyError(str(store), f"exists and is not a relmodel study store ({reason}); "
                                     f"choose another --out or delete it") from None
    if attrs.get("study_fingerprint") != study.fingerprint():
        other = stores.study_name(attrs.get("study_file", ""), attrs.get("study_fingerprint"))
        raise StudyError(str(store), f"holds another study ({other}); this study "
                                     f"({stores.study_name(label, study.fingerprint())}) was not run: "
                                     f"choose another --out, or delete {store} to replace it")
    if attrs.get("rng") != RNG_SCHEME:
        # Chunks drawn from two random streams would not be the bits of any one run.
        stream = str(attrs.get("rng", "none recorded")).split(":")[0]
        raise StudyError(str(store), f"was started by relmodel {attrs.get('relmodel_version', '?')} with the random "
                                     f"stream {stream!r}; this relmodel draws {RNG_STREAM!r}: finish it with that "
                                     f"version, or delete {store} to run it again")
    if "time_mean" in study.outputs and "component" in group:
        components = [str(c) for c in group["component"][:]]
        if components != list(COMPONENTS):
            # Chunks with another component list would not line up with the ones already written.
            raise StudyError(str(store), f"was started by relmodel {attrs.get('relmodel_version', '?')}, whose "
                                         f"time_mean has the components {components}; this relmodel writes "
                                         f"{list(COMPONENTS)}: finish it with that version, or delete {store}")
    check_study_size(study, chunks, store, new=False)
    _heal(study, store, chunks, group)
    return chunks


def _heal(study: Study, store: Path, chunks, group):
    """Rebuild what a damaged store lost from what the study defines, so a run goes on.

    Lost markers folder: made again (every chunk is then computed again: nothing
    vouches for the values). Lost metadata of an output array: written again
    from the template, and every chunk computed again (its chunk files cannot be
    read without it). Each with a warning naming what was rebuilt.
    """
    import zarr

    rebuilt = []
    if DONE_DIR not in group:
        zarr.open_group(store, mode="r+", zarr_format=ZARR_FORMAT, use_consolidated=False).create_group(DONE_DIR)
        rebuilt.append(f"its chunk markers ({DONE_DIR}/): every chunk is computed again")
    lost = [name for name in study.outputs if name not in group]
    if lost:
        template = _template(study, chunks)[lost]
        template.attrs = dict(group.attrs)  # (xarray writes a Dataset's attrs over the group's)
        template.to_zarr(store, mode="a", compute=False, consolidated=False, zarr_format=ZARR_FORMAT)
        stores.unmark(store, list(stores.done_chunks(store)))
        rebuilt.append(f"the metadata of {', '.join(lost)}: every chunk is computed again")
    if rebuilt:
        (store / ".zmetadata").unlink(missing_ok=True)
        warnings.warn(f"{store}: rebuilt " + "; ".join(rebuilt), RuntimeWarning, stacklevel=3)


# ---- running a study -------------------------------------------------------------

def run_study(study: Study, out, *, source: str = "", label: str = "", scheduler: str = "local",
              n_workers: int | None = None, progress: bool = True, report: dict | None = None) -> Path:
    """Run (or resume) a study into a zarr store or a netCDF file.

    The grid is cut into chunks, each simulated (here, or on Dask workers) and
    written to its region of the store as soon as it is done. The run holds the
    store's lock throughout; another run on the same `out` is refused. Started
    again with the same study and `out` (after a kill, or on a finished store),
    it reads every finished chunk back against its checksum and computes again
    exactly those that are missing or damaged (with a warning naming them),
    ending with the same bits as an uninterrupted run. A ``.nc`` study runs in a
    working zarr store (``<out>.partial.zarr``) that becomes the netCDF file at
    the end, written under a temporary name and renamed.

    Parameters
    ----------
    study : Study
        The study to run.
    out : str or pathlib.Path
        The output: a ``.zarr`` store (created or resumed) or a ``.nc`` file
        (which must not exist yet).
    source : str, default ""
        The study file's text, kept in the store's attributes.
    label : str, default ""
        The study file's name, kept in the attributes and named in refusals.
    scheduler : str, default "local"
        ``"local"`` (chunks one after the other in this process),
        ``"dask-local"`` (a local Dask cluster of one-thread worker processes)
        or the address of a Dask scheduler (``tcp://``, ``tls://``, ``ucx://``).
    n_workers : int, optional
        Worker processes of a ``"dask-local"`` cluster; None: one per CPU core.
    progress : bool, default True
        Show a progress bar (chunks done, simulated jobs per second).
    report : dict, optional
        Filled with ``computed_chunks``: how many chunks this run computed (0
        when the store was finished and every chunk verified).

    Returns
    -------
    pathlib.Path
        The finished study, `out`.

    Raises
    ------
    StudyError
        If `out` does not end in ``.zarr`` or ``.nc``, a ``.nc`` output
        exists, `scheduler` is not one of the above, the store at `out`
        holds another study (see `open_or_create`), or another run is writing it.
    MissingExtraError
        If a package the run needs is not installed (zarr; h5netcdf for
        ``.nc``; distributed for a Dask scheduler).
    ConnectionError
        If a remote scheduler cannot be reached (within 10 s; before any store is made).
    OSError
        If the store cannot be written (a full disk, a read-only file system,
        or a ``.nc`` file beyond the free space or the file size limit).

    Warns
    -----
    RuntimeWarning
        When finished chunks failed verification and are computed again.
    """
    out = stores.write_path(out)
    if out.suffix not in (".zarr", ".nc"):
        raise StudyError(str(out), "the output must end in .zarr or .nc")
    if scheduler not in ("local", "dask-local") and not scheduler.startswith(("tcp://", "tls://", "ucx://")):
        raise StudyError("scheduler", f"use 'local', 'dask-local' or a Dask scheduler address (got {scheduler!r})")
    if n_workers is not None:  # 0 is refused, not taken for "one per core"
        check_integer("n_workers", n_workers, 1, MAX_LOCAL_WORKERS)
    if study.chunk_points is not None:  # a Study built in Python, not read by parse_study
        check_integer("chunk_points", study.chunk_points, *RUN_BOUNDS["chunk_points"])
    require("zarr", "a study's store")
    require("filelock", "a study's store")
    if out.suffix == ".nc":
        require("h5netcdf", "a .nc study")
    if scheduler != "local":
        require("distributed", "a Dask scheduler")
    store = out.with_name(out.name + ".partial.zarr") if out.suffix == ".nc" else out
    with _remote_client(scheduler) as client, stores.exclusive(out, study.fingerprint(), label):
        if out.suffix == ".nc" and out.exists():
            shutil.rmtree(store, ignore_errors=True)  # what a run killed after its rename left
            raise StudyError(str(out), "exists; a finished netCDF study is not resumed (delete it to run again)")
        with ticking(f"sweep: opening {store.name}", enabled_=bool(progress)):  # seconds of imports and reads
            chunks = open_or_create(study, store, source, label)
            _refuse_altered_metadata(store)
            regions = list(chunk_regions(study.scenario.shape, chunks))
            problems = store_problems(store, regions, study.outputs)
        damaged = {cid: why for cid, why in problems.items() if why != "not computed"}
        if damaged:
            warnings.warn(f"{store}: {len(damaged)} finished chunk(s) failed verification and are computed again ("
                          + "; ".join(f"{cid}: {why}" for cid, why in sorted(damaged.items())) + ")",
                          RuntimeWarning, stacklevel=2)
            stores.unmark(store, damaged)
        todo = [r for r in regions if chunk_id(r) in problems]
        if report is not None:
            report["computed_chunks"] = len(todo)
        if todo:
            stores.set_status(store, "running")
            _compute(study, store, regions, todo, scheduler, n_workers, progress, client)
        with ticking(f"sweep: finishing {out.name}", enabled_=bool(progress)):
            if todo or _status(store) != "complete" or not stores.consolidated_readable(store) or not _recorded(store):
                stores.set_status(store, "complete")
            if out.suffix == ".nc":
                _to_netcdf(store, out)
    return out


def _status(store: Path) -> str | None:
    import zarr

    return zarr.open_group(store, mode="r", zarr_format=ZARR_FORMAT, use_consolidated=False).attrs.get("status")


def _recorded(store: Path) -> bool:
    import zarr

    group = zarr.open_group(store, mode="r", zarr_format=ZARR_FORMAT, use_consolidated=False)
    return stores.CONTENT_ATTR in group.attrs


def _refuse_altered_metadata(store: Path):
    """A finished store whose metadata no longer matches its record is not resumed: a run
    computes values again, never dims, dtypes, attributes or decoding."""
    if _status(store) != "complete" or not _recorded(store):
        return
    with xr.open_zarr(store, consolidated=False) as ds:
        problems = stores.content_problems(ds, values=False)
    if problems:
        refuse_damaged(store, problems)


@contextmanager
def _remote_client(scheduler: str):
    """A client of a remote Dask scheduler, connected before any store is made
    (None for the local schedulers): an unreachable one is refused by name."""
    if not scheduler.startswith(("tcp://", "tls://", "ucx://")):
        yield None
        return
    from distributed import Client

    try:
        client = Client(scheduler, timeout=_CONNECT_TIMEOUT)
    except ValueError as err:  # a malformed address
        raise StudyError("scheduler", f"{scheduler!r} is not a scheduler address ({err})") from None
    except OSError as err:  # TimeoutError is one: the environment, not the study
        raise ConnectionError(f"cannot reach the Dask scheduler {scheduler}: {err}") from None
    try:
        yield client
    finally:
        client.close()


def _compute(study: Study, store: Path, regions, todo, scheduler: str, n_workers, progress: bool, client=None):
    """Simulate the chunks `todo` and write each to the store as it comes."""
    from tqdm.auto import tqdm

    from ._feedback import bar_width

    # In jobs, not chunks (a study of two chunks moved in 50 % jumps): locally the bar
    # advances after each kernel call (blocks of jobs); on Dask, per chunk as it comes back.
    chunk_jobs = {r: int(np.prod([b - a for a, b in r])) * study.n_jobs for r in regions}
    jobs_total = sum(chunk_jobs.values())
    bar = tqdm(total=jobs_total, initial=jobs_total - sum(chunk_jobs[r] for r in todo), unit="job",
               unit_scale=True, desc="sweep", disable=not progress, **bar_width())
    reported = {}
    writer = stores.ChunkWriter(store, study.outputs)

    def advance(region, jobs):  # the bar shows the rate itself
        reported[region] = reported.get(region, 0) + jobs
        bar.update(jobs)

    seen = [math.inf, -math.inf]  # the ETTR range of the chunks done: a first result on the bar

    def finished(region, arrays):
        writer.write(region, arrays)
        if "ettr" in arrays and np.isfinite(arrays["ettr"]).any():
            seen[:] = min(seen[0], np.nanmin(arrays["ettr"])), max(seen[1], np.nanmax(arrays["ettr"]))
            bar.set_postfix_str(f"ETTR {seen[0]:.3f} to {seen[1]:.3f} so far", refresh=False)
        advance(region, chunk_jobs[region] - reported.get(region, 0))

    try:
        if scheduler == "local":
            for region in todo:
                moved = (lambda jobs, r=region: advance(r, jobs)) if progress else None
                finished(region, compute_chunk(study, region, progress=moved))
        else:
            _run_on_dask(study, todo, finished, scheduler, n_workers, client)
    finally:
        bar.close()


def _to_netcdf(store: Path, out: Path):
    """The finished store as netCDF, written under a temporary name and renamed; HDF5
    checksums (fletcher32) on every variable, so that a damaged file fails to read."""
    with xr.open_zarr(store, consolidated=True) as ds:
        stores.write_netcdf(ds.load(), out, checksums=True)
    shutil.rmtree(store)


def _run_on_dask(study: Study, todo, finished, scheduler: str, n_workers, remote=None):
    from distributed import Client, LocalCluster, as_completed

    if scheduler == "dask-local":
        # One thread per worker and one Numba thread each: no oversubscription. The
        # environment sets the pool; the explicit count holds even where the worker
        # imported Numba before it saw the environment (a script importing numba at
        # its top is re-imported by spawned workers).
        env = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        cluster = LocalCluster(n_workers=os.cpu_count() if n_workers is None else n_workers, threads_per_worker=1,
                               processes=True, env=env, dashboard_address=None)
        client, n_threads = Client(cluster), 1
    else:  # an existing cluster (`_remote_client`): its workers' own NUMBA_NUM_THREADS decides
        cluster, client, n_threads = None, remote, None
    try:
        client.run(_warm_up, study.backend)
        futures = {client.submit(compute_chunk, study, region, n_threads, pure=False): region for region in todo}
        for future in as_completed(futures):
            finished(futures[future], future.result())
    finally:
        if cluster is not None:
            client.close()
            cluster.close()
