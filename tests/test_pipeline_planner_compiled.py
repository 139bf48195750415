"""ReCycle's heuristic, compiled end to end (`_plan_kernel.search_states`), against the plain path it
replaced, bit for bit: the candidates (re-routing by `planner.reroute`, graphs by `build_graph`, list
schedules, orders by `worker_orders`), their periods (every worker's order swept per stage in numpy,
Karp's cycle mean in numpy), the lower bound (the formula state by state), the seeds and restarts in
their order; and a trace's states planned in batches (`runs.recycle_periods`) against one at a time,
whatever the chunking and the thread count."""

import math

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relmodel.pipeline as pl
from relmodel.pipeline import _plan_kernel, _schedule_kernel, _planner as planner, _runs as runs
from relmodel.pipeline._config import PipelineConfig, StageMemory
from relmodel.pipeline._graph import build_graph, with_orders
from relmodel.pipeline._recycle import greedy_seeds, recycle_kind
from relmodel.pipeline._schedule import DeadlockError, worker_orders


# -- plain references --------------------------------------------------------------------------------

def reference_lower_bound(cfg, mask):
    """`planner.lower_bound`'s formula, one state, in numpy and Python floats."""
    d, m, p = cfg.replicas, cfg.microbatches, cfg.stages
    fwd, bwd, wgt = (np.asarray(x, dtype=float) for x in (cfg.fwd, cfg.bwd_input, cfg.bwd_weight))
    alive = d - mask.sum(axis=0)
    cap = planner.capacity(cfg)
    if np.any(alive == 0) or np.any(cap < 1):
        return math.inf
    load = -(-(m * d) // alive)
    hop = min(cfg.p2p_delay, cfg.reroute_delay)
    back = bwd + wgt if cfg.backward == "fused" else bwd
    trip = np.array([float(np.sum(fwd[s + 1:] + back[s + 1:])) + 2 * (p - 1 - s) * hop for s in range(p)])
    held = np.minimum(load, cap)
    span = load * (fwd + bwd + wgt) + np.maximum(0.0, np.maximum(fwd + trip - held * fwd,
                                                                 trip - (held - 1) * (bwd + wgt)))
    for s in range(p):
        for later in range(s + 1, p):
            down = float(np.sum(fwd[s:later])) + (later - s) * hop
            up = float(np.sum(back[s + 1:later])) + (later - s) * hop + bwd[s] + wgt[s]
            n, f, b = load[later], fwd[later], back[later]
            span[s] = max(span[s], down + up + max(n * (f + b), f + trip[later] + n * b, n * f + trip[later] + b))
    return float(span.max()) + cfg.optimizer_time


def reference_cycle_mean(weight):
    """Karp's maximum cycle mean, in numpy."""
    n = weight.shape[0]
    walk = np.full((n + 1, n), -np.inf)
    walk[0] = 0.0
    for k in range(1, n + 1):
        walk[k] = np.max(walk[k - 1][:, None] + weight, axis=0)
    best = -np.inf
    for v in range(n):
        if walk[n, v] > -np.inf:
            best = max(best, min((walk[n, v] - walk[k, v]) / (n - k) for k in range(n) if walk[k, v] > -np.inf))
    return float(best)


def reference_orders_period(graph, orders):
    """The period of fixed orders: per stage s, every task of s released at 0 and the others never, the
    longest paths to each stage's optimizer step (the graph with the orders' edges, swept in Kahn's
    order); the maximum cycle mean of that stage graph. And the start times, all released at 0."""
    ptr, idx, delay = with_orders(graph, orders)
    order, placed = _schedule_kernel.topological_order(ptr, idx)
    if placed < graph.size:
        raise DeadlockError("deadlock")
    p = graph.shape[2]
    stage = np.where(graph.worker >= 0, graph.worker % p, -1)
    start, end = np.empty(graph.size), np.empty(graph.size)
    weight = np.full((p, p), -np.inf)
    for s in range(p):
        _schedule_kernel.longest_path(order, graph.duration, np.where(stage == s, 0.0, -np.inf), ptr, idx, delay,
                                      start, end)
        weight[s] = end[graph.step_index[0]]
    _schedule_kernel.longest_path(order, graph.duration, np.zeros(graph.size), ptr, idx, delay, start, end)
    return reference_cycle_mean(weight), start.copy()


def reference_candidates(kind, mask, seeds, restarts):
    """(executor, graph, orders) of the heuristic's candidates in their order: per assignment the list
    schedules under the longest tail, then the 1F1B and ZB-H1 slots; the seeds that fit; the restarts."""
    cap = np.tile(planner.capacity(kind), kind.replicas)
    graphs = []

    def list_plan(graph, priority):
        n = graph.size
        start, end, sequence = np.empty(n), np.empty(n), np.empty(n, dtype=np.int64)
        d, m, p = graph.shape
        placed = _plan_kernel.plan_list_schedule(graph.duration, graph.worker, graph.pred_ptr, graph.pred_idx,
                                                 graph.pred_delay, np.array(priority, dtype=float),
                                                 planner.holds(graph), cap, d * p, start, end, sequence)
        return tuple(worker_orders(graph, sequence)) if placed == n else None

    for assignment in planner.ASSIGNMENTS:
        executor = planner.reroute(mask, kind.microbatches, assignment)
        graph = build_graph(kind, 1, executor=executor)
        tail = -_schedule_kernel.tail_lengths(graph.duration, graph.pred_ptr, graph.pred_idx, graph.pred_delay)
        graphs.append((executor, graph, tail))
        for priority in (tail, planner._order_priority(graph, "1f1b"), planner._order_priority(graph, "zb-h1")):
            orders = list_plan(graph, priority)
            if orders is not None:
                yield executor, graph, orders
    for executor, orders in seeds:
        graph = build_graph(kind, 1, executor=executor)
        if np.all(planner.peak_inflight(graph, orders) <= cap):
            yield executor, graph, orders
    rng = np.random.default_rng(0)
    for k in range(restarts):
        executor, graph, tail = graphs[k % len(graphs)]
        orders = list_plan(graph, tail + rng.uniform(0.0, 0.25 * (float(np.ptp(tail)) or 1.0), graph.size))
        if orders is not None:
            yield executor, graph, orders


def reference_heuristic(kind, mask, seeds, restarts):
    """(period, tries, executor, orders, start) of the best candidate, stopping at the bound."""
    bound = reference_lower_bound(kind, mask)
    if not math.isfinite(bound):
        return None, bound
    best, tries = None, 0
    for executor, graph, orders in reference_candidates(kind, mask, seeds, restarts):
        tries += 1
        period, start = reference_orders_period(graph, orders)
        if best is None or period < best[0] * (1 - planner.TOLERANCE):
            best = (period, executor, orders, start)
        if best[0] <= bound * (1 + planner.TOLERANCE):
            break
    return (None if best is None else (best[0], tries) + best[1:]), bound


# -- drawn pipelines ---------------------------------------------------------------------------------

@st.composite
def pipelines(draw, most_stages=4, most_replicas=4, most_microbatches=6):
    p, d = draw(st.integers(1, most_stages)), draw(st.integers(1, most_replicas))
    m = draw(st.integers(1, most_microbatches))
    time = st.sampled_from([0.25, 0.5, 1.0, 1.25, 2.0, 3.0, 1e-3, 1e3])
    order = draw(st.sampled_from(["1f1b", "zb-h1"]))
    memory = None
    if draw(st.booleans()):  # a budget: room for 0 to 6 micro-batches a worker
        memory = StageMemory(float(draw(st.integers(0, 6))), (0.0,) * p, 1.0)
    cfg = PipelineConfig(stages=p, replicas=d, microbatches=m, order=order,
                         backward="decoupled" if order == "zb-h1" else draw(st.sampled_from(pl.BACKWARDS)),
                         optimizer=draw(st.sampled_from(pl.OPTIMIZERS)),
                         fwd=tuple(draw(time) for _ in range(p)), bwd_input=tuple(draw(time) for _ in range(p)),
                         bwd_weight=tuple(draw(time) for _ in range(p)),
                         p2p_delay=draw(st.sampled_from([0.0, 0.1, 0.5])),
                         reroute_delay=draw(st.sampled_from([0.0, 0.2, 1.0])),
                         optimizer_time=draw(st.sampled_from([0.0, 0.75])), memory=memory)
    mask = np.array(draw(st.lists(st.booleans(), min_size=d * p, max_size=d * p)), dtype=bool).reshape(d, p)
    return cfg, mask


@settings(max_examples=60)
@given(pipelines(), st.booleans(), st.sampled_from([0, 1, 12]))
def test_the_compiled_heuristic_is_the_plain_path_bit_for_bit(case, seeded, restarts):
    """Every candidate, its period and the stop at the bound as the plain path gives them: the same
    best period, candidates tried, re-routing, worker orders and start times."""
    cfg, mask = case
    kind = recycle_kind(cfg)
    seeds = (lambda: greedy_seeds(kind, mask)) if seeded and mask.any() else (lambda: ())
    want, want_bound = reference_heuristic(kind, mask, seeds(), restarts)
    best, bound = planner._heuristic(kind, mask, seeds(), restarts)
    assert bound == want_bound
    if want is None:
        assert best.period is None
        return
    period, tries, executor, orders, start = want
    assert (best.period, best.tries) == (period, tries)
    assert np.array_equal(best.executor, executor) and np.array_equal(best.start, start)
    assert len(best.orders) == len(orders) and all(np.array_equal(a, b) for a, b in zip(best.orders, orders))


@settings(max_examples=60)
@given(pipelines(), st.data())
def test_the_period_of_any_orders_is_the_plain_sweeps(case, data):
    """Orders drawn at random (a permutation of each worker's tasks: most deadlock), on a re-routed
    graph: the same period and start times, or the same deadlock."""
    cfg, mask = case
    executor = planner.reroute(mask, cfg.microbatches, data.draw(st.sampled_from(planner.ASSIGNMENTS)))
    if executor is None:
        return
    graph = build_graph(cfg, 1, executor=executor)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    rank = rng.permutation(graph.size) if data.draw(st.booleans()) else np.arange(graph.size)
    orders = worker_orders(graph, rank)
    try:
        want = reference_orders_period(graph, orders)
    except DeadlockError:
        with pytest.raises(DeadlockError, match="deadlock"):
            planner.orders_period(graph, orders)
        return
    period, start = planner.orders_period(graph, orders)
    assert period == want[0] and np.array_equal(start, want[1])


@settings(max_examples=80)
@given(pipelines(most_stages=6, most_replicas=6, most_microbatches=12), st.data())
def test_the_lower_bounds_of_many_states_are_the_formulas(case, data):
    cfg, _ = case
    d, p = cfg.replicas, cfg.stages
    masks = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=d * p, max_size=d * p), min_size=1,
                                        max_size=5)), dtype=bool).reshape(-1, d, p)
    got = planner.lower_bounds(cfg, d - masks.sum(axis=1))
    want = [reference_lower_bound(cfg, mask) for mask in masks]
    assert got.tolist() == want
    assert [planner.lower_bound(cfg, mask) for mask in masks] == want


