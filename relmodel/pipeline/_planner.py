"""ReCycle's planner: the adapted schedule with the least period.

A plan fixes, for one iteration, which surviving peer runs each re-routed
micro-batch (ReCycle re-routes a failed worker's micro-batches to the workers
of its stage in other replicas) and the order of every worker's tasks. Every
iteration repeats it, so its period is the least T such that the tasks of
iteration k can start at x + k T: with a staggered optimizer, stage s's next
iteration starts once its own step ends, so

    T = max over cycles of the stage graph of (path lengths) / (cycle length),

where the edge s -> s' weighs the longest path from any task of stage s to
the end of stage s''s optimizer step (Karp's maximum cycle mean; with a
barrier every path ends at the barrier and T is the iteration's makespan). It
is what the schedule simulator measures once the iterations settle.

- **Lower bound** (`lower_bound`): each surviving worker's work per
  iteration, and its idle time that no order avoids: before its first B it can
  only run forwards (at most its memory's worth) while the first micro-batch
  goes down the pipeline and back; after its last forward the same trip
  leaves only the backward passes of the micro-batches it holds to run.
- **Heuristic**: list schedules (Giffler-Thompson, `_plan_kernel`), in this
  order until one reaches the bound: per assignment of the re-routed
  micro-batches (round-robin, blocks), the longest tail first, then the
  fault-free 1F1B and ZB-H1 slots; the simulator's own greedy merge as seeds;
  randomised restarts around the tails. The best one, with its gap to the
  bound. The fixed rules and restarts are compiled end to end (a state only
  changes which worker runs each task and the delays between stages, so the
  graph's structure is made once per pipeline); a trace's states are planned
  in batches (`runs.recycle_periods`).
- **Exact**: a constraint program (OR-Tools CP-SAT, `plan_exact`): an
  interval per task, optional intervals for the re-routed micro-batches on
  each peer, no overlap per worker, the memory budget as a cumulative
  constraint, the period minimised. A plan that reaches the lower bound is
  optimal without it.
- **Auto** (the default): the heuristic, then the exact search where the
  heuristic leaves a gap, the pipeline is small (`EXACT_TASKS`) and the task
  times lie on a common grid (so the search can prove its plan).

How long it takes (the figures are on docs: benchmarks.md, 'Pipelines'). The
heuristic is quick where a fixed rule reaches the bound, slower where the
seeds and restarts run, and its first plan compiles on an empty Numba cache.
The exact search stops after
`AUTO_TIME_LIMIT` (auto) or `EXACT_TIME_LIMIT` (exact) seconds of CP-SAT's
deterministic time, which counts the same on every machine, so a plan does
not depend on the load; in CPU seconds it is several times more, and wall
seconds grow further on a busy machine. So a wall-clock cap bounds it too
(`wall_limit`: `AUTO_WALL_LIMIT` for auto, none for exact unless given),
which only a very busy machine reaches (the plan's detail then says so: only
then can a plan depend on the machine). Ctrl-C during an exact search stops it
with the best plan found and its gap to the lower bound, as a time limit does
(`AdaptedPlan.interrupted`); a trace replay, which plans many states, stops
there instead (KeyboardInterrupt), since its result would depend on when.
The first exact search of a process says so on a terminal.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
import warnings

import numpy as np

from .._checks import check_choice
from .._display import readable
from ._config import PipelineConfig, PipelineError
from ._graph import (B, F, W, build_graph, cross_stage_edges, default_executor, executor_workers, stage_order,
                     task_index)
from ._schedule import DeadlockError, kernel_inputs, worker_orders

PLAN_METHODS = ("auto", "exact", "heuristic")
ASSIGNMENTS = ("round-robin", "blocks")
EXACT_TASKS = 256
"""Most micro-batch stages (d m p) for which "auto" runs the exact search.

