"""ReCycle's adaptive pipelining (Gandhi et al., SOSP 2024).

A failed worker's micro-batches are re-routed to its surviving peers at the
same stage (they hold the same parameters), spread evenly. The survivors keep
the fault-free schedule: their own tasks are released no earlier than in it,
and the re-routed tasks, as extra chains in the failed worker's order, go into
the idle time around them. A greedy list scheduler chooses the merge.

- Decoupled backward: B and W are separate tasks and every W is deferred (a
  chain of the lowest priority), so weight gradients move into bubbles and
  make room on the critical path.
- Staggered optimizer: each stage steps once its own gradients are reduced, so
  the stages drift apart by what their extra load needs.

The planner tries a few plans (which peer takes which micro-batch; re-routed
tasks at their fault-free priority or ahead of the peer's own) and keeps the
fastest, as ReCycle's planner picks among schedules.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .config import PipelineConfig
from .graph import build_graph, default_executor, stage_order, task_index
from .schedule import (N_ITERATIONS, N_MEASURED, Schedule, after_all, check_iterations, fault_free, greedy, measure,
                       resweep)

ASSIGNMENTS = ("round-robin", "blocks")
PLANS = tuple((a, first) for a in ASSIGNMENTS for first in (False, True))


def reroute(mask: np.ndarray, m: int, assignment: str = "round-robin") -> np.ndarray | None:
    """executor[r, j, s] with each failed worker's micro-batches spread evenly
    over its stage's survivors (each runs at most ceil(m d / (d - f_s)));
    None when a stage has no survivor.

    round-robin: the re-routed (micro-batch, replica) pairs in micro-batch
    order, dealt to the survivors in turn; blocks: each survivor takes a
    contiguous run of them.
    """
    d, p = mask.shape
    executor = default_executor(d, m, p)
    for s in range(p):
        lost = np.flatnonzero(mask[:, s])
        if lost.size == 0:
            continue
        alive = np.flatnonzero(~mask[:, s])
        if alive.size == 0:
            return None
        if assignment == "round-robin":
            r, j = np.meshgrid(lost, np.arange(m), indexing="xy")  # micro-batch major
            peer = np.arange(r.size) % alive.size
        else:
            j, r = np.meshgrid(np.arange(m), lost, indexing="xy")  # replica major
            peer = (np.arange(r.size) * alive.size) // r.size
        executor[r.ravel(), j.ravel(), s] = alive[peer] * p + s
    return executor


def recycle_kind(cfg: PipelineConfig, decoupled: bool = True, staggered: bool = True) -> PipelineConfig:
    """The schedule options ReCycle runs with: cfg's, with a decoupled backward
    and a staggered optimizer where enabled."""
    changes = {}
    if decoupled:
        changes["backward"] = "decoupled"
    if staggered:
        changes["optimizer"] = "staggered"
    return cfg.replace(**changes) if changes else cfg


@functools.lru_cache(maxsize=8)  # a schedule holds a few arrays per task: keep few
def _reference(cfg: PipelineConfig, n_iterations: int, n_measured: int) -> Schedule:
    return frozen(fault_free(cfg, n_iterations, n_measured))


def frozen(schedule: Schedule) -> Schedule:
    """The schedule with read-only arrays, safe to share from a cache."""
    for array in (schedule.start, schedule.end, schedule.busy, schedule.completion):
        array.flags.writeable = False
    return schedule


def recycle_schedule(cfg: PipelineConfig, mask: np.ndarray, *, decoupled: bool = True, staggered: bool = True,
                     plans=PLANS, fallback: bool = True, n_iterations: int = N_ITERATIONS,
                     n_measured: int = N_MEASURED) -> Schedule | None:
    """Return ReCycle's schedule for the failed workers in `mask`.

    With no failure ReCycle runs the fault-free schedule of `cfg`. Otherwise
    the planner keeps the fastest of the re-routing `plans` and, with
    `fallback`, of leaving the broken replicas out (their micro-batches spread
    over the whole ones, as dropping the pipeline would, in ReCycle's schedule
    kind). The period is never below the fault-free period (the survivors'
    tasks keep their slots) nor the busiest survivor's work: a shorter measured
    period is a transient that the simulated iterations did not outlast.

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline.
    mask : numpy.ndarray
        (d, p) boolean mask of failed workers.
    decoupled : bool, default True
        Use ReCycle's decoupled backward.
    staggered : bool, default True
        Use ReCycle's staggered optimizer step.
    plans : tuple of str, default PLANS
        The re-routing plans tried.
    fallback : bool, default True
        Also try leaving the broken replicas out.
    n_iterations : int, default N_ITERATIONS
        Iterations simulated.
    n_measured : int, default N_MEASURED
        Trailing iterations over which the period is measured.

    Returns
    -------
    Schedule or None
        The schedule, or None (zero throughput) when every replica of some
        stage failed.
    """
    n_iterations, n_measured = check_iterations(cfg, n_iterations, n_measured)
    reference = _reference(cfg, n_iterations, n_measured)
    if not mask.any():
        return reference
    floor = max(reference.period, load_bound(cfg, mask))
    if not np.isfinite(floor):
        return None
    best = None
    for assignment, reroute_first in plans:
        executor = reroute(mask, cfg.microbatches, assignment)
        schedule = _adapted(cfg, mask, executor, reference, decoupled, staggered, reroute_first, n_iterations,
                            n_measured)
        if best is None or schedule.period < best.period:
            best = dataclasses.replace(schedule, plan=f"re-routed ({assignment}"
                                                      f"{', re-routed first' if reroute_first else ''})")
        if best.period <= floor * (1.0 + 1e-12):
            break  # a plan reaches the bound: none can do better
    whole = int(np.sum(~mask.any(axis=1)))
    if fallback and whole > 0 and best.period > floor * (1.0 + 1e-12):
        m_each = -(-(cfg.microbatches * cfg.replicas) // whole)
        kind = recycle_kind(cfg, decoupled, staggered).replace(replicas=whole, microbatches=m_each)
        dropped = fault_free(kind, n_iterations, n_measured)
        if dropped.period < best.period:
            best = dataclasses.replace(dropped, plan=f"broken replicas left out ({whole} x {m_each} micro-batches)")
    return dataclasses.replace(best, period=max(best.period, floor))


def load_bound(cfg: PipelineConfig, mask: np.ndarray) -> float:
    """max_s ceil(m d / (d - f_s)) t_s: the busiest survivor's work per iteration."""
    d, m = cfg.replicas, cfg.microbatches
    alive = d - mask.sum(axis=0)
    if np.any(alive == 0):
        return np.inf
    return float(np.max(-(-(m * d) // alive) * cfg.stage_time))


def _adapted(cfg, mask, executor, reference, decoupled, staggered, reroute_first, n_iterations, n_measured):
    kind = recycle_kind(cfg, decoupled, staggered)
    graph = build_graph(kind, n_iterations, executor=executor)
    chains, priority, release = _chains(graph, cfg.order, mask, reference.start, defer=decoupled,
                                        reroute_first=reroute_first)
    _, _, sequence = greedy(graph, chains, priority, release)
    start, end = resweep(graph, sequence, release)
    return measure(graph, start, end, n_measured)


def _chains(graph, order, mask, reference_start, *, defer, reroute_first):
    """Chains, priorities and release times: each survivor's own fault-free
    order (released at its fault-free times), then per (failed worker, peer)
    the re-routed tasks in the failed worker's order; with `defer`, every W
    moves to a chain of the lowest priority."""
    d, m, p = graph.shape
    its = np.arange(graph.n_iterations)[:, None]
    priority = reference_start.copy()
    release = np.zeros(graph.size)
    later = after_all(reference_start)  # beyond any fault-free time
    ahead = _half_gap(reference_start) if reroute_first else 0.0
    own, extra = [], []

    def add(chains, tasks):
        if defer:
            is_w = tasks % 3 == 2
            priority[tasks[is_w]] += later
            chains += [tasks[~is_w], tasks[is_w]]
        else:
            chains.append(tasks)

    for r in range(d):
        for s in range(p):
            types, micro = stage_order(order, p, m, s)
            tasks = task_index(graph.shape, its, r, micro[None, :], s, types[None, :]).ravel()
            tasks = tasks[graph.worker[tasks] >= 0]
            if not mask[r, s]:
                keep = tasks % 3 != 2
                release[tasks[keep]] = reference_start[tasks[keep]]
                add(own, tasks)
                continue
            priority[tasks] -= ahead
            runs_on = graph.worker[tasks]
            for peer in np.unique(runs_on):
                add(extra, tasks[runs_on == peer])
    return [c for c in own + extra if c.size], priority, release


def _half_gap(times) -> float:
    """Half the smallest positive gap between fault-free start times: moves a
    re-routed task ahead of its peer's task of the same slot and no further."""
    gaps = np.diff(np.unique(times))
    return 0.5 * float(gaps[gaps > 0].min()) if np.any(gaps > 0) else 0.5
