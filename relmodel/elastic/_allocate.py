"""`allocate`: GPUs and batch sizes for a set of jobs, by dynamic programming.

    P(j, c) = max over feasible g <= c of P(j-1, c-g) + V_j(g),   P(0, c) = 0

with V_j(g) the best value of job j on g GPUs over its feasible batch sizes
(elastic), or at its submitted batch (fixed-batch, the baseline). The value is
the job's throughput (samples/s) or its speedup: that throughput over the job's
throughput on one GPU at its submitted batch. A job that may wait also has
g = 0, worth 0: the program then chooses which jobs run (admission), not only
how wide. The kernel is `relmodel.elastic._allocation_kernel.solve_allocation`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from .._checks import check_choice
from .._display import key_value_table
from .._errors import ParameterError
from ._jobs import Job, Options, job_options

ALLOCATION_POLICIES = ("elastic", "fixed-batch")
OBJECTIVES = ("throughput", "speedup")
MAX_GPUS = 65536
"""Largest cluster `allocate` (and `ClusterConfig`) accepts: the dynamic
program's table is jobs x (GPUs + 1)."""
MAX_TABLE_ENTRIES = 5e7
"""Most entries of that table (400 MB of int64) one `choose_options` builds."""


def check_gpus(n_gpus) -> int:
    """n_gpus as an int in [1, MAX_GPUS], else ValueError "n_gpus: ..."."""
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, (int, np.integer)) or n_gpus < 1:
        raise ParameterError("n_gpus", f"must be a positive integer (got {n_gpus!r})")
    if n_gpus > MAX_GPUS:
        raise ParameterError("n_gpus", f"at most {MAX_GPUS} GPUs (got {n_gpus}); the allocation's dynamic program "
                                       f"holds a jobs x GPUs table")
    return int(n_gpus)



@dataclasses.dataclass(frozen=True)
class Allocation:
    """GPUs, batch size and throughput of each job (in the order given), and the objective's total.

    A job left waiting has 0 GPUs, batch 0 and throughput 0.

    Parameters
    ----------
    job_ids : tuple of str
        The jobs, in the order given.
    gpus : numpy.ndarray
        GPUs allocated to each job.
    batch : numpy.ndarray
        Each job's global batch size.
    throughput : numpy.ndarray
        Each job's throughput (samples/s); its goodput for a job with a noise
        scale (`Job.noise_scale`: samples/s times the statistical efficiency of
        its batch, in samples of its submitted batch).
    value : float
        The objective's total.
    policy : str
        The policy used.
    objective : str
        The objective maximised.
    n_gpus : int
        GPUs in the cluster.
    """

    job_ids: tuple[str, ...]
    gpus: np.ndarray
    batch: np.ndarray
    throughput: np.ndarray  # samples/s
    value: float
    policy: str
    objective: str
    n_gpus: int

    def __len__(self):
        return len(self.job_ids)

    @property
    def admitted(self) -> np.ndarray:
        """Whether each job runs (has GPUs)."""
        return self.gpus > 0

    def __repr__(self) -> str:
        waiting = int(np.sum(~self.admitted))
        return (f"Allocation({len(self)} jobs{f' ({waiting} waiting)' if waiting else ''}, "
                f"{int(np.sum(self.gpus))} of {self.n_gpus} GPUs, "
                f"{self.objective} {self.value:.4g}, policy {self.policy!r})")

    def _repr_html_(self) -> str:
        rows = [("policy", self.policy), (f"objective ({self.objective})", f"{self.value:.4g}"),
                ("GPUs used", f"{int(np.sum(self.gpus))} of {self.n_gpus}"),
                *((job, f"{g} GPUs, batch {b}, {t:.4g} samples/s")
                  for job, g, b, t in zip(self.job_ids, self.gpus, self.batch, self.throughput))]
        return key_value_table("Allocation", rows)

    def to_dataset(self):
        """Return the allocation as an xarray Dataset along ``job``.

        Returns
        -------
        xarray.Dataset
            ``gpus``, ``batch`` and ``throughput`` by job, with the policy, the
            objective and its value in attrs.
        """
        import xarray as xr

        from .._version import __version__

        return xr.Dataset(
            {"gpus": ("job", self.gpus, {"long_name": "GPUs allocated", "units": "GPU"}),
             "batch": ("job", self.batch, {"long_name": "global batch size", "units": "sample"}),
             "throughput": ("job", self.throughput, {"long_name": "throughput", "units": "sample/s"})},
            coords={"job": ("job", list(self.job_ids))},
            attrs={"title": "relmodel elastic allocation", "policy": self.policy, "objective": self.objective,
                   "n_gpus": self.n_gpus, "value": self.value, "relmodel_version": __version__},
        )


