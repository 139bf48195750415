"""The planner's compiled helpers against plain references: the list scheduler
(`_plan_kernel.plan_list_schedule`, which keeps each worker's ready tasks), the
simulator's merge of chains (`_schedule_kernel.list_schedule`) and the tail
lengths (`_schedule_kernel.tail_lengths`), bit for bit."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relmodel.pipeline import _plan_kernel, _planner as planner
from relmodel.pipeline._schedule_kernel import list_schedule, tail_lengths
from relmodel.pipeline._config import PipelineConfig
from relmodel.pipeline._graph import build_graph


class _Placement:
    """What a plain reference scheduler has placed: times, placement steps, and `ready_at`."""

    def __init__(self, g, release=None):
        self.g, n = g, g.size
        self.release = np.zeros(n) if release is None else release
        self.start, self.end = np.full(n, -1.0), np.full(n, -1.0)
        self.sequence, self.done, self.placed = np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=bool), 0

    def ready_at(self, i):
        """When task i's predecessors let it start; None while one has not ended."""
        g, preds = self.g, range(self.g.pred_ptr[i], self.g.pred_ptr[i + 1])
        if not all(self.done[g.pred_idx[k]] for k in preds):
            return None
        return max([self.release[i]] + [self.end[g.pred_idx[k]] + g.pred_delay[k] for k in preds])

    def place(self, i, s):
        self.start[i], self.end[i], self.sequence[i], self.done[i] = s, s + self.g.duration[i], self.placed, True
        self.placed += 1

    def place_workerless(self):
        """Worker-less tasks run as soon as their predecessors end."""
        moved = True
        while moved:
            moved = False
            for i in range(self.g.size):
                if not self.done[i] and self.g.worker[i] < 0 and self.ready_at(i) is not None:
                    self.place(i, self.ready_at(i))
                    moved = True

    def result(self):
        return self.placed, self.start, self.end, self.sequence


def reference_list_schedule(g, priority, holds, cap, n_workers):
    """Giffler-Thompson as the kernel's docstring states it, scanning every task at every step."""
    at = _Placement(g)
    free, inflight = np.zeros(n_workers), np.zeros(n_workers, dtype=np.int64)
    while True:
        at.place_workerless()
        candidates = [i for i in range(g.size) if not at.done[i] and g.worker[i] >= 0 and at.ready_at(i) is not None
                      and not (holds[i] > 0 and inflight[g.worker[i]] >= cap[g.worker[i]])]
        if not candidates:
            return at.result()
        ends = {i: max(at.ready_at(i), free[g.worker[i]]) + g.duration[i] for i in candidates}
        cut = min(ends.values())
        w = min(g.worker[i] for i in candidates if ends[i] == cut)  # the lowest worker reaching the cut
        eligible = [i for i in candidates if g.worker[i] == w
                    and (max(at.ready_at(i), free[w]) < cut or ends[i] == cut)]
        i = min(eligible, key=lambda j: (priority[j], j))  # ties: the lowest task index
        at.place(i, max(at.ready_at(i), free[w]))
        free[w] = at.end[i]
        inflight[w] += holds[i]


@st.composite
def planner_graphs(draw):
    p, d, m = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 4))
    cfg = PipelineConfig(stages=p, replicas=d, microbatches=m, backward=draw(st.sampled_from(["fused", "decoupled"])),
                         fwd=tuple(draw(st.sampled_from([0.5, 1.0, 1.25])) for _ in range(p)),
                         bwd_input=(2.0,) * p, bwd_weight=(1.0,) * p, p2p_delay=draw(st.sampled_from([0.0, 0.125])))
    mask = np.array(draw(st.lists(st.booleans(), min_size=d * p, max_size=d * p))).reshape(d, p)
    if mask.all(axis=0).any():
        mask[:, :] = False
    executor = planner.reroute(mask, m, draw(st.sampled_from(planner.ASSIGNMENTS)))
    return build_graph(cfg, 1, executor=executor), d * p


@settings(max_examples=60)
@given(planner_graphs(), st.data())
def test_the_list_scheduler_is_the_reference_bit_for_bit(graph_workers, data):
    g, n_workers = graph_workers
    holds = planner.holds(g)
    # Priorities with ties (whole numbers), and caps that may stop the schedule (0 opens nothing).
    priority = np.array(data.draw(st.lists(st.integers(0, 3), min_size=g.size, max_size=g.size)), dtype=float)
    cap = np.array(data.draw(st.lists(st.sampled_from([0, 1, 2, 10**6]), min_size=n_workers, max_size=n_workers)))
    start, end, sequence = np.full(g.size, -1.0), np.full(g.size, -1.0), np.full(g.size, -1, dtype=np.int64)
    placed = _plan_kernel.plan_list_schedule(g.duration, g.worker, g.pred_ptr, g.pred_idx, g.pred_delay, priority,
                                             holds, cap, n_workers, start, end, sequence)
    ref = reference_list_schedule(g, priority, holds, cap, n_workers)
    assert placed == ref[0]
    assert np.array_equal(start, ref[1]) and np.array_equal(end, ref[2]) and np.array_equal(sequence, ref[3])


