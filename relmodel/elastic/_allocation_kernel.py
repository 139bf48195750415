"""Kernels of the elastic cluster model: the allocation dynamic program, and
serial draws from the project's Philox generator for workloads and failures.

The dynamic program (Saxena et al. 2020): jobs j = 1..J, each with a list of
options (a GPU count g and its value V_j(g)), sorted by g:

    P(0, c) = 0                                   for every c >= 0
    P(j, c) = max over options of j with g <= c of P(j-1, c-g) + V_j(g)

P(0, c) = 0 for all c (not only c = 0) gives at-most-c semantics: GPUs may be
left idle. Every job must take one of its options, so its smallest g is its
minimum allocation. Ties keep the smaller g (options are scanned in ascending
g and only a strictly better value replaces the incumbent).
"""

import numpy as np
from numba import njit

from .._kernels._jit import JIT_OPTIONS
from .._kernels.rng_numba import next_uniform, split_job


@njit(**JIT_OPTIONS)
def solve_allocation(offsets, opt_gpus, opt_value, capacity):
    """Best option per job (indices into opt_*) and the best total value.

    offsets: (J + 1,) int64, job j's options are offsets[j]:offsets[j+1];
    opt_gpus: int64, ascending within a job; opt_value: float64.
    Returns (-1 for every job, -inf) when the jobs' minimums exceed `capacity`.
    """
    n_jobs = offsets.size - 1
    prev = np.zeros(capacity + 1)
    cur = np.empty(capacity + 1)
    choice = np.full((n_jobs, capacity + 1), -1, dtype=np.int64)
    for j in range(n_jobs):
        _job_row(prev, cur, choice[j], opt_gpus, opt_value, offsets[j], offsets[j + 1], capacity)
        prev, cur = cur, prev
    total = prev[capacity] if n_jobs > 0 else 0.0
    return _backtrack(choice, opt_gpus, n_jobs, capacity, total), total


@njit(**JIT_OPTIONS)
def extend_allocation(starts, ends, opt_gpus, opt_value, capacity, first, best, choice):
    """`solve_allocation` on tables kept between calls, the rows of jobs before `first` reused.

    Job j's options are opt_*[starts[j]:ends[j]] (a pool that jobs share).
    best: (>= J + 1, capacity + 1) float64, row j the best total of the first j
    jobs at each capacity (row 0 zeros); choice: (>= J, capacity + 1) int64.
    Rows up to best[first] and choice[first - 1] must be those of this job
    list's first `first` jobs; the rest are computed.
    """
    n_jobs = starts.size
    for j in range(first, n_jobs):
        _job_row(best[j], best[j + 1], choice[j], opt_gpus, opt_value, starts[j], ends[j], capacity)
    total = best[n_jobs, capacity] if n_jobs > 0 else 0.0
    return _backtrack(choice, opt_gpus, n_jobs, capacity, total), total


@njit(**JIT_OPTIONS)
def _job_row(prev, cur, choice_row, opt_gpus, opt_value, first, last, capacity):
    """One job's row: cur[c] = max over its options (first:last) of prev[c - g] + V(g).

    Options outer, capacities inner, on slices with unsigned indices (no
    wraparound test): a loop the compiler vectorises. Each cur[c] still sees
    the options in ascending g and keeps the first best, as the recurrence
    scanned per c does.
    """
    n = np.uint64(capacity + 1)
    for c in range(n):
        cur[c] = -np.inf
        choice_row[c] = -1
    for k in range(first, last):
        g = np.uint64(opt_gpus[k])
        if g >= n:
            break
        value = opt_value[k]
        source, target, chosen = prev[:n - g], cur[g:], choice_row[g:]
        for c in range(n - g):
            v = source[c] + value
            if v > target[c]:
                target[c] = v
                chosen[c] = k


@njit(**JIT_OPTIONS)
def _backtrack(choice, opt_gpus, n_jobs, capacity, total):
    chosen = np.full(n_jobs, -1, dtype=np.int64)
    if total == -np.inf:
        return chosen
    c = capacity
    for j in range(n_jobs - 1, -1, -1):
        k = choice[j, c]
        chosen[j] = k
        c -= opt_gpus[k]
    return chosen


@njit(**JIT_OPTIONS)
def stream_uniforms(seed, stream, row, first, n):
    """Uniforms number first .. first + n - 1 of row `row` under key (seed, stream):
    the same numbers the timeline kernel would draw for job `row` of scenario `stream`."""
    k0 = np.uint64(seed)
    k1 = np.uint64(stream)
    row_lo, row_hi = split_job(np.int64(row))
    out = np.empty(n)
    spare = 0.0
    n_drawn = first & ~1
    if first & 1:  # start on the second uniform of a call
        _, n_drawn, spare = next_uniform(k0, k1, row_lo, row_hi, n_drawn, spare)
    for i in range(n):
        out[i], n_drawn, spare = next_uniform(k0, k1, row_lo, row_hi, n_drawn, spare)
    return out