Replicas x micro-batches x stages: "auto" runs the exact search after the
heuristic leaves a gap up to 4 stages x 4 replicas x 16 micro-batches (or
8 x 4 x 8); "exact" runs it at any size. (It once compared d p m p, the
workers times m p, so that 4 x 4 x 8 never got the search the docs promised.)
On the scan of benches/bench_recycle_auto.py (225 pipelines up to 256) auto's
search brings 32 of the heuristic's 57 gaps to the bound and narrows 9 more
(at most 20 s a plan, two runs sharing 2 cores)."""
EXACT_TIME_LIMIT = 300.0
"""How long "exact" may search before it gives up (the result then says it is
not proven), in CP-SAT's deterministic time: about seconds on a typical core,
but counted the same on every machine, so a plan never depends on the load."""
AUTO_TIME_LIMIT = 2.0
"""The same for "auto"."""
AUTO_WALL_LIMIT = 30.0
"""Wall-clock seconds after which "auto"'s exact search stops whatever its
deterministic time (a busy machine's): the bound on auto's planning time."""
RESTARTS = 12
"""Randomised list schedules the heuristic tries after its fixed rules."""
TOLERANCE = 1e-9  # relative: a period this close to the bound has reached it


class PlannerWarning(UserWarning):
    """The exact program stopped before it proved its plan optimal."""


@readable()
@dataclasses.dataclass(frozen=True)
class AdaptedPlan:
    """One iteration of an adapted schedule, repeated every period.

    Parameters
    ----------
    period : float
        Time per iteration of the plan repeated (see the module docstring).
    lower_bound : float
        A proven lower bound on the period of any plan.
    method : str
        What made it: "exact" (the constraint program) or "heuristic".
    optimal : bool
        Whether the period is proven least: the program solved it, or it
        reaches `lower_bound`.
    executor : numpy.ndarray
        (d, m, p) worker (r * p + s) running each micro-batch at each stage.
    orders : tuple of numpy.ndarray
        Each worker's tasks in order (indices of the one-iteration task graph).
    start : numpy.ndarray
        Start time of every task of one iteration, earliest possible.
    planning_time : float
        Seconds spent planning.
    detail : str, default ""
        How it was found.
    interrupted : bool, default False
        Whether Ctrl-C (SIGINT) stopped its exact search: the plan is the
        best found by then, so it depends on when. A run of many plans (a
        trace replay) stops there rather than go on with it.
    """

    period: float
    lower_bound: float
    method: str
    optimal: bool
    executor: np.ndarray
    orders: tuple
    start: np.ndarray
    planning_time: float
    detail: str = ""
    interrupted: bool = False

    @property
    def gap(self) -> float:
        """Return period / lower_bound - 1 (0: optimal for certain).

        Returns
        -------
        float
            The relative gap.
        """
        return self.period / self.lower_bound - 1.0 if self.lower_bound > 0 else 0.0


def check_method(method: str) -> str:
    """Return `method` if it is one of `PLAN_METHODS`.

    Parameters
    ----------
    method : str
        The planning method.

    Returns
    -------
    str
        The method.

    Raises
    ------
    PipelineError
        If it is unknown.
    """
    return check_choice("method", method, PLAN_METHODS, PipelineError)


# -- the period of fixed orders ---------------------------------------------


def max_cycle_mean(weight: np.ndarray) -> float:
    """Return Karp's maximum cycle mean of a graph.

    Parameters
    ----------
    weight : numpy.ndarray
        (n, n) weight[u, v] of the edge u -> v; -inf where there is none.

    Returns
    -------
    float
        The largest mean weight of a cycle; -inf without a cycle.
    """
    from . import _plan_kernel

    return float(_plan_kernel.max_cycle_mean(np.ascontiguousarray(weight, dtype=float)))


def orders_period(graph, orders) -> tuple[float, np.ndarray]:
    """Return the period of a one-iteration graph whose workers run fixed orders every iteration.

    Parameters
    ----------
    graph : TaskGraph
        One iteration's tasks (`build_graph(cfg, 1, executor=...)`).
    orders : sequence of numpy.ndarray
        Each worker's tasks in order.

    Returns
    -------
    tuple of (float, numpy.ndarray)
        The period, and the earliest start of every task of one iteration.

    Raises
    ------
    DeadlockError
        If the orders wait on each other.
    """
    from . import _plan_kernel

    tasks = kernel_inputs(graph, orders)  # indices in range, each task in one order at most
    ptr = np.zeros(len(orders) + 1, dtype=np.int64)
    np.cumsum([len(o) for o in orders], out=ptr[1:])
    start, end = np.empty(graph.size), np.empty(graph.size)
    period, placed = _plan_kernel.orders_period(graph.duration, graph.worker, graph.pred_ptr, graph.pred_idx,
                                                graph.pred_delay, ptr, tasks, np.ascontiguousarray(graph.step_index[0]),
                                                graph.shape[2], start, end)
    if placed < graph.size:
        raise DeadlockError(f"the worker orders deadlock: {graph.size - placed} of {graph.size} tasks wait on a cycle")
    return float(period), start


# -- the lower bound ----------------------------------------------------------


def capacity(cfg: PipelineConfig) -> np.ndarray:
    """Return the micro-batches in flight each stage's workers of pipeline `cfg` can hold (int64 per
    stage; 2**62 without a memory budget)."""
    if cfg.memory is None:
        return np.full(cfg.stages, 2**62, dtype=np.int64)
    return cfg.memory.capacity()


def lower_bound(cfg: PipelineConfig, mask: np.ndarray) -> float:
    """A lower bound on the period of any plan of ReCycle's kind of `cfg` with the failed workers `mask`.

    Per surviving worker w of stage s with n micro-batches (the most any peer
    must take, ceil(m d / (d - f_s))) and room for c in flight: its work
    n (F + B + W), plus the larger of the idle time before its first B
    (F + R - min(n, c) F) and after its last F (R - (min(n, c) - 1)(B + W)),
    where R is the round trip below stage s (the forwards and input gradients
    of the later stages, with the fastest transfer between them). Per stage s
    and later stage s': the forward and backward work of the busiest peer of
    s' between the first micro-batch's way down and the last one's way back.
    Plus the optimizer step.

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline, in the kind the plan runs (ReCycle's).
    mask : numpy.ndarray
        (d, p) boolean mask of failed workers.

    Returns
    -------
    float
        The bound; inf when a stage has no survivor or no room.
    """
    return float(lower_bounds(cfg, (cfg.replicas - np.asarray(mask).sum(axis=0))[None])[0])


def lower_bounds(cfg: PipelineConfig, alive: np.ndarray) -> np.ndarray:
    """Return `lower_bound` of many states at once.

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline, in the kind the plan runs (ReCycle's).
    alive : numpy.ndarray
        (k, p) integers: alive[k, s] survivors at stage s in state k.

    Returns
    -------
    numpy.ndarray
        (k,) bounds; inf where a stage has no survivor or no room.
    """
    work_items, fwd, bwd, wgt, back, trip, reach, cap, optimizer_time = _bound_parts(cfg)
    alive = np.asarray(alive, dtype=np.int64).reshape(-1, cfg.stages)
    none = np.any(alive == 0, axis=1) | np.any(cap < 1)
    load = -(-work_items // np.maximum(alive, 1))  # the most micro-batches a survivor takes
    held = np.minimum(load, cap)
    work = load * (fwd + bwd + wgt)
    head = fwd + trip - held * fwd
    tail = trip - (held - 1) * (bwd + wgt)
    span = work + np.maximum(0.0, np.maximum(head, tail))
    busiest = np.maximum(np.maximum(load * (fwd + back), fwd + trip + load * back), load * fwd + trip + back)
    for s in range(cfg.stages - 1):  # a maximum is exact: over the later stages at once, the same bits
        span[:, s] = np.maximum(span[:, s], (reach[s, s + 1:] + busiest[:, s + 1:]).max(axis=1))
    return np.where(none, math.inf, span.max(axis=1) + optimizer_time)


@functools.lru_cache(maxsize=64)
def _bound_parts(cfg: PipelineConfig) -> tuple:
    """What `lower_bound` needs of a pipeline whatever its failures: the times, the round trip below each
    stage, and the way from stage s down to each later stage s' and back (reach[s, s'])."""
    p = cfg.stages
    fwd, bwd, wgt = (np.asarray(x, dtype=float) for x in (cfg.fwd, cfg.bwd_input, cfg.bwd_weight))
    hop = min(cfg.p2p_delay, cfg.reroute_delay)
    back = bwd + wgt if cfg.backward == "fused" else bwd  # the task a later stage runs on the way back
    trip = np.array([float(np.sum(fwd[s + 1:] + back[s + 1:])) + 2 * (p - 1 - s) * hop for s in range(p)])
    # Stage s's span also covers the busiest peer of every later stage s': from the first forward's way
    # down to s' to the last backward's way back up to s, that peer runs all its forwards and backwards;
    # or its first forward, the round trip below s' and all its backwards; or all its forwards, the trip
    # and one backward (`lower_bounds` adds the largest of these to reach[s, s']).
    reach = np.full((p, p), -np.inf)
    for s in range(p):
        for later in range(s + 1, p):
            down = float(np.sum(fwd[s:later])) + (later - s) * hop
            up = float(np.sum(back[s + 1:later])) + (later - s) * hop + bwd[s] + wgt[s]
            reach[s, later] = down + up
    return cfg.microbatches * cfg.replicas, fwd, bwd, wgt, back, trip, reach, capacity(cfg), float(cfg.optimizer_time)


# -- plans --------------------------------------------------------------------


def reroute(mask: np.ndarray, m: int, assignment: str = "round-robin") -> np.ndarray | None:
    """Return the workers running each micro-batch, the failed workers' spread evenly over their peers.

    Each survivor runs at most ceil(m d / (d - f_s)). round-robin: the
    re-routed (micro-batch, replica) pairs in micro-batch order, dealt to the
    survivors in turn; blocks: each survivor takes a contiguous run of them.

    Parameters
    ----------
    mask : numpy.ndarray
        (d, p) boolean mask of failed workers.
    m : int
        Micro-batches per replica.
    assignment : {"round-robin", "blocks"}, default "round-robin"
        How to deal them.

    Returns
    -------
    numpy.ndarray or None
        executor[r, j, s] = r' p + s; None when a stage has no survivor.
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


