"""ReCycle's adaptive pipelining (Gandhi et al., SOSP 2024).

A failed worker's micro-batches are re-routed to its surviving peers at the
same stage (they hold the same parameters). The adapted schedule runs with
ReCycle's two optimisations:

- Decoupled backward: B and W are separate tasks, so weight gradients move
  into bubbles and make room on the critical path.
- Staggered optimizer: each stage steps once its own gradients are reduced, so
  the stages drift apart by what their extra load needs.

Which peer takes each re-routed micro-batch and every worker's order come
from the planner (`planner`: a proven lower bound, list-scheduling
heuristics, an exact search), seeded with the simulator's greedy merge
(`greedy_seeds`: the survivors keep their fault-free order and the re-routed
tasks go into the idle time around them).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .config import PipelineConfig
from .graph import build_graph, stage_order, task_index
from .planner import ASSIGNMENTS, AdaptedPlan, check_method, plan, reroute
from .schedule import (N_ITERATIONS, N_MEASURED, Schedule, after_all, check_iterations, fault_free, greedy, measure,
                       sweep)

PLANS = tuple((a, first) for a in ASSIGNMENTS for first in (False, True))


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


def recycle_plan(cfg: PipelineConfig, mask: np.ndarray, *, decoupled: bool = True, staggered: bool = True,
                 method: str = "auto", time_limit: float | None = None,
                 wall_limit: float | None = None) -> AdaptedPlan | None:
    """Return ReCycle's adapted plan for the failed workers in `mask` (see `planner.plan`).

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline (the plan runs in ReCycle's kind of it, `recycle_kind`).
    mask : numpy.ndarray
        (d, p) boolean mask of failed workers; at least one.
    decoupled : bool, default True
        Use ReCycle's decoupled backward.
    staggered : bool, default True
        Use ReCycle's staggered optimizer step.
    method : {"auto", "exact", "heuristic"}, default "auto"
        How to plan.
    time_limit : float, optional
        Deterministic seconds the exact search may run (`planner.plan`).
    wall_limit : float, optional
        Wall-clock seconds the exact search may run (`planner.plan`).

    Returns
    -------
    AdaptedPlan or None
        None when some stage has no survivor, or no room for a micro-batch.
    """
    method = check_method(method)
    kind = recycle_kind(cfg, decoupled, staggered)
    seeds = () if method == "exact" else greedy_seeds(kind, mask)
    return plan(kind, mask, method=method, time_limit=time_limit, seed_orders=seeds, wall_limit=wall_limit)


def recycle_schedule(cfg: PipelineConfig, mask: np.ndarray, *, decoupled: bool = True, staggered: bool = True,
                     method: str = "auto", n_iterations: int = N_ITERATIONS,
                     n_measured: int = N_MEASURED) -> Schedule | None:
    """Return ReCycle's schedule for the failed workers in `mask`.

    With no failure ReCycle runs the fault-free schedule of `cfg`. Otherwise
    the plan of `recycle_plan` repeated over `n_iterations` iterations; its
    period is the plan's (the steady state the iterations approach).

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
    method : {"auto", "exact", "heuristic"}, default "auto"
        How to plan.
    n_iterations : int, default N_ITERATIONS
        Iterations simulated.
    n_measured : int, default N_MEASURED
        Trailing iterations over which the fault-free period is measured.

    Returns
    -------
    Schedule or None
        The schedule, or None (zero throughput) when every replica of some
        stage failed.
    """
    n_iterations, n_measured = check_iterations(cfg, n_iterations, n_measured)
    if not mask.any():
        return _reference(cfg, n_iterations, n_measured)
    adapted = recycle_plan(cfg, mask, decoupled=decoupled, staggered=staggered, method=method)
    if adapted is None:
        return None
    return plan_schedule(recycle_kind(cfg, decoupled, staggered), adapted, n_iterations, n_measured)


def plan_schedule(kind: PipelineConfig, adapted: AdaptedPlan, n_iterations: int = N_ITERATIONS,
                  n_measured: int = N_MEASURED) -> Schedule:
    """The plan's orders repeated over `n_iterations` iterations of `kind`, swept;
    the period is the plan's."""
    graph = build_graph(kind, n_iterations, executor=adapted.executor)
    d, m, p = graph.shape
    per_iteration = d * m * p * 3
    chains = [np.concatenate([order + k * per_iteration for k in range(n_iterations)]) for order in adapted.orders]
    start, end = sweep(graph, chains)
    schedule = measure(graph, start, end, n_measured)
    return dataclasses.replace(schedule, period=adapted.period, plan=f"{adapted.method}: {adapted.detail}")


def greedy_seeds(kind: PipelineConfig, mask: np.ndarray):
    """(executor, orders) of the simulator's greedy merge, one per re-routing
    plan: the survivors keep their fault-free order and slots, and the
    re-routed tasks go into the idle time around them. The orders are those of
    the last simulated iteration (the first ones are a transient). A generator:
    each is simulated when asked for."""
    reference = _reference(kind, N_ITERATIONS, N_MEASURED)
    for assignment, reroute_first in PLANS:
        executor = reroute(mask, kind.microbatches, assignment)
        if executor is None:
            return
        yield executor, _last_orders(kind, mask, executor, reference, kind.backward == "decoupled", reroute_first)


def load_bound(cfg: PipelineConfig, mask: np.ndarray) -> float:
    """max_s ceil(m d / (d - f_s)) t_s: the busiest survivor's work per iteration."""
    d, m = cfg.replicas, cfg.microbatches
    alive = d - mask.sum(axis=0)
    if np.any(alive == 0):
        return np.inf
    return float(np.max(-(-(m * d) // alive) * cfg.stage_time))


def _last_orders(kind, mask, executor, reference, decoupled, reroute_first):
    """Each worker's tasks of the greedy merge's last iteration, as one-iteration indices, in the order it
    ran them (by start, then end, then index: `Schedule.orders`, restricted to that iteration)."""
    graph = build_graph(kind, N_ITERATIONS, executor=executor)
    chains, priority, release = _chains(graph, kind.order, mask, reference.start, defer=decoupled,
                                        reroute_first=reroute_first)
    start, end, _ = greedy(graph, chains, priority, release)  # the times a sweep of its orders gives (`resweep`)
    d, m, p = graph.shape
    per_iteration = d * m * p * 3
    last = (N_ITERATIONS - 1) * per_iteration
    tasks = np.arange(last, last + per_iteration)
    tasks = tasks[graph.worker[tasks] >= 0]
    tasks = tasks[np.lexsort((end[tasks], start[tasks], graph.worker[tasks]))]  # stable: index breaks ties
    bounds = np.searchsorted(graph.worker[tasks], np.arange(d * p + 1))
    tasks -= last
    return tuple(tasks[bounds[w]:bounds[w + 1]] for w in range(d * p))


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
