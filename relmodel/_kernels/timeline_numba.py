"""Numba backend of the timeline kernel (twin: `_timeline_cy.pyx`).

One job: compute and checkpoint segments, failures from a renewal process
that runs on the job's runtime clock (compute, checkpoint writes, restarts; not
queue waits), lost work since the last checkpoint, queue wait, restart.
Whole failure-free segments are skipped in O(1) per failure draw.

With a failure taxonomy (a non-empty category table), each failure draws its
category from the same stream (one more uniform, only when there are two or
more categories), and the queue wait and restart after it are that category's;
a failure during a restart draws again. Without one, the draws are as before.

No fastmath: the Cython twin must produce the same bits, so no reassociation,
no contraction into FMA, and the same libm `log`/`pow` on both sides.
"""

import math

import numpy as np
from numba import njit, prange

from ._jit import JIT_OPTIONS
from .layout import (
    BLOCK_SIZE,
    C_FAILURES,
    C_LOST,
    C_QUEUE,
    C_RESTART,
    J_CAPPED,
    J_CHECKPOINT,
    J_FAILURES,
    J_LOST,
    J_PRODUCTIVE,
    J_QUEUE,
    J_RESTART,
    J_WALL,
    N_BINS,
    P_CKPT,
    P_INTERVAL,
    P_N_FULL,
    P_QUEUE,
    P_QUEUE_EXP,
    P_REMAINDER,
    P_RESTART,
    P_SCALE_FACTOR,
    P_SHAPE,
    P_WORK,
    S_CAPPED,
    S_CHECKPOINT,
    S_EFF,
    S_EFF_SQ,
    S_FAILURES,
    S_FAILURES_SQ,
    S_LOST,
    S_N,
    S_PRODUCTIVE,
    S_PRODUCTIVE_SQ,
    S_PRODUCTIVE_WALL,
    S_QUEUE,
    S_RESTART,
    S_WALL,
    S_WALL_SQ,
)
from .rng_numba import next_uniform, split_job


@njit(**JIT_OPTIONS)
def time_to_failure(u, mean_ttf, scale, shape, inv_shape):
    """Inverse transform: exponential (shape 1) or Weibull with the same mean."""
    e = -math.log(u)
    if shape == 1.0:
        return mean_ttf * e
    return scale * e**inv_shape


@njit(inline="always", **JIT_OPTIONS)
def inverse_cdf(cdf, u):
    """The first index whose cdf entry is >= u (binary search; cdf[-1] == 1)."""
    lo = 0
    hi = cdf.size - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if cdf[mid] < u:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(inline="always", **JIT_OPTIONS)
def draw_category(cat_cdf, k0, k1, job_lo, job_hi, n_drawn, spare):
    """A failure's category; a single category takes no draw. Returns (category, n_drawn, spare)."""
    if cat_cdf.size == 1:
        return 0, n_drawn, spare
    u, n_drawn, spare = next_uniform(k0, k1, job_lo, job_hi, n_drawn, spare)
    return inverse_cdf(cat_cdf, u), n_drawn, spare


@njit(inline="always", **JIT_OPTIONS)
def draw_rate_entry(rate_cdf, k0, k1, job_lo, job_hi):
    """The job's failure rate (per hour), as an entry of its rate table: one
    value, or one draw from the table. Returns (entry, n_drawn, spare) of a
    fresh job stream; `failure_sample` starts its jobs the same way."""
    n_drawn = 0
    spare = 0.0
    entry = 0
    if rate_cdf.size > 1:
        u, n_drawn, spare = next_uniform(k0, k1, job_lo, job_hi, n_drawn, spare)
        entry = inverse_cdf(rate_cdf, u)
    return entry, n_drawn, spare