def holds(graph) -> np.ndarray:
    """Return each task's change to its worker's micro-batches in flight.

    Parameters
    ----------
    graph : TaskGraph
        The tasks.

    Returns
    -------
    numpy.ndarray
        +1 on a micro-batch's F, -1 on the task that frees its activations (W,
        or B when the backward is fused), 0 elsewhere.
    """
    out = np.zeros(graph.size, dtype=np.int64)
    on = graph.worker >= 0
    out[(graph.kind == F) & on] = 1
    final = (graph.kind == W) & on
    fused_b = (graph.kind == B) & on
    fused_b[fused_b] = graph.worker[np.flatnonzero(fused_b) + 1] < 0  # its W is a placeholder
    out[final | fused_b] = -1
    return out


def peak_inflight(graph, orders) -> np.ndarray:
    """Return the most micro-batches in flight on each worker under `orders`.

    Parameters
    ----------
    graph : TaskGraph
        The tasks.
    orders : sequence of numpy.ndarray
        Each worker's tasks in order.

    Returns
    -------
    numpy.ndarray
        int64 per worker.
    """
    h = holds(graph)
    return np.array([int(np.max(np.cumsum(h[o]), initial=0)) for o in orders], dtype=np.int64)


def _order_priority(graph, order: str) -> np.ndarray:
    """Each task's position in its own (fault-free) worker's order, by micro-batch slot."""
    return _order_priority_of(graph.shape, graph.size, order)


