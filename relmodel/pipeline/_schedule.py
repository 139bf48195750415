"""Run a task graph: fixed orders by one longest-path sweep, or orders chosen
by the greedy list scheduler and then swept; the steady-state period, busy
time and bubble fraction per worker. Arrays only (no labels)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._display import readable
from ._config import SIMULATED_ITERATIONS, PipelineConfig, check_clock, check_count
from ._graph import TaskGraph, build_graph, csr, with_orders, worker_chains

N_ITERATIONS = SIMULATED_ITERATIONS  # simulated iterations; the period is measured over the last N_MEASURED
N_MEASURED = 3



def kernels():
    """The compiled kernels, imported on first use: `import relmodel.pipeline` stays light."""
    from . import _schedule_kernel

    return _schedule_kernel


class DeadlockError(RuntimeError):
    """The given worker orders wait on each other (a cycle in the task graph)."""


@readable()
@dataclass(frozen=True)
class Schedule:
    """Start and end times of every task, and the steady state they reach.

    Parameters
    ----------
    graph : TaskGraph
        The tasks and their dependencies.
    start : numpy.ndarray
        Start time of every task.
    end : numpy.ndarray
        End time of every task.
    period : float
        Steady-state time per iteration.
    completion : numpy.ndarray
        Completion time of each iteration.
    busy : numpy.ndarray
        Busy time of each worker per period, (d, p).
    plan : str, default "fixed orders"
        How the schedule was made.
    """

    graph: TaskGraph
    start: np.ndarray
    end: np.ndarray
    period: float  # steady-state time per iteration
    completion: np.ndarray  # (K,) end of each iteration's last optimizer step
    busy: np.ndarray  # (d, p) work per iteration on each worker (0 for a worker with no tasks)
    plan: str = "fixed orders"  # how the orders were chosen

    @property
    def bubble_fraction(self) -> np.ndarray:
        """(d, p) idle share of each worker's period; NaN for a worker with no tasks."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.busy > 0, 1.0 - self.busy / self.period, np.nan)

    def orders(self) -> list[np.ndarray]:
        """Return each worker's tasks in the order it ran them (all iterations; by start, then end).

        Returns
        -------
        list of numpy.ndarray
            Task indices, one array per worker.
        """
        return worker_orders(self.graph, np.lexsort((self.end, self.start)).argsort())


def worker_orders(graph: TaskGraph, rank) -> list[np.ndarray]:
    """Each worker's tasks sorted by `rank` (e.g. the step a list schedule placed them)."""
    d, m, p = graph.shape
    on = np.flatnonzero(graph.worker >= 0)
    by = np.lexsort((rank[on], graph.worker[on]))
    tasks = on[by]
    bounds = np.searchsorted(graph.worker[tasks], np.arange(d * p + 1))
    return [tasks[bounds[w]:bounds[w + 1]] for w in range(d * p)]


def kernel_inputs(graph: TaskGraph, chains, times=(), *, per_worker: bool = False) -> np.ndarray:
    """The chains' tasks as one int64 array, after the checks that keep the kernels'
    unchecked indexing (Numba, no bounds checks) in range: predecessor lists and
    chain tasks are task indices, workers are -1 or below d p, each task is in at
    most one chain, `times` (release, priority) have a value for every task; with
    `per_worker`, each chain runs on one worker (the list scheduler's premise)."""
    n = graph.size
    d, m, p = graph.shape
    ptr, idx = graph.pred_ptr, graph.pred_idx
    if not (ptr.shape == (n + 1,) and ptr[0] == 0 and np.all(np.diff(ptr) >= 0) and ptr[-1] == idx.size
            == graph.pred_delay.size and graph.worker.shape == graph.duration.shape == (n,)):
        raise ValueError("task graph: predecessor lists do not match its tasks")
    if idx.size and not (0 <= idx.min() and idx.max() < n):
        raise ValueError("task graph: a predecessor is not a task")
    if n and not (-1 <= graph.worker.min() and graph.worker.max() < d * p):
        raise ValueError(f"task graph: a worker outside 0..{d * p - 1} (or -1)")
    for values in times:  # longer is fine: ReCycle passes priorities of the fault-free graph (a barrier more)
        if np.ndim(values) != 1 or np.size(values) < n:
            raise ValueError(f"need a release time and a priority per task ({n}), got shape {np.shape(values)}")
    tasks = np.concatenate(chains).astype(np.int64) if len(chains) else np.empty(0, dtype=np.int64)
    if tasks.size and not (0 <= tasks.min() and tasks.max() < n):
        raise ValueError("chains: a chain holds an index that is not a task")
    if tasks.size and np.bincount(tasks, minlength=n).max() > 1:
        raise ValueError("chains: a task is in more than one chain, or twice in one")
    if per_worker and tasks.size:
        first = np.repeat([c[0] if len(c) else 0 for c in chains], [len(c) for c in chains])
        if graph.worker[tasks].min() < 0 or np.any(graph.worker[tasks] != graph.worker[first]):
            raise ValueError("chains: a chain must run on one worker (tasks without a worker run in none)")
    return tasks