def test_max_cycle_mean_is_karps_in_numpy():
    rng = np.random.default_rng(5)
    for n in range(1, 7):
        for _ in range(20):
            weight = np.where(rng.random((n, n)) < 0.4, -np.inf, rng.normal(size=(n, n)) * 10)
            assert planner.max_cycle_mean(weight) == reference_cycle_mean(weight)


@pytest.mark.parametrize("chunk, threads", [(1, 1), (3, 2), (64, 2)])
def test_a_batch_of_states_plans_as_each_alone(monkeypatch, chunk, threads):
    """`runs.recycle_periods` against `recycle_period` state by state: every placement of failures on
    small pipelines (states no plan runs in, states the fixed rules leave short of the bound, memory
    budgets), whatever the chunking and the thread count."""
    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip("Numba has fewer threads here")
    monkeypatch.setattr(runs, "CHUNK_STATES", chunk)
    options = pl.StrategyOptions(method="heuristic")
    cfgs = [PipelineConfig(stages=3, replicas=3, microbatches=4, fwd=(1.0, 1.5, 1.0), p2p_delay=0.1),
            PipelineConfig(stages=2, replicas=4, microbatches=5, bwd_weight=(2.0, 0.5), reroute_delay=0.5),
            PipelineConfig(stages=3, replicas=3, microbatches=4, memory=StageMemory(5.0, (1.0, 1.0, 1.0), 1.0))]
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        for cfg in cfgs:
            counts = np.array(list(np.ndindex(*(cfg.replicas + 1,) * cfg.stages)))
            runs.clear_period_cache()
            done = []
            got = runs.recycle_periods(cfg, options, counts, progress=done.append)
            assert sum(done) == len(counts)
            runs.clear_period_cache()
            want = [runs.recycle_period(cfg, options, tuple(c)) for c in counts.tolist()]
            assert got.tolist() == want
            assert runs.recycle_periods(cfg, options, counts[::-1]).tolist() == want[::-1]  # from the cache
            half = counts[::2]
            runs.clear_period_cache()
            runs.recycle_periods(cfg, options, half)
            done = []  # half of them known: every state still counts once
            assert runs.recycle_periods(cfg, options, counts, progress=done.append).tolist() == want
            assert sum(done) == len(counts)
    finally:
        numba.set_num_threads(previous)
        runs.clear_period_cache()


