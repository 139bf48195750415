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
from ._engine import COMPONENTS, RNG_SCHEME, RNG_STREAM, pack_points, run, summarize
from ._checks import check_integer
from ._scenario import Scenario
from ._simulate import simulate
from ._store import DONE_DIR, ZARR_FORMAT, chunk_id, write_zarr  # noqa: F401  write_zarr: re-exported
from ._study import RUN_BOUNDS, Study, StudyError, chunk_shape, default_chunk_points

QUANTILES = (0.05, 0.5, 0.95)
MAX_LOCAL_WORKERS = 2**12  # worker processes of one machine's dask-local cluster
_CONNECT_TIMEOUT = "10s"  # to a remote Dask scheduler


# ---- one chunk: pure computation, runs anywhere --------------------------------

def chunk_regions(shape, chunks):
    """Cut a grid into chunks, each a (start, stop) pair per sweep dim, in C order.

    Parameters
    ----------
    shape : tuple of int
        The grid's extent along each sweep dim, in grid points.
    chunks : tuple of int
        The chunk size along each sweep dim, in grid points; the last chunk
        along a dim may be smaller.

    Yields
    ------
    tuple of tuple of int
        One chunk: ``(start, stop)`` grid indices (stop exclusive) per sweep
        dim; an empty tuple for a grid without sweep dims.
    """
    starts = [range(0, extent, size) for extent, size in zip(shape, chunks)]
    for corner in itertools.product(*starts):
        yield tuple((s, min(s + c, e)) for s, c, e in zip(corner, chunks, shape))


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
    index = list(itertools.product(*ranges))
    keys = [int(np.ravel_multi_index(i, sc.shape)) if i else 0 for i in index]
    packed = pack_points(sc.point(i) for i in index)
    totals = run(packed, study.n_jobs, study.seed, study.backend, scenario_keys=keys,
                 max_failures=study.max_failures, n_threads=n_threads, progress=progress)
    est = summarize(totals, packed, QUANTILES)
    region_shape = tuple(len(r) for r in ranges)
    return {name: est[name].reshape(region_shape + est[name].shape[1:]).astype(np.float64)
            for name in study.outputs}


def _warm_up(backend: str):
    """Load (or compile) the kernels once per worker, before any task."""
    simulate(Scenario(n_gpus=8, failure_rate=1.0, checkpoint_interval=1, work=2), n_jobs=8, backend=backend)
    return True


# ---- the store -----------------------------------------------------------------

def _template(study: Study, chunks) -> xr.Dataset:
    import dask.array as da

    sc = study.scenario
    catalogue = {**labels.SIMULATED, **labels.SIMULATED_BY_CATEGORY, **labels.SIMULATED_BY_LEVEL}
    extent = {"quantile": len(QUANTILES), "component": len(COMPONENTS), "category": len(sc.taxonomy or ()),
              "level": len(sc.fast_checkpoints or ()) + 1}
    data_vars = {}
    for name in study.outputs:
        variable = catalogue[name]
        extra = tuple(extent[d] for d in variable.extra_dims)
        data_vars[name] = (sc.dims + variable.extra_dims,
                           da.full(sc.shape + extra, np.nan, chunks=tuple(chunks) + extra), variable.attrs)
    return xr.Dataset(data_vars, coords=labels.grid_coords(sc, quantiles=QUANTILES, components=COMPONENTS))


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
        chunks = open_or_create(study, store, source, label)
        _refuse_altered_metadata(store)
        regions = list(chunk_regions(study.scenario.shape, chunks))
        problems = _problems(store, regions, study.outputs)
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
        if todo or _status(store) != "complete" or not stores.consolidated_readable(store) or not _recorded(store):
            stores.set_status(store, "complete")
        if out.suffix == ".nc":
            _to_netcdf(store, out)
    return out


def _problems(store: Path, regions, outputs) -> dict:
    try:
        return stores.verify(store, regions, outputs)
    except Exception as err:  # the store's own metadata is damaged
        reason = f"{type(err).__name__}: {err}".splitlines()[0]
        raise StudyError(str(store), f"cannot be read as a study store ({reason}); delete it to run again") from None


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
        _refuse_damaged(store, problems)


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
                finished(region, compute_chunk(study, region,
                                               progress=(lambda jobs, r=region: advance(r, jobs)) if progress else None))
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


