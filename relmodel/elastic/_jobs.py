"""The job model: what a data-parallel training job may run on, and how fast.

A job needs `work` samples processed, whatever its batch size (a batch size in
[min_batch, max_batch] reaches the same accuracy after the same samples). It
runs on g GPUs at global batch b = g * m, with the per-GPU (local) batch m a
whole number in [min_local_batch, max_local_batch] (max: the memory bound)
and g in [min_gpus, max_gpus]. It was submitted with batch `batch` on `gpus`
GPUs: the rigid (FIFO) policy runs it exactly so, the fixed-batch policy
keeps `batch` and rescales g, the elastic policy chooses both.

A `Job` is not checked when built, so that a workload may hold invalid jobs;
`check_job` rejects them (the cluster simulator does so at submission).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import operator

import numpy as np

from .._display import readable
from .._docparts import fill_doc_parts
from .._errors import ParameterError
from .._units import short_repr
from ._throughput import as_model


class JobError(ParameterError):
    """An invalid job; ``.job_id`` and ``.field`` say which and where.

    Parameters
    ----------
    job_id : str
        The job.
    field : str
        The field at fault.
    reason : str
        What is wrong with it.
    """

    def __init__(self, job_id: str, field: str, reason: str):
        super().__init__(field, reason, where=f"job {job_id!r}")
        self.job_id, self.field = job_id, field


@readable("submit_time")
@dataclasses.dataclass(frozen=True, slots=True)  # slots: a trace holds a million of them
class Job:
    """A training job. Work in samples, times in hours, throughputs in samples/s.

    Parameters
    ----------
    model : ParametricThroughput, ProfiledThroughput or str
        A throughput model, or a name in `FITTED_MODELS`.
    work : float
        Samples to process (> 0).
    batch : int
        The submitted global batch (``batch / gpus`` is the local batch).
    gpus : int, default 1
        The submitted GPU count.
    min_batch, max_batch : int, optional
        The batch-size range [B_lo, B_hi]; `batch` when None.
    min_local_batch : int, default 1
        Smallest per-GPU batch.
    max_local_batch : int, optional
        Largest per-GPU batch; the model's memory bound when None.
    min_gpus : int, default 1
        Fewest GPUs.
    max_gpus : int, optional
        Most GPUs; the cluster size when None.
    submit_time : float, default 0.0
        Arrival time in hours.
    job_id : str, default ""
        The job's name.
    noise_scale : float, optional
        The job's gradient noise scale B_noise (samples; McCandlish et al.
        2018): at a global batch B it needs ``(1 + B / B_noise) / (1 + batch
        / B_noise)`` times its `work` in samples (its statistical efficiency
        is the inverse, 1 at the submitted batch), so the allocator and the
        cluster simulator rate it by goodput, throughput x efficiency (as
        Pollux does). None: no penalty, the work in samples whatever the batch.
    """

    model: object
    work: float
    batch: int
    gpus: int = 1
    min_batch: int | None = None
    max_batch: int | None = None
    min_local_batch: int = 1
    max_local_batch: int | None = None
    min_gpus: int = 1
    max_gpus: int | None = None
    submit_time: float = 0.0
    job_id: str = ""
    noise_scale: float | None = None

    def with_batch_range(self, low: int, high: int) -> "Job":
        """Return a copy of the job with the batch-size range [low, high].

        Parameters
        ----------
        low : int
            The smallest global batch, B_lo.
        high : int
            The largest global batch, B_hi.

        Returns
        -------
        Job
            The new job.
        """
        return dataclasses.replace(self, min_batch=low, max_batch=high)


@dataclasses.dataclass(frozen=True)
class Bounds:
    """A checked job's bounds, resolved against a cluster of `n_gpus`."""

    model: object
    batch: int  # submitted
    gpus: int  # submitted
    batch_lo: int
    batch_hi: int
    local_lo: int
    local_hi: int
    gpus_lo: int
    gpus_hi: int
    noise_scale: float | None = None


