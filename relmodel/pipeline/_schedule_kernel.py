"""Pipeline schedules as task DAGs, and failure paths of a run (Numba).

Tasks are flat arrays: `duration[i]`, `worker[i]` (-1: a task that occupies no
worker, such as an optimizer step) and predecessors in CSR form
(`pred_ptr`, `pred_idx`, `pred_delay`: task i may start `pred_delay[k]` after
task `pred_idx[k]` ends). A worker's order is a chain of predecessor edges.

- `topological_order`: Kahn's algorithm; fewer than n tasks placed means a
  cycle (an order that deadlocks).
- `longest_path`: start and end times of every task in one sweep over a
  topological order (each task starts when its last predecessor and its
  release time allow).
- `list_schedule`: a greedy list scheduler (Giffler-Thompson) that merges
  several fixed chains per worker: at each step the candidate that could end
  first fixes the worker; among the chain heads that could start on that
  worker before then, the one with the lowest priority value runs. Low
  priority chains (deferrable weight gradients) so only fill idle time.

Failure paths (`failure_paths`, `trace_paths`) and their integration per
strategy (`integrate_runs`) follow; see their docstrings.
"""

import math

import numpy as np
from numba import njit

from .._kernels._jit import JIT_OPTIONS
from .._kernels.rng_numba import next_uniform, split_job

# -- task DAGs ------------------------------------------------------------


@njit(**JIT_OPTIONS)
def csr_lists(n, src, dst, delay):
    """(ptr, pred_idx, pred_delay): CSR predecessor lists of the edges src -> dst,
    each task's in edge order (a counting sort: stable)."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    for k in range(dst.size):
        ptr[dst[k] + 1] += 1
    for i in range(n):
        ptr[i + 1] += ptr[i]
    fill = ptr[:-1].copy()
    pred_idx = np.empty(dst.size, dtype=np.int64)
    pred_delay = np.empty(dst.size, dtype=np.float64)
    for k in range(dst.size):
        at = fill[dst[k]]
        pred_idx[at] = src[k]
        pred_delay[at] = delay[k]
        fill[dst[k]] = at + 1
    return ptr, pred_idx, pred_delay


@njit(**JIT_OPTIONS)
def successors(pred_ptr, pred_idx):
    """CSR successor lists (succ_ptr, succ_idx, succ_edge) of a CSR predecessor list."""
    n = pred_ptr.size - 1
    count = np.zeros(n + 1, dtype=np.int64)
    for k in range(pred_idx.size):
        count[pred_idx[k] + 1] += 1
    succ_ptr = np.cumsum(count)
    fill = succ_ptr[:-1].copy()
    succ_idx = np.empty(pred_idx.size, dtype=np.int64)
    succ_edge = np.empty(pred_idx.size, dtype=np.int64)
    for i in range(n):
        for k in range(pred_ptr[i], pred_ptr[i + 1]):
            q = pred_idx[k]
            succ_idx[fill[q]] = i
            succ_edge[fill[q]] = k
            fill[q] += 1
    return succ_ptr, succ_idx, succ_edge


@njit(**JIT_OPTIONS)
def topological_order(pred_ptr, pred_idx):
    """(order, n_placed): Kahn's order; n_placed < n when the graph has a cycle."""
    succ_ptr, succ_idx, _ = successors(pred_ptr, pred_idx)
    return _kahn_order(pred_ptr, succ_ptr, succ_idx, np.full(pred_ptr.size - 1, -1, dtype=np.int64))


@njit(**JIT_OPTIONS)
def _kahn_order(pred_ptr, succ_ptr, succ_idx, following):
    """`topological_order` from the successor lists its caller already has, with one more edge from each
    task i to following[i] (-1: none; a worker's next task in a fixed order)."""
    n = pred_ptr.size - 1
    waiting = np.empty(n, dtype=np.int64)
    for i in range(n):
        waiting[i] = pred_ptr[i + 1] - pred_ptr[i]
    for i in range(n):
        if following[i] >= 0:
            waiting[following[i]] += 1
    order = np.empty(n, dtype=np.int64)
    tail = 0
    for i in range(n):
        if waiting[i] == 0:
            order[tail] = i
            tail += 1
    head = 0
    while head < tail:
        i = order[head]
        head += 1
        for k in range(succ_ptr[i], succ_ptr[i + 1] + 1):
            j = succ_idx[k] if k < succ_ptr[i + 1] else following[i]
            if j < 0:
                continue
            waiting[j] -= 1
            if waiting[j] == 0:
                order[tail] = j
                tail += 1
    return order, tail


