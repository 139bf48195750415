"""The exact planner: ReCycle's adapted iteration as a constraint program (OR-Tools CP-SAT).

One iteration, repeated every period T (see `planner`):

- an interval per task (F, B, W of each micro-batch at each stage), its start
  an integer in units of `quantum` (times are scaled to integers);
- a re-routed micro-batch's three tasks are optional intervals on each
  surviving peer of its stage, exactly one peer present;
- dependencies: F down the stages, B up, F -> B -> W on one worker, with the
  transfer delay between replicas or within one;
- no overlap on a worker; with a memory budget, each micro-batch holds one
  unit from its F's start to its last backward's end, at most the stage's
  capacity at once (a cumulative constraint);
- each optimizer group (a stage when staggered, all with a barrier) spans
  b_g - a_g, from its first F to its last end; T >= b_g - a_g + step time,
  minimised.

Every plan of the constraint program repeats every T and conversely, so its
optimum is the least period; the search is CP-SAT's (exhaustive with
learned clauses and LP bounds), started from the heuristic's plan. It is
exact for task times that are whole multiples of a common quantum; other
times are rounded to one and the result says so.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from ._config import PipelineConfig

MAX_UNITS = 10**9  # the largest scaled time: CP-SAT's integers stay far from overflow
INTERRUPTED = "by an interrupt"  # `solve`'s stopped_by when Ctrl-C ended the search


def quantum(cfg: PipelineConfig) -> tuple[float, bool]:
    """Return the search's time unit, and whether the times lie on it exactly.

    In the unit every task time and delay, and every period a plan can have,
    is a whole number when the flag is True; otherwise it resolves the times to
    1e-6 of the largest.

    A plan's period is a cycle mean over at most p optimizer groups, so a
    multiple of 1/k of the common unit of the times for some k <= p: the unit
    is divided by lcm(1..p) (by 1 with a barrier, one group).
    """
    times = [x for x in (*cfg.fwd, *cfg.bwd_input, *cfg.bwd_weight, cfg.p2p_delay, cfg.reroute_delay,
                         cfg.optimizer_time) if x > 0]
    cycles = math.lcm(*range(1, cfg.stages + 1)) if cfg.optimizer == "staggered" else 1
    largest = max(times)
    # Ratios to the largest time, so that the unit scales with the times (the
    # same plan in seconds or in hours).
    ratios = [x / largest for x in times]
    fractions = [Fraction(x).limit_denominator(10**6) for x in ratios]
    if all(float(f) == x for f, x in zip(fractions, ratios)):
        denominator = math.lcm(*(f.denominator for f in fractions))
        numerator = math.gcd(*(int(f * denominator) for f in fractions))
        if denominator * cycles // numerator <= MAX_UNITS // 10**3:
            return largest * numerator / (denominator * cycles), True
    return largest * 1e-6, False


def solve(cfg: PipelineConfig, mask: np.ndarray, *, hint=None, time_limit: float, bound: float | None = None,
          wall_limit: float | None = None):
    """Return the least-period plan the search finds.

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline, in the kind the plan runs.
    mask : numpy.ndarray
        (d, p) boolean mask of failed workers.
    hint : tuple, optional
        A plan (executor, graph, orders, start) to start from.
    time_limit : float
        CP-SAT's deterministic time: about seconds on a typical core, but the
        same on every machine.
    bound : float, optional
        A proven lower bound on the period, added as a constraint.
    wall_limit : float, optional
        Wall-clock seconds the search may run besides (None: no limit).

    Returns
    -------
    tuple or None
        (executor, orders, proven, exact_times, stopped_by: what stopped an
        unproven search, "at the time limit", "at the wall-clock limit" or "by
        an interrupt"); None when the search found no plan in its time.
    """
    from ortools.sat.python import cp_model

    p = cfg.stages
    q, on_grid = quantum(cfg)
    grid = _on_grid(cfg, q)
    peers = _peers(mask, cfg.microbatches)
    horizon = (sum(grid.size[t][s] for (r, j, s) in peers for t in grid.types)
               + 2 * len(peers) * max(grid.p2p, grid.reroute) + p * grid.step)

    model = cp_model.CpModel()
    start, end, present, on_worker, held = _add_tasks(model, cfg, grid, peers, horizon)
    _add_dependencies(model, grid, peers, start, end, present, p)
    _add_workers(model, cfg, on_worker, held)
    period = _add_period(model, cfg, grid, peers, start, end, horizon)
    if bound is not None and on_grid:
        model.Add(period >= math.ceil(bound / q - 1e-9))
    model.Minimize(period)
    if hint is not None:
        _hint(model, hint, start, present, peers, grid.types, q, p)
    solver = cp_model.CpSolver()
    # Deterministic time, not wall-clock time, and one search worker: the same
    # plan on any machine, however busy.
    solver.parameters.max_deterministic_time = float(time_limit)
    solver.parameters.num_workers = 1
    if wall_limit is not None:  # a busy machine's bound: only it can make a plan depend on the machine
        solver.parameters.max_time_in_seconds = float(wall_limit)
    began = time.perf_counter()
    status = _solve_stoppable(solver, model)
    # Timed here, around the whole call: the solver's own clock can start late on a busy machine.
    elapsed = time.perf_counter() - began
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    stopped_by = "at the time limit"
    if status != cp_model.OPTIMAL and solver.ResponseProto().deterministic_time < 0.999 * time_limit:
        # A loaded machine has seen CP-SAT stop at its wall-clock limit a little short of it by this clock.
        wall_hit = wall_limit is not None and elapsed >= 0.98 * wall_limit
        stopped_by = "at the wall-clock limit" if wall_hit else INTERRUPTED
    executor, orders = _plan(cfg, solver, start, present)
    return executor, orders, status == cp_model.OPTIMAL, on_grid, stopped_by


class _Grid(NamedTuple):
    """The task times and delays in whole units of the quantum."""

    types: tuple  # a micro-batch's task types at a stage: F, B (W fused in) or F, B, W
    size: dict  # task type -> each stage's duration
    p2p: int
    reroute: int
    step: int  # the optimizer step


def _on_grid(cfg: PipelineConfig, q: float) -> _Grid:
    scale = lambda x: int(round(x / q))  # noqa: E731 (exact on the grid: x / q is a whole number)
    fused = cfg.backward == "fused"
    fwd, bwd, wgt = (np.asarray(x, dtype=float) for x in (cfg.fwd, cfg.bwd_input, cfg.bwd_weight))
    size = {0: [scale(x) for x in fwd], 1: [scale(x) for x in (bwd + wgt if fused else bwd)],
            2: [scale(x) for x in wgt]}
    return _Grid((0, 1) if fused else (0, 1, 2), size, scale(cfg.p2p_delay), scale(cfg.reroute_delay),
                 scale(cfg.optimizer_time))


def _peers(mask: np.ndarray, m: int) -> dict:
    """The workers (by replica) that may run each (replica, micro-batch, stage): its own, or when it failed
    every survivor of its stage."""
    d, p = mask.shape
    alive = [[int(a) for a in np.flatnonzero(~mask[:, s])] for s in range(p)]
    return {(r, j, s): (alive[s] if mask[r, s] else [r]) for r in range(d) for j in range(m) for s in range(p)}


def _add_tasks(model, cfg, grid, peers, horizon):
    """Each task's start, end and presence on each candidate worker, and the intervals each worker
    holds: (start, end, present, on_worker, held)."""
    final = grid.types[-1]
    start, end, present = {}, {}, {}
    on_worker = {}  # (replica, stage) -> intervals
    held = {}  # (replica, stage) -> (interval, demand) from F start to final end
    for key, cands in peers.items():
        r, j, s = key
        for t in grid.types:
            start[key, t] = model.NewIntVar(0, horizon, f"s{key}{t}")
            end[key, t] = start[key, t] + grid.size[t][s]
        if len(cands) > 1:
            literals = [model.NewBoolVar(f"on{key}{c}") for c in cands]
            model.AddExactlyOne(literals)
        else:
            literals = [model.NewConstant(1)]
        for c, lit in zip(cands, literals):
            present[key, c] = lit
            for t in grid.types:
                on_worker.setdefault((c, s), []).append(
                    model.NewOptionalFixedSizeIntervalVar(start[key, t], grid.size[t][s], lit, f"i{key}{t}{c}"))
            if cfg.memory is not None:  # only a budget needs the micro-batch's whole stay
                span = model.NewIntVar(0, horizon, f"h{key}{c}")
                model.Add(span == end[key, final] - start[key, 0])
                held.setdefault((c, s), []).append(
                    model.NewOptionalIntervalVar(start[key, 0], span, end[key, final], lit, f"m{key}{c}"))
    return start, end, present, on_worker, held


def _add_dependencies(model, grid, peers, start, end, present, p):
    """F -> B -> W of a micro-batch at a stage; F down the stages and B up, with the delay between the
    workers that run them."""
    for key in peers:
        r, j, s = key
        for a, b in zip(grid.types[:-1], grid.types[1:]):
            model.Add(start[key, b] >= end[key, a])
        links = []
        if s > 0:
            links.append(((r, j, s - 1), 0, key, 0))
        if s < p - 1:
            links.append(((r, j, s + 1), 1, key, 1))
        for src, ts, dst, td in links:
            for c1 in peers[src]:
                for c2 in peers[dst]:
                    delay = grid.p2p if c1 == c2 else grid.reroute
                    model.Add(start[dst, td] >= end[src, ts] + delay).OnlyEnforceIf(
                        [present[src, c1], present[dst, c2]])


def _add_workers(model, cfg, on_worker, held):
    """A task at a time on each worker, and with a memory budget at most its stage's capacity of
    micro-batches in flight."""
    for intervals in on_worker.values():
        model.AddNoOverlap(intervals)
    if cfg.memory is not None:
        cap = cfg.memory.capacity()
        for (c, s), intervals in held.items():
            if cap[s] < len(intervals):
                model.AddCumulative(intervals, [1] * len(intervals), int(cap[s]))


def _add_period(model, cfg, grid, peers, start, end, horizon):
    """The period T: at least each optimizer group's span from its first F to its last end, plus the step."""
    p, final = cfg.stages, grid.types[-1]
    groups = [[s] for s in range(p)] if cfg.optimizer == "staggered" else [list(range(p))]
    period = model.NewIntVar(0, horizon, "T")
    for g, stages in enumerate(groups):
        first = model.NewIntVar(0, horizon, f"a{g}")
        last = model.NewIntVar(0, horizon, f"b{g}")
        model.AddMinEquality(first, [start[key, 0] for key in peers if key[2] in stages])
        model.AddMaxEquality(last, [end[key, final] for key in peers if key[2] in stages])
        model.Add(period >= last - first + grid.step)
        if 0 in stages:
            model.Add(first == 0)  # the pattern may shift: its first forward at 0
    return period


def _plan(cfg, solver, start, present):
    """(executor, orders) of the solver's plan: who runs each micro-batch, and each worker's tasks by start."""
    from ._graph import build_graph, default_executor
    from ._schedule import worker_orders

    d, m, p = cfg.replicas, cfg.microbatches, cfg.stages
    executor = default_executor(d, m, p)
    for (key, c), lit in present.items():
        if solver.BooleanValue(lit):  # a failed worker's micro-batch moves even to a lone survivor
            r, j, s = key
            executor[r, j, s] = c * p + s
    graph = build_graph(cfg, 1, executor=executor)
    at = np.full(graph.size, np.inf)
    for (key, t), var in start.items():
        r, j, s = key
        at[((r * m + j) * p + s) * 3 + t] = solver.Value(var)
    orders = tuple(worker_orders(graph, np.lexsort((graph.kind, at)).argsort()))  # by start, F before B before W
    return executor, orders


def _solve_stoppable(solver, model):
    """`solver.Solve(model)`, which Ctrl-C stops with its best plan where Ctrl-C reaches it (the main thread).

    CP-SAT leaves SIGINT at the system's default when it returns, so a later
    Ctrl-C would kill the process outright, skipping every `finally` (a
    writer's lock, a partial file): Python's handler is put back."""
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if in_main else None
    solver.parameters.catch_sigint_signal = previous is not None
    try:
        return solver.Solve(model)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _hint(model, hint, start, present, peers, types, q, p):
    executor, graph, orders, at = hint
    d, m, _ = graph.shape
    for key in peers:
        r, j, s = key
        for t in types:
            model.AddHint(start[key, t], int(round(at[((r * m + j) * p + s) * 3 + t] / q)))
        if len(peers[key]) > 1:
            for c in peers[key]:
                model.AddHint(present[key, c], int(executor[r, j, s] == c * p + s))
