"""Failure processes: the per-job failure rate, and its spread across jobs.

Failures arrive per node at `failure_rate` per node-day of runtime, independent
across nodes, so a job on N nodes fails at N * failure_rate. With lemon nodes a
fraction of the cluster fails `lemon_rate_factor` times as often as the rest;
the healthy rate is set so that the cluster-average rate stays `failure_rate`,
and each job draws its number of lemons from a binomial, hence its own rate.
"""

from __future__ import annotations

import numpy as np

# Binomial tails below this mass are dropped: a 53-bit uniform cannot reach them.
_TAIL = 2.0**-60


def job_rate_table(n_nodes: int, failure_rate: float, lemon_fraction: float = 0.0,
                   lemon_rate_factor: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(cdf, rate): the distribution of a job's failure rate in failures per hour.

    One entry when every job has the same rate; otherwise one per lemon count.
    The last cdf entry is exactly 1.
    """
    per_node_hour = failure_rate / 24.0
    if lemon_fraction == 0.0 or lemon_rate_factor == 1.0 or failure_rate == 0.0:
        return np.array([1.0]), np.array([n_nodes * per_node_hour])
    from scipy import stats  # here, not at import: it costs a second and only lemons need it

    healthy = per_node_hour / (1.0 - lemon_fraction + lemon_fraction * lemon_rate_factor)
    binom = stats.binom(n_nodes, lemon_fraction)
    lemons = np.arange(int(binom.ppf(_TAIL)), int(binom.isf(_TAIL)) + 1)
    pmf = binom.pmf(lemons)
    keep = pmf > 0
    lemons, pmf = lemons[keep], pmf[keep]
    cdf = np.cumsum(pmf)
    cdf /= cdf[-1]
    rate = healthy * ((n_nodes - lemons) + lemon_rate_factor * lemons)
    return cdf, rate