def open_study(path, *, verify: bool = True) -> xr.Dataset:
    """Open a study's results, checked against the checksums recorded with them.

    Parameters
    ----------
    path : str or pathlib.Path
        A study's ``.zarr`` store or ``.nc`` file, as `run_study` writes.
    verify : bool, default True
        Read every value and coordinate back and check it against its
        checksum before returning (a zarr study: each chunk's SHA-256 and the
        coordinates'; a ``.nc`` study: HDF5's fletcher32 on every variable and
        the coordinates' SHA-256). This reads the whole study once. False opens
        a zarr study lazily and checks nothing: a damaged chunk or coordinate
        then reads as whatever is on disk.

    Returns
    -------
    xarray.Dataset
        The study's outputs over its sweep dims, with the study in ``attrs``;
        chunks not yet computed read as NaN.

    Raises
    ------
    StudyError
        If `path` is not a study, or (with `verify`) a chunk or the coordinates
        do not match their checksums (the message names them, and how to recover).
    MissingExtraError
        If the package to read it is not installed (zarr, or h5netcdf for ``.nc``).

    Warns
    -----
    RuntimeWarning
        If the study is not finished (its missing chunks read as NaN).
    """
    path = Path(path)
    if path.suffix == ".nc":
        require("h5netcdf", "a .nc study")
        ds = _open_netcdf_study(path)
        if verify:
            problems = _netcdf_problems(path, ds)
            if problems:
                ds.close()
                _refuse_damaged(path, problems)
        return ds
    require("zarr", "a .zarr study")
    ds, regions = _open_zarr_study(path)
    if verify:
        problems = {key: why for key, why in _zarr_problems(path, ds, regions).items() if why != "not computed"}
        if problems:
            ds.close()
            _refuse_damaged(path, problems)
    missing = len(regions) - len(set(map(chunk_id, regions)) & set(stores.done_chunks(path)))
    if ds.attrs.get("status") != "complete" or missing:
        warnings.warn(f"{path}: the study is not finished ({missing} of {len(regions)} chunks missing, "
                      f"read as NaN); run its sweep again to complete it", RuntimeWarning, stacklevel=2)
    return ds


def _open_zarr_study(path: Path) -> tuple[xr.Dataset, list]:
    """The study store, lazily, and its chunks; StudyError if it is not one."""
    if not path.is_dir():
        raise StudyError(str(path), "no such study store" if not path.exists()
                         else "not a study store (a .zarr folder or a .nc file)")
    try:
        # Metadata is consolidated when the study finishes; an unfinished store, or one whose
        # consolidated copy is damaged, reads from each array's own (the sweep consolidates it again).
        readable = stores.consolidated_readable(path)
        if not readable and (path / ".zmetadata").exists():
            warnings.warn(f"{path}: its consolidated metadata (.zmetadata) does not read; read without it "
                          "(running the study's sweep again writes it anew)", RuntimeWarning, stacklevel=3)
        ds = xr.open_zarr(path, consolidated=readable)
        if "study_fingerprint" not in ds.attrs:
            raise ValueError("it has no study fingerprint")
        return ds, _regions_of(ds)
    except Exception as err:
        reason = f"{type(err).__name__}: {err}".splitlines()[0]
        raise StudyError(str(path), f"is not a relmodel study store ({reason})") from None


def _open_netcdf_study(path: Path) -> xr.Dataset:
    """The study file, lazily; StudyError if it is not one (e.g. `simulate --out`'s)."""
    try:
        ds = xr.open_dataset(path, engine="h5netcdf")
    except FileNotFoundError:
        raise StudyError(str(path), "no such study file") from None
    except Exception as err:
        reason = f"{type(err).__name__}: {err}".splitlines()[0]
        raise StudyError(str(path), f"cannot be read as a study file ({reason})") from None
    if "study_fingerprint" not in ds.attrs:
        ds.close()
        raise StudyError(str(path), "is not a relmodel study file (no study fingerprint: written by another "
                                    "command than `relmodel sweep`?)")
    return ds