@njit(
    "void(int64[::1], float64[::1], float64[::1], int64[::1], int64[::1], float64[::1], float64[::1], float64[::1])",
    **JIT_OPTIONS,
)
def longest_path(order, duration, release, pred_ptr, pred_idx, pred_delay, start, end):
    """Earliest start and end of every task (none before its `release`), in topological `order`."""
    for i in order:
        s = release[i]
        for k in range(pred_ptr[i], pred_ptr[i + 1]):
            t = end[pred_idx[k]] + pred_delay[k]
            if t > s:
                s = t
        start[i] = s
        end[i] = s + duration[i]


@njit(**JIT_OPTIONS)
def tail_lengths(duration, pred_ptr, pred_idx, pred_delay):
    """Longest path from each task through the end of the graph (its own duration
    included), by reverse topological order: a task's tail is its duration plus
    the largest of its successors' tails, each with the edge's delay."""
    succ_ptr, succ_idx, succ_edge = successors(pred_ptr, pred_idx)
    no_edges = np.full(duration.size, -1, dtype=np.int64)
    order, _ = _kahn_order(pred_ptr, succ_ptr, succ_idx, no_edges)  # the successor lists made once, for both
    return tails_in_order(duration, order, succ_ptr, succ_idx, succ_edge, pred_delay)


@njit(inline="always", **JIT_OPTIONS)
def tails_in_order(duration, order, succ_ptr, succ_idx, succ_edge, pred_delay):
    """`tail_lengths` given the successor lists and a topological `order` (the planner has them made
    once per pipeline)."""
    tail = duration.copy()
    for r in range(order.size - 1, -1, -1):
        i = order[r]
        if succ_ptr[i + 1] > succ_ptr[i]:
            longest = -np.inf
            for k in range(succ_ptr[i], succ_ptr[i + 1]):
                t = tail[succ_idx[k]] + pred_delay[succ_edge[k]]
                if t > longest:
                    longest = t
            tail[i] = duration[i] + longest
    return tail


@njit(inline="always", **JIT_OPTIONS)
def _candidate(c, head, chain_ptr, chain_task, waiting):
    """The task heading chain c if its predecessors have ended, else -1 (also when the chain is done)."""
    if head[c] == chain_ptr[c + 1]:
        return -1
    i = chain_task[head[c]]
    return i if waiting[i] == 0 else -1


@njit(**JIT_OPTIONS)
def _best_on(w, worker_chain_ptr, worker_chain, head, chain_ptr, chain_task, waiting, ready, free, duration):
    """Earliest end of any candidate (a chain head whose predecessors ended) on worker w."""
    best = math.inf
    for k in range(worker_chain_ptr[w], worker_chain_ptr[w + 1]):
        i = _candidate(worker_chain[k], head, chain_ptr, chain_task, waiting)
        if i >= 0:
            e = max(ready[i], free[w]) + duration[i]
            if e < best:
                best = e
    return best


