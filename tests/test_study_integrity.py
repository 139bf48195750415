"""What a study reads as is what was finished, or a refusal naming what changed: one
bit flipped at every byte of a small netCDF study and of every metadata file of a
small zarr study, and consistent edits of a zarr study's metadata (decoding
attributes, dimensions, fill value, provenance), each with its .zmetadata copy."""

import json
import shutil
import sys
import warnings

import numpy as np
import pytest
import xarray as xr

import relmodel as rm
from relmodel._store import CONTENT_ATTR, SEAL_SIZE, UNRECORDED_STUDY_ATTRS
from relmodel._study import StudyError, parse_study
from relmodel._sweep import _store_attrs, run_study

# As small as a study gets (one sweep dim of two points, one output): every byte is flipped once.
SMALL = """\
[fixed]
failure_rate = 1e-3
checkpoint_interval = "1h"
work = "1d"
[sweep]
n_gpus = [8, 16]
[run]
n_jobs = 50
seed = 3
outputs = ["ettr"]
"""

# Two sweep dims (so that dimensions can be swapped) and an output with an extra dim.
GRID = """\
[fixed]
failure_rate = 1e-3
work = "1d"
[sweep]
n_gpus = [8, 16]  # square: swapped dims still read, transposed
checkpoint_interval = ["1h", "2h"]
[run]
n_jobs = 50
seed = 3
outputs = ["ettr", "wall_quantile"]
chunk_points = 2
"""

PARTS = 64  # the flips are cut into parts by offset modulo PARTS; part 0 runs by default


def parts():
    return [pytest.param(k, marks=() if k == 0 else pytest.mark.slow, id=f"offsets-{k}-mod-{PARTS}")
            for k in range(PARTS)]


def finished(tmp_path_factory, text, name):
    path = tmp_path_factory.mktemp("integrity") / name
    run_study(parse_study(text), path, progress=False)
    return path, rm.open_study(path).load()


@pytest.fixture(scope="module")
def small_nc(tmp_path_factory):
    return finished(tmp_path_factory, SMALL, "small.nc")


@pytest.fixture(scope="module")
def small_zarr(tmp_path_factory):
    return finished(tmp_path_factory, SMALL, "small.zarr")


@pytest.fixture(scope="module")
def grid_zarr(tmp_path_factory):
    return finished(tmp_path_factory, GRID, "grid.zarr")