def reference_chain_merge(g, chains, priority, release, n_workers):
    """The greedy merge as `list_schedule`'s docstring states it: a chain's head runs once its
    predecessors have ended; the candidate that could end first fixes the worker (the lowest on a tie)
    and the cut; among that worker's heads that could start before the cut, the lowest priority runs
    (ties: the first chain). Every chain is looked at in every step."""
    at = _Placement(g, release)
    head = [0] * len(chains)
    free = np.zeros(n_workers)
    while True:
        at.place_workerless()
        heads = [(c, chain[head[c]]) for c, chain in enumerate(chains)
                 if head[c] < len(chain) and at.ready_at(chain[head[c]]) is not None]
        if not heads:
            return at.result()
        ends = {i: max(at.ready_at(i), free[g.worker[i]]) + g.duration[i] for _, i in heads}
        cut = min(ends.values())
        w = min(g.worker[i] for _, i in heads if ends[i] == cut)
        eligible = [(priority[i], c, i) for c, i in heads if g.worker[i] == w
                    and (max(at.ready_at(i), free[w]) < cut or ends[i] == cut)]
        _, c, i = min(eligible)
        at.place(i, max(at.ready_at(i), free[w]))
        head[c] += 1
        free[w] = at.end[i]


@settings(max_examples=60)
@given(planner_graphs(), st.data())
def test_the_merge_of_chains_is_the_reference_bit_for_bit(graph_workers, data):
    g, n_workers = graph_workers
    # Each worker's tasks in a random order, cut into chains; chains in a random order (they may deadlock).
    chains = []
    for w in range(n_workers):
        tasks = data.draw(st.permutations(np.flatnonzero(g.worker == w).tolist()))
        cuts = sorted(data.draw(st.sets(st.integers(1, max(len(tasks) - 1, 1)), max_size=3)))
        chains += [c for c in np.split(np.array(tasks, dtype=np.int64), cuts) if c.size]
    chains = data.draw(st.permutations(chains))
    priority = np.array(data.draw(st.lists(st.integers(0, 3), min_size=g.size, max_size=g.size)), dtype=float)
    release = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 2.0]), min_size=g.size, max_size=g.size)))
    chain_ptr = np.concatenate([[0], np.cumsum([c.size for c in chains])]).astype(np.int64)
    chain_task = np.concatenate(chains).astype(np.int64)
    start, end, sequence = np.full(g.size, -1.0), np.full(g.size, -1.0), np.full(g.size, -1, dtype=np.int64)
    placed = list_schedule(g.duration, release, g.worker, g.pred_ptr, g.pred_idx, g.pred_delay, chain_ptr, chain_task,
                           priority, n_workers, start, end, sequence)
    ref = reference_chain_merge(g, chains, priority, release, n_workers)
    assert placed == ref[0]  # (a task left unplaced keeps -1 in both)
    assert np.array_equal(start, ref[1]) and np.array_equal(end, ref[2]) and np.array_equal(sequence, ref[3])


@settings(max_examples=40)
@given(planner_graphs())
def test_tail_lengths_are_the_longest_paths_to_the_end(graph_workers):
    g, _ = graph_workers
    tail = g.duration.astype(float).copy()
    succ = {i: [] for i in range(g.size)}
    for i in range(g.size):
        for k in range(g.pred_ptr[i], g.pred_ptr[i + 1]):
            succ[int(g.pred_idx[k])].append((i, g.pred_delay[k]))
    # Longest path by memoised recursion over successors, in plain Python.
    memo = {}

    def longest(i):
        if i not in memo:
            memo[i] = g.duration[i] + max([longest(j) + delay for j, delay in succ[i]], default=0.0)
        return memo[i]

    for i in sorted(range(g.size), key=lambda i: -len(succ[i])):
        tail[i] = longest(i)
    got = tail_lengths(g.duration, g.pred_ptr, g.pred_idx, g.pred_delay)
    assert np.array_equal(got, tail)
    assert all(math.isfinite(x) for x in got)