@functools.lru_cache(maxsize=64)
def _order_priority_of(shape, size, order):
    """`_order_priority` by the graph's shape (a trace replay plans thousands of states of one shape); read-only."""
    d, m, p = shape
    priority = np.zeros(size)
    for s in range(p):
        types, micro = stage_order(order, p, m, s)
        for r in range(d):
            priority[task_index(shape, 0, r, micro, s, types)] = np.arange(types.size)
    priority.flags.writeable = False
    return priority


class _Rules:
    """The heuristic's list schedules for one pipeline (in the plan's kind), compiled end to end.

    Every failure state of a pipeline shares the one-iteration graph's
    structure: predecessor lists, durations, which tasks occupy a worker,
    their micro-batches in flight. A state changes only which worker runs
    each task and the delays between stages, so the structure is made once
    here (a trace replay plans thousands of states) and each state is planned
    in compiled code (`_plan_kernel.search_states`, the one entry point: a
    plan of its own or a batch of states)."""

    def __init__(self, kind: PipelineConfig):
        from . import _plan_kernel, _schedule_kernel

        self.kernel = _plan_kernel
        graph = build_graph(kind, 1)
        self.kind, self.graph = kind, graph
        d, m, p = graph.shape
        self.shape = (d, m, p)
        succ = _schedule_kernel.successors(graph.pred_ptr, graph.pred_idx)
        order, _ = _schedule_kernel.topological_order(graph.pred_ptr, graph.pred_idx)
        edge_dst, cross = cross_stage_edges(graph)
        self.on = graph.worker >= 0
        self.cap = np.tile(capacity(kind), d)
        fixed = np.stack([_order_priority(graph, rule) for rule in ("1f1b", "zb-h1")])  # (a writeable copy)
        self.inputs = (self.on, graph.pred_idx, edge_dst, cross, float(kind.p2p_delay), float(kind.reroute_delay),
                       graph.duration, graph.pred_ptr, order, *succ, fixed)
        self.after = (holds(graph), self.cap, np.ascontiguousarray(graph.step_index[0]), TOLERANCE)

    def run(self, masks: np.ndarray, rows: np.ndarray | None = None, assignment=(), best: "_Best | None" = None,
            keep_all: bool = True):
        """`_plan_kernel.search_states` over `masks` (k, d, p): the fixed rules, or `rows` on `assignment`
        after `best`. Returns (period, bound, tries, best_row, sequence, start, executors, tails), one row
        per state; the last four only for the states left short of the bound unless `keep_all`."""
        d, m, p = self.shape
        n = self.graph.size
        masks = np.ascontiguousarray(masks, dtype=np.bool_)
        bound = lower_bounds(self.kind, d - masks.sum(axis=1))
        k = len(masks)
        rows = np.empty((0, n)) if rows is None else rows
        period, tries, best_row = np.empty(k), np.empty(k, dtype=np.int64), np.empty(k, dtype=np.int64)
        sequence, start = np.empty((k, n), dtype=np.int64), np.empty((k, n))
        executors, tails = np.empty((k, 2, d, m, p), dtype=np.int64), np.empty((k, 2, n))
        have_best = best is not None and best.period is not None
        self.kernel.search_states(masks, bound, *self.inputs, rows, np.asarray(assignment, dtype=np.int64),
                                  *self.after, have_best, best.period if have_best else math.inf,
                                  best.tries if best is not None else 0, keep_all, period, tries, best_row,
                                  sequence, start, executors, tails)
        return period, bound, tries, best_row, sequence, start, executors, tails

    def periods(self, masks: np.ndarray) -> np.ndarray:
        """The period of the plan `plan` returns in each state of `masks` (k, d, p) when one of the fixed
        rules reaches the bound; NaN where none does (the seeds and restarts would be next), inf where no
        plan runs. A state left short keeps its fixed rules' result in `_SHORT` (at most `SHORT_HELD`),
        where `_heuristic` takes it up rather than run them again."""
        result = self.run(masks, keep_all=False)
        period, bound = result[:2]
        found = np.where(np.isinf(bound), math.inf, np.where(period <= bound * (1 + TOLERANCE), period, math.nan))
        for k in np.flatnonzero(np.isnan(found)):
            if len(_SHORT) < SHORT_HELD:
                _SHORT[self.kind, _key(masks[k])] = tuple(x[k:k + 1].copy() for x in result)
        return found

    def orders(self, executor: np.ndarray, sequence: np.ndarray) -> tuple:
        """Each worker's tasks in placement order, under `executor`."""
        graph = dataclasses.replace(self.graph, worker=executor_workers(self.graph, executor))
        return tuple(worker_orders(graph, sequence))