def test_a_state_a_batch_left_short_plans_from_its_result_as_from_scratch():
    """The planner goes on from the fixed rules' result a batch kept (`planner._SHORT`) to the same plan,
    field for field, as when it runs them itself."""
    cfg = PipelineConfig(stages=3, replicas=3, microbatches=4, fwd=(1.0, 1.5, 1.0), p2p_delay=0.1)
    masks = np.array([np.reshape(bits, (3, 3)) for bits in np.ndindex(*(2,) * 9)], dtype=bool)
    runs.clear_period_cache()
    try:
        periods = planner._rules(cfg).periods(masks)
        short = masks[np.isnan(periods)][:planner.SHORT_HELD]
        assert len(short) > 10 and len(planner._SHORT) == len(short)
        for mask in short:
            kept = planner.adapted_plan(cfg, mask, method="heuristic")
            assert (cfg, planner._key(mask)) not in planner._SHORT  # taken up
            alone = planner.adapted_plan(cfg, mask, method="heuristic")
            assert kept.period == alone.period and kept.detail == alone.detail
            assert np.array_equal(kept.executor, alone.executor) and np.array_equal(kept.start, alone.start)
            assert all(np.array_equal(a, b) for a, b in zip(kept.orders, alone.orders, strict=True))
    finally:
        runs.clear_period_cache()
    assert not planner._SHORT


