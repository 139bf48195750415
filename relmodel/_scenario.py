"""`Scenario`: one training run's reliability parameters, or a grid of them.

A field given as a sequence (list, tuple, range, 1-D array; not a string) is a
sweep axis: the scenario is then the outer product of its axes, in field order.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator, Mapping

import numpy as np

# The bounds and ScenarioError are re-exported: they belong to the Scenario's contract.
from ._errors import ParameterError, ScenarioError
from ._checks import (MAX_COUNT, MAX_FAILURE_RATE, MAX_LEMON_RATE_FACTOR, QUEUE_WAIT_DISTRIBUTIONS, SHAPE_RANGE,  # noqa: F401
                      check_number, is_sequence, scalar_value, sequence_values)
from ._failures import Exponential, FailureCategory, LemonMixture, TaxonomyMixture, Weibull, as_categories
from ._level_pattern import failure_free_job, split_work
from ._display import key_value_table
from ._units import duration_text, format_hours, short_repr, values_text

# Field -> (units attr, kind). Kinds: "duration", "count", "rate", "shape", "fraction",
# "factor", "choice".
FIELDS = {
    "n_gpus": ("GPU", "count"),
    "failure_rate": ("1/(node day)", "rate"),
    "checkpoint_interval": ("h", "duration"),
    "work": ("h", "duration"),
    "checkpoint_cost": ("h", "duration"),
    "restart_cost": ("h", "duration"),
    "queue_wait": ("h", "duration"),
    "gpus_per_node": ("GPU/node", "count"),
    "weibull_shape": ("1", "shape"),
    "lemon_fraction": ("1", "fraction"),
    "lemon_rate_factor": ("1", "factor"),
    "queue_wait_distribution": ("", "choice"),
    "checkpoint_persist": ("h", "duration"),
}
# Not sweep axes: a failure taxonomy (categories, see `relmodel._failures`),
# checkpoint levels below the scenario's own checkpoint, and `failure_model`,
# which only fills the flat fields and is not kept.
EXTRA_FIELDS = ("taxonomy", "fast_checkpoints", "failure_model")
_REQUIRED = ("failure_rate", "checkpoint_interval", "work")
_MAX_INTERVALS = 2.0**40  # work / checkpoint_interval beyond this is a unit mistake
# Work beyond 2**40 s (some 34,800 years) is a unit mistake too, and past it the exact
# optimum's candidate counts (intervals down to 1 s) lose the precision its remainders need.
MAX_WORK = 2.0**40 / 3600.0
_MULTIPLE_TOLERANCE = 1e-9  # relative: "1h" over "10min" is 6 whatever the float rounding


def _same(value, default) -> bool:
    try:
        return bool(value == default)
    except (TypeError, ValueError):  # an array's comparison
        return False


def _field_text(name: str, value) -> str:
    """A Scenario field's value in its repr (`Scenario.__repr__`)."""
    if name == "taxonomy":
        return f"<{len(value)} failure categories>"
    if name == "fast_checkpoints":
        return repr(tuple(value))
    duration = FIELDS[name][1] == "duration"
    if is_sequence(value):
        return values_text(sequence_values(value), duration_text if duration else repr)
    return repr(duration_text(value)) if duration else repr(value)