def sweep(graph: TaskGraph, chains, release=None) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of every task when each chain runs in its order (one longest-path sweep);
    no task starts before its `release` time (default 0)."""
    release = np.zeros(graph.size) if release is None else np.asarray(release, dtype=float)
    kernel_inputs(graph, chains, (release,))
    ptr, idx, delay = with_orders(graph, chains)
    kernel = kernels()
    order, placed = kernel.topological_order(ptr, idx)
    if placed < graph.size:
        raise DeadlockError(
            f"the worker orders deadlock: {graph.size - placed} of {graph.size} tasks wait on a cycle")
    start = np.empty(graph.size)
    end = np.empty(graph.size)
    kernel.longest_path(order, graph.duration, release, ptr, idx, delay, start, end)
    return start, end


def greedy(graph: TaskGraph, chains, priority, release=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, sequence) of the greedy list schedule that merges `chains` per worker."""
    d, m, p = graph.shape
    n = graph.size
    release = np.zeros(n) if release is None else np.asarray(release, dtype=float)
    priority = np.asarray(priority, dtype=float)
    chain_task = kernel_inputs(graph, chains, (release, priority), per_worker=True)
    chain_ptr = np.zeros(len(chains) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in chains], out=chain_ptr[1:])
    start, end = np.empty(n), np.empty(n)
    sequence = np.empty(n, dtype=np.int64)
    placed = kernels().list_schedule(graph.duration, release, graph.worker, graph.pred_ptr, graph.pred_idx,
                                     graph.pred_delay, chain_ptr, chain_task, priority, d * p, start, end, sequence)
    if placed < n:
        raise DeadlockError(f"the chains deadlock: {n - placed} of {n} tasks could not be placed")
    return start, end, sequence


def measure(graph: TaskGraph, start, end, n_measured: int = N_MEASURED) -> Schedule:
    completion = end[graph.step_index].max(axis=1)
    K = graph.n_iterations
    n_measured = min(n_measured, K - 1)
    period = (completion[-1] - completion[-1 - n_measured]) / n_measured if n_measured else completion[0]
    d, m, p = graph.shape
    on = graph.worker >= 0
    busy = np.bincount(graph.worker[on], weights=graph.duration[on], minlength=d * p) / K
    return Schedule(graph=graph, start=start, end=end, period=float(period), completion=completion,
                    busy=busy.reshape(d, p))


def check_iterations(cfg: PipelineConfig, n_iterations, n_measured) -> tuple[int, int]:
    """Named errors for iteration counts, and the limits of `PipelineConfig` (task
    count, float64 clock) checked again for a number of iterations other than its own."""
    n_iterations = check_count("n_iterations", n_iterations)
    n_measured = check_count("n_measured", n_measured)
    if n_iterations != SIMULATED_ITERATIONS:
        check_clock(cfg, n_iterations)
    return n_iterations, n_measured


def after_all(times) -> float:
    """A priority above every one of `times` (>= 0) whatever their scale: twice
    the largest (a constant offset would swamp times far below 1)."""
    latest = float(np.max(times)) if np.size(times) else 0.0
    return 2.0 * latest if latest > 0 else 1.0


def fault_free(cfg: PipelineConfig, n_iterations: int = N_ITERATIONS, n_measured: int = N_MEASURED) -> Schedule:
    """Schedule every worker alive, running ``cfg.order`` in a fixed order (one sweep).

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline.
    n_iterations : int, default N_ITERATIONS
        Iterations simulated.
    n_measured : int, default N_MEASURED
        Trailing iterations over which the period is measured.

    Returns
    -------
    Schedule
        The fault-free schedule.
    """
    n_iterations, n_measured = check_iterations(cfg, n_iterations, n_measured)
    graph = build_graph(cfg, n_iterations)
    start, end = sweep(graph, worker_chains(graph, cfg.order))
    return measure(graph, start, end, n_measured)


def resweep(graph: TaskGraph, sequence, release=None) -> tuple[np.ndarray, np.ndarray]:
    """Sweep the orders a list schedule chose (tasks in `sequence` order per worker):
    gives back its times exactly."""
    return sweep(graph, worker_orders(graph, sequence), release)


__all__ = ["DeadlockError", "N_ITERATIONS", "N_MEASURED", "Schedule", "after_all", "check_iterations", "csr",
           "fault_free", "greedy", "kernel_inputs", "measure", "resweep", "sweep", "worker_orders"]