_SHORT: dict = {}
"""The fixed rules' result (`_Rules.run`) by (kind, mask) of states a batch left short of the bound."""
SHORT_HELD = 128
"""At most this many in `_SHORT` (about 0.1 MB each on 8 x 8 x 16); a trace replay takes each up at once."""


def _key(mask: np.ndarray) -> bytes:
    return np.ascontiguousarray(mask, dtype=np.bool_).tobytes()


@functools.lru_cache(maxsize=16)
def _rules(kind: PipelineConfig) -> _Rules:
    return _Rules(kind)


@dataclasses.dataclass
class _Best:
    """The heuristic's best plan so far (period None: no candidate yet) and the candidates tried."""

    period: float | None = None
    tries: int = 0
    executor: np.ndarray | None = None
    orders: tuple = ()
    start: np.ndarray | None = None

    def reaches(self, bound: float) -> bool:
        return self.period is not None and self.period <= bound * (1 + TOLERANCE)

    def take(self, rules: _Rules, result, assignment) -> "_Best":
        """Take the best of a `_Rules.run` over one state, if one of its candidates gave it."""
        period, _, tries, row, sequence, start, executors, _ = result
        self.tries = int(tries[0])
        if row[0] >= 0:
            executor = executors[0, assignment[row[0]]].copy()
            self.period, self.executor, self.start = float(period[0]), executor, start[0]
            self.orders = rules.orders(executor, sequence[0])
        return self


