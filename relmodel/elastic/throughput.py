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

`MODELS` holds parametric fits for the six model names of the ElasticFlow
traces (microsoft/elasticflow-traces, MIT): the traces' step times
(duration / num_iteration, which they state to within 0.1 %) at every
(model, batch, GPUs) they contain, fitted by non-negative least squares
(`fit_parametric`); mean relative error 2-4 %, worst 4-16 % (vgg16).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..errors import ParameterError

_TERMS = ("t_fixed", "t_sample", "t_log", "t_ring", "t_hop")


def _check_positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: must be a positive integer (got {value!r})")
    return int(value)


@dataclasses.dataclass(frozen=True)
class ParametricThroughput:
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
    max_local_batch : int, default 256
        The largest per-GPU batch that fits in memory.
    batch_sizes : tuple of int, default (64, 128, 256)
        The global batch sizes jobs of this model are usually submitted with
        (used by the synthetic workload generator).
    """

    name: str
    t_fixed: float
    t_sample: float
    t_log: float = 0.0
    t_ring: float = 0.0
    t_hop: float = 0.0
    max_local_batch: int = 256
    batch_sizes: tuple[int, ...] = (64, 128, 256)

    increasing_in_batch = True  # the best batch at fixed g is the largest feasible one

    def __post_init__(self):
        for term in _TERMS:
            value = getattr(self, term)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) \
                    or not math.isfinite(value) or value < 0:
                raise ValueError(f"{term}: must be a finite number >= 0 s (got {value!r})")
            object.__setattr__(self, term, float(value))
        if self.t_fixed + self.t_sample <= 0:
            raise ParameterError("t_fixed", "t_fixed + t_sample must be > 0 (a step takes time)")
        object.__setattr__(self, "max_local_batch", _check_positive_int("max_local_batch", self.max_local_batch))
        object.__setattr__(self, "batch_sizes",
                           tuple(_check_positive_int("batch_sizes", b) for b in self.batch_sizes))

    def comm_time(self, gpus):
        """Return the communication seconds per step on `gpus` GPUs (arrays broadcast).

        The t_log, t_ring and t_hop terms of the step time.

        Parameters
        ----------
        gpus : int or numpy.ndarray
            GPU counts.

        Returns
        -------
        float or numpy.ndarray
            Seconds per step.
        """
        g = np.asarray(gpus, dtype=float)
        return self.t_log * np.log2(g) + self.t_ring * 2.0 * (g - 1.0) / g + self.t_hop * (g - 1.0)

    def step_time(self, gpus, batch):
        """Return seconds per step on `gpus` GPUs at global batch `batch` (arrays broadcast).

        Parameters
        ----------
        gpus : int or numpy.ndarray
            GPU counts.
        batch : int or numpy.ndarray
            Global batch sizes.

        Returns
        -------
        float or numpy.ndarray
            Seconds per step.
        """
        g = np.asarray(gpus, dtype=float)
        b = np.asarray(batch, dtype=float)
        return self.t_fixed + self.t_sample * (b / g) + self.comm_time(g)

    def throughput(self, gpus, batch):
        """Return samples per second (arrays broadcast).

        Parameters
        ----------
        gpus : int or numpy.ndarray
            GPU counts.
        batch : int or numpy.ndarray
            Global batch sizes.

        Returns
        -------
        float or numpy.ndarray
            Samples per second.
        """
        return np.asarray(batch, dtype=float) / self.step_time(gpus, batch)


@dataclasses.dataclass(frozen=True, eq=False)  # eq would compare arrays
class ProfiledThroughput:
    """Measured throughputs (samples/s) on a grid of GPU counts and global batches.

    Interpolated linearly in (log2 g, log2 b); NaN outside the grid.

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
                raise ValueError(f"{name}: must be non-empty and strictly increasing (got {axis})")
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
        name : str
            The model's name.
        gpus : array_like
            GPU count of each point.
        batch : array_like
            Global batch of each point.
        step_time : array_like
            Seconds per step of each point.
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

        Parameters
        ----------
        gpus : int or numpy.ndarray
            GPU counts.
        batch : int or numpy.ndarray
            Global batch sizes.

        Returns
        -------
        float or numpy.ndarray
            Samples per second; NaN off the profiled grid.
        """
        from scipy.interpolate import RegularGridInterpolator

        g, b = np.broadcast_arrays(np.asarray(gpus, dtype=float), np.asarray(batch, dtype=float))
        x_axis, y_axis = np.log2(self.gpus), np.log2(self.batch)
        points = np.stack([np.log2(g).ravel(), np.log2(b).ravel()], axis=-1)
        # One-point axes: RegularGridInterpolator needs two, so match them exactly instead.
        if len(x_axis) == 1 or len(y_axis) == 1:
            return self._exact(g, b)
        interp = RegularGridInterpolator((x_axis, y_axis), self.throughput_table, bounds_error=False,
                                         fill_value=np.nan)
        return interp(points).reshape(g.shape)

    def _exact(self, g, b):
        out = np.full(g.shape, np.nan)
        for i, gv in enumerate(self.gpus):
            for k, bv in enumerate(self.batch):
                out[(g == gv) & (b == bv)] = self.throughput_table[i, k]
        return out


def fit_parametric(name: str, gpus, batch, step_time, **kwargs) -> ParametricThroughput:
    """Fit the parametric model nearest to profiled step times.

    By non-negative least squares on the five terms of `ParametricThroughput`.

    Parameters
    ----------
    name : str
        The model's name.
    gpus : array_like
        GPU count of each point.
    batch : array_like
        Global batch of each point.
    step_time : array_like
        Seconds per step of each point.
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


MODELS: dict[str, ParametricThroughput] = _catalogue()


def as_model(model):
    """A throughput model, or the name of one in `MODELS`."""
    if isinstance(model, str):
        try:
            return MODELS[model]
        except KeyError:
            raise ParameterError("model", f"unknown model {model!r}; known: {', '.join(MODELS)}") from None
    if not hasattr(model, "throughput") or not hasattr(model, "max_local_batch"):
        raise ParameterError("model", f"expected a throughput model or a name in MODELS, got {type(model).__name__}")
    return model
