"""Reading a study back: `open_study` and `verify_study`, each value checked against
the checksums the sweep recorded with it (`relmodel._store` keeps them)."""

from __future__ import annotations

import warnings
from pathlib import Path

import xarray as xr

from . import _store as stores
from ._extras import require
from ._store import chunk_id
from ._study import StudyError, chunk_regions


def store_problems(store: Path, regions, outputs) -> dict:
    """Each chunk of a zarr study store read back against its checksum (`relmodel._store.verify`);
    StudyError if the store's own metadata does not read."""
    try:
        return stores.verify(store, regions, outputs)
    except Exception as err:  # the store's own metadata is damaged
        reason = f"{type(err).__name__}: {err}".splitlines()[0]
        raise StudyError(str(store), f"cannot be read as a study store ({reason}); delete it to run again") from None


def open_study(path, *, verify: bool = True) -> xr.Dataset:
    """Open a study's results, checked against the checksums recorded with them.

    Parameters
    ----------
    path : str or pathlib.Path
        A study's ``.zarr`` store or ``.nc`` file, as `run_study` writes.
    verify : bool, default True
        Read every value and coordinate back and check it against its
        checksum before returning (a zarr study: each chunk's SHA-256 and the
        coordinates'; a ``.nc`` study: the file's SHA-256, written at its
        end, HDF5's fletcher32 on every variable and the coordinates'
        SHA-256). This reads the whole study once. False opens the study
        lazily and checks nothing: a damaged chunk or coordinate then reads
        as whatever is on disk, and a damaged ``.nc`` file may not open.

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
        if verify and (damage := _seal_problems(path)):
            refuse_damaged(path, damage)
        ds = _open_netcdf_study(path)
        if verify:
            problems = _netcdf_problems(path, ds)
            if problems:
                ds.close()
                refuse_damaged(path, problems)
        return ds
    require("zarr", "a .zarr study")
    ds, regions = _open_zarr_study(path)
    if verify:
        problems = {key: why for key, why in _zarr_problems(path, ds, regions).items() if why != "not computed"}
        if problems:
            ds.close()
            refuse_damaged(path, problems)
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


def _seal_problems(path: Path) -> dict[str, str]:
    """``{"file": why}`` where a study file's bytes fail their seal (checked before HDF5 reads
    them: `relmodel._store.netcdf_seal_problem`); empty otherwise, or where it does not open
    (`_open_netcdf_study` then says why)."""
    try:
        damage = stores.netcdf_seal_problem(path)
    except OSError:
        return {}
    return {"file": damage} if damage else {}


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
        chunks = store_problems(path, regions, list(ds.data_vars))
        if chunks:  # missing or damaged chunks explain the values (a sweep computes them again)
            problems = {key: why for key, why in problems.items()
                        if why != stores.VALUES_ALTERED and not why.startswith(stores.UNREADABLE)}
        return {**problems, **chunks}
    done = stores.done_chunks(path)
    return {chunk_id(r): "not computed" for r in regions if chunk_id(r) not in done}


def refuse_damaged(path: Path, problems: dict):
    """Raise StudyError naming the first problems and how to recover from them."""
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
        A study's ``.zarr`` store, or ``.nc`` file (checked against the
        SHA-256 written at its end, then read in full against the HDF5
        checksums its variables carry).

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
        if damage := _seal_problems(path):
            return damage
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
