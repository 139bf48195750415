"""ReCycle's heuristic planner, compiled (Numba): the list scheduler, the period
of fixed worker orders, and `search_states`, the one entry point that plans a
state (or a batch of a trace's states) from the pipeline's structure.

The list scheduler: one iteration's tasks, any order per worker, at most
`cap[w]` micro-batches in flight on worker w.

Giffler-Thompson: at each step the ready task that could end first fixes the
worker and the time `cut`; among that worker's ready tasks that could start
before `cut`, the lowest priority value runs. A task that opens a micro-batch
(`holds` +1, its forward) is ready only while the worker has room; the one
that closes it (-1, its last backward part) frees the room. A worker runs one
task at a time, so counting at placement is counting in time.
"""

import math

import numpy as np
from numba import njit

from .._kernels._jit import JIT_OPTIONS
from ._schedule_kernel import (_kahn_order, _lower, _min_tree, _place, _pop_stale, _release, _run_on, _update,
                               successors, tails_in_order)


@njit(inline="always", **JIT_OPTIONS)
def _earliest_end(lo, hi, entry_ready, entry_duration, entry_opens, free, full):
    """The earliest end of the ready tasks in entries lo..hi of a worker free at `free` (`full`: no room
    for a task that opens a micro-batch)."""
    best = math.inf
    for k in range(lo, hi):
        if full and entry_opens[k]:
            continue
        e = max(entry_ready[k], free) + entry_duration[k]
        if e < best:
            best = e
    return best


@njit(**JIT_OPTIONS)
def plan_list_schedule(duration, worker, pred_ptr, pred_idx, pred_delay, priority, holds, cap, n_workers, start,
                       end, sequence):
    """Fill start, end and sequence (placement step) of every task; return
    the number placed (< n: the caps left no task ready)."""
    succ_ptr, succ_idx, succ_edge = successors(pred_ptr, pred_idx)
    return list_schedule_core(duration, worker, pred_ptr, pred_delay, succ_ptr, succ_idx, succ_edge, priority, holds,
                              cap, n_workers, start, end, sequence)


