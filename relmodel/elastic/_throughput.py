"""Throughput models X(g, b): samples per second of a data-parallel job on g GPUs
at global batch size b.

Parametric form (one step of synchronous data-parallel SGD, in seconds)::

    t(g, b) = t_fixed + t_sample * (b / g) + comm(g)
    comm(g) = t_log * log2(g) + t_ring * 2 (g - 1) / g + t_hop * (g - 1)
    X(g, b) = b / t(g, b)

`t_fixed + t_sample * b/g` is one GPU's step time at its local batch b/g;
`comm(g)` is the gradient all-reduce: a tree latency (log2 g), the bandwidth
term of a ring all-reduce (2 (g - 1) / g times the time to move the model once)
and a per-hop latency (g - 1). comm(1) = 0, all coefficients are >= 0, so
comm grows with g and X grows with b at fixed g (larger local batches
amortise both the fixed cost and the all-reduce).

Profiled form: measured throughputs on a grid of GPU counts and global batch
sizes, interpolated linearly in (log2 g, log2 b); a point outside the profiled
grid, or next to an unprofiled cell, is not feasible (NaN) rather than
extrapolated.

`FITTED_MODELS` holds parametric fits for the six model names of the ElasticFlow
traces (microsoft/elasticflow-traces, MIT): the traces' step times
(duration / num_iteration, which they state to within 0.1 %) at every
(model, batch, GPUs) they contain, fitted by non-negative least squares
(`fit_parametric`); mean relative error 2-4 %, worst 4-16 % (vgg16).

Curve families. The parametric models above are the "fitted" family. The
"roofline" family (`RooflineThroughput`) is a second, assumed shape::

    t(g, b) = t_fixed + t_sample * max(b / g, saturation_batch) + t_comm * (g - 1)

in which a GPU below its saturation batch is under-used (a step costs what a
saturated one does) and communication is linear in g. There a fixed global
batch stops scaling after a few GPUs while a batch that grows with the GPUs
keeps scaling: the regime in which elastic batch sizes matter most.
`ROOFLINE_MODELS` derives one from each fitted model (`roofline_model`);
`curve_models` returns a family's catalogue by name (`CURVE_FAMILIES`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable

import numpy as np

from .._display import readable
from .._docparts import fill_doc_parts
from .._errors import ParameterError

_TERMS = ("t_fixed", "t_sample", "t_log", "t_ring", "t_hop")

# Docstring parts that several docstrings share, written once: a docstring names one as %(name)s.
_DOC_PARTS = {
    "catalogue_fields": """\
max_local_batch : int, default 256
    The largest per-GPU batch that fits in memory.
batch_sizes : tuple of int, default (64, 128, 256)
    The global batch sizes jobs of this model are usually submitted with
    (used by the synthetic workload generator).""",
    "gpus_batch_parameters": """\
Parameters
----------
gpus : int or numpy.ndarray
    GPU counts.
batch : int or numpy.ndarray
    Global batch sizes.""",
    "points": """\
name : str
    The model's name.
gpus : array_like
    GPU count of each point.
batch : array_like
    Global batch of each point.