@dataclasses.dataclass(frozen=True)
class CheckpointLevel:
    """A checkpoint level faster than the scenario's own checkpoint (in host or
    peer memory, or on local disk).

    Parameters
    ----------
    interval : float or str
        Productive time between this level's checkpoints; a whole multiple of
        the fastest level's interval.
    cost : float or str, default 0.0
        Blocking time of one write.
    restart : float or str
        Restart after restoring from this level (instead of the scenario's
        ``restart_cost``); required.
    persist : float or str, default 0.0
        Time after the write (while the job computes) until the checkpoint can
        be restored; a failure before then loses it (the level's previous
        checkpoint stays restorable meanwhile), and the level's next write
        waits for it.
    survives : float
        Fraction of failures after which this level's checkpoints can still be
        restored (in [0, 1]; a more durable level survives at least as often);
        required: it is the level's main assumption. Drawn at every failure,
        failures during a restart included.
    """

    interval: float
    cost: float = 0.0
    restart: float = None
    persist: float = 0.0
    survives: float = None

    def __post_init__(self):
        self._check("CheckpointLevel")

    def __repr__(self) -> str:
        durations = (f"{name}={duration_text(getattr(self, name))!r}" for name in ("interval", "cost", "restart",
                                                                                    "persist")
                     if name in ("interval", "restart") or getattr(self, name))
        return f"CheckpointLevel({', '.join(durations)}, survives={self.survives!r})"

    def _check(self, label: str):
        for name, why in (("restart", "the restart after restoring this level"),
                          ("survives", "the fraction of failures after which this level can be restored")):
            if getattr(self, name) is None:
                raise ScenarioError(f"{label}.{name}", f"required: {why}")
        for name in ("interval", "cost", "restart", "persist"):
            value = getattr(self, name)
            if is_sequence(value):
                raise ScenarioError(f"{label}.{name}", "a checkpoint level's fields are not sweep axes")
            object.__setattr__(self, name, check_number(f"{label}.{name}", value, kind="duration"))
        if self.interval <= 0.0:
            raise ScenarioError(f"{label}.interval", f"must be > 0 (got {format_hours(self.interval)})")
        object.__setattr__(self, "survives", check_number(f"{label}.survives", self.survives, kind="fraction"))


def as_checkpoint_levels(value) -> tuple[CheckpointLevel, ...] | None:
    """Normalise ``fast_checkpoints``.

    Parameters
    ----------
    value : sequence of CheckpointLevel or of mappings of its fields, or None
        The fast levels, fastest first.

    Returns
    -------
    tuple of CheckpointLevel or None
        The levels, checked (each interval longer than the one before and a
        whole multiple of the fastest, `survives` non-decreasing); None for none.

    Raises
    ------
    ScenarioError
        Naming the level and field at fault.
    """
    if value is None:
        return None
    if isinstance(value, (CheckpointLevel, Mapping, str)) or not is_sequence(value):
        raise ScenarioError("fast_checkpoints", f"expected a sequence of CheckpointLevel (got {short_repr(value)})")
    levels = []
    for i, level in enumerate(value):
        label = f"fast_checkpoints[{i}]"
        if isinstance(level, Mapping):
            unknown = set(level) - {f.name for f in dataclasses.fields(CheckpointLevel)}
            if unknown:
                raise ScenarioError(f"{label}.{sorted(map(str, unknown))[0]}", "not a CheckpointLevel field")
            try:
                level = CheckpointLevel(**level)
            except ScenarioError as error:
                raise ScenarioError(f"{label}.{error.parameter.rsplit('.', 1)[-1]}", error.reason) from None
            except TypeError as error:
                raise ScenarioError(label, str(error)) from None
        elif not isinstance(level, CheckpointLevel):
            raise ScenarioError(label, f"expected a CheckpointLevel (got {short_repr(level)})")
        levels.append(level)
    for i, (faster, slower) in enumerate(zip(levels, levels[1:])):
        label = f"fast_checkpoints[{i + 1}]"
        if slower.interval <= faster.interval:
            raise ScenarioError(f"{label}.interval", "levels go fastest first, each interval longer than the one before"
                                f" (got {format_hours(slower.interval)} after {format_hours(faster.interval)})")
        if slower.survives < faster.survives:
            raise ScenarioError(f"{label}.survives", f"a more durable level survives at least as often as a faster "
                                f"one (got {slower.survives:g} after {faster.survives:g})")
    for i, level in enumerate(levels):
        level_multiple(f"fast_checkpoints[{i}].interval", level.interval, levels[0].interval)
    return tuple(levels) or None