def _heuristic(kind, mask, seed_orders, restarts) -> tuple[_Best, float]:
    """The heuristic's best plan and the lower bound: list schedules under fixed priority rules (per
    assignment: the longest tail first, then the fault-free 1F1B and ZB-H1 slots), then the seeds, then
    randomised restarts around the tails; it stops at the bound."""
    rules = _rules(kind)
    result = _SHORT.pop((kind, _key(mask)), None) or rules.run(mask[None])  # (a batch's, left short)
    bound = float(result[1][0])
    best = _Best().take(rules, result, [0, 0, 0, 1, 1, 1])
    if not math.isfinite(bound) or best.reaches(bound):
        return best, bound
    for executor, orders in seed_orders or ():
        graph = build_graph(kind, 1, executor=executor)
        if not np.all(peak_inflight(graph, orders) <= rules.cap):
            continue
        best.tries += 1
        period, start = orders_period(graph, orders)
        if best.period is None or period < best.period * (1 - TOLERANCE):
            best.period, best.executor, best.orders, best.start = period, executor, orders, start
        if best.reaches(bound):
            return best, bound
    if restarts:
        tails = result[7][0]
        rng = np.random.default_rng(0)  # fixed: the same plan every time
        assignment = [k % len(ASSIGNMENTS) for k in range(restarts)]
        scale = [float(np.ptp(tail)) or 1.0 for tail in tails]
        rows = np.stack([tails[a] + rng.uniform(0.0, 0.25 * scale[a], tails.shape[1]) for a in assignment])
        best.take(rules, rules.run(mask[None], rows, assignment, best), assignment)
    return best, bound