step_time : array_like
    Seconds per step of each point.""",
}


def _check_positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ParameterError(name, f"must be a positive integer (got {value!r})")
    return int(value)


class _StepTimeModel:
    """A throughput model from a step time: X(g, b) = b / step_time(g, b)."""

    increasing_in_batch = True  # the best batch at fixed g is the largest feasible one

    def _check_catalogue_fields(self):
        object.__setattr__(self, "max_local_batch", _check_positive_int("max_local_batch", self.max_local_batch))
        if isinstance(self.batch_sizes, (str, bytes)) or not isinstance(self.batch_sizes, Iterable):
            raise ParameterError("batch_sizes", f"must be a sequence of positive integers (got {self.batch_sizes!r})")
        object.__setattr__(self, "batch_sizes",
                           tuple(_check_positive_int("batch_sizes", b) for b in self.batch_sizes))

    def throughput(self, gpus, batch):
        """Return samples per second (arrays broadcast).

        %(gpus_batch_parameters)s

        Returns
        -------
        float or numpy.ndarray
            Samples per second.
        """
        return np.asarray(batch, dtype=float) / self.step_time(gpus, batch)

    def step_time(self, gpus, batch):
        """Return seconds per step on `gpus` GPUs at global batch `batch` (arrays broadcast).

        Parameters
        ----------
        gpus, batch : int or numpy.ndarray
            GPU counts and global batch sizes.

        Returns
        -------
        float or numpy.ndarray
            Seconds per step.
        """
        return self._step_seconds(np.asarray(gpus, dtype=float), np.asarray(batch, dtype=float))

    def comm_time(self, gpus):
        """Return the communication seconds per step on `gpus` GPUs (arrays broadcast).

        The terms of the step time that grow with the GPU count (each family's own).

        Parameters
        ----------
        gpus : int or numpy.ndarray
            GPU counts.

        Returns
        -------
        float or numpy.ndarray
            Communication seconds per step.
        """
        return self._comm_seconds(np.asarray(gpus, dtype=float))


@readable()
@dataclasses.dataclass(frozen=True)
class ParametricThroughput(_StepTimeModel):
    """Parametric throughput, X(g, b) = b / (t_fixed + t_sample b/g + t_log log2 g + t_ring 2(g-1)/g + t_hop (g-1)).

    Parameters
    ----------
    name : str
        The model's name.
    t_fixed : float
        Fixed seconds per step (>= 0; t_fixed + t_sample > 0).
    t_sample : float
        Seconds per sample per GPU.
    t_log : float, default 0.0
        Seconds per step times log2 g.
    t_ring : float, default 0.0
        Seconds of a ring all-reduce, times 2(g-1)/g.
    t_hop : float, default 0.0
        Seconds per extra GPU.
    %(catalogue_fields)s
    """

    name: str
    t_fixed: float
    t_sample: float
    t_log: float = 0.0
    t_ring: float = 0.0
    t_hop: float = 0.0
    max_local_batch: int = 256
    batch_sizes: tuple[int, ...] = (64, 128, 256)

    family = "fitted"  # the curve family (`CURVE_FAMILIES`)

    def __post_init__(self):
        for term in _TERMS:
            value = getattr(self, term)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) \
                    or not math.isfinite(value) or value < 0:
                raise ParameterError(term, f"must be a finite number >= 0 s (got {value!r})")
            object.__setattr__(self, term, float(value))
        if self.t_fixed + self.t_sample <= 0:
            raise ParameterError("t_fixed", "t_fixed + t_sample must be > 0 (a step takes time)")
        self._check_catalogue_fields()

    def _comm_seconds(self, g):
        """The t_log, t_ring and t_hop terms of the step time, at float GPU counts `g`."""
        return self.t_log * np.log2(g) + self.t_ring * 2.0 * (g - 1.0) / g + self.t_hop * (g - 1.0)

    def _step_seconds(self, g, b):
        """Seconds per step at float GPU counts `g` and global batches `b`."""
        return self.t_fixed + self.t_sample * (b / g) + self._comm_seconds(g)


def _check_seconds(name: str, value, *, positive: bool = False) -> float:
    """`value` as a float, or a ParameterError naming `name` (NaN, inf, negative, bool refused)."""
    bound = "> 0" if positive else ">= 0"
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or value < 0 or (positive and value == 0):
        raise ParameterError(name, f"must be a finite number {bound} (got {value!r})")
    return float(value)


@readable()
@dataclasses.dataclass(frozen=True)
class RooflineThroughput(_StepTimeModel):
    """Roofline throughput, X(g, b) = b / (t_fixed + t_sample max(b/g, saturation_batch) + t_comm (g-1)).

    One step of synchronous data-parallel SGD on g GPUs at global batch b
    takes ``t_fixed + t_sample * max(b/g, saturation_batch) + t_comm * (g - 1)``
    seconds. A GPU's compute time is flat below its saturation batch and
    linear above it (the roofline of an under-used GPU: below saturation the
    kernels are latency-bound, so a step on fewer samples costs as much as one
    at saturation), and each GPU beyond the first adds `t_comm` of
    communication (a parameter server, or an all-reduce bound by per-node
    latency rather than bandwidth).

    It is a family of its own, not a special case of `ParametricThroughput`:
    there a small local batch is inefficient only through the additive
    `t_fixed`, and communication grows at most like a ring all-reduce plus a
    per-hop term fitted to 1-16 GPUs. Here, a fixed global batch spread over
    more GPUs soon stops gaining (its local batch falls below saturation while
    the communication keeps growing), so strong scaling stalls, while a batch
    that grows with the GPUs keeps every GPU saturated. X increases with b at
    fixed g (strictly below saturation, weakly above it), so the elastic
    policy's best batch at fixed g is the largest feasible one.

    Parameters
    ----------
    name : str
        The model's name.
    t_sample : float
        Seconds per sample per GPU above saturation (> 0).
    saturation_batch : float
        The per-GPU batch (>= 1) below which a GPU is under-used: a step at a
        smaller local batch takes as long as one at this batch.
    t_fixed : float, default 0.0
        Fixed seconds per step (>= 0).
    t_comm : float, default 0.0
        Seconds per step per GPU beyond the first (>= 0).
    %(catalogue_fields)s
    """

    name: str
    t_sample: float
    saturation_batch: float
    t_fixed: float = 0.0
    t_comm: float = 0.0
    max_local_batch: int = 256
    batch_sizes: tuple[int, ...] = (64, 128, 256)

    family = "roofline"  # the curve family (`CURVE_FAMILIES`)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ParameterError("name", f"must be a non-empty string (got {self.name!r})")
        object.__setattr__(self, "t_sample", _check_seconds("t_sample", self.t_sample, positive=True))
        saturation = self.saturation_batch
        if isinstance(saturation, bool) or not isinstance(saturation, numbers.Real) \
                or not math.isfinite(saturation) or saturation < 1:
            raise ParameterError("saturation_batch", f"must be a finite per-GPU batch >= 1 (got {saturation!r})")
        object.__setattr__(self, "saturation_batch", float(saturation))
        object.__setattr__(self, "t_fixed", _check_seconds("t_fixed", self.t_fixed))
        object.__setattr__(self, "t_comm", _check_seconds("t_comm", self.t_comm))
        self._check_catalogue_fields()

    def _comm_seconds(self, g):
        """The t_comm (g - 1) term of the step time, at float GPU counts `g`."""
        return self.t_comm * (g - 1.0)

    def _step_seconds(self, g, b):
        """Seconds per step at float GPU counts `g` and global batches `b`."""
        return self.t_fixed + self.t_sample * np.maximum(b / g, self.saturation_batch) + self._comm_seconds(g)


@readable()
@dataclasses.dataclass(frozen=True, eq=False)  # eq would compare arrays
class ProfiledThroughput:
    """Measured throughputs (samples/s) on a grid of GPU counts and global batches.

    Interpolated linearly in (log2 g, log2 b); NaN outside the grid and
    inside a cell with an unprofiled corner (`throughput`).

    Parameters
    ----------
    name : str
        The model's name.
    gpus : tuple of int
        The profiled GPU counts.
    batch : tuple of int
        The profiled global batch sizes.
    throughput_table : numpy.ndarray
        ``throughput_table[i, k]`` at ``gpus[i]`` GPUs and batch ``batch[k]``;
        NaN marks an unprofiled cell.
    max_local_batch : int, optional
        The largest per-GPU batch that fits in memory.
    batch_sizes : tuple of int, default ()
        Usual submitted global batch sizes.
    """

    name: str
    gpus: tuple[int, ...]
    batch: tuple[int, ...]
    throughput_table: np.ndarray
    max_local_batch: int | None = None  # default: the largest profiled b / g
    batch_sizes: tuple[int, ...] = ()

    increasing_in_batch = False  # measured: search every feasible batch

    def __post_init__(self):
        gpus = tuple(_check_positive_int("gpus", g) for g in self.gpus)
        batch = tuple(_check_positive_int("batch", b) for b in self.batch)
        for name, axis in (("gpus", gpus), ("batch", batch)):
            if not axis or any(a >= b for a, b in zip(axis, axis[1:])):
                raise ParameterError(name, f"must be non-empty and strictly increasing (got {axis})")
        table = np.array(self.throughput_table, dtype=float)
        if table.shape != (len(gpus), len(batch)):
            raise ParameterError("throughput_table", f"shape {table.shape}, expected {(len(gpus), len(batch))}")
        if np.any(table[np.isfinite(table)] <= 0) or np.any(np.isinf(table)):
            raise ParameterError("throughput_table", "profiled throughputs must be finite and > 0 (NaN: not profiled)")
        if not np.isfinite(table).any():
            raise ParameterError("throughput_table", "no profiled point")
        table.setflags(write=False)
        object.__setattr__(self, "gpus", gpus)
        object.__setattr__(self, "batch", batch)
        object.__setattr__(self, "throughput_table", table)
        if self.max_local_batch is None:
            gi, bi = np.nonzero(np.isfinite(table))
            largest = max(batch[k] // gpus[i] for i, k in zip(gi, bi))
            object.__setattr__(self, "max_local_batch", max(1, largest))
        object.__setattr__(self, "max_local_batch", _check_positive_int("max_local_batch", self.max_local_batch))
        object.__setattr__(self, "batch_sizes", tuple(_check_positive_int("batch_sizes", b) for b in self.batch_sizes))

    @classmethod
    def from_points(cls, name: str, gpus, batch, step_time, **kwargs) -> "ProfiledThroughput":
        """Build a table from scattered profiled points; repeated points are combined by their median.

        Parameters
        ----------
        %(points)s
        **kwargs
            Other `ProfiledThroughput` fields.

        Returns
        -------
        ProfiledThroughput
            The table.
        """
        g = np.asarray(gpus, dtype=np.int64)
        b = np.asarray(batch, dtype=np.int64)
        t = np.asarray(step_time, dtype=float)
        if not (g.shape == b.shape == t.shape) or g.ndim != 1:
            raise ParameterError("step_time", "gpus, batch and step_time must be 1-D of one length")
        if np.any(~np.isfinite(t) | (t <= 0)):
            raise ParameterError("step_time", "must be finite and > 0 s")
        g_axis, b_axis = np.unique(g), np.unique(b)
        table = np.full((g_axis.size, b_axis.size), np.nan)
        for i, gv in enumerate(g_axis):
            for k, bv in enumerate(b_axis):
                hit = (g == gv) & (b == bv)
                if hit.any():
                    table[i, k] = bv / np.median(t[hit])
        return cls(name, tuple(g_axis.tolist()), tuple(b_axis.tolist()), table, **kwargs)

    def throughput(self, gpus, batch):
        """Return samples per second, interpolated (arrays broadcast).

        Bilinear in (log2 g, log2 b) within the cell that holds the point,
        from the corners that carry weight: a profiled point is its own value
        and a point on a grid line between two profiled points is interpolated
        along it, whatever is unprofiled beside them; a corner with weight
        that is unprofiled gives NaN (the same rule on every side of a hole).

        %(gpus_batch_parameters)s

        Returns
        -------
        float or numpy.ndarray
            Samples per second; NaN off the profiled grid.
        """
        g, b = np.broadcast_arrays(np.asarray(gpus, dtype=float), np.asarray(batch, dtype=float))
        with np.errstate(divide="ignore", invalid="ignore"):
            x, y = np.log2(g).ravel(), np.log2(b).ravel()
        x_axis, y_axis = np.log2(self.gpus), np.log2(self.batch)
        i, wx = _cell(x_axis, x)
        k, wy = _cell(y_axis, y)
        table = self.throughput_table
        n_g, n_b = table.shape
        out = np.zeros(x.size)
        inside = (i >= 0) & (k >= 0)
        for di, weight_x in ((0, 1.0 - wx), (1, wx)):
            for dk, weight_y in ((0, 1.0 - wy), (1, wy)):
                weight = weight_x * weight_y
                corner = table[np.minimum(i + di, n_g - 1), np.minimum(k + dk, n_b - 1)]
                out += np.where(weight > 0, weight * corner, 0.0)  # a weightless corner may be unprofiled
        return np.where(inside, out, np.nan).reshape(g.shape)


def _cell(axis: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cell of each x on a strictly increasing axis: (index of its lower edge, weight
    of the upper edge in [0, 1)); index -1 off the axis (NaN included). A one-point axis
    holds only its point."""
    index = np.searchsorted(axis, x, side="right") - 1
    index = np.where(x == axis[-1], axis.size - 1, index)  # the last point is its own cell
    on = (index >= 0) & (index < axis.size) & (x <= axis[-1])
    index = np.where(on, index, -1)
    upper = np.minimum(index + 1, axis.size - 1)
    span = axis[upper] - axis[np.maximum(index, 0)]
    with np.errstate(invalid="ignore", divide="ignore"):
        weight = np.where(on & (span > 0), (x - axis[np.maximum(index, 0)]) / np.where(span > 0, span, 1.0), 0.0)
    return index, weight


def fit_parametric(name: str, gpus, batch, step_time, **kwargs) -> ParametricThroughput:
    """Fit the parametric model nearest to profiled step times.

    By non-negative least squares on the five terms of `ParametricThroughput`.

    Parameters
    ----------
    %(points)s
    **kwargs
        Other `ParametricThroughput` fields.

    Returns
    -------
    ParametricThroughput
        The fitted model.
    """
    from scipy.optimize import nnls

    g = np.asarray(gpus, dtype=float)
    b = np.asarray(batch, dtype=float)
    t = np.asarray(step_time, dtype=float)
    if not (g.shape == b.shape == t.shape) or g.ndim != 1 or g.size < 2:
        raise ParameterError("step_time", "need at least two profiled points, 1-D arrays of one length")
    design = np.stack([np.ones_like(g), b / g, np.log2(g), 2 * (g - 1) / g, g - 1], axis=1)
    coef, _ = nnls(design, t)
    return ParametricThroughput(name, *coef.tolist(), **kwargs)


fill_doc_parts(_DOC_PARTS, ParametricThroughput, RooflineThroughput, _StepTimeModel.throughput,
               ProfiledThroughput.throughput, ProfiledThroughput.from_points, fit_parametric)


def _catalogue():
    # name: (t_fixed, t_sample, t_log, t_ring, t_hop) in s; max local batch; submitted batch sizes.
    # Fitted to every (model, batch, GPUs) of the ElasticFlow traces (see module docstring); the
    # memory bound is the largest batch the traces run on one GPU.
    fits = {
        "bert": ((0.0532, 0.001767, 0.004614, 0.002249, 0.0002968), 128, (64, 128)),
        "deepspeech2": ((0.03601, 0.009157, 0.001703, 0.009685, 0.0), 64, (32, 64)),
        "gpt2": ((0.02668, 0.0008542, 0.002238, 0.001467, 0.0002594), 256, (128, 256)),
        "inception3": ((0.02205, 0.002873, 0.008841, 0.0, 0.0), 128, (64, 128)),
        "resnet50": ((0.00897, 0.00209, 0.003838, 0.00504, 4.562e-05), 256, (64, 128, 256)),
        "vgg16": ((0.00485, 0.002958, 0.001373, 0.01041, 0.0), 256, (64, 128, 256)),
    }
    return {name: ParametricThroughput(name, *terms, max_local_batch=m_hi, batch_sizes=sizes)
            for name, (terms, m_hi, sizes) in fits.items()}


FITTED_MODELS: dict[str, ParametricThroughput] = _catalogue()


def as_model(model):
    """A throughput model, or the name of one in `FITTED_MODELS`."""
    if isinstance(model, str):
        try:
            return FITTED_MODELS[model]
        except KeyError:
            raise ParameterError("model", f"unknown model {model!r}; known: {', '.join(FITTED_MODELS)}") from None
    if not hasattr(model, "throughput") or not hasattr(model, "max_local_batch"):
        raise ParameterError("model", "expected a throughput model or a name in FITTED_MODELS, "
                                      f"got {type(model).__name__}")
    return model


DEFAULT_SATURATION = 0.5
DEFAULT_COMM = 0.02


def roofline_model(model, saturation: float = DEFAULT_SATURATION, comm: float = DEFAULT_COMM) -> RooflineThroughput:
    """Derive a roofline model from a fitted one, equal to it on one GPU at the full local batch.

    With M the model's ``max_local_batch`` and t1 its step time on one GPU at
    batch M: ``saturation_batch = saturation * M`` (at least 1), ``t_fixed = 0``,
    ``t_sample = t1 / M`` (so one GPU at batch M steps in exactly t1, and has the
    fitted throughput there) and ``t_comm = comm * t1`` (each GPU beyond the
    first adds that fraction of a full single-GPU step). Name, memory bound and
    submitted batch sizes are the model's.

    The defaults are a modelling assumption, not a fit (the ElasticFlow traces
    run at most 16 GPUs at large local batches, which cannot tell the two
    families apart). They describe a plausible modern-GPU regime: a
    current accelerator needs a large per-GPU batch to fill its compute units,
    so it is taken to be saturated only from half its memory-bound batch;
    and 2 % of a step per extra GPU makes communication cost about 14 % of a
    step on 8 GPUs (one node, on a fast interconnect) but more than a whole
    step beyond 50 GPUs, as for a parameter server or an all-reduce bound by
    the latency between nodes.

    Parameters
    ----------
    model : ParametricThroughput or str
        The fitted model, or its name in `FITTED_MODELS`; any throughput model with
        a finite throughput on one GPU at its ``max_local_batch`` will do.
    saturation : float, default 0.5
        The saturation batch as a fraction of the memory bound, in (0, 1].
    comm : float, default 0.02
        Communication per extra GPU as a fraction of the single-GPU step (>= 0).

    Returns
    -------
    RooflineThroughput
        The derived model.
    """
    model = as_model(model)
    if isinstance(saturation, bool) or not isinstance(saturation, numbers.Real) or not math.isfinite(saturation) \
            or not 0 < saturation <= 1:
        raise ParameterError("saturation", f"must be a fraction of the memory bound in (0, 1] (got {saturation!r})")
    comm = _check_seconds("comm", comm)
    m_hi = model.max_local_batch
    if hasattr(model, "step_time"):
        t1 = float(model.step_time(1, m_hi))
    else:  # a profiled model: its step time from its throughput
        t1 = m_hi / float(model.throughput(1, m_hi))
    if not (math.isfinite(t1) and t1 > 0):
        raise ParameterError("model", f"{model.name}: no finite step time on one GPU at batch {m_hi}")
    saturation_batch = max(1.0, saturation * m_hi)  # a local batch is at least 1: the same curve
    return RooflineThroughput(model.name, t_sample=t1 / max(m_hi, saturation_batch),
                              saturation_batch=saturation_batch, t_fixed=0.0, t_comm=comm * t1,
                              max_local_batch=m_hi, batch_sizes=tuple(model.batch_sizes))


ROOFLINE_MODELS: dict[str, RooflineThroughput] = {name: roofline_model(m) for name, m in FITTED_MODELS.items()}

CURVE_FAMILIES = ("fitted", "roofline")


def curve_models(family: str, saturation: float = DEFAULT_SATURATION, comm: float = DEFAULT_COMM) -> dict:
    """Return the catalogue of a throughput-curve family, model name to model.

    "fitted" is `FITTED_MODELS` (fitted to the ElasticFlow traces); "roofline" is
    `ROOFLINE_MODELS`, or at another `saturation` and `comm` the roofline models
    derived from `FITTED_MODELS` with those (see `roofline_model` for why the defaults
    are a plausible modern-GPU regime, and that they are an assumption, not a fit).

    Parameters
    ----------
    family : {"fitted", "roofline"}
        The curve family, one of `CURVE_FAMILIES`.
    saturation : float, default 0.5
        Roofline only: the saturation batch as a fraction of the memory bound.
    comm : float, default 0.02
        Roofline only: communication per extra GPU as a fraction of the
        single-GPU step.

    Returns
    -------
    dict
        Model name to throughput model (`FITTED_MODELS` itself for "fitted").
    """
    if not isinstance(family, str) or family not in CURVE_FAMILIES:
        raise ParameterError("curve", f"unknown curve family {family!r}; known: {', '.join(CURVE_FAMILIES)}")
    if family == "fitted":
        for name, value, default in (("saturation", saturation, DEFAULT_SATURATION), ("comm", comm, DEFAULT_COMM)):
            if value != default:
                raise ParameterError(name, f"only the roofline curve family takes it (got {value!r} with "
                                           "curve 'fitted')")
        return FITTED_MODELS
    if saturation == DEFAULT_SATURATION and comm == DEFAULT_COMM:
        return ROOFLINE_MODELS
    return {name: roofline_model(m, saturation, comm) for name, m in FITTED_MODELS.items()}