@njit(**JIT_OPTIONS)
def list_schedule_core(duration, worker, pred_ptr, pred_delay, succ_ptr, succ_idx, succ_edge, priority, holds, cap,
                       n_workers, start, end, sequence):
    """`plan_list_schedule` given the successor lists (the same for every state of a pipeline).

    Each worker keeps the list of its tasks whose predecessors have all ended
    and that are not placed, in any order (ties of priority go to the lowest
    task index); an entry carries the task's ready time, duration, priority
    and whether it opens a micro-batch, so a step reads a few contiguous
    entries, not tasks scattered over the graph. A min-tree over the workers'
    earliest ends (ties to the lower worker) finds the next worker in
    log(workers) steps. Only the worker that ran a task is rescanned; a task
    that becomes ready elsewhere lowers its worker's earliest end in place."""
    n = duration.size
    waiting = np.empty(n, dtype=np.int64)
    ready = np.zeros(n)
    count = np.zeros(n_workers + 1, dtype=np.int64)
    for i in range(n):
        waiting[i] = pred_ptr[i + 1] - pred_ptr[i]
        if worker[i] >= 0:
            count[worker[i] + 1] += 1
    base = np.cumsum(count)  # worker w's ready entries: base[w] .. base[w] + n_ready[w]
    n_entries = base[-1]
    entry_task = np.empty(n_entries, dtype=np.int64)
    entry_ready = np.empty(n_entries)
    entry_duration = np.empty(n_entries)
    entry_priority = np.empty(n_entries)
    entry_opens = np.empty(n_entries, dtype=np.bool_)
    n_ready = np.zeros(n_workers, dtype=np.int64)
    free = np.zeros(n_workers)
    inflight = np.zeros(n_workers, dtype=np.int64)
    tree_end, tree_worker = _min_tree(n_workers)
    stale = np.ones(n_workers, dtype=np.bool_)
    stale_list = np.arange(n_workers)
    n_stale = n_workers
    queue = np.empty(n, dtype=np.int64)  # worker-less tasks whose predecessors have ended
    q_head = 0
    q_tail = 0
    for i in range(n):
        if waiting[i] == 0:
            if worker[i] < 0:
                queue[q_tail] = i
                q_tail += 1
            else:
                w = worker[i]
                k = base[w] + n_ready[w]
                n_ready[w] += 1
                entry_task[k], entry_ready[k], entry_duration[k] = i, 0.0, duration[i]
                entry_priority[k], entry_opens[k] = priority[i], holds[i] > 0
    placed = 0
    i = -1
    while True:
        while True:
            if i >= 0:
                for k in range(succ_ptr[i], succ_ptr[i + 1]):
                    j, q_tail = _release(i, k, succ_idx, succ_edge, pred_delay, end, ready, waiting, worker, queue,
                                         q_tail)
                    if j < 0:
                        continue
                    v = worker[j]
                    e = base[v] + n_ready[v]
                    n_ready[v] += 1
                    entry_task[e], entry_ready[e], entry_duration[e] = j, ready[j], duration[j]
                    entry_priority[e], entry_opens[e] = priority[j], holds[j] > 0
                    # One more ready task: v's earliest end can only fall, to this task's (its other
                    # tasks, free time and room are unchanged), unless v is rescanned anyway.
                    if not stale[v] and not (entry_opens[e] and inflight[v] >= cap[v]):
                        _lower(tree_end, tree_worker, v, max(ready[j], free[v]) + duration[j])
            if q_head == q_tail:
                break
            i = queue[q_head]
            q_head += 1
            placed = _place(i, ready[i], duration, start, end, sequence, placed)
        while n_stale > 0:
            v, n_stale = _pop_stale(stale, stale_list, n_stale)
            _update(tree_end, tree_worker, v, _earliest_end(base[v], base[v] + n_ready[v], entry_ready,
                                                            entry_duration, entry_opens, free[v],
                                                            inflight[v] >= cap[v]))
        w = tree_worker[1]
        cut = tree_end[1]
        if cut == math.inf:
            break
        # Among w's ready tasks that could start before `cut`, the lowest priority runs (the task ending at
        # `cut` always qualifies).
        full = inflight[w] >= cap[w]
        pick = -1
        for k in range(base[w], base[w] + n_ready[w]):
            if full and entry_opens[k]:
                continue
            s = max(entry_ready[k], free[w])
            if (s < cut or s + entry_duration[k] == cut) and (
                    pick < 0 or entry_priority[k] < entry_priority[pick]
                    or (entry_priority[k] == entry_priority[pick] and entry_task[k] < entry_task[pick])):
                pick = k
        if pick < 0:  # unreachable: the task ending at `cut` qualifies
            break
        i = entry_task[pick]
        # Out of the ready list: the list's last entry takes its place.
        last = base[w] + n_ready[w] - 1
        entry_task[pick], entry_ready[pick], entry_duration[pick] = entry_task[last], entry_ready[last], \
            entry_duration[last]
        entry_priority[pick], entry_opens[pick] = entry_priority[last], entry_opens[last]
        n_ready[w] -= 1
        inflight[w] += holds[i]
        placed, n_stale = _run_on(w, i, ready, free, duration, start, end, sequence, placed, stale, stale_list,
                                  n_stale)
    return placed


# -- the heuristic's candidates, compiled end to end ----------------------------
#
# A trace replay plans thousands of failure states of one pipeline. The task
# graph's structure (its predecessor lists) is the same in every state: a
# state changes only which worker runs each task and the delay of the edges
# between stages (point-to-point within a replica, re-routing across). So the
# structure is made once per pipeline (`planner._Rules`) and each state only
# fills `worker` and `delay`, schedules, and measures the period, here.