def test_a_batch_reports_the_states_the_fixed_rules_leave_short():
    """NaN marks a state where no fixed rule reaches the bound (the seeds and restarts come next), inf
    one where no plan runs; elsewhere the period `plan` returns."""
    cfg = recycle_kind(PipelineConfig(stages=4, replicas=3, microbatches=8))
    rules = planner._rules(cfg)
    masks = np.zeros((3, 3, 4), dtype=bool)
    masks[0, 0, 0] = True
    masks[1, :, 2] = True  # every replica of stage 2 down
    masks[2, 0, :2] = True  # replica 0's first two stages: the fixed rules stop short of the bound
    found = rules.periods(masks)
    assert found[0] == planner.adapted_plan(cfg, masks[0], method="heuristic").period  # the longest tail reaches it
    assert found[1] == math.inf
    assert math.isnan(found[2])
    fixed, bound = planner._heuristic(cfg, masks[2], (), 0)
    assert not fixed.reaches(bound) and planner.adapted_plan(cfg, masks[2], method="heuristic").period >= bound


def reference_chains(graph, order, mask, reference_start, *, defer, reroute_first):
    """The greedy merge's chains, priorities and release times, worker by worker as the docstring of
    `recycle._SeedParts.chains` states them."""
    from relmodel.pipeline._graph import stage_order, task_index
    from relmodel.pipeline._recycle import _half_gap
    from relmodel.pipeline._schedule import after_all

    d, m, p = graph.shape
    its = np.arange(graph.n_iterations)[:, None]
    priority, release = reference_start.copy(), np.zeros(graph.size)
    later = after_all(reference_start)
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


@settings(max_examples=40)
@given(pipelines(), st.sampled_from(planner.ASSIGNMENTS), st.booleans())
def test_the_seeds_graph_and_chains_are_built_as_for_one_state(case, assignment, reroute_first):
    """The greedy merge's inputs from the pipeline's parts made once (`recycle._SeedParts`) are those
    built for the state alone: the graph of `build_graph` under the re-routing, the chains,
    priorities and release times of the plain construction."""
    from relmodel.pipeline._recycle import _seed_parts
    from relmodel.pipeline._schedule import N_ITERATIONS

    cfg, mask = case
    kind = recycle_kind(cfg)
    executor = planner.reroute(mask, kind.microbatches, assignment)
    if executor is None:
        return
    parts = _seed_parts(kind)
    graph = parts.graph_for(executor)
    want = build_graph(kind, N_ITERATIONS, executor=executor)
    for name in ("duration", "worker", "kind", "pred_ptr", "pred_idx", "pred_delay", "step_index"):
        assert np.array_equal(getattr(graph, name), getattr(want, name)), name
    chains, priority, release = parts.chains(graph, mask, reroute_first)
    ref = reference_chains(want, kind.order, mask, parts.reference, defer=kind.backward == "decoupled",
                           reroute_first=reroute_first)
    assert len(chains) == len(ref[0]) and all(np.array_equal(a, b) for a, b in zip(chains, ref[0]))
    assert np.array_equal(priority, ref[1]) and np.array_equal(release, ref[2])
