"""Exhaustive search for ReCycle's least period on tiny pipelines, in plain Python.

Every assignment of the failed workers' micro-batches to their stage's
survivors, every order of every worker's tasks (F before B before W of one
micro-batch), and for each the least period T of the iteration repeated,
from its definition: the least T for which start times x exist with

    x_j >= x_i + d_i + delay        (dependencies and the worker order)
    x_j + T >= x_i + d_i + step     (i, j of one optimizer group: the group's
                                     next iteration waits for its step)

solved as a linear program (scipy's HiGHS). Shares nothing with the package
but the configuration object.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.optimize import linprog

F, B, W = 0, 1, 2


def _interleavings(chains):
    """Every merge of the chains (tuples of tasks) keeping each chain's order."""
    if not chains:
        yield ()
        return
    total = sum(len(c) for c in chains)
    if total == 0:
        yield ()
        return
    for k, chain in enumerate(chains):
        if chain:
            rest = chains[:k] + [chain[1:]] + chains[k + 1:]
            for tail in _interleavings(rest):
                yield (chain[0],) + tail


def count_orders(n_microbatches: int, per: int) -> int:
    return math.factorial(n_microbatches * per) // math.factorial(per) ** n_microbatches


def period_of(cfg, runs_on, orders) -> float:
    """Least period for fixed assignment `runs_on[(r, j, s)] = replica` and worker orders (LP)."""
    d, m, p = cfg.replicas, cfg.microbatches, cfg.stages
    decoupled = cfg.backward == "decoupled"
    types = (F, B, W) if decoupled else (F, B)
    dur = {}
    for r, j, s in itertools.product(range(d), range(m), range(p)):
        dur[r, j, s, F] = cfg.fwd[s]
        dur[r, j, s, B] = cfg.bwd_input[s] + (0.0 if decoupled else cfg.bwd_weight[s])
        if decoupled:
            dur[r, j, s, W] = cfg.bwd_weight[s]
    tasks = list(dur)
    index = {t: k for k, t in enumerate(tasks)}
    n = len(tasks)
    rows, rhs = [], []

    def before(a, b, gap):  # x_b >= x_a + gap  ->  x_a - x_b <= -gap
        row = np.zeros(n + 1)
        row[index[a]] += 1.0
        row[index[b]] -= 1.0
        rows.append(row)
        rhs.append(-gap)

    for r, j, s in itertools.product(range(d), range(m), range(p)):
        for a, b in zip(types[:-1], types[1:]):
            before((r, j, s, a), (r, j, s, b), dur[r, j, s, a])
        if s > 0:
            delay = cfg.p2p_delay if runs_on[r, j, s - 1] == runs_on[r, j, s] else cfg.reroute_delay
            before((r, j, s - 1, F), (r, j, s, F), dur[r, j, s - 1, F] + delay)
        if s < p - 1:
            delay = cfg.p2p_delay if runs_on[r, j, s + 1] == runs_on[r, j, s] else cfg.reroute_delay
            before((r, j, s + 1, B), (r, j, s, B), dur[r, j, s + 1, B] + delay)
    for order in orders.values():
        for a, b in zip(order[:-1], order[1:]):
            before(a, b, dur[a])
    groups = [[s] for s in range(p)] if cfg.optimizer == "staggered" else [list(range(p))]
    for stages in groups:
        members = [t for t in tasks if t[2] in stages]
        for a in members:
            for b in members:
                row = np.zeros(n + 1)  # x_a + d_a + step - x_b - T <= 0
                row[index[a]] += 1.0
                row[index[b]] -= 1.0
                row[n] = -1.0
                rows.append(row)
                rhs.append(-dur[a] - cfg.optimizer_time)
    cost = np.zeros(n + 1)
    cost[n] = 1.0
    result = linprog(cost, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=[(0, None)] * (n + 1), method="highs")
    if result.status == 2:  # the orders wait on each other across workers: no schedule
        return math.inf
    assert result.status == 0, result.message
    return float(result.fun)


def best_period(cfg, mask, limit: int = 20000) -> float:
    """The least period over every plan; raises ValueError when there are more than `limit` plans."""
    d, m, p = cfg.replicas, cfg.microbatches, cfg.stages
    types = (F, B, W) if cfg.backward == "decoupled" else (F, B)
    alive = [[r for r in range(d) if not mask[r, s]] for s in range(p)]
    if any(not a for a in alive):
        return math.inf
    moved = [(r, j, s) for r, j, s in itertools.product(range(d), range(m), range(p)) if mask[r, s]]
    assignments = list(itertools.product(*[alive[s] for (_, _, s) in moved]))
    best = math.inf
    plans = 0
    for choice in assignments:
        runs_on = {(r, j, s): r for r, j, s in itertools.product(range(d), range(m), range(p))}
        runs_on.update(zip(moved, choice))
        per_worker = {}
        for key, c in runs_on.items():
            per_worker.setdefault((c, key[2]), []).append(key)
        plans += math.prod(count_orders(len(keys), len(types)) for keys in per_worker.values())
        if plans > limit:  # counted before any order is listed: a long list would fill the memory
            raise ValueError(f"more than {limit} plans")
        options = []
        for worker, keys in sorted(per_worker.items()):
            chains = [[key + (t,) for t in types] for key in sorted(keys)]
            options.append((worker, list(_interleavings(chains))))
        for combo in itertools.product(*[o for _, o in options]):
            orders = {worker: order for (worker, _), order in zip(options, combo)}
            best = min(best, period_of(cfg, runs_on, orders))
    return best