def statistical_efficiency(batch, submitted: int, noise_scale: float | None):
    """Return a sample's worth at `batch` relative to the submitted batch, ``(1 + submitted / B_noise) / (1 + batch /
    B_noise)``: training to a given loss takes E(B) = E_min (1 + B / B_noise) samples at batch B (and S_min (1 +
    B_noise / B) steps; McCandlish et al. 2018, the empirical model of large-batch training).

    Parameters
    ----------
    batch : int or numpy.ndarray
        Global batch sizes.
    submitted : int
        The batch the job's work is stated at (efficiency 1).
    noise_scale : float or None
        The gradient noise scale B_noise (samples); None: 1 everywhere.

    Returns
    -------
    float or numpy.ndarray
        The efficiency, below 1 above the submitted batch and above 1 below it.

    Raises
    ------
    ParameterError
        If a batch, `submitted` or `noise_scale` is not a finite number > 0.
    """
    values = np.asarray(batch)
    if values.dtype.kind not in "iuf" or not np.all(np.isfinite(values) & (values > 0)):
        raise ParameterError("batch", f"must be a finite number of samples > 0, each (got {short_repr(batch)})")
    _check_samples("submitted", submitted)
    if noise_scale is not None:
        _check_samples("noise_scale", noise_scale)
    return _efficiency(batch, submitted, noise_scale)


def _check_samples(name: str, value):
    if not _real(value) or not math.isfinite(value) or value <= 0:
        raise ParameterError(name, f"must be a finite number of samples > 0 (got {short_repr(value)})")


def _efficiency(batch, submitted, noise_scale):
    """`statistical_efficiency` of checked arguments."""
    if noise_scale is None:
        return np.ones_like(np.asarray(batch, dtype=float)) if np.ndim(batch) else 1.0
    return (1.0 + submitted / noise_scale) / (1.0 + np.asarray(batch, dtype=float) / noise_scale)


@dataclasses.dataclass(frozen=True)
class Options:
    """A job's feasible allocations, ascending in GPUs: on gpus[k] GPUs its best
    batch is batch[k], at throughput[k] samples/s. `reference` is the speedup's
    unit, the job's throughput on one GPU at its submitted batch. A job that may
    wait has a first option of 0 GPUs, worth 0. With a noise scale
    (`Job.noise_scale`) throughput is goodput: samples/s times the statistical
    efficiency of the batch, in samples of the submitted batch (what its work
    counts), and the best batch is the one of the highest goodput."""

    gpus: np.ndarray
    batch: np.ndarray
    throughput: np.ndarray
    reference: float
    # Derived arrays, built once: a simulation asks for them on every event.
    _cache: dict = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)

    def value(self, objective: str) -> np.ndarray:
        """The DP value of each option: throughput, or speedup over one GPU at the submitted batch."""
        if objective not in self._cache:
            self._cache[objective] = self.throughput if objective == "throughput" \
                else self.throughput / self.reference
        return self._cache[objective]

    def as_lists(self) -> tuple[list, list, list]:
        """Return GPUs, batch and throughput as lists of Python numbers (built once).

        A simulation reads single options on every event, which lists do fastest.

        Returns
        -------
        tuple of list
            ``gpus``, ``batch`` and ``throughput``.
        """
        if "lists" not in self._cache:
            self._cache["lists"] = (self.gpus.tolist(), self.batch.tolist(), self.throughput.tolist())
        return self._cache["lists"]

    @property
    def minimum(self) -> int:
        """The fewest GPUs the job runs on (its first option that runs)."""
        return int(self.gpus[1] if self.gpus[0] == 0 else self.gpus[0])

    def or_wait(self) -> "Options":
        """The same options and a first one of 0 GPUs, worth 0: the job may be left waiting."""
        if self.gpus.size and self.gpus[0] == 0:
            return self
        if "or_wait" not in self._cache:
            zero = np.zeros(1, dtype=np.int64)
            self._cache["or_wait"] = Options(np.concatenate([zero, self.gpus]), np.concatenate([zero, self.batch]),
                                             np.concatenate([[0.0], self.throughput]), self.reference)
        return self._cache["or_wait"]