def test_a_wall_clock_limit_stops_the_exact_search_with_its_best_plan_and_gap():
    """`wall_limit` bounds the exact search in wall seconds (deterministic time alone grows with the load):
    a search whose proof takes minutes of CPU, told 1 s, returns its best plan, says why it is not proven
    and warns with the period against the bound."""
    pytest.importorskip("ortools")
    import warnings

    from relmodel.pipeline import recycle_plan
    from relmodel.pipeline._planner import PlannerWarning

    cfg = PipelineConfig(stages=3, replicas=3, microbatches=4, fwd=(2.0,) * 3, bwd_input=(3.0,) * 3,
                         bwd_weight=(1.0,) * 3)
    mask = np.zeros((3, 3), dtype=bool)
    mask[0, 1] = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        adapted = recycle_plan(cfg, mask, method="exact", wall_limit=1.0)
    if adapted.optimal:  # a machine fast enough to prove it within the second: nothing to stop
        return
    assert adapted.method == "exact" and "stopped at the wall-clock limit before a proof" in adapted.detail
    assert adapted.period >= adapted.lower_bound and adapted.gap >= 0
    assert any(issubclass(w.category, PlannerWarning) and "not proven least" in str(w.message) for w in caught)


_INTERRUPTED_SEARCH = """
import os, signal, threading, time, warnings
import numpy as np
from ortools.sat.python import cp_model
from relmodel.pipeline import PipelineConfig, recycle_plan

real_solve = cp_model.CpSolver.Solve

def solve_then_interrupt(self, *args, **kwargs):  # SIGINT once CP-SAT runs
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        return real_solve(self, *args, **kwargs)
    finally:
        timer.cancel()

cp_model.CpSolver.Solve = solve_then_interrupt
cfg = PipelineConfig(stages=3, replicas=3, microbatches=4, fwd=(2.0,) * 3, bwd_input=(3.0,) * 3,
                     bwd_weight=(1.0,) * 3)
mask = np.zeros((3, 3), dtype=bool)
mask[0, 1] = True  # its proof takes ~100 CPU s: the search is running when the signal comes
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    adapted = recycle_plan(cfg, mask, method="exact", time_limit=600.0)
print(adapted.interrupted, adapted.optimal, adapted.period >= adapted.lower_bound, adapted.detail, flush=True)
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(10)
except KeyboardInterrupt:
    print("KeyboardInterrupt after the search")
"""


def test_ctrl_c_stops_an_exact_search_with_its_best_plan_and_still_reaches_python_after():
    """SIGINT during the search stops it with its best plan, marked interrupted; after it, SIGINT raises
    KeyboardInterrupt again. (CP-SAT had left the system's default: a later Ctrl-C killed the process,
    exit 130, skipping every `finally`.) In a process of its own, which that would kill."""
    pytest.importorskip("ortools")
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _INTERRUPTED_SEARCH], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr[-2000:])
    assert done.stdout.splitlines() == ["True False True exact search, stopped by an interrupt before a proof",
                                        "KeyboardInterrupt after the search"], done.stderr[-2000:]


def test_a_replay_stops_at_a_state_whose_search_was_interrupted(monkeypatch):
    """A replay plans many states: one whose exact search Ctrl-C stopped would make its result depend on
    when the signal came, so the replay raises KeyboardInterrupt there and keeps no period."""
    import dataclasses

    from relmodel.pipeline import StrategyOptions, _runs as runs

    real = runs.recycle_adapted
    monkeypatch.setattr(runs, "recycle_adapted",
                        lambda *args: dataclasses.replace(real(*args), interrupted=True))
    cfg, options = PipelineConfig(4, 4, 8), StrategyOptions(method="heuristic")
    with pytest.raises(KeyboardInterrupt):
        runs.recycle_period(cfg, options, (1, 0, 1, 0))
    runs.clear_period_cache()
    with pytest.raises(KeyboardInterrupt):  # (1, 0, 1, 0): the fixed rules leave it short, so it is planned whole
        runs.recycle_periods(cfg, options, np.array([[1, 0, 0, 0], [1, 0, 1, 0]]))
    assert not runs._PERIODS
    monkeypatch.setattr(runs, "recycle_adapted", real)
    assert runs.recycle_periods(cfg, options, np.array([[1, 0, 1, 0]]))[0] == runs.recycle_period(cfg, options,
                                                                                                 (1, 0, 1, 0))
    runs.clear_period_cache()


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "5s", True])
def test_a_bad_wall_limit_is_named(bad):
    from relmodel.pipeline import recycle_plan
    from relmodel.pipeline._config import PipelineError

    cfg = PipelineConfig(stages=2, replicas=2, microbatches=2)
    with pytest.raises(PipelineError) as info:
        recycle_plan(cfg, np.array([[True, False], [False, False]]), wall_limit=bad)
    assert info.value.parameter == "wall_limit"