# Inlined at Numba IR level: a call would pass four array views and pay
# reference counting on each, tripling the cost of a job with no failure.
@njit(inline="always", **JIT_OPTIONS)
def simulate_job(p, rate_cdf, rate_value, rate_survival, cat_cdf, cat_restart, cat_queue, cat_acc,
                 k0, k1, job, max_failures):
    """One job; returns (wall, productive, checkpoint, lost, restart, queue, failures, capped).

    With categories (cat_cdf not empty) it also adds the job's failures, lost
    work, restart and queue time per category into cat_acc[category, C_*].
    """
    interval = p[P_INTERVAL]
    ckpt = p[P_CKPT]
    restart = p[P_RESTART]
    queue = p[P_QUEUE]
    n_full = p[P_N_FULL]
    remainder = p[P_REMAINDER]
    shape = p[P_SHAPE]
    queue_exp = p[P_QUEUE_EXP] != 0.0
    segment = interval + ckpt
    by_category = cat_cdf.size > 0
    category = 0
    job_lo, job_hi = split_job(job)
    entry, n_drawn, spare = draw_rate_entry(rate_cdf, k0, k1, job_lo, job_hi)
    lam = rate_value[entry]

    done = 0.0  # completed (checkpointed) intervals
    lost = 0.0
    restart_time = 0.0
    queue_time = 0.0
    failures = 0
    capped = 0
    finished = True
    u = 1.0
    if lam > 0.0:
        u, n_drawn, spare = next_uniform(k0, k1, job_lo, job_hi, n_drawn, spare)
    # A first uniform below the job's survival probability (less a margin for
    # rounding) means no failure before the end: the path below would give the
    # same result, so skip it (and its log).
    if lam > 0.0 and u >= rate_survival[entry]:
        mean_ttf = 1.0 / lam
        scale = mean_ttf * p[P_SCALE_FACTOR]
        inv_shape = 1.0 / shape
        t = time_to_failure(u, mean_ttf, scale, shape, inv_shape)
        while True:
            # t: runtime left before the next failure, from the last checkpoint.
            left = n_full - done
            k = np.floor(t / segment)
            if k >= left:
                t -= left * segment
                done = n_full
                if t >= remainder:
                    break
            else:
                t -= k * segment
                done += k
            lost_now = max(t, 0.0)
            lost += lost_now
            failures += 1
            if by_category:
                category, n_drawn, spare = draw_category(cat_cdf, k0, k1, job_lo, job_hi, n_drawn, spare)
                restart = cat_restart[category]
                queue = cat_queue[category]
                cat_acc[category, C_FAILURES] += 1.0
                cat_acc[category, C_LOST] += lost_now
            # Queue, then restart attempts until one runs `restart` without failing.
            while True:
                if failures >= max_failures:
                    capped = 1
                    break
                if queue_exp:
                    u, n_drawn, spare = next_uniform(k0, k1, job_lo, job_hi, n_drawn, spare)
                    wait = queue * -math.log(u)
                else:
                    wait = queue
                queue_time += wait
                if by_category:
                    cat_acc[category, C_QUEUE] += wait
                u, n_drawn, spare = next_uniform(k0, k1, job_lo, job_hi, n_drawn, spare)
                t = time_to_failure(u, mean_ttf, scale, shape, inv_shape)
                if t >= restart:
                    restart_time += restart
                    if by_category:
                        cat_acc[category, C_RESTART] += restart
                    t -= restart
                    break
                restart_time += t
                if by_category:
                    cat_acc[category, C_RESTART] += t
                failures += 1
                if by_category:  # the failed restart's failure draws its own category
                    category, n_drawn, spare = draw_category(cat_cdf, k0, k1, job_lo, job_hi, n_drawn, spare)
                    restart = cat_restart[category]
                    queue = cat_queue[category]
                    cat_acc[category, C_FAILURES] += 1.0
            if capped:
                finished = False
                break

    if finished:
        done = n_full
    productive = p[P_WORK] if finished else done * interval
    checkpoint = done * ckpt
    wall = productive + checkpoint + lost + restart_time + queue_time
    return wall, productive, checkpoint, lost, restart_time, queue_time, failures, capped


