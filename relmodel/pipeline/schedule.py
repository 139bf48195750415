"""Run a task graph: fixed orders by one longest-path sweep, or orders chosen
by the greedy list scheduler and then swept; the steady-state period, busy
time and bubble fraction per worker. Arrays only (no labels)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import SIMULATED_ITERATIONS, PipelineConfig
from .graph import TaskGraph, build_graph, csr, with_orders, worker_chains

N_ITERATIONS = SIMULATED_ITERATIONS  # simulated iterations; the period is measured over the last N_MEASURED
N_MEASURED = 3



def kernels():
    """The compiled kernels, imported on first use: `import relmodel.pipeline` stays light."""
    from .._kernels import schedule

    return schedule


class DeadlockError(RuntimeError):
    """The given worker orders wait on each other (a cycle in the task graph)."""


@dataclass(frozen=True)
class Schedule:
    """Start and end times of every task, and the steady state they reach."""

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
        """Each worker's tasks in the order it ran them (all iterations; by start, then end)."""
        return worker_orders(self.graph, np.lexsort((self.end, self.start)).argsort())


def worker_orders(graph: TaskGraph, rank) -> list[np.ndarray]:
    """Each worker's tasks sorted by `rank` (e.g. the step a list schedule placed them)."""
    d, m, p = graph.shape
    on = np.flatnonzero(graph.worker >= 0)
    by = np.lexsort((rank[on], graph.worker[on]))
    tasks = on[by]
    bounds = np.searchsorted(graph.worker[tasks], np.arange(d * p + 1))
    return [tasks[bounds[w]:bounds[w + 1]] for w in range(d * p)]


def sweep(graph: TaskGraph, chains, release=None) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of every task when each chain runs in its order (one longest-path sweep);
    no task starts before its `release` time (default 0)."""
    ptr, idx, delay = with_orders(graph, chains)
    kernel = kernels()
    order, placed = kernel.topological_order(ptr, idx)
    if placed < graph.size:
        raise DeadlockError(
            f"the worker orders deadlock: {graph.size - placed} of {graph.size} tasks wait on a cycle")
    start = np.empty(graph.size)
    end = np.empty(graph.size)
    release = np.zeros(graph.size) if release is None else np.asarray(release, dtype=float)
    kernel.longest_path(order, graph.duration, release, ptr, idx, delay, start, end)
    return start, end


def greedy(graph: TaskGraph, chains, priority, release=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, sequence) of the greedy list schedule that merges `chains` per worker."""
    d, m, p = graph.shape
    chain_ptr = np.zeros(len(chains) + 1, dtype=np.int64)
    np.cumsum([c.size for c in chains], out=chain_ptr[1:])
    chain_task = np.concatenate(chains).astype(np.int64) if chains else np.empty(0, dtype=np.int64)
    n = graph.size
    start, end = np.empty(n), np.empty(n)
    sequence = np.empty(n, dtype=np.int64)
    release = np.zeros(n) if release is None else np.asarray(release, dtype=float)
    placed = kernels().list_schedule(graph.duration, release, graph.worker, graph.pred_ptr, graph.pred_idx,
                                     graph.pred_delay, chain_ptr, chain_task, np.asarray(priority, dtype=float),
                                     d * p, start, end, sequence)
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


def fault_free(cfg: PipelineConfig, n_iterations: int = N_ITERATIONS, n_measured: int = N_MEASURED) -> Schedule:
    """Every worker alive, running `cfg.order` in a fixed order (one sweep)."""
    graph = build_graph(cfg, n_iterations)
    start, end = sweep(graph, worker_chains(graph, cfg.order))
    return measure(graph, start, end, n_measured)


def resweep(graph: TaskGraph, sequence, release=None) -> tuple[np.ndarray, np.ndarray]:
    """Sweep the orders a list schedule chose (tasks in `sequence` order per worker):
    gives back its times exactly."""
    return sweep(graph, worker_orders(graph, sequence), release)


__all__ = ["DeadlockError", "N_ITERATIONS", "N_MEASURED", "Schedule", "csr", "fault_free", "greedy", "measure",
           "resweep", "sweep", "worker_orders"]
