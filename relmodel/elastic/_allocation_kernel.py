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
        first = offsets[j]
        last = offsets[j + 1]
        for c in range(capacity + 1):
            best = -np.inf
            arg = -1
            for k in range(first, last):
                g = opt_gpus[k]
                if g > c:
                    break
                v = prev[c - g] + opt_value[k]
                if v > best:
                    best = v
                    arg = k
            cur[c] = best
            choice[j, c] = arg
        prev, cur = cur, prev
    chosen = np.full(n_jobs, -1, dtype=np.int64)
    total = prev[capacity] if n_jobs > 0 else 0.0
    if total == -np.inf:
        return chosen, total
    c = capacity
    for j in range(n_jobs - 1, -1, -1):
        k = choice[j, c]
        chosen[j] = k
        c -= opt_gpus[k]
    return chosen, total


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