@njit(**JIT_OPTIONS)
def list_schedule(duration, release, worker, pred_ptr, pred_idx, pred_delay, chain_ptr, chain_task, priority,
                  n_workers, start, end, sequence):
    """Greedy list schedule of chains merged per worker (Giffler-Thompson).

    Chain c runs `chain_task[chain_ptr[c]:chain_ptr[c+1]]` in that order on the
    worker of its tasks; a task is a candidate when it heads its chain and its
    predecessors have ended. Tasks in no chain must have worker -1; they run as
    soon as their predecessors allow. Fills `start`, `end` and `sequence` (the
    step at which each task was placed; a worker's order is its tasks sorted by
    it). Returns the number of tasks placed (< n: the chains deadlock).
    """
    n = duration.size
    n_chains = chain_ptr.size - 1
    succ_ptr, succ_idx, succ_edge = successors(pred_ptr, pred_idx)
    waiting = np.empty(n, dtype=np.int64)
    ready = release.copy()
    for i in range(n):
        waiting[i] = pred_ptr[i + 1] - pred_ptr[i]
    # Chains grouped by worker (CSR), so each step looks at one worker's chains.
    chain_worker = np.empty(n_chains, dtype=np.int64)
    per_worker = np.zeros(n_workers + 1, dtype=np.int64)
    for c in range(n_chains):
        chain_worker[c] = worker[chain_task[chain_ptr[c]]] if chain_ptr[c + 1] > chain_ptr[c] else 0
        per_worker[chain_worker[c] + 1] += 1
    worker_chain_ptr = np.cumsum(per_worker)
    fill = worker_chain_ptr[:-1].copy()
    worker_chain = np.empty(n_chains, dtype=np.int64)
    for c in range(n_chains):
        worker_chain[fill[chain_worker[c]]] = c
        fill[chain_worker[c]] += 1
    free = np.zeros(n_workers)
    head = chain_ptr[:-1].copy()
    chain_of = np.full(n, -1, dtype=np.int64)
    for c in range(n_chains):
        for k in range(chain_ptr[c], chain_ptr[c + 1]):
            chain_of[chain_task[k]] = c
    tree_end, tree_worker = _min_tree(n_workers)  # and a list of workers to rescan
    stale = np.ones(n_workers, dtype=np.bool_)
    stale_list = np.arange(n_workers)
    n_stale = n_workers
    queue = np.empty(n, dtype=np.int64)  # worker-less tasks whose predecessors have ended
    placed = 0
    q_tail = 0
    for i in range(n):
        if worker[i] < 0 and waiting[i] == 0:
            queue[q_tail] = i
            q_tail += 1
    q_head = 0
    i = -1
    while True:
        # Release the successors of the task just placed, then worker-less tasks (their times are fixed).
        while True:
            if i >= 0:
                for k in range(succ_ptr[i], succ_ptr[i + 1]):
                    j, q_tail = _release(i, k, succ_idx, succ_edge, pred_delay, end, ready, waiting, worker, queue,
                                         q_tail)
                    if j < 0:
                        continue
                    # A new candidate only if it heads its chain; then its worker's best end can only fall,
                    # to this task's (unless the worker is rescanned anyway).
                    c = chain_of[j]
                    v = worker[j]
                    if stale[v] or chain_task[head[c]] != j:
                        continue
                    _lower(tree_end, tree_worker, v, max(ready[j], free[v]) + duration[j])
            if q_head == q_tail:
                break
            i = queue[q_head]
            q_head += 1
            placed = _place(i, ready[i], duration, start, end, sequence, placed)
        while n_stale > 0:
            w, n_stale = _pop_stale(stale, stale_list, n_stale)
            _update(tree_end, tree_worker, w, _best_on(w, worker_chain_ptr, worker_chain, head, chain_ptr,
                                                       chain_task, waiting, ready, free, duration))
        w = tree_worker[1]
        cut = tree_end[1]
        if cut == math.inf:
            break
        # Among this worker's candidates that could start before `cut`, the lowest priority value runs.
        # The candidate that ends at `cut` always qualifies (s + duration == cut, computed as in _best_on),
        # even when its duration is zero or too small to move the clock (s + duration == s in floats).
        pick = -1
        pick_priority = math.inf
        for k in range(worker_chain_ptr[w], worker_chain_ptr[w + 1]):
            c = worker_chain[k]
            j = _candidate(c, head, chain_ptr, chain_task, waiting)
            if j < 0:
                continue
            s = max(ready[j], free[w])
            if (s < cut or s + duration[j] == cut) and (pick < 0 or priority[j] < pick_priority):
                pick = c
                pick_priority = priority[j]
        if pick < 0:  # unreachable (see above); never index with -1, report the tasks left unplaced
            break
        i = chain_task[head[pick]]
        head[pick] += 1
        placed, n_stale = _run_on(w, i, ready, free, duration, start, end, sequence, placed, stale, stale_list,
                                  n_stale)
    return placed