def speedup_reference(bounds: "Bounds") -> float:
    """Throughput on one GPU at the submitted batch, whether or not that batch fits
    one GPU's memory (the speedup objective's unit). A profiled model may have no
    such point: then the submitted allocation's throughput per GPU."""
    x = float(bounds.model.throughput(1, bounds.batch))
    if math.isfinite(x) and x > 0:
        return x
    return float(bounds.model.throughput(bounds.gpus, bounds.batch)) / bounds.gpus


_MAX_WHOLE = 2**53  # batches and GPU counts: whole floats, and int64 arithmetic never overflows
# Submit times past 2**40 s (some 34,800 years) leave a float too coarse for a job's run: its JCT would come out 0.
_MAX_SUBMIT_TIME = 2.0**40 / 3600.0


def _whole(job_id: str, field: str, value, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or value != int(value) or not minimum <= value <= _MAX_WHOLE:
        raise JobError(job_id, field, f"must be a whole number in [{minimum}, 2**53] (got {value!r})")
    return int(value)


# Docstring parts that several docstrings share, written once: a docstring names one as %(name)s.
_DOC_PARTS = {
    "job_and_cluster": """\
job : Job
    The job.
n_gpus : int
    GPUs in the cluster.""",
}


def check_job(job: Job, n_gpus: int) -> Bounds:
    """Return the job's bounds on a cluster of `n_gpus` GPUs.

    Parameters
    ----------
    %(job_and_cluster)s

    Returns
    -------
    Bounds
        The job's batch and GPU bounds.

    Raises
    ------
    JobError
        Naming the field: negative or zero work, B_lo > B_hi, a submitted batch
        or GPU count outside its bounds, or no feasible GPU count.
    """
    jid = str(job.job_id)
    model = _check_model(jid, job.model)
    _check_amounts(jid, job)
    return _check_shape(jid, job, model, n_gpus)


def _check_model(jid: str, model):
    try:
        return as_model(model)
    except ValueError as err:
        raise JobError(jid, "model", str(err).split(": ", 1)[1]) from None


def _check_amounts(jid: str, job: Job):
    """The job's work and submission time: what sets one job apart from another of its shape."""
    work = job.work
    if not _real(work) or not math.isfinite(work) or work <= 0:
        raise JobError(jid, "work", f"must be a finite number of samples > 0 (got {work!r})")
    st = job.submit_time
    if not _real(st) or not 0 <= st <= _MAX_SUBMIT_TIME:
        raise JobError(jid, "submit_time", f"must be a time in [0, 2**40 s] (got {st!r} h)")
    scale = job.noise_scale
    if scale is not None and (not _real(scale) or not math.isfinite(scale) or scale <= 0):
        raise JobError(jid, "noise_scale", f"must be a finite number of samples > 0, or None (got {scale!r})")


def _real(x) -> bool:
    """A real number and not a bool; float and int answered without the slower ABC check."""
    return type(x) in (float, int) or (not isinstance(x, bool) and isinstance(x, numbers.Real))


def _check_shape(jid: str, job: Job, model, n_gpus: int) -> Bounds:
    """The bounds from the job's batch and GPU fields (its shape, `_SHAPE_FIELDS`)."""
    batch = _whole(jid, "batch", job.batch)
    gpus = _whole(jid, "gpus", job.gpus)
    lo = batch if job.min_batch is None else _whole(jid, "min_batch", job.min_batch)
    hi = batch if job.max_batch is None else _whole(jid, "max_batch", job.max_batch)
    if lo > hi:
        raise JobError(jid, "min_batch", f"B_lo = {lo} > B_hi = {hi}")
    if not lo <= batch <= hi:
        raise JobError(jid, "batch", f"submitted batch {batch} outside [B_lo, B_hi] = [{lo}, {hi}]")
    m_lo = _whole(jid, "min_local_batch", job.min_local_batch)
    m_hi = model.max_local_batch if job.max_local_batch is None else _whole(jid, "max_local_batch",
                                                                             job.max_local_batch)
    if m_lo > m_hi:
        raise JobError(jid, "min_local_batch", f"{m_lo} > max_local_batch {m_hi}")
    g_lo = _whole(jid, "min_gpus", job.min_gpus)
    g_hi = n_gpus if job.max_gpus is None else min(_whole(jid, "max_gpus", job.max_gpus), n_gpus)
    if g_lo > g_hi:
        raise JobError(jid, "min_gpus", f"no feasible GPU count: needs at least {g_lo} GPUs, "
                                        f"at most {g_hi} (cluster: {n_gpus})")
    bounds = Bounds(model, batch, gpus, lo, hi, m_lo, m_hi, g_lo, g_hi,
                    None if job.noise_scale is None else float(job.noise_scale))
    if not feasible_gpus(bounds, lo, hi).size:
        raise JobError(jid, "gpus", f"no feasible GPU count: no g in [{g_lo}, {g_hi}] has a local batch "
                                    f"in [{m_lo}, {m_hi}] for a batch in [{lo}, {hi}]")
    if not g_lo <= gpus <= g_hi:
        raise JobError(jid, "gpus", f"submitted on {gpus} GPUs, outside [{g_lo}, {g_hi}] "
                                    f"(GPU bounds, cluster of {n_gpus})")
    if batch % gpus or not m_lo <= batch // gpus <= m_hi:
        raise JobError(jid, "gpus", f"submitted batch {batch} on {gpus} GPUs is not a whole local batch "
                                    f"in [{m_lo}, {m_hi}]")
    x = float(model.throughput(gpus, batch))
    if not (math.isfinite(x) and x > 0):
        raise JobError(jid, "model", f"no throughput at the submitted {gpus} GPUs, batch {batch}")
    return bounds


def feasible_gpus(bounds: Bounds, lo: int, hi: int) -> np.ndarray:
    """GPU counts with a whole local batch in bounds for some batch in [lo, hi]."""
    g = np.arange(bounds.gpus_lo, bounds.gpus_hi + 1)
    m_min = np.maximum(bounds.local_lo, -(-lo // g))
    m_max = np.minimum(bounds.local_hi, hi // g)
    return g[m_min <= m_max]


def job_options(job: Job, n_gpus: int, fixed_batch: bool = False) -> Options:
    """Return a job's feasible (g, best b, X) on a cluster of `n_gpus`.

    Parameters
    ----------
    %(job_and_cluster)s
    fixed_batch : bool, default False
        Keep the submitted batch.

    Returns
    -------
    Options
        The feasible GPU counts with the best batch and throughput at each.

    Raises
    ------
    JobError
        If the job is invalid.
    """
    return options_for(check_job(job, n_gpus), fixed_batch)


fill_doc_parts(_DOC_PARTS, check_job, job_options)


def options_for(bounds: Bounds, fixed_batch: bool) -> Options:
    """Feasible (g, best b, X) of a checked job: every batch in its range
    (elastic), or only its submitted batch (fixed-batch). Options with no
    throughput (off a profiled grid) are left out."""
    lo, hi = (bounds.batch, bounds.batch) if fixed_batch else (bounds.batch_lo, bounds.batch_hi)
    g = feasible_gpus(bounds, lo, hi)
    m_min = np.maximum(bounds.local_lo, -(-lo // g))
    m_max = np.minimum(bounds.local_hi, hi // g)
    model = bounds.model
    scale = bounds.noise_scale
    if getattr(model, "increasing_in_batch", False) and scale is None:  # the largest batch is the best
        batch = g * m_max
        x = np.asarray(model.throughput(g, batch), dtype=float)
    else:  # every (g, m) pair; the first best m (the smallest batch) on ties
        counts = m_max - m_min + 1
        g_rep = np.repeat(g, counts)
        starts = np.cumsum(counts) - counts
        m_all = np.arange(counts.sum()) - np.repeat(starts, counts) + np.repeat(m_min, counts)
        x_all = np.asarray(model.throughput(g_rep, g_rep * m_all), dtype=float)
        if scale is not None:  # goodput: the samples' worth at this batch
            x_all = x_all * _efficiency(g_rep * m_all, bounds.batch, scale)
        x_all = np.where(np.isfinite(x_all) & (x_all > 0), x_all, -np.inf)
        best = np.maximum.reduceat(x_all, starts) if g.size else x_all
        is_best = x_all == np.repeat(best, counts)
        first = np.flatnonzero(is_best)
        first = first[np.r_[True, np.diff(g_rep[first]) != 0]] if first.size else first
        batch = np.zeros(g.size, dtype=np.int64)
        x = np.full(g.size, -np.inf)
        pos = np.searchsorted(g, g_rep[first])
        batch[pos] = g_rep[first] * m_all[first]
        x[pos] = x_all[first]
    ok = np.isfinite(x) & (x > 0)
    return Options(g[ok].astype(np.int64), batch[ok].astype(np.int64), x[ok], speedup_reference(bounds))


def rigid_options(bounds: Bounds) -> Options:
    """Return the one allocation of a rigid (FIFO) job: its submitted GPUs and batch.

    Parameters
    ----------
    bounds : Bounds
        The checked job (`check_job`).

    Returns
    -------
    Options
        One option, with its throughput.
    """
    x = np.array([float(bounds.model.throughput(bounds.gpus, bounds.batch))])
    gpus, batch = np.array([bounds.gpus]), np.array([bounds.batch])
    return Options(gpus.astype(np.int64), batch.astype(np.int64), x, speedup_reference(bounds))


_SHAPE_FIELDS = ("batch", "gpus", "min_batch", "max_batch", "min_local_batch", "max_local_batch", "min_gpus",
                 "max_gpus")
_shape_of = operator.attrgetter(*_SHAPE_FIELDS)
# Field types whose equal values print alike: a float field (0.0 and -0.0 compare equal but print apart in an
# error message) is checked job by job instead.
_KEYED_TYPES = frozenset((int, bool, type(None), np.int64, np.int32))


class OptionsTable:
    """Each job's `Options` under one policy, computed once per model and shape.

    The options (or the error) `check_job` and then `options_for` (or
    `rigid_options`) give on a cluster of `n_gpus`. A trace's jobs repeat a few
    models, batches and GPU counts, and a job's options depend on its model and
    `_SHAPE_FIELDS` alone: every job of a shape shares one `Options` (and one
    error, named after each job). Work and submission time are checked job by job.

    Parameters
    ----------
    n_gpus : int
        GPUs in the cluster.
    policy : {"elastic", "fixed-batch", "fifo"}
        "fifo" runs the submitted allocation only (`rigid_options`).
    """

    def __init__(self, n_gpus: int, policy: str):
        self.n_gpus, self.policy = n_gpus, policy
        self._by_shape: dict = {}  # (model id, shape values, their types) -> Options, or (field, reason)
        self._models: dict = {}  # id -> model: held, so that no other model takes its id

    def options(self, job: Job) -> Options:
        """Return the job's options, raising `JobError` where `check_job` does.

        Parameters
        ----------
        job : Job
            The job.

        Returns
        -------
        Options
            Its feasible allocations.
        """
        jid = str(job.job_id)
        model = _check_model(jid, job.model)
        _check_amounts(jid, job)
        values = _shape_of(job)
        types = tuple(map(type, values))
        if not _KEYED_TYPES.issuperset(types):
            return self._options(_check_shape(jid, job, model, self.n_gpus))
        key = (id(model), values, types, job.noise_scale)
        found = self._by_shape.get(key)
        if found is None:
            self._models[id(model)] = model
            try:
                found = self._options(_check_shape(jid, job, model, self.n_gpus))
            except JobError as err:
                found = (err.field, err.reason)
            self._by_shape[key] = found
        if isinstance(found, tuple):
            raise JobError(jid, *found)
        return found

    def _options(self, bounds: Bounds) -> Options:
        if self.policy == "fifo":
            return rigid_options(bounds)
        return options_for(bounds, self.policy == "fixed-batch")
