"""First-failure times drawn exactly as the timeline kernel draws them.

Job j's stream is its words (`rng_numba`), Philox keyed by (seed, scenario): a
draw from the rate table when it has more than one entry, then one exponential
through `time_to_failure`. So `out[j]` is the runtime before job j's first
failure in `simulate` with the same seed and scenario index.
"""

import numpy as np
from numba import njit, prange

from ._jit import JIT_OPTIONS
from .layout import BLOCK_SIZE
from .rng_numba import BATCH, next_exponential, split_job
from .timeline_numba import draw_rate_entry, time_to_failure


@njit(
    "void(float64[::1], float64[::1], float64, float64, uint64, uint64, float64[::1])",
    parallel=True,
    **JIT_OPTIONS,
)
def first_failure_times(rate_cdf, rate_value, shape, scale_factor, seed, scenario_key, out):
    """out[j] = hours of runtime before job j's first failure (inf at rate 0)."""
    inv_shape = 1.0 / shape
    n_blocks = (out.size + BLOCK_SIZE - 1) // BLOCK_SIZE
    for block in prange(n_blocks):
        words = np.empty(BATCH, np.uint64)
        for job in range(block * BLOCK_SIZE, min(out.size, (block + 1) * BLOCK_SIZE)):
            job_lo, job_hi = split_job(job)
            entry, pos = draw_rate_entry(rate_cdf, words, job_lo, job_hi, seed, scenario_key)
            lam = rate_value[entry]
            if lam > 0.0:
                e, pos = next_exponential(words, pos, job_lo, job_hi, seed, scenario_key)
                mean_ttf = 1.0 / lam
                out[job] = time_to_failure(e, mean_ttf, mean_ttf * scale_factor, shape, inv_shape)
            else:
                out[job] = np.inf