@njit(inline="always", **JIT_OPTIONS)
def _release(i, k, succ_idx, succ_edge, pred_delay, end, ready, waiting, worker, queue, q_tail):
    """Task i has ended: its successor j along edge k is ready no sooner than the edge's delay after.

    Returns (j, q_tail): j once its last predecessor has ended and it has a worker (its scheduler
    makes it a candidate), else -1; a worker-less j joins the queue instead (it runs when ready)."""
    j = succ_idx[k]
    ready[j] = max(ready[j], end[i] + pred_delay[succ_edge[k]])  # (a select: no branch to miss)
    waiting[j] -= 1
    if waiting[j] > 0:
        return -1, q_tail
    if worker[j] < 0:
        queue[q_tail] = j
        return -1, q_tail + 1
    return j, q_tail


@njit(inline="always", **JIT_OPTIONS)
def _place(i, s, duration, start, end, sequence, placed):
    """Task i starts at s, the next task placed; return the number placed."""
    start[i] = s
    end[i] = s + duration[i]
    sequence[i] = placed
    return placed + 1


@njit(inline="always", **JIT_OPTIONS)
def _run_on(w, i, ready, free, duration, start, end, sequence, placed, stale, stale_list, n_stale):
    """Worker w runs task i as soon as both are ready; w's candidates change, so w is listed for a
    rescan (once). Returns (placed, n_stale)."""
    placed = _place(i, max(ready[i], free[w]), duration, start, end, sequence, placed)
    free[w] = end[i]
    if not stale[w]:
        stale[w] = True
        stale_list[n_stale] = w
        n_stale += 1
    return placed, n_stale


@njit(inline="always", **JIT_OPTIONS)
def _pop_stale(stale, stale_list, n_stale):
    """(w, n_stale): the last worker listed for a rescan, off the list."""
    n_stale -= 1
    w = stale_list[n_stale]
    stale[w] = False
    return w, n_stale


@njit(inline="always", **JIT_OPTIONS)
def _min_tree(n_workers):
    """(ends, workers): a tournament tree over the workers' best ends, every one inf to start. Node k
    holds the earliest end below it and its worker, the lower worker on a tie (as argmin), so ends[1]
    and workers[1] are the next cut and its worker; worker w is leaf ends.size // 2 + w. A change costs
    log(workers) (`_update`), not a scan of every worker, and a node keeps its end beside its worker,
    so the climb compares what it holds rather than look each worker's end up."""
    leaves = 1
    while leaves < n_workers:
        leaves *= 2
    ends = np.full(2 * leaves, math.inf)
    workers = np.empty(2 * leaves, dtype=np.int64)
    for k in range(leaves):
        workers[leaves + k] = k
    for k in range(leaves - 1, 0, -1):
        workers[k] = workers[2 * k]  # all ends equal: the left one
    return ends, workers