def _netcdf_problems(path: Path, ds: xr.Dataset) -> dict[str, str]:
    """Read a study file in full (HDF5 checks each variable's fletcher32), then check its
    coordinates and what it reads as against their records (`relmodel._store.content_problems`)."""
    for name, variable in ds.variables.items():
        try:
            variable.load()
        except Exception as err:
            return {"file": f"unreadable: {name}: {type(err).__name__}: {err}".splitlines()[0]}
    return {**stores.content_problems(ds), **stores.coordinate_problems(ds)}


def _zarr_problems(path: Path, ds: xr.Dataset, regions, every_chunk: bool = False) -> dict[str, str]:
    """A study store's problems in one pass where it can: a finished store whose content
    matches its record reads every value once (the record's digests vouch for every chunk);
    otherwise (or with `every_chunk`) each chunk is read back against its own checksum too,
    through each array's own metadata, to name the damaged ones."""
    problems = {**stores.content_problems(ds), **stores.coordinate_problems(ds)}
    if problems or every_chunk or stores.CONTENT_ATTR not in ds.attrs:
        chunks = _problems(path, regions, list(ds.data_vars))
        if chunks:  # missing or damaged chunks explain the values (a sweep computes them again)
            problems = {key: why for key, why in problems.items()
                        if why != stores.VALUES_ALTERED and not why.startswith(stores.UNREADABLE)}
        return {**problems, **chunks}
    done = stores.done_chunks(path)
    return {chunk_id(r): "not computed" for r in regions if chunk_id(r) not in done}


def _refuse_damaged(path: Path, problems: dict):
    listed = "; ".join(f"{key}: {why}" for key, why in sorted(problems.items())[:3])
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    fix = ("delete it and run its sweep again" if any(not key.startswith("chunk-") for key in problems)
           else "run its sweep again: it computes exactly the damaged chunks again")
    raise StudyError(str(path), f"{listed}{more}; {fix} (open_study(..., verify=False) reads it unchecked)")


def _regions_of(ds: xr.Dataset) -> list:
    """A store's chunks, from its chunk layout (attrs) and the sweep dims it spans."""
    chunks = tuple(int(c) for c in ds.attrs["chunks"])
    dims = next(iter(ds.data_vars.values())).dims[:len(chunks)]
    return list(chunk_regions(tuple(ds.sizes[d] for d in dims), chunks))


def verify_study(path) -> dict[str, str]:
    """Check every chunk of a study, and its coordinates, against the checksums recorded with them.

    Parameters
    ----------
    path : str or pathlib.Path
        A study's ``.zarr`` store, or ``.nc`` file (whose variables carry HDF5
        checksums, checked by reading them in full).

    Returns
    -------
    dict of str to str
        What is wrong, by chunk id (``"file"`` for a ``.nc`` file that does
        not read, ``"coordinates"`` for the grid's coordinates, ``"metadata"``
        for a finished store's consolidated metadata): chunks "not computed",
        "unreadable" or "altered or lost"; coordinates "unreadable" or
        "altered or lost"; metadata missing or unreadable. Empty when all is
        whole. Running the study's sweep again computes missing or damaged
        chunks; damaged coordinates need the study run anew.

    Raises
    ------
    StudyError
        If `path` is not a study store or file (a `simulate --out` file is not).
    """
    path = Path(path)
    if path.suffix == ".nc":
        require("h5netcdf", "a .nc study")
        with _open_netcdf_study(path) as ds:
            return _netcdf_problems(path, ds)
    require("zarr", "a .zarr study")
    ds, regions = _open_zarr_study(path)
    with ds:
        problems = _zarr_problems(path, ds, regions, every_chunk=True)
        if ds.attrs.get("status") == "complete" and not stores.consolidated_readable(path):
            problems["metadata"] = ("its consolidated metadata (.zmetadata) is missing or does not read; running "
                                    "the study's sweep again writes it anew")
        return problems
