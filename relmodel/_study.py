"""Study files: a TOML description of a sweep (fixed fields, sweep axes, run).

    [fixed]
    failure_rate = 6.5e-3
    checkpoint_cost = "5min"
    taxonomy = "meta-2024"   # optional: a preset or a taxonomy file (beside this one)
    [sweep]
    n_gpus = [1024, 4096, 16384]
    checkpoint_interval = { start = "10min", stop = "4h", num = 12, scale = "log" }
    [run]
    n_jobs = 100000
    seed = 1

Durations are read as the command line reads them: a string with its unit;
a bare number other than 0 is refused (`units.to_hours_with_unit`). Every
error names the key and its line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import numbers
import re
import sys
from pathlib import Path

import numpy as np

from . import _labels as labels
from ._engine import MAX_JOBS
from ._errors import ParameterError, ScenarioError, parameter_and_reason
from ._scenario import FIELDS, Scenario
from ._taxonomy import read_small_text
from ._units import to_hours, to_hours_with_unit

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

OUTPUTS = tuple(labels.SIMULATED)
# Kept only when the study has a failure taxonomy (along its `category` dim).
CATEGORY_OUTPUTS = tuple(labels.SIMULATED_BY_CATEGORY)
# Kept only when the study has fast checkpoint levels (along its `level` dim).
LEVEL_OUTPUTS = tuple(labels.SIMULATED_BY_LEVEL)
# [fixed] keys that are not scenario fields: one per study, never a sweep axis.
FIXED_ONLY = ("taxonomy", "fast_checkpoints")
MAX_AXIS_VALUES = 2**20  # values of one range axis
RUN_KEYS = {"n_jobs", "seed", "backend", "max_failures", "chunk_points", "outputs"}
RUN_BOUNDS = {"n_jobs": (1, MAX_JOBS), "seed": (0, 2**32 - 1), "max_failures": (1, 2**62), "chunk_points": (1, 2**40)}


class StudyError(ParameterError):
    """A study that cannot be run; ``.parameter`` is the file (and line) or store, the message names the key."""


@dataclasses.dataclass(frozen=True)
class Study:
    """A parsed study file: a scenario grid and how to simulate it.

    Parameters
    ----------
    fixed : dict
        Scenario fields that stay fixed (the ``[fixed]`` table).
    sweep : dict
        Scenario fields swept, each to a sequence of values (``[sweep]``).
    n_jobs : int
        Jobs simulated per grid point.
    seed : int
        Base seed of the simulation.
    backend : {"auto", "numba", "cython"}, default "auto"
        The timeline kernel; "auto" starts on the Cython twin where Numba's
        cache is cold and goes on with Numba once it has compiled in the
        background (`engine.resolve_backend`). The kernels give the same bits.
    max_failures : int, default 100000
        Failures after which a job is stopped (counted in ``n_capped``).
    chunk_points : int, optional
        Grid points per chunk; None picks `default_chunk_points`.
    outputs : tuple of str
        The Dataset variables written to the store.
    """
    fixed: dict
    sweep: dict  # field -> list of values (units resolved)
    n_jobs: int
    seed: int
    backend: str = "auto"
    max_failures: int = 100_000
    chunk_points: int | None = None  # grid points per chunk (a target; default from n_jobs)
    outputs: tuple = OUTPUTS

    @property
    def scenario(self) -> Scenario:
        """The scenario grid: `fixed` and `sweep` together."""
        return Scenario(**self.fixed, **self.sweep)

    def identity(self) -> dict:
        """Return what the results depend on (not chunking, scheduler or workers).

        Returns
        -------
        dict
            The fields that identify the study's results.
        """
        sc = self.scenario
        extra = {}
        if sc.taxonomy:
            extra["taxonomy"] = [dataclasses.astuple(c) for c in sc.taxonomy]
        if sc.fast_checkpoints:
            extra["fast_checkpoints"] = [dataclasses.astuple(lv) for lv in sc.fast_checkpoints]
        # checkpoint_persist only where set: a study from before it keeps its fingerprint.
        fields = [name for name in FIELDS if name != "checkpoint_persist" or sc.checkpoint_persist != 0.0]
        return {
            "scenario": {name: getattr(sc, name) for name in fields}, **extra,
            # Results do not depend on the backend (the same bits); the field keeps the fingerprints of
            # existing stores, "auto" hashed as "numba" so that a study that ran on Numba resumes.
            "n_jobs": self.n_jobs, "seed": self.seed, "backend": "cython" if self.backend == "cython" else "numba",
            "max_failures": self.max_failures, "outputs": list(self.outputs),
        }

    def fingerprint(self) -> str:
        """Return a short hash of `identity`, naming the results a store holds.

        Returns
        -------
        str
            16 hexadecimal digits.
        """
        text = json.dumps(self.identity(), sort_keys=True, default=list)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _line_of(text: str, section: str | None, key: str) -> int | None:
    """The line of `key = ...` in [section] (section None: top level), or of the
    header [key] itself when `key` names a table."""
    current = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"^\s*\[([^\]]+)\]\s*(#.*)?$", line)
        if header:
            current = header.group(1).strip()
            if section is None and current == key:
                return number
        elif current == section and re.match(rf"^\s*{re.escape(key)}\s*=", line):
            return number
    return None


LEVEL_DURATIONS = ("interval", "cost", "restart", "persist")  # a fast checkpoint level's durations


def _check_duration_units(key: str, value):
    """Refuse a duration without its unit other than 0, as the command line does
    (`units.to_hours_with_unit`): ``checkpoint_cost = 300`` (or ``"300"``) is not read
    as 300 hours. Bounds and every other check are left to the Scenario."""
    if key == "fast_checkpoints":
        levels = value if isinstance(value, list) else []
        for i, level in enumerate(levels):
            for field in LEVEL_DURATIONS if isinstance(level, dict) else ():
                if field in level:
                    to_hours_with_unit(level[field], f"fast_checkpoints[{i}].{field}")
        return
    if FIELDS.get(key, (None, None))[1] != "duration":
        return
    if isinstance(value, dict):  # a range
        value = [value[end] for end in ("start", "stop") if end in value]
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, (str, numbers.Real)):
            to_hours_with_unit(item, key)


def _axis(field: str, spec) -> list:
    """A sweep axis: a list, or {start, stop, num, scale = "linear" | "log"}."""
    kind = FIELDS[field][1]
    if isinstance(spec, list):
        twice = next((v for i, v in enumerate(spec) if v in spec[:i]), None)
        if twice is not None:
            raise ValueError(f"{twice!r} is given twice: every point of a study is distinct")
        return spec
    if not isinstance(spec, dict):
        raise ValueError("a sweep axis is a list or a table {start, stop, num, scale}")
    unknown = set(spec) - {"start", "stop", "num", "scale"}
    if unknown or not {"start", "stop", "num"} <= set(spec):
        raise ValueError("a range needs start, stop and num (and optionally scale = 'linear' or 'log')")
    num, scale = spec["num"], spec.get("scale", "linear")
    if not isinstance(num, int) or num < 1 or scale not in ("linear", "log"):
        raise ValueError("num must be a positive integer and scale 'linear' or 'log'")
    if num > MAX_AXIS_VALUES:
        raise ValueError(f"num must be at most 2**20 (got {num}): a study runs every value of every axis")
    convert = (lambda v: to_hours(v, field)) if kind == "duration" else float
    start, stop = convert(spec["start"]), convert(spec["stop"])
    if not (math.isfinite(start) and math.isfinite(stop)):
        raise ValueError(f"start and stop must be finite (got {spec['start']!r}, {spec['stop']!r})")
    if scale == "log" and (start <= 0 or stop <= 0):
        raise ValueError("a log range needs start and stop > 0")
    values = np.geomspace(start, stop, num) if scale == "log" else np.linspace(start, stop, num)
    if kind == "count":  # Python ints: a count past int64 is refused by name, not wrapped around
        counts = [int(v) for v in np.unique(np.round(values))]
        if len(counts) < num:
            raise ValueError(f"num = {num} rounds to {len(counts)} distinct counts from {counts[0]} to "
                             f"{counts[-1]}: ask for num = {len(counts)} or fewer")
        return counts
    return values.tolist()


def parse_study(text: str, name: str = "study", folder: Path | None = None) -> Study:
    """Read a study from TOML text.

    A taxonomy file named in ``[fixed]`` is looked for beside the study
    (`folder`) first.

    Parameters
    ----------
    text : str
        The TOML text.
    name : str, default "study"
        The file's name, prefixed to every error.
    folder : pathlib.Path, optional
        The study file's folder.

    Returns
    -------
    Study
        The study.

    Raises
    ------
    StudyError
        On invalid TOML, an unknown key or an invalid value (the message names
        the key and its line).
    """
    def fail(section, key, message):
        line = _line_of(text, section, key) if key else None
        where = f"{name} line {line}" if line else name
        raise StudyError(where, f"[{section}] {key}: {message}" if key else message)

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise StudyError(str(name), f"not valid TOML: {err}") from None
    except RecursionError:
        raise StudyError(str(name), "not valid TOML: nested too deeply") from None
    for section in doc:
        if section not in ("fixed", "sweep", "run"):
            raise StudyError(f"{name} line {_line_of(text, None, section) or '?'}",
                             f"unknown section or key {section!r}; a study has [fixed], [sweep] and [run]")
    fixed, sweep, run = doc.get("fixed", {}), doc.get("sweep", {}), doc.get("run", {})
    for section, table in (("fixed", fixed), ("sweep", sweep)):
        for key in table:
            if key in FIXED_ONLY and section == "fixed":
                continue  # a taxonomy (preset or file), checkpoint levels: one per study, not an axis
            if key not in FIELDS:
                fail(section, key, f"not a scenario field; fields are {', '.join(FIELDS)}"
                     + (f" ({key} belongs in [fixed])" if key in FIXED_ONLY else ""))
    for key in set(fixed) & set(sweep):
        fail("sweep", key, "given in both [fixed] and [sweep]")
    for section, table in (("fixed", fixed), ("sweep", sweep)):
        for key, value in table.items():
            try:
                _check_duration_units(key, value)
            except ValueError as err:
                parameter, reason = parameter_and_reason(err)
                fail(section, key, reason if parameter == key else str(err))
    for key in run:
        if key not in RUN_KEYS:
            fail("run", key, f"unknown run setting; settings are {', '.join(sorted(RUN_KEYS))}")
    taxonomy = fixed.get("taxonomy")
    if isinstance(taxonomy, str) and folder is not None and (Path(folder) / taxonomy).is_file():
        fixed = {**fixed, "taxonomy": str(Path(folder) / taxonomy)}
    axes = {}
    for key, spec in sweep.items():
        try:
            axes[key] = _axis(key, spec)
        except ValueError as err:
            fail("sweep", key, str(err))
    for key in ("n_jobs", "seed"):
        if key not in run:
            fail("run", None, f"[run] needs {key}")
    known = (OUTPUTS + (CATEGORY_OUTPUTS if fixed.get("taxonomy") is not None else ())
             + (LEVEL_OUTPUTS if fixed.get("fast_checkpoints") else ()))
    outputs = run.get("outputs", list(known))
    if not isinstance(outputs, list) or not set(outputs) <= set(known) or not outputs:
        fail("run", "outputs", f"a non-empty list of {', '.join(known)}")
    for key, (low, high) in RUN_BOUNDS.items():
        value = run.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high):
            fail("run", key, f"must be an integer in [{low}, {high}] (got {value!r})")
    if run.get("backend", "auto") not in ("auto", "numba", "cython"):
        fail("run", "backend", f"must be 'auto', 'numba' or 'cython' (got {run['backend']!r})")
    study = Study(fixed=fixed, sweep=axes, n_jobs=run["n_jobs"], seed=run["seed"],
                  backend=run.get("backend", "auto"), max_failures=run.get("max_failures", 100_000),
                  chunk_points=run.get("chunk_points"), outputs=tuple(o for o in known if o in outputs))
    try:
        study.scenario
    except ScenarioError as err:
        section = "sweep" if err.parameter in sweep else "fixed"
        fail(section, err.parameter, str(err).split(": ", 1)[1])
    except TypeError as err:  # a required field missing
        missing = re.findall(r"'(\w+)'", str(err))
        raise StudyError(str(name), f"missing scenario field(s) {', '.join(missing)} in [fixed] or [sweep]") from None
    return study


STUDY_FILE_BYTES = 2**20  # a study file is a few lines of TOML


def load_study(path) -> Study:
    """Read the TOML study file `path`: `parse_study` of its text, errors named by its path (a
    `StudyError` also if the file cannot be read)."""
    path = Path(path)
    try:
        text = read_small_text(path, STUDY_FILE_BYTES)
    except OSError as err:
        raise StudyError(str(path), f"cannot read the study file ({err.strerror})") from None
    except ValueError as err:  # a device, a FIFO, a huge or a binary file
        raise StudyError(str(path), f"not a study file: {err}") from None
    return parse_study(text, name=str(path), folder=path.parent)


def chunk_shape(shape: tuple[int, ...], target_points: int) -> tuple[int, ...]:
    """Return chunk sizes over the sweep dims, about `target_points` grid points each.

    Whole trailing dims first, then as much of the next one as fits.

    Parameters
    ----------
    shape : tuple of int
        The grid's shape.
    target_points : int
        The aimed-for grid points per chunk.

    Returns
    -------
    tuple of int
        The chunk size along each dim.
    """
    sizes, budget = [], max(1, target_points)
    for extent in reversed(shape):
        take = min(extent, budget)
        sizes.append(take)
        budget = max(1, budget // extent) if take == extent else 1
    return tuple(reversed(sizes))


def default_chunk_points(n_jobs: int) -> int:
    """Return grid points per chunk for about four million jobs per chunk, and at most 2**16 points.

    Seconds of work each, so progress is fine-grained; and tens of MiB of
    estimates each however few the jobs a point.

    Parameters
    ----------
    n_jobs : int
        Jobs per grid point.

    Returns
    -------
    int
        Grid points per chunk (at least 1).
    """
    return max(1, min(math.ceil(4_000_000 / n_jobs), 2**16))


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