@njit(inline="always", **JIT_OPTIONS)
def reroute_into(mask, m, blocks, executor):
    """Fill executor (d, m, p) as `planner.reroute` does; False when a stage has no survivor."""
    d, p = mask.shape
    for r in range(d):
        for j in range(m):
            for s in range(p):
                executor[r, j, s] = r * p + s
    lost = np.empty(d, dtype=np.int64)
    alive = np.empty(d, dtype=np.int64)
    for s in range(p):
        n_lost = 0
        n_alive = 0
        for r in range(d):
            if mask[r, s]:
                lost[n_lost] = r
                n_lost += 1
            else:
                alive[n_alive] = r
                n_alive += 1
        if n_lost == 0:
            continue
        if n_alive == 0:
            return False
        total = n_lost * m
        k = 0
        if blocks:  # each survivor a contiguous run, replica major
            for q in range(n_lost):
                for j in range(m):
                    executor[lost[q], j, s] = alive[(k * n_alive) // total] * p + s
                    k += 1
        else:  # dealt in turn, micro-batch major
            for j in range(m):
                for q in range(n_lost):
                    executor[lost[q], j, s] = alive[k % n_alive] * p + s
                    k += 1
    return True


@njit(inline="always", **JIT_OPTIONS)
def place_workers(executor, on, pred_idx, edge_dst, cross, p2p_delay, reroute_delay, worker, delay):
    """Fill each task's worker and each edge's delay of the one-iteration graph under `executor`.

    Task i < 3 d m p is (r, j, s, t) with i // 3 the flat (r, j, s): the same
    layout as `executor`. An edge between stages waits `p2p_delay` within a
    replica and `reroute_delay` across replicas (as `build_graph`'s link)."""
    flat = executor.ravel()
    p = executor.shape[2]
    for i in range(worker.size):
        worker[i] = flat[i // 3] if on[i] else -1
    for k in range(pred_idx.size):
        if cross[k]:
            delay[k] = p2p_delay if worker[pred_idx[k]] // p == worker[edge_dst[k]] // p else reroute_delay
        else:
            delay[k] = 0.0


@njit(inline="always", **JIT_OPTIONS)
def tail_priority(duration, order, succ_ptr, succ_idx, succ_edge, delay, out):
    """Fill out with -(longest path from each task through the end): `_schedule_kernel.tails_in_order`
    on the structure's successor lists and order, negated (the most urgent first)."""
    tail = tails_in_order(duration, order, succ_ptr, succ_idx, succ_edge, delay)
    for i in range(out.size):
        out[i] = -tail[i]


@njit(inline="always", **JIT_OPTIONS)
def max_cycle_mean(weight):
    """Karp's maximum cycle mean (as `planner.max_cycle_mean`, operation for operation)."""
    n = weight.shape[0]
    walk = np.full((n + 1, n), -np.inf)
    for v in range(n):
        walk[0, v] = 0.0
    for k in range(1, n + 1):
        for v in range(n):
            best = -np.inf
            for u in range(n):
                t = walk[k - 1, u] + weight[u, v]
                if t > best:
                    best = t
            walk[k, v] = best
    best = -np.inf
    for v in range(n):
        if walk[n, v] == -np.inf:
            continue
        least = np.inf
        for k in range(n):
            if walk[k, v] > -np.inf:
                mean = (walk[n, v] - walk[k, v]) / (n - k)
                if mean < least:
                    least = mean
        if least > best:
            best = least
    return best


@njit(**JIT_OPTIONS)
def orders_period(duration, worker, pred_ptr, pred_idx, delay, order_ptr, order_tasks, steps, p, start, end):
    """(period, placed) of fixed worker orders (worker w runs order_tasks[order_ptr[w]:order_ptr[w + 1]]
    in that order), and fill `start`; placed < n: the orders deadlock (period NaN).

    A topological order of the graph with the orders' edges added (Kahn's), then `_period_in_order`."""
    n = duration.size
    previous = np.full(n, -1, dtype=np.int64)
    following = np.full(n, -1, dtype=np.int64)
    for w in range(order_ptr.size - 1):
        for k in range(order_ptr[w] + 1, order_ptr[w + 1]):
            previous[order_tasks[k]] = order_tasks[k - 1]
            following[order_tasks[k - 1]] = order_tasks[k]
    succ_ptr, succ_idx, _ = successors(pred_ptr, pred_idx)
    order, tail = _kahn_order(pred_ptr, succ_ptr, succ_idx, following)
    if tail < n:
        return np.nan, tail
    return _period_in_order(duration, worker, pred_ptr, pred_idx, delay, order, previous, steps, p, start, end), n


@njit(**JIT_OPTIONS)
def _period_in_order(duration, worker, pred_ptr, pred_idx, delay, order, previous, steps, p, start, end):
    """The period of the graph with each task also after `previous[i]` (its worker's previous task, -1: none),
    swept in the topological `order`; fill `start` and `end` (every task released at 0) unless they are
    empty.

    Per stage s: the longest paths from the tasks of stage s to every stage's optimizer step; the period
    is the maximum cycle mean of that stage graph (`planner.orders_period`). A list schedule's own start
    and end times are those of every task released at 0 (the same maxima of the same sums), so it
    passes empty ones and the sweep carries p columns, not p + 1. (An array's size, not a flag: a
    constant flag would compile the sweep once for each value.)"""
    n = duration.size
    fill_times = start.size > 0
    # Column s < p: the tasks of stage s released at 0 (the others at -inf); column p: every task at 0.
    columns = p + 1 if fill_times else p
    times = np.empty((n, columns))
    for q in range(n):
        i = order[q]
        for s in range(columns):
            times[i, s] = -np.inf
        if fill_times:
            times[i, p] = 0.0
        if worker[i] >= 0:
            times[i, worker[i] % p] = 0.0
        for k in range(pred_ptr[i], pred_ptr[i + 1]):
            u = pred_idx[k]
            for s in range(columns):
                t = times[u, s] + delay[k]
                if t > times[i, s]:
                    times[i, s] = t
        if previous[i] >= 0:
            u = previous[i]
            for s in range(columns):
                t = times[u, s] + 0.0
                if t > times[i, s]:
                    times[i, s] = t
        if fill_times:
            start[i] = times[i, p]
        for s in range(columns):
            times[i, s] += duration[i]  # from here on, the task's end
        if fill_times:
            end[i] = times[i, p]
    weight = np.empty((p, p))
    for s in range(p):
        for u in range(p):
            weight[s, u] = times[steps[u], s]
    return max_cycle_mean(weight)


@njit(**JIT_OPTIONS)
def search_states(masks, bounds, on, pred_idx, edge_dst, cross, p2p_delay, reroute_delay, duration, pred_ptr, order,
                  succ_ptr, succ_idx, succ_edge, fixed, rows, row_assignment, holds, cap, steps, tolerance, have_best,
                  best_in, tries_in, keep_all, period, tries, best_row, best_sequence, best_start, executors,
                  tails):
    """The heuristic's list schedules in each state (masks[k], (d, p), with lower bound bounds[k]), as
    `planner.adapted_plan` runs them: the candidates in order until one reaches the bound, each on its
    assignment's workers, delays and tails. A candidate replaces the best so far only if it is shorter
    by more than `tolerance`. The candidates are the fixed rules (per assignment: the longest tail
    first, then the priorities in `fixed`) when `rows` is empty, else `rows` on `row_assignment`, after
    a best so far (`have_best`, `best_in`, `tries_in`: the seeds').

    Fills, per state k: period[k] the best period (inf: no plan runs); tries[k] the candidates that
    placed every task, with tries_in; best_row[k] the candidate that gave the best (-1: none of these).
    With `keep_all`, or where the state is left short of the bound (a batch keeps only those, for the
    seeds to go on from): best_sequence[k] and best_start[k], the best's placement sequence and start
    times; executors[k, a] and tails[k, a], assignment a's executor and tail priority where a candidate
    of a ran (in a state left short, every one ran)."""
    k_states, d, p = masks.shape
    m = executors.shape[3]
    executor = np.empty((2, d, m, p), dtype=np.int64)  # the state's own, kept as said above
    tail = np.empty((2, duration.size))
    kept_sequence = np.empty(duration.size, dtype=np.int64)
    kept_start = np.empty(duration.size)
    n = duration.size
    n_workers = cap.size
    workers = np.empty((2, n), dtype=np.int64)
    delays = np.empty((2, pred_idx.size))
    use_rows = rows.shape[0] > 0
    candidates = rows if use_rows else np.empty((6, n))
    assignment = row_assignment if use_rows else np.arange(6) // 3  # the fixed rules: 3 per assignment
    start = np.empty(n)
    end = np.empty(n)
    sequence = np.empty(n, dtype=np.int64)
    no_times = np.empty(0)
    if not use_rows:
        for a in range(2):
            for i in range(n):  # (element by element: a slice assignment costs seconds of compile time)
                candidates[3 * a + 1, i] = fixed[0, i]
                candidates[3 * a + 2, i] = fixed[1, i]
    filled = np.zeros(2, dtype=np.bool_)
    for k in range(k_states):
        period[k] = best_in if have_best else np.inf
        tries[k] = tries_in
        best_row[k] = -1
        if not np.isfinite(bounds[k]):
            continue
        # An assignment's workers, delays and tails are made when its first candidate runs (most states
        # reach the bound on the round-robin one); a stage with no survivor stops either.
        if not reroute_into(masks[k], m, False, executor[0]):
            period[k] = np.inf
            continue
        filled[0] = False
        filled[1] = False
        best = have_best
        for row in range(candidates.shape[0]):
            if best and period[k] <= bounds[k] * (1 + tolerance):
                break
            a = assignment[row]
            if not filled[a]:
                filled[a] = True
                _assign(masks[k], a, executor[a], on, pred_idx, edge_dst, cross, p2p_delay, reroute_delay,
                        duration, order, succ_ptr, succ_idx, succ_edge, workers[a], delays[a], tail[a])
                if not use_rows:
                    for i in range(n):
                        candidates[3 * a, i] = tail[a, i]
            placed = list_schedule_core(duration, workers[a], pred_ptr, delays[a], succ_ptr, succ_idx, succ_edge,
                                        candidates[row], holds, cap, n_workers, start, end, sequence)
            if placed < n:
                continue
            tries[k] += 1
            # The placement sequence is a topological order of the graph with the workers' orders added.
            placed_order = _placement_order(sequence)
            found = _period_in_order(duration, workers[a], pred_ptr, pred_idx, delays[a], placed_order,
                                     _previous_on_worker(placed_order, workers[a], n_workers), steps, p,
                                     no_times, no_times)
            if not best or found < period[k] * (1 - tolerance):
                best = True
                period[k] = found
                best_row[k] = row
                for i in range(n):
                    kept_sequence[i] = sequence[i]
                    kept_start[i] = start[i]
        if keep_all or not (best and period[k] <= bounds[k] * (1 + tolerance)):
            for i in range(n):
                best_sequence[k, i] = kept_sequence[i]
                best_start[k, i] = kept_start[i]
                tails[k, 0, i] = tail[0, i]
                tails[k, 1, i] = tail[1, i]
            for a in range(2):
                for r in range(d):
                    for j in range(m):
                        for s in range(p):
                            executors[k, a, r, j, s] = executor[a, r, j, s]


@njit(inline="always", **JIT_OPTIONS)
def _assign(mask, a, executor, on, pred_idx, edge_dst, cross, p2p_delay, reroute_delay, duration, order, succ_ptr,
            succ_idx, succ_edge, worker, delay, tail):
    """Assignment a's executor (0, round-robin: already made; 1: blocks), workers, delays and tail priority."""
    if a == 1:
        reroute_into(mask, executor.shape[1], True, executor)
    place_workers(executor, on, pred_idx, edge_dst, cross, p2p_delay, reroute_delay, worker, delay)
    tail_priority(duration, order, succ_ptr, succ_idx, succ_edge, delay, tail)


@njit(inline="always", **JIT_OPTIONS)
def _placement_order(sequence):
    order = np.empty(sequence.size, dtype=np.int64)
    for i in range(sequence.size):
        order[sequence[i]] = i
    return order


@njit(inline="always", **JIT_OPTIONS)
def _previous_on_worker(order, worker, n_workers):
    """The task before each on its worker, in a placement `order` (-1: none)."""
    n = order.size
    previous = np.full(n, -1, dtype=np.int64)
    last = np.full(n_workers, -1, dtype=np.int64)
    for q in range(n):
        i = order[q]
        w = worker[i]
        if w >= 0:
            previous[i] = last[w]
            last[w] = i
    return previous