def refused_or_identical(path, reference):
    """'refused' (a StudyError from open_study and a problem from verify_study), or 'identical'."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # e.g. a coordinate checksum renamed: the record refuses it
        try:
            ds = rm.open_study(path)
            ds.load()
        except StudyError:
            try:
                assert rm.verify_study(path) != {}, "open_study refused what verify_study calls whole"
            except StudyError:
                pass  # not readable as a study at all: both refuse
            return "refused"
    with ds:
        xr.testing.assert_identical(ds, reference)
    return "identical"


def flip(path, offset):
    raw = bytearray(path.read_bytes())
    raw[offset] ^= 1 << (offset % 8)  # every bit position, over the offsets
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("part", parts())
def test_a_bit_flipped_anywhere_in_a_netcdf_study_is_refused_or_harmless(tmp_path, small_nc, part):
    """The seal refuses a flip anywhere in what HDF5 reads (some such flips sent HDF5 into an
    endless loop); a flip in the seal itself is refused, or leaves the file read as unsealed."""
    original, reference = small_nc
    copy = tmp_path / "flipped.nc"
    sealed = original.stat().st_size - SEAL_SIZE
    for offset in range(part, original.stat().st_size, PARTS):
        shutil.copyfile(original, copy)
        flip(copy, offset)
        outcome = refused_or_identical(copy, reference)
        assert offset >= sealed or outcome == "refused", offset


@pytest.mark.parametrize("where", ["superblock", "global heap"])
def test_sweep_verify_names_a_damaged_netcdf_study_in_one_line(tmp_path, small_nc, where):
    """HDF5 does not checksum its global heap: without the seal, this flip sent its attribute
    reader into an endless loop, and the superblock's one left h5netcdf printing a traceback."""
    import subprocess

    original, _ = small_nc
    raw = bytearray(original.read_bytes())
    offset = 66 if where == "superblock" else raw.find(b"GCOL") + 128
    raw[offset] ^= 1
    damaged = tmp_path / "damaged.nc"
    damaged.write_bytes(bytes(raw))
    checked = subprocess.run([sys.executable, "-m", "relmodel._cli", "sweep", "--verify", str(damaged)],
                             capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert checked.returncode == 1
    assert "file: its bytes do not match the SHA-256 written at its end" in checked.stdout
    assert checked.stderr.splitlines() == [f"Error: {damaged}: file not whole; delete it and run the study's "
                                           "sweep again"]


def metadata_files(store):
    return sorted(p.relative_to(store) for p in store.rglob(".z*") if p.is_file())


@pytest.mark.parametrize("part", parts())
def test_a_bit_flipped_anywhere_in_a_zarr_studys_metadata_is_refused_or_harmless(tmp_path, small_zarr, part):
    original, reference = small_zarr
    copy = tmp_path / "flipped.zarr"
    shutil.copytree(original, copy)
    for name in metadata_files(original):
        raw = (original / name).read_bytes()
        for offset in range(part, len(raw), PARTS):
            (copy / name).write_bytes(raw)
            flip(copy / name, offset)
            refused_or_identical(copy, reference)
        (copy / name).write_bytes(raw)


# ---- consistent edits of a zarr study's metadata -------------------------------------------

def edit(store, name, file, change):
    """Apply `change` to the JSON of `name`'s `file` (.zattrs or .zarray) and to its copy in .zmetadata."""
    key = f"{name}/{file}" if name else file
    target = store / key
    target.write_text(json.dumps(change(json.loads(target.read_text()))))
    consolidated = json.loads((store / ".zmetadata").read_text())
    consolidated["metadata"][key] = change(consolidated["metadata"][key])
    (store / ".zmetadata").write_text(json.dumps(consolidated))


def set_key(key, value):
    def change(meta):
        return {**meta, key: value}
    return change


def swapped_dims(meta):
    """The two sweep dims swapped (a square grid: the variable still reads, transposed)."""
    dims = meta["_ARRAY_DIMENSIONS"]
    return {**meta, "_ARRAY_DIMENSIONS": [dims[1], dims[0], *dims[2:]]}


# Each edit: the file it changes, the change, what the refusal names.
EDITS = {
    "scale_factor 2": (".zattrs", set_key("scale_factor", 2.0), "scale_factor"),
    "add_offset 1": (".zattrs", set_key("add_offset", 1.0), "add_offset"),
    "units a time unit": (".zattrs", set_key("units", "hours since 2000-01-01"), "units"),
    "fill_value 0": (".zarray", set_key("fill_value", 0), "_FillValue"),
    "dims swapped": (".zattrs", swapped_dims, "dims"),
}
VARIABLES = ["ettr", "wall_quantile", "n_gpus", "checkpoint_interval", "quantile", "failure_rate"]
CASES = [(variable, name) for variable in VARIABLES for name in EDITS
         if name != "dims swapped" or variable in ("ettr", "wall_quantile")]


@pytest.mark.parametrize("variable, name", CASES)
def test_a_consistent_metadata_edit_is_refused_naming_the_variable_and_attribute(tmp_path, grid_zarr, variable,
                                                                                 name):
    """Each read back as doubled, shifted, datetime, masked or transposed values, unrefused."""
    original, reference = grid_zarr
    store = tmp_path / "edited.zarr"
    shutil.copytree(original, store)
    file, change, named = EDITS[name]
    edit(store, variable, file, change)
    if name != "fill_value 0":  # (which masks only the values that are 0, and is refused all the same)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert not rm.open_study(store, verify=False).load().identical(reference)  # what a reader gets changed
    with pytest.raises(StudyError) as refused:
        rm.open_study(store)
    message = str(refused.value)
    assert f"{variable}: " in message and named in message and "delete it" in message, message
    problems = rm.verify_study(store)
    assert named in problems[variable], problems


def test_a_flip_in_the_provenance_is_refused_naming_the_attribute(tmp_path, grid_zarr):
    original, _ = grid_zarr
    store = tmp_path / "rng.zarr"
    shutil.copytree(original, store)
    edit(store, "", ".zattrs", lambda attrs: {**attrs, "rng": attrs["rng"].replace("Philox", "Phimox")})
    with pytest.raises(StudyError, match="attributes: attribute rng altered"):
        rm.open_study(store)
    assert rm.verify_study(store) == {"attributes": "attribute rng altered"}


@pytest.mark.parametrize("damage", ["a digest changed", "garbled", "removed, another attribute added"])
def test_an_edit_of_the_record_itself_is_refused(tmp_path, grid_zarr, damage):
    original, _ = grid_zarr
    store = tmp_path / "record.zarr"
    shutil.copytree(original, store)

    def change(attrs):
        if damage == "a digest changed":
            record = json.loads(attrs[CONTENT_ATTR])
            record["variables"]["ettr"]["values"] = "0" * 64
            return {**attrs, CONTENT_ATTR: json.dumps(record)}
        if damage == "garbled":
            return {**attrs, CONTENT_ATTR: attrs[CONTENT_ATTR][:-1]}
        return {("content_sha257" if key == CONTENT_ATTR else key): value for key, value in attrs.items()}

    edit(store, "", ".zattrs", change)
    with pytest.raises(StudyError):
        rm.open_study(store)
    assert rm.verify_study(store) != {}


def test_the_attributes_a_study_had_before_its_record_are_known(grid_zarr):
    """A study without a record is refused only for an attribute relmodel never wrote."""
    _, reference = grid_zarr
    assert set(reference.attrs) - {CONTENT_ATTR} <= UNRECORDED_STUDY_ATTRS
    study = parse_study(GRID)
    assert set(_store_attrs(study, GRID, "", (1, 1))) <= UNRECORDED_STUDY_ATTRS


def test_a_study_finished_before_its_record_reads_with_a_warning(tmp_path, grid_zarr):
    original, reference = grid_zarr
    store = tmp_path / "old.zarr"
    shutil.copytree(original, store)
    edit(store, "", ".zattrs", lambda attrs: {k: v for k, v in attrs.items() if k != CONTENT_ATTR})
    with pytest.warns(RuntimeWarning, match="finished before relmodel recorded its content"):
        xr.testing.assert_identical(rm.open_study(store).load().drop_attrs(), reference.drop_attrs())
    # Its sweep run again records it (the chunks verified first).
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        run_study(parse_study(GRID), store, progress=False)
        assert rm.verify_study(store) == {}


def test_a_finished_store_with_altered_metadata_is_not_resumed_and_verify_says_so(tmp_path, grid_zarr):
    import subprocess

    original, _ = grid_zarr
    store = tmp_path / "edited.zarr"
    shutil.copytree(original, store)
    edit(store, "ettr", ".zattrs", set_key("scale_factor", 2.0))
    with pytest.raises(StudyError, match="ettr: decoding attribute scale_factor not recorded"):
        run_study(parse_study(GRID), store, progress=False)
    checked = subprocess.run([sys.executable, "-m", "relmodel._cli", "sweep", "--verify", str(store)],
                             capture_output=True, text=True, cwd=tmp_path)
    assert checked.returncode == 1 and "ettr: decoding attribute scale_factor" in checked.stdout
    assert "delete it and run the study's sweep again" in checked.stderr


def test_a_netcdf_variable_read_as_nan_is_refused(tmp_path, small_nc):
    """A variable where HDF5 finds no data is refused, not returned as all NaN with an empty
    verify_study."""
    original, reference = small_nc
    with xr.open_dataset(original, engine="h5netcdf") as ds:
        emptied = ds.load()
    emptied["ettr"][:] = np.nan
    out = tmp_path / "emptied.nc"
    emptied.to_netcdf(out, engine="h5netcdf")
    assert rm.verify_study(out) == {"ettr": "values altered: they do not match their checksum"}
    with pytest.raises(StudyError, match="ettr: values altered"):
        rm.open_study(out)