def choose_options(options: Sequence[Options], capacity: int, objective: str) -> tuple[np.ndarray, float]:
    """Index of the chosen option of each job and the best total; (all -1, -inf)
    when the jobs' minimum allocations exceed `capacity`."""
    from ._allocation_kernel import solve_allocation

    if not options:
        return np.zeros(0, dtype=np.int64), 0.0
    _check_table(len(options), capacity)
    offsets, gpus, value = _flatten(options, objective)
    chosen, total = solve_allocation(offsets, gpus, value, int(capacity))
    return np.where(chosen >= 0, chosen - offsets[:-1], -1), float(total)


def _check_table(n_jobs: int, capacity: int):
    entries = float(n_jobs) * (int(capacity) + 1)
    if entries > MAX_TABLE_ENTRIES:
        raise ParameterError("n_gpus", f"{n_jobs} jobs x {int(capacity) + 1} GPU counts make a "
                                       f"{entries:.2g}-entry allocation table (limit {MAX_TABLE_ENTRIES:.0e}); "
                                       "use fewer GPUs or jobs")


def _flatten(options: Sequence[Options], objective: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The kernel's arrays: offsets of each job's options, and their GPUs and values end to end."""
    counts = np.array([o.gpus.size for o in options], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    gpus = np.concatenate([o.gpus for o in options])
    value = np.concatenate([o.value(objective) for o in options])
    return offsets, gpus, value


class PrefixSolver:
    """`choose_options` over a sequence of job lists, keeping the dynamic program's rows between calls.

    Row j depends on the first j jobs' options alone, so the rows before the
    first job that differs from the last call's list are reused: a simulator
    whose arrivals come last in the list computes one row on an arrival. Each
    distinct `Options` is copied once into a pool that the kernel reads (jobs
    of one shape share theirs). The same results as `choose_options`, bit for bit.

    Parameters
    ----------
    objective : str
        One of `OBJECTIVES`.
    """

    def __init__(self, objective: str):
        self.objective = objective
        self._spans: dict[int, tuple[int, int]] = {}  # id(options) -> its slice of the pool
        self._held: list[Options] = []  # the pooled options, held so that no others take their ids
        self._gpus = np.zeros(64, dtype=np.int64)
        self._value = np.zeros(64)
        self._size = 0  # of the pool, in options
        self._options: list = []  # the job list of the rows held
        self._starts = np.zeros(0, dtype=np.int64)  # the list's slices of the pool
        self._ends = np.zeros(0, dtype=np.int64)
        self.pooled = np.zeros(0, dtype=np.int64)  # the last call's choices in the pool: equal, the same option
        self._capacity = -1
        self._best = np.zeros((1, 1))
        self._choice = np.zeros((0, 1), dtype=np.int64)

    def solve(self, options: Sequence[Options], capacity: int) -> tuple[np.ndarray, float]:
        """Return `choose_options(options, capacity, objective)`.

        Parameters
        ----------
        options : sequence of Options
            Each job's options, in the order of the program.
        capacity : int
            GPUs to allocate.

        Returns
        -------
        tuple of numpy.ndarray and float
            The chosen option of each job (-1 for all when the minimums exceed
            `capacity`), and the best total.
        """
        from ._allocation_kernel import extend_allocation

        if not options:
            self.pooled = np.zeros(0, dtype=np.int64)
            return self.pooled, 0.0
        _check_table(len(options), capacity)
        capacity = int(capacity)
        if capacity != self._capacity:  # rows span capacity + 1 columns
            self._options, self._capacity = [], capacity
            self._best = np.zeros((1, capacity + 1))
            self._choice = np.zeros((0, capacity + 1), dtype=np.int64)
        kept = 0
        for held, new in zip(self._options, options):
            if held is not new:
                break
            kept += 1
        n_jobs = len(options)
        self._grow(n_jobs)
        for j in range(kept, n_jobs):
            self._starts[j], self._ends[j] = self._spans.get(id(options[j])) or self._pool(options[j])
        starts = self._starts[:n_jobs]
        self.pooled, total = extend_allocation(starts, self._ends[:n_jobs], self._gpus, self._value, capacity, kept,
                                               self._best, self._choice)
        self._options = list(options)
        return np.where(self.pooled >= 0, self.pooled - starts, -1), float(total)

    def _pool(self, options: Options) -> tuple[int, int]:
        start, end = self._size, self._size + options.gpus.size
        if end > self._gpus.size:  # doubled: amortised O(1) a pooled option
            more = max(end, 2 * self._gpus.size) - self._gpus.size
            self._gpus = np.concatenate([self._gpus, np.zeros(more, dtype=np.int64)])
            self._value = np.concatenate([self._value, np.zeros(more)])
        self._gpus[start:end] = options.gpus
        self._value[start:end] = options.value(self.objective)
        self._size = end
        self._held.append(options)
        self._spans[id(options)] = (start, end)
        return start, end

    def _grow(self, n_jobs: int):
        rows = self._choice.shape[0]
        if n_jobs > rows:
            rows = max(n_jobs, 2 * rows)
            best = np.zeros((rows + 1, self._capacity + 1))
            choice = np.zeros((rows, self._capacity + 1), dtype=np.int64)
            best[:self._best.shape[0]] = self._best
            choice[:self._choice.shape[0]] = self._choice
            self._best, self._choice = best, choice
        if n_jobs > self._starts.size:
            self._starts = np.concatenate([self._starts, np.zeros(rows, dtype=np.int64)])
            self._ends = np.concatenate([self._ends, np.zeros(rows, dtype=np.int64)])


def allocate(jobs: Sequence[Job], n_gpus: int, policy: str = "elastic", objective: str = "throughput", *,
             may_wait=False) -> Allocation:
    """Return the allocation of `n_gpus` GPUs to `jobs` that maximises the objective.

    Every job gets at least its minimum, except those that may wait: they get
    their minimum or more, or nothing. GPUs may stay idle when no job gains
    from them.

    Parameters
    ----------
    jobs : sequence of Job
        The jobs.
    n_gpus : int
        GPUs to allocate.
    policy : {"elastic", "fixed-batch"}, default "elastic"
        "elastic": each job's batch anywhere in its range; "fixed-batch": each
        job keeps its submitted batch (GPUs still scale).
    objective : {"throughput", "speedup"}, default "throughput"
        "throughput": total samples/s; "speedup": total of each job's
        throughput over its throughput on one GPU at its submitted batch.
    may_wait : bool or sequence of bool, default False
        Jobs that may get no GPUs (all of them when True): the program
        then chooses which of them run (admission).

    Returns
    -------
    Allocation
        The allocation.

    Raises
    ------
    JobError
        For an invalid job.
    ValueError
        When the minimums of the jobs that may not wait do not fit, or
        `may_wait` does not match `jobs`.
    """
    check_choice("policy", policy, ALLOCATION_POLICIES, ParameterError)
    check_choice("objective", objective, OBJECTIVES, ParameterError)
    n_gpus = check_gpus(n_gpus)
    jobs = tuple(jobs)
    waits = _wait_mask(may_wait, len(jobs))
    opts = [job_options(job, n_gpus, policy == "fixed-batch") for job in jobs]
    opts = [o.or_wait() if w else o for o, w in zip(opts, waits)]
    chosen, total = choose_options(opts, n_gpus, objective)
    if total == -np.inf:
        need = sum(o.minimum for o, w in zip(opts, waits) if not w)
        raise ParameterError("n_gpus", f"the jobs need {need} GPUs at their minimum allocations; there are {n_gpus}")
    return Allocation(tuple(str(j.job_id) for j in jobs), _pick(opts, chosen, "gpus"), _pick(opts, chosen, "batch"),
                      _pick(opts, chosen, "throughput"), total, policy, objective, int(n_gpus))


def _wait_mask(may_wait, n_jobs: int) -> list[bool]:
    if isinstance(may_wait, (bool, np.bool_)):
        return [bool(may_wait)] * n_jobs
    try:
        mask = list(may_wait)
    except TypeError:
        raise ParameterError("may_wait", f"must be a bool or one bool per job (got {may_wait!r})") from None
    if len(mask) != n_jobs or not all(isinstance(w, (bool, np.bool_)) for w in mask):
        raise ParameterError("may_wait", f"need one bool per job ({n_jobs}), got {may_wait!r}")
    return [bool(w) for w in mask]


def _pick(opts: Sequence[Options], chosen: np.ndarray, field: str) -> np.ndarray:
    return np.array([getattr(o, field)[k] for o, k in zip(opts, chosen)],
                    dtype=np.float64 if field == "throughput" else np.int64)
