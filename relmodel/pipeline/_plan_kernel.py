"""The planner's list scheduler (Numba): one iteration's tasks, any order per
worker, at most `cap[w]` micro-batches in flight on worker w.

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
from ._schedule_kernel import successors


@njit(**JIT_OPTIONS)
def _earliest_end(w, ready_ptr, ready_list, n_ready, ready, free, duration, holds, inflight, cap):
    best = math.inf
    for k in range(ready_ptr[w], ready_ptr[w] + n_ready[w]):
        i = ready_list[k]
        if holds[i] > 0 and inflight[w] >= cap[w]:
            continue
        e = max(ready[i], free[w]) + duration[i]
        if e < best:
            best = e
    return best


@njit(**JIT_OPTIONS)
def plan_list_schedule(duration, worker, pred_ptr, pred_idx, pred_delay, priority, holds, cap, n_workers, start,
                       end, sequence):
    """Fill start, end and sequence (placement step) of every task; return
    the number placed (< n: the caps left no task ready).

    Each worker keeps the list of its tasks whose predecessors have all ended
    and that are not placed (in any order: ties of priority go to the lowest
    task index), so a step looks at a few tasks, not at all of a worker's."""
    n = duration.size
    succ_ptr, succ_idx, succ_edge = successors(pred_ptr, pred_idx)
    waiting = np.empty(n, dtype=np.int64)
    ready = np.zeros(n)
    count = np.zeros(n_workers + 1, dtype=np.int64)
    for i in range(n):
        waiting[i] = pred_ptr[i + 1] - pred_ptr[i]
        if worker[i] >= 0:
            count[worker[i] + 1] += 1
    ready_ptr = np.cumsum(count)  # worker w's ready tasks: ready_list[ready_ptr[w]:ready_ptr[w] + n_ready[w]]
    ready_list = np.empty(ready_ptr[-1], dtype=np.int64)
    n_ready = np.zeros(n_workers, dtype=np.int64)
    slot = np.empty(n, dtype=np.int64)  # a ready task's place in its worker's list
    for i in range(n):
        if worker[i] >= 0 and waiting[i] == 0:
            w = worker[i]
            slot[i] = ready_ptr[w] + n_ready[w]
            ready_list[slot[i]] = i
            n_ready[w] += 1
    free = np.zeros(n_workers)
    inflight = np.zeros(n_workers, dtype=np.int64)
    best_end = np.full(n_workers, math.inf)
    stale = np.ones(n_workers, dtype=np.bool_)
    queue = np.empty(n, dtype=np.int64)  # worker-less tasks whose predecessors have ended
    q_head = 0
    q_tail = 0
    for i in range(n):
        if worker[i] < 0 and waiting[i] == 0:
            queue[q_tail] = i
            q_tail += 1
    placed = 0
    i = -1
    while True:
        while True:
            if i >= 0:
                for k in range(succ_ptr[i], succ_ptr[i + 1]):
                    j = succ_idx[k]
                    t = end[i] + pred_delay[succ_edge[k]]
                    if t > ready[j]:
                        ready[j] = t
                    waiting[j] -= 1
                    if worker[j] < 0:
                        if waiting[j] == 0:
                            queue[q_tail] = j
                            q_tail += 1
                    else:
                        v = worker[j]
                        if waiting[j] == 0:
                            slot[j] = ready_ptr[v] + n_ready[v]
                            ready_list[slot[j]] = j
                            n_ready[v] += 1
                        stale[v] = True
            if q_head == q_tail:
                break
            i = queue[q_head]
            q_head += 1
            start[i] = ready[i]
            end[i] = ready[i] + duration[i]
            sequence[i] = placed
            placed += 1
        w = -1
        cut = math.inf
        for v in range(n_workers):
            if stale[v]:
                best_end[v] = _earliest_end(v, ready_ptr, ready_list, n_ready, ready, free, duration, holds,
                                            inflight, cap)
                stale[v] = False
            if best_end[v] < cut:
                cut = best_end[v]
                w = v
        if w < 0:
            break
        pick = -1
        for k in range(ready_ptr[w], ready_ptr[w] + n_ready[w]):
            j = ready_list[k]
            if holds[j] > 0 and inflight[w] >= cap[w]:
                continue
            s = max(ready[j], free[w])
            if (s < cut or s + duration[j] == cut) and (
                    pick < 0 or priority[j] < priority[pick] or (priority[j] == priority[pick] and j < pick)):
                pick = j
        if pick < 0:  # unreachable: the task ending at `cut` qualifies
            break
        i = pick
        # Out of the ready list: the list's last task takes its place.
        last = ready_list[ready_ptr[w] + n_ready[w] - 1]
        ready_list[slot[i]] = last
        slot[last] = slot[i]
        n_ready[w] -= 1
        s = max(ready[i], free[w])
        start[i] = s
        end[i] = s + duration[i]
        free[w] = end[i]
        inflight[w] += holds[i]
        sequence[i] = placed
        placed += 1
        stale[w] = True
    return placed