def level_multiple(name: str, interval: float, base: float) -> int:
    """Return interval / base as a whole number (relative tolerance 1e-9).

    Parameters
    ----------
    name : str
        The parameter named in the error.
    interval : float
        A level's interval (h).
    base : float
        The fastest level's interval (h).

    Returns
    -------
    int
        The multiple, >= 1.

    Raises
    ------
    ScenarioError
        If `interval` is not a whole multiple of `base`.
    """
    ratio = interval / base
    if not ratio <= _MAX_INTERVALS:
        raise ScenarioError(name, f"is more than 2**40 times the fastest level's interval {format_hours(base)} "
                                  f"(got {format_hours(interval)}); check the units")
    multiple = round(ratio)
    if multiple < 1 or abs(ratio - multiple) > _MULTIPLE_TOLERANCE * multiple:
        raise ScenarioError(name, f"must be a whole multiple of the fastest level's interval "
                                  f"{format_hours(base)} (got {format_hours(interval)}, {ratio:.6g} times it)")
    return multiple


# GPUs of a node where nothing says otherwise (a DGX-class node); a run's record reads the same.
DEFAULT_GPUS_PER_NODE = 8


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A training run's reliability parameters (durations in hours or with units).

    Any field but `taxonomy` may be a sequence: the scenario is then a grid
    (outer product).

    Parameters
    ----------
    n_gpus : int
        GPUs of the job; ``n_nodes = ceil(n_gpus / gpus_per_node)``.
    failure_rate : float
        Failures per node-day of runtime (``r_f``; 6.5e-3 on the
        larger cluster of the Meta study).
    checkpoint_interval : float or str
        Productive time between checkpoints.
    work : float or str
        Productive time the job needs: at most 2**40 s (`MAX_WORK`, about
        34,800 years), and at most 2**40 checkpoint intervals.
    checkpoint_cost : float or str, default 0.0
        Blocking time of one checkpoint write.
    restart_cost : float or str
        Initialisation after each interruption.
    queue_wait : float or str
        Wait after each interruption before the restart (no failures
        while queued); fixed, or exponential with this mean.
    gpus_per_node : int, default 8
        GPUs per node.
    weibull_shape : float, default 1.0
        Shape of Weibull inter-failure times with the same mean
        (1 = exponential).
    lemon_fraction : float, default 0.0
        Fraction of nodes that are lemons.
    lemon_rate_factor : float, default 1.0
        How many times as often a lemon fails as the rest; the cluster-average
        rate stays ``failure_rate``.
    queue_wait_distribution : {"fixed", "exponential"}, default "fixed"
        The law of the queue wait.
    checkpoint_persist : float or str, default 0.0
        Time after a checkpoint write (while the job computes) until that
        checkpoint is durable: asynchronous checkpointing. A failure before then
        loses it, and the next write waits for it.
    taxonomy : sequence of FailureCategory, optional
        Failure categories (`relmodel._failures.FailureCategory` items,
        or a taxonomy object with ``.categories``), not a sweep axis. Each failure
        draws its category by share, and the queue wait and restart after it
        are that category's; `restart_cost` and `queue_wait` then hold the
        share-weighted means (filled in; giving other values is an error).
    fast_checkpoints : sequence of CheckpointLevel, optional
        Checkpoint levels faster than this one (in memory, on peers, on local
        disk), fastest first; not a sweep axis. The scenario's own checkpoint is
        the last, most durable level: it survives every failure. Every interval,
        ``checkpoint_interval`` included, is a whole multiple of the fastest
        one; where several levels are due, only the most durable is written.
        Each failure draws which levels survive it (one uniform, so a level that
        survives means every more durable one does) and restores the latest
        restorable checkpoint, paying that level's restart.
    failure_model : object, optional
        A model from `relmodel._failures` (`Exponential`, `Weibull`,
        `LemonMixture`, `TaxonomyMixture`) instead of the flat fields: it fills
        ``failure_rate``, ``weibull_shape``, ``lemon_*`` and ``taxonomy`` (a flat
        field given as well must agree with it) and is not kept, so the result
        equals the scenario written with flat fields. `to_failure_model()` gives
        it back.

    Raises
    ------
    ScenarioError
        If any field is invalid (the error names it).
    """

    n_gpus: int
    failure_rate: float = None  # required unless failure_model gives it
    checkpoint_interval: float = None  # required
    work: float = None  # required
    checkpoint_cost: float = 0.0
    restart_cost: float = None  # 0, or the taxonomy's mean
    queue_wait: float = None  # 0, or the taxonomy's mean
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE
    weibull_shape: float = 1.0
    lemon_fraction: float = 0.0
    lemon_rate_factor: float = 1.0
    queue_wait_distribution: str = "fixed"
    checkpoint_persist: float = 0.0
    taxonomy: tuple | None = None
    fast_checkpoints: tuple | None = None
    failure_model: object = dataclasses.field(default=None, compare=False, repr=False)

    def _given_fields(self) -> list[tuple[str, str]]:
        """(name, text) of the fields given: others, at their defaults, left out."""
        shown = []
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            default = 0.0 if field.name in ("restart_cost", "queue_wait") else field.default
            if field.repr and (field.name in ("n_gpus", *_REQUIRED) or not _same(value, default)):
                shown.append((field.name, _field_text(field.name, value)))
        return shown

    def __repr__(self) -> str:
        """The fields given, durations as a person types them, a sweep axis by its size and range: within a
        few hundred characters, and for a scenario of scalars, code that makes it again."""
        return f"Scenario({', '.join(f'{name}={text}' for name, text in self._given_fields())})"

    def _repr_html_(self) -> str:
        return key_value_table("Scenario", self._given_fields())

    def __post_init__(self):
        if self.failure_model is not None:
            self._apply_failure_model()
        missing = [name for name in _REQUIRED if getattr(self, name) is None]
        if missing:  # a TypeError, as for any missing argument (studies rely on it)
            hint = " (failure_rate may come from failure_model=)" if "failure_rate" in missing else ""
            raise TypeError("Scenario() missing required argument(s): "
                            + ", ".join(f"'{name}'" for name in missing) + hint)
        self._apply_taxonomy()
        object.__setattr__(self, "fast_checkpoints", as_checkpoint_levels(self.fast_checkpoints))
        for name, (_, kind) in FIELDS.items():
            value = getattr(self, name)
            if is_sequence(value):
                values = sequence_values(value)
                if not values:
                    raise ScenarioError(name, "a sweep axis needs at least one value")
                normal = tuple(check_number(name, v, kind=kind) for v in values)
                if len(set(normal)) != len(normal):
                    raise ScenarioError(name, f"sweep values must be distinct (got {short_repr(values)})")
            else:
                normal = check_number(name, value, kind=kind)
            object.__setattr__(self, name, normal)
        if self.size > 2**32:
            raise ScenarioError("grid", f"{self.size} points; at most 2**32 scenarios per study")
        if float(np.max(self.work)) > MAX_WORK:
            raise ScenarioError("work", f"more than 2**40 s (about 34,800 years; got "
                                        f"{format_hours(float(np.max(self.work)))}); check the units")
        # The most intervals of any point, from the axes alone (columns() of a big grid would not fit).
        if float(np.max(self.work)) / float(np.min(self.checkpoint_interval)) > _MAX_INTERVALS:  # inf, no warning
            raise ScenarioError(
                "checkpoint_interval", "gives more than 2**40 checkpoints over `work`; check the units"
            )
        if self.fast_checkpoints:
            self._check_levels()

    def _check_levels(self):
        """The scenario's own checkpoint is the slowest level, a whole multiple of the fastest."""
        fastest, slowest = self.fast_checkpoints[0], self.fast_checkpoints[-1]
        if float(np.max(self.work)) / fastest.interval > _MAX_INTERVALS:
            raise ScenarioError("fast_checkpoints[0].interval",
                                "gives more than 2**40 checkpoints over `work`; check the units")
        for interval in np.atleast_1d(self.checkpoint_interval):
            if interval <= slowest.interval:
                raise ScenarioError("checkpoint_interval", f"must be longer than the slowest fast level's interval "
                                    f"{format_hours(slowest.interval)} (got {format_hours(interval)})")
            level_multiple("checkpoint_interval", float(interval), fastest.interval)

    def _apply_failure_model(self):
        """Fill the flat fields from `failure_model`; a flat field given too must agree."""
        model = self.failure_model
        if not hasattr(model, "scenario_fields"):
            raise ScenarioError("failure_model", f"expected a relmodel._failures model (got {short_repr(model)})")
        defaults = {"failure_rate": None, "weibull_shape": 1.0, "lemon_fraction": 0.0,
                    "lemon_rate_factor": 1.0, "taxonomy": None}
        for name, value in model.scenario_fields().items():
            given = getattr(self, name)
            if name == "taxonomy" and given is not None:
                given = as_categories(given, "taxonomy")
            if not _same(given, defaults[name]) and not _same(given, value):
                raise ScenarioError(name, f"{short_repr(given)} conflicts with failure_model={model!r}; "
                                          "give one or the other")
            object.__setattr__(self, name, value)
        object.__setattr__(self, "failure_model", None)

    def _apply_taxonomy(self):
        """Normalise the taxonomy; restart_cost and queue_wait become its share-weighted means."""
        if self.taxonomy is None:
            for name in ("restart_cost", "queue_wait"):
                if getattr(self, name) is None:
                    object.__setattr__(self, name, 0.0)
            return
        cats = as_categories(self.taxonomy, "taxonomy")
        object.__setattr__(self, "taxonomy", cats)
        for name in ("restart_cost", "queue_wait"):
            mean = math.fsum(c.share * getattr(c, name) for c in cats)
            given = getattr(self, name)
            if given is not None and (is_sequence(given)
                                      or not _same(check_number(name, scalar_value(given), kind="duration"), mean)):
                raise ScenarioError(name, f"the taxonomy sets it per category (share-weighted mean "
                                          f"{format_hours(mean)}); leave {name} out")
            object.__setattr__(self, name, mean)

    def to_failure_model(self):
        """Return the failure model of a scalar scenario.

        Returns
        -------
        Exponential, Weibull, LemonMixture or TaxonomyMixture
            The model equivalent to the flat fields.

        Raises
        ------
        ValueError
            For lemons or Weibull times together with a taxonomy (no single model
            object), or for a grid.
        """
        s = self._scalar()
        lemons = s.lemon_fraction != 0.0 or s.lemon_rate_factor != 1.0  # any lemon field set
        if s.taxonomy is not None:
            if lemons or s.weibull_shape != 1.0:
                raise ParameterError("taxonomy", "no single model object for a taxonomy with lemons or Weibull times")
            return TaxonomyMixture(s.failure_rate, s.taxonomy)
        if lemons:
            if s.weibull_shape != 1.0:
                raise ParameterError("weibull_shape", "no single model object for lemons with Weibull times")
            return LemonMixture(s.failure_rate, s.lemon_fraction, s.lemon_rate_factor)
        return Weibull(s.weibull_shape, s.failure_rate) if s.weibull_shape != 1.0 else Exponential(s.failure_rate)

    @property
    def has_levels(self) -> bool:
        """Whether checkpoints come in levels: fast levels, or a write that persists after it blocks."""
        return bool(self.fast_checkpoints) or bool(np.any(np.asarray(self.checkpoint_persist) > 0))

    def level_table(self) -> dict[str, np.ndarray] | None:
        """Return the checkpoint levels of a scalar scenario as arrays, fastest first,
        the scenario's own checkpoint last; None with one level that does not persist.

        Returns
        -------
        dict or None
            ``base`` (the fastest interval, h), ``mult`` (each interval over it,
            int), ``cost``, ``restart`` (the scenario's ``restart_cost`` for its
            own level), ``persist`` (h) and ``survives`` (1 for its own level).
        """
        s = self._scalar()
        fast = s.fast_checkpoints or ()
        if not fast and s.checkpoint_persist == 0.0:
            return None
        base = fast[0].interval if fast else s.checkpoint_interval
        mult = [level_multiple(f"fast_checkpoints[{i}].interval", lv.interval, base) for i, lv in enumerate(fast)]
        mult.append(level_multiple("checkpoint_interval", s.checkpoint_interval, base))
        column = lambda name, own: np.array([getattr(lv, name) for lv in fast] + [own], dtype=float)  # noqa: E731
        return {"base": base, "mult": np.array(mult, dtype=np.int64), "cost": column("cost", s.checkpoint_cost),
                "restart": column("restart", s.restart_cost), "persist": column("persist", s.checkpoint_persist),
                "survives": column("survives", 1.0)}

    def level_coords(self) -> dict[str, tuple]:
        """Return xarray coordinates along a ``level`` dim (empty without fast levels).

        Levels are named ``fast0``, ``fast1``, ... fastest first, and ``durable``
        for the scenario's own checkpoint (whose parameters are the scenario's).

        Returns
        -------
        dict
            Coordinate name to ``(dims, values)``.
        """
        if not self.fast_checkpoints:
            return {}
        levels = self.fast_checkpoints
        column = lambda name: np.array([getattr(lv, name) for lv in levels] + [np.nan])  # noqa: E731
        return {
            "level": ("level", [f"fast{i}" for i in range(len(levels))] + ["durable"]),
            "level_interval": ("level", column("interval"), {"units": "h"}),
            "level_cost": ("level", column("cost"), {"units": "h"}),
            "level_restart": ("level", column("restart"), {"units": "h"}),
            "level_persist": ("level", column("persist"), {"units": "h"}),
            "level_survives": ("level", np.array([lv.survives for lv in levels] + [1.0]), {"units": "1"}),
        }

    @property
    def category_names(self) -> tuple[str, ...]:
        """Names of the taxonomy's categories (empty without a taxonomy)."""
        return tuple(c.name for c in self.taxonomy or ())

    def category_coords(self) -> dict[str, tuple]:
        """Return xarray coordinates along a ``category`` dim (empty without a taxonomy).

        Returns
        -------
        dict
            Coordinate name to ``(dims, values)``.
        """
        if self.taxonomy is None:
            return {}
        cats = self.taxonomy
        return {
            "category": ("category", [c.name for c in cats]),
            "category_share": ("category", np.array([c.share for c in cats]), {"units": "1"}),
            "category_restart_cost": ("category", np.array([c.restart_cost for c in cats]), {"units": "h"}),
            "category_queue_wait": ("category", np.array([c.queue_wait for c in cats]), {"units": "h"}),
            "category_domain": ("category", [c.domain or "" for c in cats]),
        }

    # -- grid structure -------------------------------------------------
    @property
    def dims(self) -> tuple[str, ...]:
        """The sweep dimensions, in field order."""
        return tuple(name for name in FIELDS if isinstance(getattr(self, name), tuple))

    @property
    def shape(self) -> tuple[int, ...]:
        """Length of each sweep axis, in `dims` order."""
        return tuple(len(getattr(self, d)) for d in self.dims)

    @property
    def size(self) -> int:
        """Number of grid points (1 for a scalar scenario)."""
        return math.prod(self.shape)

    @property
    def is_grid(self) -> bool:
        """Whether any field is a sweep axis."""
        return bool(self.dims)

    def points(self) -> Iterator[Scenario]:
        """Iterate over the scalar scenarios of the grid, in C order (the scenario index order).

        Yields
        ------
        Scenario
            Each grid point.
        """
        dims = self.dims
        for values in itertools.product(*(getattr(self, d) for d in dims)):
            yield self._at(dict(zip(dims, values)))

    def point(self, index) -> Scenario:
        """Return the scalar scenario at a grid index.

        Parameters
        ----------
        index : tuple of int
            One index per entry of `dims`.

        Returns
        -------
        Scenario
            The scalar scenario.
        """
        index = tuple(index)
        if len(index) != len(self.dims):
            raise IndexError(f"need {len(self.dims)} indices for dims {self.dims}, got {index}")
        return self._at({d: getattr(self, d)[i] for d, i in zip(self.dims, index)})

    def _at(self, values: dict) -> "Scenario":
        """The grid point with these axis values, which were checked when the grid was built: not again."""
        point = object.__new__(Scenario)
        point.__dict__.update(self.__dict__, **values)
        return point

    def columns(self) -> dict[str, np.ndarray]:
        """Return each field as a flat array over the grid points, in scenario index order.

        Returns
        -------
        dict of str to numpy.ndarray
            One array per field.
        """
        dims = self.dims
        grids = np.meshgrid(*(np.asarray(getattr(self, d)) for d in dims), indexing="ij")
        flat = {d: g.ravel() for d, g in zip(dims, grids)}
        return {
            name: flat[name] if name in flat else np.full(self.size, getattr(self, name))
            for name in FIELDS
        }

    def coords(self) -> dict[str, tuple]:
        """Return xarray coordinates: sweep axes as dimension coordinates, the rest scalar.

        Returns
        -------
        dict
            Coordinate name to its value or ``(dim, values)``.
        """
        out = {}
        for name, (units, _) in FIELDS.items():
            value = getattr(self, name)
            attrs = {"units": units} if units else {}
            out[name] = ((name,), np.asarray(value), attrs) if name in self.dims else ((), value, attrs)
        return out

    @classmethod
    def from_dataset(cls, ds) -> Scenario:
        """Rebuild the scenario (grid) behind a Dataset or DataArray.

        From `simulate`, `compare` or a study: its scenario coordinates, dimension
        coordinates becoming sweep axes.

        Parameters
        ----------
        ds : xarray.Dataset or xarray.DataArray
            The labelled result.

        Returns
        -------
        Scenario
            The scenario or grid.
        """
        fields = {}
        for name in FIELDS:
            if name == "checkpoint_persist" and name not in ds.coords:
                continue  # a Dataset from before checkpoint levels: none
            if name not in ds.coords:
                raise ParameterError(name, f"the Dataset has no coordinate {name!r}; is it from relmodel?")
            value = ds[name].values
            fields[name] = value.tolist() if value.ndim else value.item()
        if "category" in ds.coords:
            fields["taxonomy"] = tuple(
                FailureCategory(str(name), float(share), float(restart), float(queue), str(domain) or None)
                for name, share, restart, queue, domain in zip(
                    ds["category"].values, ds["category_share"].values, ds["category_restart_cost"].values,
                    ds["category_queue_wait"].values, ds["category_domain"].values)
            )
        if "level" in ds.coords:
            fields["fast_checkpoints"] = tuple(
                CheckpointLevel(float(interval), float(cost), float(restart), float(persist), float(survives))
                for interval, cost, restart, persist, survives in zip(
                    *(ds[f"level_{name}"].values[:-1] for name in ("interval", "cost", "restart", "persist",
                                                                    "survives"))))
        return cls(**fields)

    def sweep(self, **axes) -> Scenario:
        """Return a copy with some fields replaced (sequences make sweep axes).

        With a taxonomy, a scalar `restart_cost` or `queue_wait` scales every
        category's value by one factor, so that their share-weighted mean
        becomes the value given (what halving the restart cost means there);
        a sequence of them is refused (no grid over categories).

        Parameters
        ----------
        **axes
            Scenario fields and their new values or sequences of values.

        Returns
        -------
        Scenario
            The new scenario or grid.

        Raises
        ------
        ScenarioError
            If a field is unknown or a value invalid.
        """
        if self.taxonomy is not None:
            axes = self._scale_taxonomy(axes)
        return dataclasses.replace(self, **axes)

    def _scale_taxonomy(self, axes: dict) -> dict:
        cats = axes.get("taxonomy", self.taxonomy)
        for name in ("restart_cost", "queue_wait"):
            if name not in axes or axes[name] is None:
                continue
            value = axes[name]
            if is_sequence(value):
                raise ScenarioError(name, "cannot be a sweep axis with a taxonomy (it is set per category)")
            hours = check_number(name, scalar_value(value), kind="duration")
            mean = math.fsum(c.share * getattr(c, name) for c in cats)
            if mean == 0 and hours != 0:
                raise ScenarioError(name, "every category has 0 here, so there is nothing to scale")
            factor = hours / mean if mean else 0.0
            cats = tuple(dataclasses.replace(c, **{name: getattr(c, name) * factor}) for c in cats)
        return {**axes, "taxonomy": cats, "restart_cost": None, "queue_wait": None}

    # -- derived quantities of a scalar scenario ---------------------------
    def _scalar(self) -> Scenario:
        if self.is_grid:
            raise ScenarioError(self.dims[0], f"is a sweep axis (a grid over {self.dims}), where one scenario "
                                              "is needed; use .points() or a vectorised function")
        return self

    @property
    def n_nodes(self) -> int:
        """Nodes of the job, ``ceil(n_gpus / gpus_per_node)`` (a scalar scenario)."""
        s = self._scalar()
        return -(-s.n_gpus // s.gpus_per_node)

    @property
    def job_failure_rate(self) -> float:
        """Mean failures per hour of runtime of the whole job."""
        return self.n_nodes * self.failure_rate / 24.0

    @property
    def mttf(self) -> float:
        """Mean time to failure of the whole job, in hours."""
        lam = self.job_failure_rate
        return math.inf if lam == 0 else 1.0 / lam

    @property
    def intervals(self) -> tuple[int, float]:
        """(full intervals each followed by a checkpoint, final partial interval in h)."""
        s = self._scalar()
        return split_work(s.work, s.checkpoint_interval)

    @property
    def failure_free_wall(self) -> float:
        """Wall time without failures, in hours: the work, every write of every
        level, and the waits for a level's previous write to persist (the
        kernels' own sum; docs: the job model)."""
        return failure_free_job(self._scalar()).wall

    def __str__(self) -> str:
        parts = []
        for name, (_, kind) in FIELDS.items():
            value = getattr(self, name)
            fmt = format_hours if kind == "duration" else str
            parts.append(f"{name}=" + (f"[{', '.join(map(fmt, value))}]" if isinstance(value, tuple) else fmt(value)))
        if self.taxonomy is not None:
            parts.append("taxonomy=[" + ", ".join(f"{c.name}:{c.share:g}" for c in self.taxonomy) + "]")
        if self.fast_checkpoints:
            parts.append("fast_checkpoints=[" + ", ".join(
                f"every {format_hours(lv.interval)}: cost {format_hours(lv.cost)}, restart {format_hours(lv.restart)}, "
                f"persist {format_hours(lv.persist)}, survives {lv.survives:g}" for lv in self.fast_checkpoints) + "]")
        return "Scenario(" + ", ".join(parts) + ")"


def _same(a, b) -> bool:
    """Equal values, floats within rounding (a model's fields against flat ones)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # an array against a scalar: not one value
        return False


def as_scenario(value) -> Scenario:
    """Return a Scenario from a Scenario or a mapping of its fields.

    Parameters
    ----------
    value : Scenario or dict
        A scenario, or its fields (sequences make sweep axes).

    Returns
    -------
    Scenario
        The scenario.

    Raises
    ------
    ScenarioError
        If the fields are invalid.
    """
    if isinstance(value, Scenario):
        return value
    if isinstance(value, Mapping):
        unknown = set(value) - set(FIELDS) - set(EXTRA_FIELDS)
        if unknown:
            raise ScenarioError(sorted(map(str, unknown))[0], f"not a Scenario field; fields are {', '.join(FIELDS)}")
        return Scenario(**value)
    raise TypeError(f"expected a Scenario or a mapping of its fields, got {type(value).__name__}")
