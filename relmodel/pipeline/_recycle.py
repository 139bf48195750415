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

from ._config import PipelineConfig
from ._graph import build_graph, cross_stage_edges, executor_workers, stage_order, task_index
from ._planner import ASSIGNMENTS, AdaptedPlan, adapted_plan, check_method, reroute
from ._schedule import (N_ITERATIONS, N_MEASURED, Schedule, after_all, check_iterations, fault_free, greedy, measure,
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
    """Return ReCycle's adapted plan for the failed workers in `mask` (see `planner.adapted_plan`).

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
        Deterministic seconds the exact search may run (`planner.adapted_plan`).
    wall_limit : float, optional
        Wall-clock seconds the exact search may run (`planner.adapted_plan`).

    Returns
    -------
    AdaptedPlan or None
        None when some stage has no survivor, or no room for a micro-batch.
    """
    method = check_method(method)
    kind = recycle_kind(cfg, decoupled, staggered)
    seeds = () if method == "exact" else greedy_seeds(kind, mask)
    return adapted_plan(kind, mask, method=method, time_limit=time_limit, seed_orders=seeds, wall_limit=wall_limit)


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
        (d, p) boolean mask of failed workers; all False gives the fault-free schedule.
    decoupled, staggered : bool, default True
        As in `recycle_plan`.
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
    for assignment, reroute_first in PLANS:
        executor = reroute(mask, kind.microbatches, assignment)
        if executor is None:
            return
        yield executor, _last_orders(_seed_parts(kind), mask, executor, reroute_first)


def load_bound(cfg: PipelineConfig, mask: np.ndarray) -> float:
    """max_s ceil(m d / (d - f_s)) t_s: the busiest survivor's work per iteration."""
    d, m = cfg.replicas, cfg.microbatches
    alive = d - mask.sum(axis=0)
    if np.any(alive == 0):
        return np.inf
    return float(np.max(-(-(m * d) // alive) * cfg.stage_time))


class _SeedParts:
    """What the greedy merge needs of a pipeline whatever its failures (a trace replay seeds many states of
    one pipeline): the graph of `N_ITERATIONS` iterations, which of its edges cross stages (their delays
    follow the workers), each worker's own tasks in its fault-free order (split into the W passes and
    the rest where they are deferred), the fault-free start times, and the priority offsets from them."""

    def __init__(self, kind: PipelineConfig):
        self.kind = kind
        self.graph = graph = build_graph(kind, N_ITERATIONS)
        d, m, p = graph.shape
        self.reference = _reference(kind, N_ITERATIONS, N_MEASURED).start
        self.defer = kind.backward == "decoupled"
        self.on = graph.worker >= 0
        self.owner = graph.worker  # the fault-free worker r p + s of each task (-1: none)
        self.is_w = (np.arange(graph.size) % 3 == 2) & (np.arange(graph.size) < d * m * p * 3 * N_ITERATIONS)
        self.edge_dst, self.cross = cross_stage_edges(graph)
        its = np.arange(N_ITERATIONS)[:, None]
        self.own = []  # per worker r p + s: its tasks over the iterations, in its order
        for r in range(d):
            for s in range(p):
                types, micro = stage_order(kind.order, p, m, s)
                tasks = task_index(graph.shape, its, r, micro[None, :], s, types[None, :]).ravel()
                self.own.append(tasks[graph.worker[tasks] >= 0])
        self.later = after_all(self.reference)  # beyond any fault-free time
        self.ahead = _half_gap(self.reference)

    def graph_for(self, executor: np.ndarray):
        """`build_graph(kind, N_ITERATIONS, executor=executor)`: the same tasks and edges, their workers
        and the delays between stages (p2p within a replica, re-routing across) under `executor`."""
        g = self.graph
        p = g.shape[2]
        worker = executor_workers(g, executor)
        same = worker[g.pred_idx] // p == worker[self.edge_dst] // p
        delay = np.where(self.cross, np.where(same, self.kind.p2p_delay, self.kind.reroute_delay), g.pred_delay)
        return dataclasses.replace(g, worker=worker, pred_delay=delay)

    def chains(self, graph, mask: np.ndarray, reroute_first: bool):
        """Chains, priorities and release times: each survivor's own fault-free order (released at its
        fault-free times), then per (failed worker, peer) the re-routed tasks in the failed worker's
        order; with deferred W passes, each W moves to a chain of the lowest priority."""
        failed = mask.ravel()
        lost = self.on & failed[np.maximum(self.owner, 0)]
        release = np.zeros(graph.size)
        kept = self.on & ~lost & ~self.is_w
        release[kept] = self.reference[kept]
        priority = self.reference.copy()
        if reroute_first:
            priority[lost] -= self.ahead
        if self.defer:
            priority[self.on & self.is_w] += self.later
        own, extra = [], []
        for w, tasks in enumerate(self.own):
            if not failed[w]:
                own += self._split(tasks)
                continue
            runs_on = graph.worker[tasks]
            for peer in np.unique(runs_on):
                extra += self._split(tasks[runs_on == peer])
        return [c for c in own + extra if c.size], priority, release

    def _split(self, tasks):
        if not self.defer:
            return [tasks]
        is_w = tasks % 3 == 2
        return [tasks[~is_w], tasks[is_w]]


@functools.lru_cache(maxsize=8)  # a graph of N_ITERATIONS iterations each: keep few
def _seed_parts(kind: PipelineConfig) -> _SeedParts:
    return _SeedParts(kind)


def _last_orders(parts: _SeedParts, mask, executor, reroute_first):
    """Each worker's tasks of the greedy merge's last iteration, as one-iteration indices, in the order it
    ran them (by start, then end, then index: `Schedule.orders`, restricted to that iteration)."""
    graph = parts.graph_for(executor)
    chains, priority, release = parts.chains(graph, mask, reroute_first)
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


def _half_gap(times) -> float:
    """Half the smallest positive gap between fault-free start times: moves a
    re-routed task ahead of its peer's task of the same slot and no further."""
    gaps = np.diff(np.unique(times))
    return 0.5 * float(gaps[gaps > 0].min()) if np.any(gaps > 0) else 0.5