@njit(
    "void(float64[:, ::1], float64[::1], float64[::1], float64[::1], int64[::1],"
    " float64[::1], float64[::1], float64[::1], int64[::1], uint64,"
    " uint64[::1], int64[::1], int64[::1], int64, int64, float64[:, ::1], int64[:, ::1],"
    " float64[:, :, ::1])",
    parallel=True,
    **JIT_OPTIONS,
)
def run_blocks(
    params, rate_cdf, rate_value, rate_survival, rate_offset, cat_cdf, cat_restart, cat_queue,
    cat_offset, seed, scenario_key, item_scenario, item_block, n_jobs, max_failures, out_stats,
    out_hist, out_cat,
):
    """Sums and histogram of each work item (scenario row, block of BLOCK_SIZE jobs);
    out_cat[item, category] gets the per-category sums (no columns without a taxonomy)."""
    k0 = np.uint64(seed)
    for it in prange(item_scenario.size):
        s = item_scenario[it]
        p = params[s]
        cdf = rate_cdf[rate_offset[s]:rate_offset[s + 1]]
        value = rate_value[rate_offset[s]:rate_offset[s + 1]]
        survival = rate_survival[rate_offset[s]:rate_offset[s + 1]]
        c_cdf = cat_cdf[cat_offset[s]:cat_offset[s + 1]]
        c_restart = cat_restart[cat_offset[s]:cat_offset[s + 1]]
        c_queue = cat_queue[cat_offset[s]:cat_offset[s + 1]]
        acc = out_cat[it]
        acc[:, :] = 0.0
        k1 = scenario_key[s]
        # Sums of deviations from the failure-free job: exact zeros when no job fails.
        work = p[P_WORK]
        failure_free_wall = work + p[P_N_FULL] * p[P_CKPT]
        failure_free_eff = work / failure_free_wall
        hist = out_hist[it]
        hist[:] = 0
        n = wall_sum = wall_sq = prod_sum = prod_sq = prod_wall = eff_sum = eff_sq = 0.0
        ckpt_sum = lost_sum = restart_sum = queue_sum = fail_sum = fail_sq = capped_sum = 0.0
        first = item_block[it] * BLOCK_SIZE
        for job in range(first, min(first + BLOCK_SIZE, n_jobs)):
            wall, prod, ckpt, lost, restart, queue, failures, capped = simulate_job(
                p, cdf, value, survival, c_cdf, c_restart, c_queue, acc, k0, k1, job, max_failures
            )
            d_wall = wall - failure_free_wall
            d_prod = prod - work
            d_eff = prod / wall - failure_free_eff
            fail = float(failures)
            n += 1.0
            wall_sum += d_wall
            wall_sq += d_wall * d_wall
            prod_sum += d_prod
            prod_sq += d_prod * d_prod
            prod_wall += d_prod * d_wall
            eff_sum += d_eff
            eff_sq += d_eff * d_eff
            ckpt_sum += ckpt
            lost_sum += lost
            restart_sum += restart
            queue_sum += queue
            fail_sum += fail
            fail_sq += fail * fail
            capped_sum += capped
            y = failure_free_wall / wall
            if y >= 1.0:
                hist[N_BINS] += 1
            else:
                hist[int(y * N_BINS)] += 1
        st = out_stats[it]
        st[S_N] = n
        st[S_WALL] = wall_sum
        st[S_WALL_SQ] = wall_sq
        st[S_PRODUCTIVE] = prod_sum
        st[S_PRODUCTIVE_SQ] = prod_sq
        st[S_PRODUCTIVE_WALL] = prod_wall
        st[S_EFF] = eff_sum
        st[S_EFF_SQ] = eff_sq
        st[S_CHECKPOINT] = ckpt_sum
        st[S_LOST] = lost_sum
        st[S_RESTART] = restart_sum
        st[S_QUEUE] = queue_sum
        st[S_FAILURES] = fail_sum
        st[S_FAILURES_SQ] = fail_sq
        st[S_CAPPED] = capped_sum


# Lazily compiled (no signature): only keep_jobs needs it, so simulate does not load it at start-up.
@njit(parallel=True, **JIT_OPTIONS)
def run_jobs(
    params, rate_cdf, rate_value, rate_survival, rate_offset, cat_cdf, cat_restart, cat_queue,
    cat_offset, seed, scenario_key, first_job, max_failures, out, out_cat,
):
    """Per-job outputs: out[s, i] for job first_job + i of scenario row s, and its
    per-category sums in out_cat[s, i]."""
    k0 = np.uint64(seed)
    n_jobs = out.shape[1]
    for flat in prange(out.shape[0] * n_jobs):
        s = flat // n_jobs
        i = flat - s * n_jobs
        cdf = rate_cdf[rate_offset[s]:rate_offset[s + 1]]
        value = rate_value[rate_offset[s]:rate_offset[s + 1]]
        survival = rate_survival[rate_offset[s]:rate_offset[s + 1]]
        acc = out_cat[s, i]
        acc[:, :] = 0.0
        wall, prod, ckpt, lost, restart, queue, failures, capped = simulate_job(
            params[s], cdf, value, survival, cat_cdf[cat_offset[s]:cat_offset[s + 1]],
            cat_restart[cat_offset[s]:cat_offset[s + 1]], cat_queue[cat_offset[s]:cat_offset[s + 1]],
            acc, k0, scenario_key[s], first_job + i, max_failures
        )
        row = out[s, i]
        row[J_WALL] = wall
        row[J_PRODUCTIVE] = prod
        row[J_CHECKPOINT] = ckpt
        row[J_LOST] = lost
        row[J_RESTART] = restart
        row[J_QUEUE] = queue
        row[J_FAILURES] = failures
        row[J_CAPPED] = capped
