"""Philox4x32-10 (Salmon et al., SC'11) for Numba: counter-based, so any thread
can draw job j's k-th number directly, with no shared state between threads.

Key: (seed, scenario). Counter: (call low, call high, job low, job high), where
`call` counts the Philox calls of one job. Each call yields two 53-bit uniforms
on (0, 1]. Words are held in uint64 so the 32x32 -> 64 bit products are exact.
"""

import numpy as np
from numba import njit, prange

from ._jit import JIT_OPTIONS

_MASK32 = np.uint64(0xFFFFFFFF)
_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint64(0x9E3779B9)
_W1 = np.uint64(0xBB67AE85)
_S32 = np.uint64(32)
_S5 = np.uint64(5)
_S6 = np.uint64(6)
_TWO26 = 67108864.0
_TWO_M53 = 2.0**-53


@njit(**JIT_OPTIONS)
def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Ten Philox rounds on counter (c0..c3) with key (k0, k1); uint64 words < 2**32."""
    for _ in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = (
            (p1 >> _S32) ^ c1 ^ k0,
            p1 & _MASK32,
            (p0 >> _S32) ^ c3 ^ k1,
            p0 & _MASK32,
        )
        k0 = (k0 + _W0) & _MASK32
        k1 = (k1 + _W1) & _MASK32
    return c0, c1, c2, c3


@njit(**JIT_OPTIONS)
def words_to_uniform(a, b):
    """27 high bits of a and 26 of b -> x in [0, 2**53); returns (x + 1) / 2**53 in (0, 1]."""
    # Through int64: exact (< 2**27) and far cheaper on x86 than uint64 -> float64.
    return (float(np.int64(a >> _S5)) * _TWO26 + float(np.int64(b >> _S6)) + 1.0) * _TWO_M53


@njit(**JIT_OPTIONS)
def next_uniform(k0, k1, job_lo, job_hi, n_drawn, spare):
    """The job's uniform number `n_drawn`; returns (u, n_drawn + 1, spare)."""
    if n_drawn & 1:
        return spare, n_drawn + 1, spare
    call = np.uint64(n_drawn >> 1)
    r0, r1, r2, r3 = philox4x32_10(call & _MASK32, call >> _S32, job_lo, job_hi, k0, k1)
    return words_to_uniform(r0, r1), n_drawn + 1, words_to_uniform(r2, r3)


@njit(**JIT_OPTIONS)
def split_job(job):
    j = np.uint64(job)
    return j & _MASK32, j >> _S32


# Lazily compiled (no signature): tests and benchmarks only, kept off the simulate start-up path.
@njit(parallel=True, **JIT_OPTIONS)
def uniforms(seed, scenario, job, first, out):
    """out[i] = uniform number first + i of (seed, scenario, job); for tests and streams."""
    k0 = np.uint64(seed)
    k1 = np.uint64(scenario)
    job_lo, job_hi = split_job(np.int64(job))
    for i in prange(out.size):
        u, _, spare = next_uniform(k0, k1, job_lo, job_hi, (first + i) & ~1, 0.0)
        out[i] = spare if (first + i) & 1 else u


@njit(parallel=True, **JIT_OPTIONS)
def exponential_draw_limit(seed, scenario, n_jobs, draws_per_job, block_size):
    """The practical limit of the timeline kernel: the same generator drawing
    `draws_per_job` exponential variates per job in a bare loop (per-block sums)."""
    k0 = np.uint64(seed)
    k1 = np.uint64(scenario)
    n_blocks = (n_jobs + block_size - 1) // block_size
    sums = np.zeros(n_blocks)
    for b in prange(n_blocks):
        acc = 0.0
        for job in range(b * block_size, min(n_jobs, (b + 1) * block_size)):
            job_lo, job_hi = split_job(job)
            n_drawn = 0
            spare = 0.0
            for _ in range(draws_per_job):
                u, n_drawn, spare = next_uniform(k0, k1, job_lo, job_hi, n_drawn, spare)
                acc -= np.log(u)
        sums[b] = acc
    return sums
