"""The exact planner: ReCycle's adapted iteration as a mixed-integer program (HiGHS).

Variables (continuous unless said): x_i, the start of each task in the
repeated pattern; a_g and b_g, the first start and last end of each optimizer
group (a stage when staggered, all stages with a barrier); the period T; for
each re-routed micro-batch and each surviving peer of its stage, a binary z
(it runs there); for each pair of tasks of different micro-batches that may
share a worker, a binary y (the first runs before the second); where transfers
between replicas cost other than within one, a same-replica indicator for two
re-routed neighbours; with a memory budget, in-flight indicators.

    minimise T
    x_j >= x_i + d_i + delay             dependencies (F down, B up, F -> B -> W)
    either x_j >= x_i + d_i or x_i >= x_j + d_j
                                         when i and j run on one worker (big M)
    a_g <= x_F,  b_g >= x_i + d_i,  T >= b_g - a_g + optimizer step
    sum_peers z = 1                      every re-routed micro-batch runs once
    at each F on a worker: micro-batches started and not yet freed <= capacity

The iteration k + 1 of a group may start once its step has run (T after its
tasks), so any solution repeats every T, and conversely (see `planner`).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import sparse
from scipy.optimize import Bounds, LinearConstraint, milp

from relmodel.pipeline._config import PipelineConfig

F_T, B_T, W_T = 0, 1, 2


def _triples(cfg: PipelineConfig, mask: np.ndarray):
    """Per (r, j, s): the replicas that may run it (its own, or its stage's survivors)."""
    d, m, p = cfg.replicas, cfg.microbatches, cfg.stages
    alive = [np.flatnonzero(~mask[:, s]) for s in range(p)]
    return {(r, j, s): (tuple(int(a) for a in alive[s]) if mask[r, s] else (r,))
            for r in range(d) for j in range(m) for s in range(p)}


def _task_types(cfg):
    return (F_T, B_T, W_T) if cfg.backward == "decoupled" else (F_T, B_T)


def order_pairs(cfg: PipelineConfig, mask: np.ndarray) -> int:
    """How many order variables the program of `cfg` with `mask` has (at most)."""
    d, m, p = cfg.replicas, cfg.microbatches, cfg.stages
    per = len(_task_types(cfg))
    total = 0
    for s in range(p):
        alive = d - int(mask[:, s].sum())
        if alive == 0:
            continue
        extra = -(-(int(mask[:, s].sum()) * m) // 1)
        triples = m + extra  # own micro-batches plus every re-routed one may land on a peer
        total += alive * (triples * (triples - 1) // 2) * per * per
    return total


def solve(cfg: PipelineConfig, mask: np.ndarray, *, bound: float, upper: float, node_limit: int = 100_000):
    """(executor, orders, proven) of the least-period plan, or None when the
    program found no plan of period <= `upper` within `node_limit` branch-and-bound
    nodes (a count, not seconds: the same answer on a busy machine; the cases
    here prove their optimum in at most 8,000)."""
    from relmodel.pipeline._graph import build_graph, default_executor

    d, m, p = cfg.replicas, cfg.microbatches, cfg.stages
    types = _task_types(cfg)
    fused = cfg.backward == "fused"
    fwd, bwd, wgt = (np.asarray(x, dtype=float) for x in (cfg.fwd, cfg.bwd_input, cfg.bwd_weight))
    duration = {F_T: fwd, B_T: bwd + wgt if fused else bwd, W_T: wgt}
    final = types[-1]
    triples = _triples(cfg, mask)

    columns = {}  # name -> column index

    def var(name):
        if name not in columns:
            columns[name] = len(columns)
        return columns[name]

    tasks = [(key, t) for key in triples for t in types]
    for key, t in tasks:
        var(("x", key, t))
    staggered = cfg.optimizer == "staggered"
    groups = range(p) if staggered else range(1)
    for g in groups:
        var(("a", g))
        var(("b", g))
    t_col = var(("T",))
    z = {}
    for key, cands in triples.items():
        if len(cands) > 1:
            for c in cands:
                z[key, c] = var(("z", key, c))

    rows, cols, vals, lo, hi = [], [], [], [], []

    def add(terms, low, high):
        r = len(lo)
        for col, v in terms:
            rows.append(r)
            cols.append(col)
            vals.append(v)
        lo.append(low)
        hi.append(high)

    def dur(key, t):
        return float(duration[t][key[2]])

    def x(key, t):
        return columns[("x", key, t)]

    horizon = sum(dur(key, t) for key, t in tasks)
    horizon += 2 * len(triples) * max(cfg.p2p_delay, cfg.reroute_delay) + p * cfg.optimizer_time + 1.0
    big = horizon

    def on(key, c):
        """(column, sign) terms of 'key runs on replica c' as 1 - sum, or [] when certain."""
        return [] if len(triples[key]) == 1 else [z[key, c]]

    # Dependencies.
    for (r, j, s), cands in triples.items():
        key = (r, j, s)
        for a, b in zip(types[:-1], types[1:]):
            add([(x(key, b), 1.0), (x(key, a), -1.0)], dur(key, a), math.inf)
        neighbours = []
        if s > 0:
            neighbours.append(((r, j, s - 1), F_T, key, F_T))
        if s < p - 1:
            neighbours.append(((r, j, s + 1), B_T, key, B_T))
        for src, ts, dst, td in neighbours:
            both = len(triples[src]) > 1 and len(triples[dst]) > 1
            common = set(triples[src]) & set(triples[dst])
            if cfg.p2p_delay == cfg.reroute_delay or not common:
                same = triples[src] == triples[dst] and len(triples[src]) == 1
                delay = cfg.p2p_delay if same else cfg.reroute_delay
                add([(x(dst, td), 1.0), (x(src, ts), -1.0)], dur(src, ts) + delay, math.inf)
                continue
            if not both:  # one fixed on replica c, the other may join it there
                c = next(iter(common))
                free_key = dst if len(triples[dst]) > 1 else src
                same_terms = [(z[free_key, c], 1.0)]
            else:
                same_terms = []
                for c in sorted(common):
                    v = var(("v", src, dst, c))
                    same_terms.append((v, 1.0))
                    add([(v, 1.0), (z[src, c], -1.0)], -math.inf, 0.0)
                    add([(v, 1.0), (z[dst, c], -1.0)], -math.inf, 0.0)
                    add([(v, 1.0), (z[src, c], -1.0), (z[dst, c], -1.0)], -1.0, math.inf)
            # x_dst >= x_src + d + reroute + (p2p - reroute) * same
            step = cfg.p2p_delay - cfg.reroute_delay
            add([(x(dst, td), 1.0), (x(src, ts), -1.0)] + [(col, -step * v) for col, v in same_terms],
                dur(src, ts) + cfg.reroute_delay, math.inf)

    # Optimizer groups: T >= b_g - a_g + step.
    for key, t in tasks:
        g = key[2] if staggered else 0
        if t == F_T:
            add([(x(key, t), 1.0), (columns[("a", g)], -1.0)], 0.0, math.inf)
        if t == final:
            add([(columns[("b", g)], 1.0), (x(key, t), -1.0)], dur(key, t), math.inf)
    for g in groups:
        add([(t_col, 1.0), (columns[("b", g)], -1.0), (columns[("a", g)], 1.0)], cfg.optimizer_time, math.inf)

    # Assignment.
    for key, cands in triples.items():
        if len(cands) > 1:
            add([(z[key, c], 1.0) for c in cands], 1.0, 1.0)

    # One task at a time per worker, and the memory budget.
    cap = cfg.memory.capacity() if cfg.memory is not None else None
    pairs = {}
    for s in range(p):
        for c in sorted(set(itertools.chain.from_iterable(cands for (r, j, st), cands in triples.items() if st == s))):
            here = [key for key, cands in triples.items() if key[2] == s and c in cands]
            for k1, k2 in itertools.combinations(here, 2):
                cond = [(col, 1.0) for col in on(k1, c) + on(k2, c)]
                n_cond = len(cond)
                for t1 in types:
                    for t2 in types:
                        pair = ((k1, t1), (k2, t2))
                        if pair not in pairs:
                            pairs[pair] = var(("y", pair))
                        y = pairs[pair]
                        i, k = x(k1, t1), x(k2, t2)
                        # y = 1: (k1, t1) first; both only bind when both run on c.
                        add([(i, 1.0), (k, -1.0), (y, big)] + [(col, big) for col, _ in cond],
                            -math.inf, big + big * n_cond - dur(k1, t1))
                        add([(k, 1.0), (i, -1.0), (y, -big)] + [(col, big) for col, _ in cond],
                            -math.inf, big * n_cond - dur(k2, t2))
            if cap is not None and cap[s] < len(here):
                _memory(add, var, pairs, here, c, int(cap[s]), final, on)

    n_var = len(columns)
    cost = np.zeros(n_var)
    cost[t_col] = 1.0
    lower = np.zeros(n_var)
    upper_b = np.full(n_var, horizon)
    integrality = np.zeros(n_var, dtype=np.int64)
    for name, col in columns.items():
        if name[0] in ("z", "y", "v"):
            integrality[col] = 1
            upper_b[col] = 1.0
        elif name[0] == "m":
            upper_b[col] = 1.0
    lower[t_col] = bound
    upper_b[t_col] = min(horizon, upper * (1 + 1e-9)) if math.isfinite(upper) else horizon
    matrix = sparse.csr_array((vals, (rows, cols)), shape=(len(lo), n_var))
    result = milp(cost, constraints=LinearConstraint(matrix, np.array(lo), np.array(hi)),
                  integrality=integrality, bounds=Bounds(lower, upper_b),
                  options={"node_limit": int(node_limit), "mip_rel_gap": 0.0, "disp": False})
    if result.x is None:
        return None
    sol = result.x
    executor = default_executor(d, m, p)
    for (r, j, s), cands in triples.items():
        if len(cands) == 1:  # a lone survivor takes the failed worker's micro-batches without a choice
            executor[r, j, s] = cands[0] * p + s
    for (key, c), col in z.items():
        if sol[col] > 0.5:
            r, j, s = key
            executor[r, j, s] = c * p + s
    graph = build_graph(cfg, 1, executor=executor)
    index = {t: t for t in range(3)}
    start = np.full(graph.size, np.inf)
    for key, t in tasks:
        r, j, s = key
        start[(((r * m + j) * p + s) * 3) + index[t]] = sol[columns[("x", key, t)]]
    on_worker = np.flatnonzero(graph.worker >= 0)
    by = np.lexsort((graph.kind[on_worker], start[on_worker] + graph.duration[on_worker], start[on_worker],
                     graph.worker[on_worker]))
    tasks_sorted = on_worker[by]
    bounds_w = np.searchsorted(graph.worker[tasks_sorted], np.arange(d * p + 1))
    orders = tuple(tasks_sorted[bounds_w[w]:bounds_w[w + 1]] for w in range(d * p))
    return executor, orders, result.status == 0


def _memory(add, var, pairs, here, c, cap, final, on):
    """At each forward on replica c: the other micro-batches started and not freed fit in cap - 1."""

    def before(a, b):
        """(terms, constant) of 'a runs before b' from the pair variable."""
        if (a, b) in pairs:
            return [(pairs[a, b], 1.0)], 0.0
        return [(pairs[b, a], -1.0)], 1.0

    for key in here:
        terms = []
        for other in here:
            if other == key:
                continue
            ind = var(("m", other, key, c))
            started, k1 = before((other, F_T), (key, F_T))
            freed, k2 = before((other, final), (key, F_T))
            # ind >= started - freed - (1 - z_other)
            cond = on(other, c)
            add([(ind, 1.0)] + [(col, -v) for col, v in started] + [(col, v) for col, v in freed]
                + [(col, -1.0) for col in cond], k1 - k2 - len(cond), math.inf)
            terms.append((ind, 1.0))
        own = on(key, c)
        # sum ind <= cap - 1 + n (1 - z_key)
        slack = len(here)
        add(terms + [(col, slack) for col in own], -math.inf, cap - 1 + slack * len(own))