def adapted_plan(cfg: PipelineConfig, mask: np.ndarray, *, method: str = "auto", time_limit: float | None = None,
         seed_orders=None, wall_limit: float | None = None) -> AdaptedPlan | None:
    """Return the adapted plan of `cfg` (already in ReCycle's kind) with the failed workers `mask`.

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline, with the schedule options the adapted plan runs with
        (ReCycle's: a decoupled backward and a staggered optimizer).
    mask : numpy.ndarray
        (d, p) boolean mask of failed workers.
    method : {"auto", "exact", "heuristic"}, default "auto"
        See the module docstring.
    time_limit : float, optional
        How long the exact search may run, in deterministic seconds (default
        `EXACT_TIME_LIMIT`, or `AUTO_TIME_LIMIT` for "auto").
    seed_orders : iterable of (executor, orders), optional
        Further plans to start from (the simulator's greedy merge); read
        only if the first list schedules leave a gap.
    wall_limit : float, optional
        Wall-clock seconds the exact search may run (default
        `AUTO_WALL_LIMIT` for "auto", no limit for "exact"); stopped by it,
        the plan is the best found, with its gap to the bound.

    Returns
    -------
    AdaptedPlan or None
        None when no plan runs: a stage has no survivor, or its memory holds
        no micro-batch.
    """
    method = check_method(method)
    if wall_limit is not None and (isinstance(wall_limit, bool) or not isinstance(wall_limit, (int, float))
                                   or not wall_limit > 0):
        raise PipelineError("wall_limit", f"must be a number of seconds > 0 (got {wall_limit!r})")
    began = time.perf_counter()
    best, bound = _heuristic(cfg, mask, seed_orders, RESTARTS)
    if not math.isfinite(bound):
        return None
    reached = best.reaches(bound)
    heuristic = None
    if best.period is not None:
        heuristic = AdaptedPlan(period=best.period, lower_bound=bound, method="heuristic", optimal=reached,
                                executor=best.executor, orders=best.orders, start=best.start,
                                planning_time=time.perf_counter() - began,
                                detail=f"best of {best.tries} list schedules" + (", reaches the bound" if reached
                                                                                  else ""))
    if method == "heuristic" or reached:
        return heuristic
    from .. import _extras
    from . import _plan_exact as plan_exact  # (it imports OR-Tools only to search)

    if method == "auto" and (cfg.replicas * cfg.microbatches * cfg.stages > EXACT_TASKS
                             or not plan_exact.quantum(cfg)[1]):
        return heuristic  # too large, or times off a common grid: the search could not prove its plan
    if not _extras.available("ortools"):
        if method == "exact":
            _extras.require("ortools", "the exact search (method='exact')")
        if heuristic is not None:  # auto: the heuristic's plan, saying why no proof was tried
            from .._feedback import note_once

            note_once("ReCycle plans come from the heuristic alone: the exact search needs OR-Tools "
                      "(pip install 'relmodel[exact]')")
            return dataclasses.replace(heuristic, detail=heuristic.detail + "; no exact search: it needs OR-Tools "
                                       "(pip install 'relmodel[exact]')")
        _extras.require("ortools", "a plan that no list schedule finds")
    hint = None
    if heuristic is not None:
        hint = (heuristic.executor, build_graph(cfg, 1, executor=heuristic.executor), heuristic.orders,
                heuristic.start)
    limit = (EXACT_TIME_LIMIT if method == "exact" else AUTO_TIME_LIMIT) if time_limit is None else time_limit
    wall = (AUTO_WALL_LIMIT if method == "auto" else None) if wall_limit is None else float(wall_limit)
    from .._feedback import note_once  # a deterministic second can be several of CPU: said once, on a terminal

    note_once(f"ReCycle's planner: an exact search of up to {limit:g} deterministic s"
              + (f" (at most {wall:g} s of wall time)" if wall is not None else "")
              + "; Ctrl-C stops it with the best plan found and its gap to the lower bound")
    exact = plan_exact.solve(cfg, mask, hint=hint, time_limit=limit, bound=bound, wall_limit=wall)
    elapsed = time.perf_counter() - began
    if exact is None:
        if heuristic is None:
            raise PipelineError("memory", "no plan found within the time limit, and no list schedule fits")
        if method == "exact":
            warnings.warn(PlannerWarning(f"the exact search found no plan in {limit:g} s; the heuristic's period "
                                         f"{heuristic.period:.6g} is not proven least (lower bound {bound:.6g})"),
                          stacklevel=2)
        return dataclasses.replace(heuristic, planning_time=elapsed, detail=heuristic.detail + "; the exact search "
                                   f"found no plan in {limit:g} s")
    executor, orders, proven, on_grid, stopped_by = exact
    graph = build_graph(cfg, 1, executor=executor)
    period, start = orders_period(graph, orders)
    proven = proven and on_grid
    if heuristic is not None and heuristic.period <= period:
        period, executor, orders, start = heuristic.period, heuristic.executor, heuristic.orders, heuristic.start
    detail = "exact search" + ("" if proven else (f", stopped {stopped_by} before a proof" if on_grid else
                                                  ", optimal for the times rounded to 1e-6 of the largest"))
    if method == "exact" and not proven:
        warnings.warn(PlannerWarning(f"the plan's period {period:.6g} is not proven least: {detail} "
                                     f"(lower bound {bound:.6g})"), stacklevel=2)
    return AdaptedPlan(period=period, lower_bound=bound, method="exact", optimal=proven, executor=executor,
                       orders=orders, start=start, planning_time=elapsed, detail=detail,
                       interrupted=not proven and stopped_by == plan_exact.INTERRUPTED)