@njit(inline="always", **JIT_OPTIONS)
def _lower(ends, workers, w, end):
    """Lower worker w's best end to `end` where that is earlier."""
    if end < ends[ends.size // 2 + w]:
        _update(ends, workers, w, end)


@njit(inline="always", **JIT_OPTIONS)
def _update(ends, workers, w, end):
    """Set worker w's best end to `end` and mend the tree above it."""
    node = ends.size // 2 + w
    ends[node] = end
    while node > 1:
        other = node ^ 1
        other_end = ends[other]
        if node & 1:  # the other is the left one: it wins a tie
            take = not end < other_end
        else:
            take = other_end < end
        if take:
            end = other_end
            w = workers[other]
        node >>= 1
        ends[node] = end
        workers[node] = w


# -- failure paths of a run -------------------------------------------------------
#
# A path is a list of events (time in hours, slot, kind) per run: FAIL (the
# worker in a slot goes down) or RESTORE (a node takes the slot again). Runs
# are rows of fixed-width arrays; `count[run]` events are valid, and a run
# that needs more than the width is cut short and flagged (count = -1).
# Serial on purpose: a run is a few hundred events, far cheaper than the
# schedules evaluated for its states, and prange would triple compile time.

FAIL = 0
RESTORE = 1


@njit(**JIT_OPTIONS)
def _exponential(k0, k1, lo, hi, n_drawn, spare, mean):
    u, n_drawn, spare = next_uniform(k0, k1, lo, hi, n_drawn, spare)
    return -mean * math.log(u), n_drawn, spare


@njit(**JIT_OPTIONS)
def failure_paths(seed, scenario_key, horizon, rate, lemon_fraction, lemon_factor, spares, repair_time,
                  repair_exponential, swap_time, ev_time, ev_slot, ev_kind, count):
    """Monte Carlo failures and repairs of len(slots) workers over `horizon` hours.

    Each worker fails at `rate` per hour (a lemon, with probability
    `lemon_fraction` drawn per run and worker, at `lemon_factor` times the
    healthy rate; the average stays `rate`). A failed node is back after
    `repair_time` (fixed, or exponential with that mean) as an idle node; an
    idle node (one of `spares` at the start) takes a down slot after
    `swap_time`. Random numbers: Philox4x32-10, key (seed, scenario_key),
    counter (draw, run).
    """
    n_runs, width = ev_time.shape
    n_slots = rate.size
    k0 = np.uint64(seed)
    k1 = np.uint64(scenario_key)
    healthy = 1.0 / (1.0 - lemon_fraction + lemon_fraction * lemon_factor)
    for run in range(n_runs):
        lo, hi = split_job(run)
        n_drawn = 0
        spare = 0.0
        rates = np.empty(n_slots)
        for w in range(n_slots):
            factor = healthy
            if lemon_fraction > 0.0:
                u, n_drawn, spare = next_uniform(k0, k1, lo, hi, n_drawn, spare)
                if u <= lemon_fraction:
                    factor = healthy * lemon_factor
            rates[w] = rate[w] * factor
        up = np.ones(n_slots, dtype=np.bool_)
        returns = np.full(n_slots + spares, math.inf)  # nodes in repair: time each is back
        swap_done = np.full(n_slots, math.inf)  # slot -> time its swap completes
        waiting = np.empty(n_slots, dtype=np.int64)  # down slots with no node yet, FIFO
        n_wait = 0
        pool = spares
        t = 0.0
        n = 0
        while True:
            total = 0.0
            for w in range(n_slots):
                if up[w]:
                    total += rates[w]
            t_fail = math.inf
            if total > 0.0:
                gap, n_drawn, spare = _exponential(k0, k1, lo, hi, n_drawn, spare, 1.0 / total)
                t_fail = t + gap
            i_ret = np.argmin(returns)
            i_swap = np.argmin(swap_done)
            t_next = min(t_fail, returns[i_ret], swap_done[i_swap])
            if t_next > horizon:
                break
            if n == width:
                n = -1
                break
            t = t_next
            if t_next == swap_done[i_swap]:
                swap_done[i_swap] = math.inf
                up[i_swap] = True
                ev_time[run, n], ev_slot[run, n], ev_kind[run, n] = t, i_swap, RESTORE
                n += 1
                continue
            if t_next == returns[i_ret]:
                returns[i_ret] = math.inf
                pool += 1
            else:  # a failure: pick the worker in proportion to its rate
                u, n_drawn, spare = next_uniform(k0, k1, lo, hi, n_drawn, spare)
                target = u * total
                w = -1
                acc = 0.0
                for v in range(n_slots):
                    if up[v]:
                        w = v
                        acc += rates[v]
                        if acc >= target:
                            break
                up[w] = False
                back = repair_time
                if repair_exponential:
                    back, n_drawn, spare = _exponential(k0, k1, lo, hi, n_drawn, spare, repair_time)
                for v in range(returns.size):  # never full: at most every node is in repair
                    if returns[v] == math.inf:
                        returns[v] = t + back
                        break
                waiting[n_wait] = w
                n_wait += 1
                ev_time[run, n], ev_slot[run, n], ev_kind[run, n] = t, w, FAIL
                n += 1
            while pool > 0 and n_wait > 0:
                w = waiting[0]
                for i in range(1, n_wait):
                    waiting[i - 1] = waiting[i]
                n_wait -= 1
                pool -= 1
                swap_done[w] = t + swap_time
        count[run] = n


@njit(**JIT_OPTIONS)
def _take(items, n, k):
    """Remove and return items[k] of the first n (order kept)."""
    x = items[k]
    for i in range(k + 1, n):
        items[i - 1] = items[i]
    return x


@njit(inline="always", **JIT_OPTIONS)
def _drop(items, n, x):
    """Remove x, where it is, from the first n items (order kept); return how many are left."""
    for i in range(n):
        if items[i] == x:
            _take(items, n, i)
            return n - 1
    return n


@njit(inline="always", **JIT_OPTIONS)
def _fill_slot(pool, n_pool, waiting, n_wait, node_slot, slot_node, k0, k1, lo, hi, n_drawn, spare):
    """The first idle node takes a waiting slot drawn at random; return (that slot, n_pool, n_wait,
    n_drawn, spare), the lists one shorter."""
    u, n_drawn, spare = next_uniform(k0, k1, lo, hi, n_drawn, spare)
    w = _take(waiting, n_wait, min(int(u * n_wait), n_wait - 1))
    v = _take(pool, n_pool, 0)
    node_slot[v] = w
    slot_node[w] = v
    return w, n_pool - 1, n_wait - 1, n_drawn, spare


@njit(**JIT_OPTIONS)
def trace_paths(seed, scenario_key, n_slots, trace_time, trace_add, trace_node, n_nodes, swap_time,
                initial_down, ev_time, ev_slot, ev_kind, count):
    """Replay a node trace (time in hours from 0, add or remove, node id) onto n_slots workers.

    Nodes present at time 0 fill slots at once; later an idle node takes a
    down slot after `swap_time` (a node removed meanwhile cancels its swap).
    A removed node's slot goes down. Which down slot an idle node takes is
    drawn at random (Philox4x32-10, key (seed, scenario_key), counter
    (draw, run)), so runs differ only in that placement.
    """
    n_runs, width = ev_time.shape
    n_events = trace_time.size
    k0 = np.uint64(seed)
    k1 = np.uint64(scenario_key)
    for run in range(n_runs):
        lo, hi = split_job(run)
        n_drawn = 0
        spare = 0.0
        present = np.zeros(n_nodes, dtype=np.bool_)
        node_slot = np.full(n_nodes, -1, dtype=np.int64)  # active or being swapped in
        slot_node = np.full(n_slots, -1, dtype=np.int64)
        up = np.zeros(n_slots, dtype=np.bool_)
        swap_done = np.full(n_slots, math.inf)
        pool = np.empty(n_nodes, dtype=np.int64)
        n_pool = 0
        waiting = np.empty(n_slots, dtype=np.int64)
        n_wait = 0
        for w in range(n_slots):
            waiting[w] = w
        n_wait = n_slots
        e = 0
        while e < n_events and trace_time[e] == 0.0:
            v = trace_node[e]
            if trace_add[e]:
                if not present[v]:
                    present[v] = True
                    pool[n_pool] = v
                    n_pool += 1
            elif present[v]:
                present[v] = False
                n_pool = _drop(pool, n_pool, v)
            e += 1
        while n_pool > 0 and n_wait > 0:
            w, n_pool, n_wait, n_drawn, spare = _fill_slot(pool, n_pool, waiting, n_wait, node_slot, slot_node,
                                                            k0, k1, lo, hi, n_drawn, spare)
            up[w] = True
        for w in range(n_slots):
            initial_down[run, w] = not up[w]
        n = 0
        horizon = trace_time[n_events - 1] if n_events > 0 else 0.0  # never index -1 of an empty trace
        while True:
            i_swap = np.argmin(swap_done)
            t_trace = trace_time[e] if e < n_events else math.inf
            t = min(t_trace, swap_done[i_swap])
            if t > horizon:
                break
            if n == width:
                n = -1
                break
            if swap_done[i_swap] <= t_trace:
                swap_done[i_swap] = math.inf
                up[i_swap] = True
                ev_time[run, n], ev_slot[run, n], ev_kind[run, n] = t, i_swap, RESTORE
                n += 1
                continue
            v = trace_node[e]
            e += 1
            if trace_add[e - 1]:
                if present[v]:
                    continue
                present[v] = True
                pool[n_pool] = v
                n_pool += 1
            elif present[v]:
                present[v] = False
                w = node_slot[v]
                if w < 0:
                    n_pool = _drop(pool, n_pool, v)
                else:
                    node_slot[v] = -1
                    slot_node[w] = -1
                    if up[w]:
                        up[w] = False
                        ev_time[run, n], ev_slot[run, n], ev_kind[run, n] = t, w, FAIL
                        n += 1
                    swap_done[w] = math.inf
                    waiting[n_wait] = w
                    n_wait += 1
            while n_pool > 0 and n_wait > 0:
                w, n_pool, n_wait, n_drawn, spare = _fill_slot(pool, n_pool, waiting, n_wait, node_slot, slot_node,
                                                                k0, k1, lo, hi, n_drawn, spare)
                swap_done[w] = t + swap_time
        count[run] = n


@njit(**JIT_OPTIONS)
def down_masks(initial_down, ev_slot, ev_kind, count, row_offset, out):
    """The down slots at the start of each run and after each of its events.

    Rows row_offset[run] (start) to row_offset[run] + count[run] (after the
    last event) of `out` belong to the run.
    """
    for run in range(count.size):
        row = row_offset[run]
        out[row] = initial_down[run]
        for i in range(count[run]):
            out[row + i + 1] = out[row + i]
            out[row + i + 1, ev_slot[run, i]] = ev_kind[run, i] == FAIL


@njit(**JIT_OPTIONS)
def integrate_runs(ev_time, count, row_offset, horizon, rate, loss, dead, resume, checkpoint_interval, progress):
    """Steps of training each run completes under one strategy.

    For row k (a run's start, or the state after one of its events, laid out
    as in `down_masks`): rate[k] steps per hour in that state; at the event
    that led to it, loss[k] (0: none, 1: the step in flight, 2: back to the
    last checkpoint), then dead[k] hours without progress, and resume[k] hours
    of restart when the rate goes from zero to positive (after any dead time
    still running, e.g. the detection of the failure that stopped it). Checkpoints are
    written every `checkpoint_interval` hours of wall time (their cost is left
    out: every strategy pays it).
    """
    for run in range(count.size):
        r0 = row_offset[run]
        done = 0.0
        saved = 0.0
        t = 0.0
        dead_until = 0.0
        current = rate[r0]
        for i in range(count[run] + 1):
            te = ev_time[run, i] if i < count[run] else horizon
            begin = max(t, dead_until)
            if checkpoint_interval > 0.0 and math.isfinite(checkpoint_interval):
                # np.floor stays float: Numba's math.floor returns int64, garbage beyond 2**63 steps or intervals.
                last = np.floor(te / checkpoint_interval) * checkpoint_interval
                if last > t:  # written at a step boundary
                    saved = np.floor(done + current * max(0.0, last - begin))
            done += current * max(0.0, te - begin)
            if i == count[run]:
                break
            row = r0 + i + 1
            if loss[row] == 1:
                done = np.floor(done)
            elif loss[row] == 2:
                done = saved
            until = te + dead[row]
            if current == 0.0 and rate[row] > 0.0:  # the restart follows any dead time still running
                until = max(until, max(te, dead_until) + resume[row])
            dead_until = max(dead_until, until)
            current = rate[row]
            t = te
        progress[run] = done
