"""Numba backend of the timeline kernel (twin: `_timeline_cy.pyx`).

One job: compute and checkpoint segments, failures from a renewal process
that runs on the job's runtime clock (compute, checkpoint writes, restarts; not
queue waits), lost work since the last checkpoint, queue wait, restart.
Whole failure-free segments are skipped in O(1) per failure draw.

A job's draws are its stream of 64-bit words (`rng_numba`), read in order:
a uniform for its rate-table entry (only with two or more entries), then per
failure time an exponential by the ziggurat (one word, 2.2% of the time more);
with a failure taxonomy, each failure draws its category (a uniform, only with
two or more categories), and the queue wait and restart after it are that
category's; a failure during a restart draws again. An exponential queue wait
is one more exponential.

With checkpoint levels (a row with a level table) a job runs
`simulate_levels_job` instead: fast levels and writes that persist after they
block, each failure drawing which levels survive it (one uniform) after its
category. It jumps from one failure to the next with per-cycle tables where no
write can wait, and steps position by position where one can.

Speed: a block first settles every job whose first failure falls after its
failure-free end without simulating it (`unsettled_jobs`: its first
exponential decided in passes SIMD across jobs); on a plain row (one
exponential rate, no categories, a fixed queue, no levels) the jobs left run
in lanes (`lanes_numba`: SIMD across jobs, the same bits), on any other row
one at a time, drawing words in batches of `rng_numba.BATCH` (SIMD across
calls). No `log` anywhere on the hot path.

No fastmath: the Cython twin must produce the same bits, so no reassociation,
no contraction into FMA, and the same libm `pow` on both sides.
"""

from collections import namedtuple

import numba
import numpy as np
from numba import njit, prange

from . import lanes_numba
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
    J_WAIT,
    J_WALL,
    L_RESTORES,
    L_WAIT,
    L_WRITES,
    N_BINS,
    P_CKPT,
    P_FF_CKPT,
    P_FF_WAIT,
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
    S_WAIT,
    S_WALL,
    S_WALL_SQ,
    SETTLE_MAX_HAZARD_MILLI,
    V_COST,
    V_PERSIST,
    V_RESTART,
    V_SURVIVES,
)
from .rng_numba import (
    BATCH,
    first_words,
    next_exponential,
    next_uniform_draw,
    philox_words,
    split_job,
    wedge_test,
    ziggurat_candidate,
    ziggurat_rejected,
)


# What a job's timeline comes to (hours; failures and capped are counts): read by name
# in the kernels; the fields are the per-job columns J_*, in their order.
JobOutcome = namedtuple("JobOutcome", "wall productive checkpoint lost restart queue failures capped persist_wait")


@njit(inline="always", **JIT_OPTIONS)
def time_to_failure(e, mean_ttf, scale, shape, inv_shape):
    """A standard exponential e as a time to failure: exponential (shape 1), or
    Weibull with the same mean (scale * e**(1/shape))."""
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
def draw_category(cat_cdf, words, pos, job_lo, job_hi, k0, k1):
    """A failure's category; a single category takes no draw. Returns (category, pos)."""
    if cat_cdf.size == 1:
        return 0, pos
    u, pos = next_uniform_draw(words, pos, job_lo, job_hi, k0, k1)
    return inverse_cdf(cat_cdf, u), pos


@njit(inline="always", **JIT_OPTIONS)
def draw_rate_entry(rate_cdf, words, job_lo, job_hi, k0, k1):
    """The job's failure rate (per hour), as an entry of its rate table: one
    value, or one draw from the table. Returns (entry, pos) of a fresh job
    stream; `failure_sample` starts its jobs the same way."""
    if rate_cdf.size > 1:
        u, pos = next_uniform_draw(words, 0, job_lo, job_hi, k0, k1)
        return inverse_cdf(rate_cdf, u), pos
    return 0, 0


# Inlined at Numba IR level: a call would pass four array views and pay
# reference counting on each, tripling the cost of a job with no failure.
@njit(inline="always", **JIT_OPTIONS)
def simulate_job(p, rate_cdf, rate_value, rate_hazard, cat_cdf, cat_restart, cat_queue, cat_acc,
                 words, k0, k1, job, max_failures):
    """One job, as a `JobOutcome` (no checkpoint levels, so no waits).

    With categories (cat_cdf not empty) it also adds the job's failures, lost
    work, restart and queue time per category into cat_acc[category, C_*].
    `words` is scratch for the job's batches of words.
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
    entry, pos = draw_rate_entry(rate_cdf, words, job_lo, job_hi, k0, k1)
    lam = rate_value[entry]

    done = 0.0  # completed (checkpointed) intervals
    lost = 0.0
    restart_time = 0.0
    queue_time = 0.0
    failures = 0
    capped = 0
    finished = True
    e = np.inf
    if lam > 0.0:
        e, pos = next_exponential(words, pos, job_lo, job_hi, k0, k1)
    # A first exponential at or above the job's cumulative hazard (plus a margin
    # for rounding) means no failure before the end: the path below would give
    # the same result, so skip it.
    if e < rate_hazard[entry]:
        mean_ttf = 1.0 / lam
        scale = mean_ttf * p[P_SCALE_FACTOR]
        inv_shape = 1.0 / shape
        t = time_to_failure(e, mean_ttf, scale, shape, inv_shape)
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
                category, pos = draw_category(cat_cdf, words, pos, job_lo, job_hi, k0, k1)
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
                    e, pos = next_exponential(words, pos, job_lo, job_hi, k0, k1)
                    wait = queue * e
                else:
                    wait = queue
                queue_time += wait
                if by_category:
                    cat_acc[category, C_QUEUE] += wait
                e, pos = next_exponential(words, pos, job_lo, job_hi, k0, k1)
                t = time_to_failure(e, mean_ttf, scale, shape, inv_shape)
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
                    category, pos = draw_category(cat_cdf, words, pos, job_lo, job_hi, k0, k1)
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
    return JobOutcome(wall, productive, checkpoint, lost, restart_time, queue_time, failures, capped, 0.0)


_COMPUTE = 0
_WAIT = 1
_WRITE = 2


@njit(inline="always", **JIT_OPTIONS)
def position_level(j, lv_mult):
    """The level written at position j: the most durable one due there."""
    for lv in range(lv_mult.size - 1, 0, -1):
        if j % lv_mult[lv] == 0:
            return lv
    return 0


# The cycle tables of a row whose writes never wait (`engine.level_cycle`): over
# one cycle of M positions (the lcm of the level multiples), value[r] is the
# path value (compute and writes) at offset r, and index holds, per level, the
# last offset <= r of that level (0: none) and the count of them up to r.

@njit(inline="always", **JIT_OPTIONS)
def cycle_quotient(j, m, inv_m):
    """j // m for 0 <= j < 2**53 by a multiplication (an integer division costs far more), made exact."""
    q = np.int64(float(j) * inv_m)
    if q * m > j:
        q -= 1
    elif (q + 1) * m <= j:
        q += 1
    return q


@njit(inline="always", **JIT_OPTIONS)
def cycle_value(j, value, inv_m):
    """The path value at position j: compute and writes from the job's start."""
    m = value.size - 1
    q = cycle_quotient(j, m, inv_m)
    return float(q) * value[m] + value[j - q * m]


@njit(inline="always", **JIT_OPTIONS)
def cycle_position_at(x, value, inv_per_cycle, n_full):
    """The last position (<= n_full) whose write has ended by path value x (0 if none)."""
    if x < 0.0:
        return np.int64(0)
    m = value.size - 1
    per_cycle = value[m]
    q = np.int64(x * inv_per_cycle)
    while q > 0 and float(q) * per_cycle > x:  # rounding of the division either way
        q -= 1
    while float(q + 1) * per_cycle <= x:
        q += 1
    base = float(q) * per_cycle
    # The last offset r < m with base + value[r] <= x: a count of them (value rises with r),
    # with no branch that depends on the data, which beats a bisection on the
    # cycles of a few positions that levels have (engine.MAX_JUMP_CYCLE bounds it).
    lo = 0
    for r in range(1, m):
        lo += base + value[r] <= x
    return min(q * m + lo, n_full)


@njit(inline="always", **JIT_OPTIONS)
def cycle_last(lv, q, r, index, m):
    """The last position <= j = q m + r of level lv (0: none)."""
    row = lv * (m + 1)
    offset = index[row + r]
    if offset > 0:
        return q * m + offset
    if q > 0 and index[row + m] > 0:
        return (q - 1) * m + index[row + m]
    return np.int64(0)


@njit(**JIT_OPTIONS)
def simulate_levels_job(p, rate_cdf, rate_value, cat_cdf, cat_restart, cat_queue, cat_acc, lv_mult, lv_table,
                        cyc_value, cyc_index, lv_acc, state, words, k0, k1, job, max_failures):
    """One job with checkpoint levels (fast levels, or a write that persists), as a `JobOutcome`.

    Where a write may wait for the previous one of its level to persist, it
    steps through positions of the fastest level: compute, wait, write.
    Otherwise (cycle tables given) it goes from one failure to the next in one
    step: the positions written and the checkpoints durable by then come from
    the tables. A failure keeps the pending writes durable by then, drops the
    rest, draws which levels survive (one uniform, with fast levels) and
    restores the latest checkpoint of a surviving level. lv_acc[level, L_*]
    gets writes, restores and waits; `state` is scratch of 5 rows by levels.
    """
    d0 = p[P_INTERVAL]
    n_full = np.int64(p[P_N_FULL])
    remainder = p[P_REMAINDER]
    restart_top = p[P_RESTART]
    queue = p[P_QUEUE]
    shape = p[P_SHAPE]
    queue_exp = p[P_QUEUE_EXP] != 0.0
    by_category = cat_cdf.size > 0
    top = lv_mult.size - 1
    latest_pos = state[0]
    latest_val = state[1]
    pend_pos = state[2]
    pend_val = state[3]
    pend_at = state[4]
    for lv in range(top + 1):
        latest_pos[lv] = 0.0
        latest_val[lv] = 0.0
        pend_pos[lv] = -1.0
    category = 0
    job_lo, job_hi = split_job(job)
    entry, pos_w = draw_rate_entry(rate_cdf, words, job_lo, job_hi, k0, k1)
    lam = rate_value[entry]
    mean_ttf = 1.0 / lam if lam > 0.0 else np.inf
    scale = mean_ttf * p[P_SCALE_FACTOR]
    inv_shape = 1.0 / shape
    fail_at = np.inf
    if lam > 0.0:
        e, pos_w = next_exponential(words, pos_w, job_lo, job_hi, k0, k1)
        fail_at = time_to_failure(e, mean_ttf, scale, shape, inv_shape)

    now = 0.0  # runtime clock: compute, writes, waits, restarts
    pos = np.int64(0)  # last position written on the current path
    val = 0.0  # path value: compute and writes since the start up to here
    lv = 0
    end = 0.0
    lost = 0.0
    restart_time = 0.0
    queue_time = 0.0
    wait_time = 0.0
    failures = 0
    capped = 0
    finished = False
    phase = _COMPUTE
    jump = cyc_value.size > 0
    m = cyc_value.size - 1
    inv_m = 1.0 / m if jump else 0.0
    inv_per_cycle = 1.0 / cyc_value[m] if jump else 0.0
    end_value = cycle_value(n_full, cyc_value, inv_m) + remainder if jump else 0.0
    while True:
        if jump:  # from here to the next failure (or the end) in one step
            span = fail_at - now
            finish = span >= end_value - val
            last = n_full if finish else cycle_position_at(val + span, cyc_value, inv_per_cycle, n_full)
            q_last = cycle_quotient(last, m, inv_m)
            r_last = last - q_last * m
            q_pos = cycle_quotient(pos, m, inv_m)
            r_pos = pos - q_pos * m
            for k in range(top + 1):  # writes of positions pos + 1 .. last, from the per-cycle counts
                row = (top + 1 + k) * (m + 1)
                lv_acc[k, L_WRITES] += float((q_last - q_pos) * cyc_index[row + m] + cyc_index[row + r_last]
                                             - cyc_index[row + r_pos])
            if finish:
                finished = True
                break
            path = val + span
            for k in range(top + 1):  # the latest write of each level durable by the failure
                persist = lv_table[k, V_PERSIST]
                if persist == 0.0:
                    durable = cycle_last(k, q_last, r_last, cyc_index, m)
                else:
                    reached = cycle_position_at(path - persist, cyc_value, inv_per_cycle, last)
                    q = cycle_quotient(reached, m, inv_m)
                    durable = cycle_last(k, q, reached - q * m, cyc_index, m)
                if durable > pos:
                    latest_pos[k] = float(durable)
                    latest_val[k] = cycle_value(durable, cyc_value, inv_m)
        else:
            if phase == _COMPUTE:
                end = now + (remainder if pos >= n_full else d0)
            elif phase == _WAIT:
                end = pend_at[lv]
            else:
                end = now + lv_table[lv, V_COST]
            if fail_at >= end:  # the phase completes (a failure exactly at its end does not stop it)
                if phase == _COMPUTE:
                    now = end
                    if pos >= n_full:
                        finished = True
                        break
                    val += d0
                    lv = position_level(pos + 1, lv_mult)
                    phase = _WRITE
                    if pend_pos[lv] >= 0.0:
                        # Only a level that persists longer than its interval waits (else
                        # the write is durable by now, up to rounding of the clock).
                        if pend_at[lv] > now and lv_table[lv, V_PERSIST] > float(lv_mult[lv]) * d0:
                            phase = _WAIT
                        else:
                            latest_pos[lv] = pend_pos[lv]
                            latest_val[lv] = pend_val[lv]
                            pend_pos[lv] = -1.0
                elif phase == _WAIT:
                    wait = end - now
                    wait_time += wait
                    lv_acc[lv, L_WAIT] += wait
                    now = end
                    latest_pos[lv] = pend_pos[lv]
                    latest_val[lv] = pend_val[lv]
                    pend_pos[lv] = -1.0
                    phase = _WRITE
                else:
                    now = end
                    val += lv_table[lv, V_COST]
                    pos += 1
                    lv_acc[lv, L_WRITES] += 1.0
                    if lv_table[lv, V_PERSIST] == 0.0:
                        latest_pos[lv] = float(pos)
                        latest_val[lv] = val
                    else:
                        pend_pos[lv] = float(pos)
                        pend_val[lv] = val
                        pend_at[lv] = now + lv_table[lv, V_PERSIST]
                    phase = _COMPUTE
                continue

            # A failure at fail_at, in this phase.
            if phase == _WAIT:
                wait = fail_at - now
                wait_time += wait
                lv_acc[lv, L_WAIT] += wait
                path = val
            else:
                path = val + (fail_at - now)
        now = fail_at
        for k in range(0 if jump else top + 1):  # writes durable by now are kept (none pend when jumping)
            if pend_pos[k] >= 0.0 and pend_at[k] <= now:
                latest_pos[k] = pend_pos[k]
                latest_val[k] = pend_val[k]
            pend_pos[k] = -1.0
        failures += 1
        if by_category:
            category, pos_w = draw_category(cat_cdf, words, pos_w, job_lo, job_hi, k0, k1)
            cat_acc[category, C_FAILURES] += 1.0
        # Restore, queue, then restart attempts until one runs without failing;
        # a failed restart is a failure that draws and restores again.
        while True:
            lowest = 0
            if top > 0:
                u, pos_w = next_uniform_draw(words, pos_w, job_lo, job_hi, k0, k1)
                while u > lv_table[lowest, V_SURVIVES]:
                    lowest += 1
            best = top
            for k in range(top - 1, lowest - 1, -1):
                if latest_pos[k] > latest_pos[best]:
                    best = k
            for k in range(lowest):
                latest_pos[k] = 0.0
                latest_val[k] = 0.0
            lost_now = path - latest_val[best]
            lost += lost_now
            pos = np.int64(latest_pos[best])
            val = latest_val[best]
            path = val
            lv_acc[best, L_RESTORES] += 1.0
            if by_category:
                cat_acc[category, C_LOST] += lost_now
                queue = cat_queue[category]
                restart_top = cat_restart[category]
            restart = restart_top if best == top else lv_table[best, V_RESTART]
            if failures >= max_failures:
                capped = 1
                break
            if queue_exp:
                e, pos_w = next_exponential(words, pos_w, job_lo, job_hi, k0, k1)
                wait = queue * e
            else:
                wait = queue
            queue_time += wait
            if by_category:
                cat_acc[category, C_QUEUE] += wait
            e, pos_w = next_exponential(words, pos_w, job_lo, job_hi, k0, k1)
            t = time_to_failure(e, mean_ttf, scale, shape, inv_shape)
            if t >= restart:
                restart_time += restart
                if by_category:
                    cat_acc[category, C_RESTART] += restart
                now += restart
                fail_at = now + (t - restart)
                break
            restart_time += t
            if by_category:
                cat_acc[category, C_RESTART] += t
            now += t
            failures += 1
            if by_category:
                category, pos_w = draw_category(cat_cdf, words, pos_w, job_lo, job_hi, k0, k1)
                cat_acc[category, C_FAILURES] += 1.0
        if capped:
            break
        phase = _COMPUTE

    if finished:
        productive = p[P_WORK]
        checkpoint = p[P_FF_CKPT]
    else:
        productive = float(pos) * d0
        checkpoint = val - productive
    wall = productive + checkpoint + lost + restart_time + queue_time + wait_time
    return JobOutcome(wall, productive, checkpoint, lost, restart_time, queue_time, failures, capped, wait_time)


@njit(**JIT_OPTIONS)
def unsettled_jobs(first, n, bound, k0, k1, todo, words, flags, indices):
    """todo[:count] = the jobs first .. first + n - 1 whose first exponential
    falls below `bound` (0 < bound < R), in job order; returns count. The draws
    are decided in passes SIMD across jobs: words 0 and 1 of every job, then of
    the few that word 0 leaves open (word 0 rejected or below bound), word 1's
    wedge test, then word 2 for those whose wedge test failed; the scalar
    ziggurat only past that (0.02% of jobs). A tail draw is at least R, so
    settled. The decisions are those of `simulate_job`'s first draw. Scratch
    (the caller's, reused: an allocation costs more than a settled job):
    words, at least 4 n + 2; flags and indices, at least 2 n."""
    word0, word1, word2, word3 = words[:n], words[n:2 * n], words[2 * n:3 * n], words[3 * n:4 * n]
    pair = words[4 * n:4 * n + 2]  # a batch of one Philox call: its size must be 2
    look, verdict = flags[:n], flags[n:2 * n]  # verdict, 1: simulate it; 0: settled; 2: its draw goes on past word 1
    open_jobs, going_on = indices[:n], indices[n:2 * n]
    first_words(word0, word1, look, first, k0, k1, bound)
    n_open = 0
    for i in range(n):  # branch free: most jobs are settled
        open_jobs[n_open] = i
        n_open += look[i]
    # Branch free: accepted (so below bound, as the job is open) or a tail (at least R), decided;
    # the others (a third of the open jobs) await their wedge test, whose exp is worth skipping.
    n_wedge = 0
    for c in range(n_open):
        _, accepted, layer = ziggurat_candidate(word0[open_jobs[c]])
        verdict[c] = 1 if accepted else (0 if layer == 0 else 3)
        going_on[n_wedge] = c
        n_wedge += not accepted and layer != 0
    n_going_on = 0
    for g in range(n_wedge):
        c = going_on[g]
        i = open_jobs[c]
        x, _, layer = ziggurat_candidate(word0[i])
        v = (1 if x < bound else 0) if wedge_test(x, layer, word1[i]) else 2
        verdict[c] = v
        going_on[n_going_on] = c
        n_going_on += v == 2
    for g in range(n_going_on):
        job = np.uint64(first + open_jobs[going_on[g]])
        word2[g], word3[g] = philox_words(np.uint64(1), job & np.uint64(0xFFFFFFFF), job >> np.uint64(32), k0, k1)
    for g in range(n_going_on):
        x, accepted, layer = ziggurat_candidate(word2[g])
        if not accepted:
            pair[0] = word2[g]
            pair[1] = word3[g]
            job_lo, job_hi = split_job(first + open_jobs[going_on[g]])
            x, _ = ziggurat_rejected(x, layer, pair, 3, job_lo, job_hi, k0, k1)
        verdict[going_on[g]] = 1 if x < bound else 0
    count = 0
    for c in range(n_open):
        todo[count] = first + open_jobs[c]
        count += verdict[c]
    return count


_SETTLE_MAX_HAZARD = SETTLE_MAX_HAZARD_MILLI / 1000.0
@njit(inline="always", **JIT_OPTIONS)
def row_tables(s, rate_cdf, rate_value, rate_hazard, rate_offset, cat_cdf, cat_restart, cat_queue, cat_offset,
               lv_mult, lv_table, lv_offset, cyc_value, cyc_value_offset, cyc_index, cyc_index_offset):
    """Scenario row s's slices of the packed tables (`engine.Packed`): rates (cdf, value, hazard),
    categories (cdf, restart, queue), levels (multiples, table) and cycles (values, indices)."""
    return (rate_cdf[rate_offset[s]:rate_offset[s + 1]], rate_value[rate_offset[s]:rate_offset[s + 1]],
            rate_hazard[rate_offset[s]:rate_offset[s + 1]], cat_cdf[cat_offset[s]:cat_offset[s + 1]],
            cat_restart[cat_offset[s]:cat_offset[s + 1]], cat_queue[cat_offset[s]:cat_offset[s + 1]],
            lv_mult[lv_offset[s]:lv_offset[s + 1]], lv_table[lv_offset[s]:lv_offset[s + 1]],
            cyc_value[cyc_value_offset[s]:cyc_value_offset[s + 1]],
            cyc_index[cyc_index_offset[s]:cyc_index_offset[s + 1]])


@njit(inline="always", **JIT_OPTIONS)
def lane_outcome(row):
    """The `JobOutcome` of a job the lanes ran, from its row of J_* columns."""
    return JobOutcome(row[J_WALL], row[J_PRODUCTIVE], row[J_CHECKPOINT], row[J_LOST], row[J_RESTART], row[J_QUEUE],
                      np.int64(row[J_FAILURES]), np.int64(row[J_CAPPED]), 0.0)


@njit(inline="always", **JIT_OPTIONS)
def store_outcome(row, job_out):
    """A job's `JobOutcome` into its row of J_* columns."""
    row[J_WALL] = job_out.wall
    row[J_PRODUCTIVE] = job_out.productive
    row[J_CHECKPOINT] = job_out.checkpoint
    row[J_LOST] = job_out.lost
    row[J_RESTART] = job_out.restart
    row[J_QUEUE] = job_out.queue
    row[J_FAILURES] = job_out.failures
    row[J_CAPPED] = job_out.capped
    row[J_WAIT] = job_out.persist_wait


# The jobs that a group's blocks leave unsettled share the lanes up to this
# many at a time (room for a whole block more before each block).
TODO_CAPACITY = 2 * BLOCK_SIZE


@njit(
    "void(float64[:, ::1], float64[::1], float64[::1], float64[::1], int64[::1],"
    " float64[::1], float64[::1], float64[::1], int64[::1], int64[::1], float64[:, ::1], int64[::1], float64[::1],"
    " int64[::1], int64[::1], int64[::1], uint64,"
    " uint64[::1], int64[::1], int64[::1], int64, int64, float64[:, ::1], int64[::1],"
    " int64[:, :, ::1], float64[:, :, ::1], float64[:, :, ::1], int64)",
    parallel=True,
    **JIT_OPTIONS,
)
def run_blocks(
    params, rate_cdf, rate_value, rate_hazard, rate_offset, cat_cdf, cat_restart, cat_queue,
    cat_offset, lv_mult, lv_table, lv_offset, cyc_value, cyc_value_offset, cyc_index, cyc_index_offset, seed,
    scenario_key, item_scenario, item_block, n_jobs, max_failures, out_stats, item_hist, out_hist, out_cat, out_level,
    n_groups,
):
    """Sums of each work item (scenario row, block of BLOCK_SIZE jobs) in
    out_stats[item]; its jobs counted into the histogram
    out_hist[thread, item_hist[item]], or out_hist[0, item_hist[item]] when the
    caller gives one slot per item (`engine.chunk_histograms`; zeroed by the
    caller: counts are integers, so which thread adds them does not matter);
    out_cat[item, category] gets the per-category sums (no columns without a
    taxonomy), out_level[item, level] the per-level ones (none without levels).
    Threads take `n_groups` groups of consecutive items, as even as they can
    be (`engine.work_groups`: a multiple of the thread count, which prange
    shares out equally): scratch allocated once a group, and the jobs its
    blocks leave unsettled run in the lanes together."""
    k0 = np.uint64(seed)
    n_items = item_scenario.size
    groups = min(max(np.int64(1), n_groups), max(np.int64(1), n_items))
    for g in prange(groups):
        group_end = (g + 1) * n_items // groups
        todo = np.empty(TODO_CAPACITY, np.int64)  # the jobs to simulate, in job order
        lane_out = np.empty((TODO_CAPACITY, J_CAPPED + 1))
        settle_words = np.empty(4 * BLOCK_SIZE + 2, np.uint64)
        settle_flags = np.empty(2 * BLOCK_SIZE, np.uint8)
        settle_indices = np.empty(2 * BLOCK_SIZE, np.int64)
        it = g * n_items // groups
        batch_start = np.empty(group_end - it + 1, np.int64)  # an item's jobs in todo, from batch_start[b]
        while it < group_end:
            s = item_scenario[it]
            run_end = it + 1  # the group's items of this row: one setting, one batch of lanes
            while run_end < group_end and item_scenario[run_end] == s:
                run_end += 1
            p = params[s]
            cdf, value, hazard, c_cdf, c_restart, c_queue, mult, levels, c_value, c_index = row_tables(
                s, rate_cdf, rate_value, rate_hazard, rate_offset, cat_cdf, cat_restart, cat_queue, cat_offset, lv_mult,
                lv_table, lv_offset, cyc_value, cyc_value_offset, cyc_index, cyc_index_offset)
            with_levels = mult.size > 0
            state = np.empty((5, mult.size))
            k1 = scenario_key[s]
            words = np.empty(BATCH, np.uint64)
            # Sums of deviations from the failure-free job: exact zeros when no job fails.
            work = p[P_WORK]
            failure_free_ckpt = p[P_FF_CKPT]
            failure_free_wall = work + failure_free_ckpt + p[P_FF_WAIT]
            failure_free_eff = work / failure_free_wall
            # With one rate and no failure before the end for most jobs, the first
            # exponential of each job settles it: no simulation, nothing to add.
            single_rate = cdf.size == 1
            no_failures = single_rate and value[0] == 0.0
            bound = hazard[0] if single_rate else 0.0
            settle = single_rate and not no_failures and bound < _SETTLE_MAX_HAZARD and not with_levels
            settle_all = no_failures and not with_levels
            # The plain path (one exponential rate, no categories, a fixed queue, no levels) runs in lanes.
            in_lanes = (single_rate and not no_failures and not with_levels and c_cdf.size == 0
                        and p[P_SHAPE] == 1.0 and p[P_QUEUE_EXP] == 0.0)
            while it < run_end:
                # A batch: the row's next items, as many as leave todo room for a whole block more.
                n_batch = 0
                n_todo = 0
                batch_start[0] = 0
                while it + n_batch < run_end and n_todo + BLOCK_SIZE <= TODO_CAPACITY:
                    first = item_block[it + n_batch] * BLOCK_SIZE
                    n_block = min(first + BLOCK_SIZE, n_jobs) - first
                    if settle_all:
                        count = 0
                    elif settle:
                        count = unsettled_jobs(first, n_block, bound, k0, k1, todo[n_todo:], settle_words,
                                               settle_flags, settle_indices)
                    else:
                        count = n_block
                        for i in range(n_block):
                            todo[n_todo + i] = first + i
                    n_todo += count
                    n_batch += 1
                    batch_start[n_batch] = n_todo
                if in_lanes and n_todo > 0:
                    lanes_numba.run_block(work, p[P_INTERVAL], p[P_CKPT], p[P_RESTART], p[P_QUEUE], p[P_N_FULL],
                                          p[P_REMAINDER], value[0], k0, k1, todo[:n_todo], max_failures, lane_out)
                for b in range(n_batch):
                    item = it + b
                    acc = out_cat[item]
                    acc[:, :] = 0.0
                    lv_acc = out_level[item]
                    lv_acc[:, :] = 0.0
                    hist = out_hist[numba.get_thread_id() % out_hist.shape[0], item_hist[item]]
                    n = wall_sum = wall_sq = prod_sum = prod_sq = prod_wall = eff_sum = eff_sq = 0.0
                    ckpt_sum = lost_sum = restart_sum = queue_sum = fail_sum = fail_sq = capped_sum = wait_sum = 0.0
                    for i in range(batch_start[b], batch_start[b + 1]):
                        job = todo[i]
                        if with_levels:
                            job_out = simulate_levels_job(
                                p, cdf, value, c_cdf, c_restart, c_queue, acc, mult, levels, c_value, c_index,
                                lv_acc, state, words, k0, k1, job, max_failures
                            )
                        elif in_lanes:
                            job_out = lane_outcome(lane_out[i])
                        else:
                            job_out = simulate_job(
                                p, cdf, value, hazard, c_cdf, c_restart, c_queue, acc, words, k0, k1, job,
                                max_failures
                            )
                        wall, prod = job_out.wall, job_out.productive
                        d_wall = wall - failure_free_wall
                        d_prod = prod - work
                        d_eff = prod / wall - failure_free_eff
                        fail = float(job_out.failures)
                        n += 1.0
                        wall_sum += d_wall
                        wall_sq += d_wall * d_wall
                        prod_sum += d_prod
                        prod_sq += d_prod * d_prod
                        prod_wall += d_prod * d_wall
                        eff_sum += d_eff
                        eff_sq += d_eff * d_eff
                        ckpt_sum += job_out.checkpoint
                        lost_sum += job_out.lost
                        restart_sum += job_out.restart
                        queue_sum += job_out.queue
                        fail_sum += fail
                        fail_sq += fail * fail
                        capped_sum += job_out.capped
                        wait_sum += job_out.persist_wait
                        y = failure_free_wall / wall
                        if y >= 1.0:
                            hist[N_BINS] += 1
                        else:
                            hist[int(y * N_BINS)] += 1
                    # Settled jobs ran failure free: deviations of exactly zero, the full checkpoint time.
                    first = item_block[item] * BLOCK_SIZE
                    n_settled = min(first + BLOCK_SIZE, n_jobs) - first - (batch_start[b + 1] - batch_start[b])
                    n += float(n_settled)
                    ckpt_sum += float(n_settled) * failure_free_ckpt
                    hist[N_BINS] += n_settled
                    st = out_stats[item]
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
                    st[S_WAIT] = wait_sum
                it += n_batch


# Lazily compiled (no signature): only keep_jobs needs it, so simulate does not load it at start-up.
@njit(parallel=True, **JIT_OPTIONS)
def run_jobs(
    params, rate_cdf, rate_value, rate_hazard, rate_offset, cat_cdf, cat_restart, cat_queue,
    cat_offset, lv_mult, lv_table, lv_offset, cyc_value, cyc_value_offset, cyc_index, cyc_index_offset, seed,
    scenario_key, first_job, max_failures, out, out_cat, out_level,
):
    """Per-job outputs: out[s, i] for job first_job + i of scenario row s, and its
    per-category and per-level sums in out_cat[s, i] and out_level[s, i]."""
    k0 = np.uint64(seed)
    n_jobs = out.shape[1]
    n_chunks = (n_jobs + BLOCK_SIZE - 1) // BLOCK_SIZE
    for flat in prange(out.shape[0] * n_chunks):
        s = flat // n_chunks
        start = (flat - s * n_chunks) * BLOCK_SIZE
        cdf, value, hazard, c_cdf, c_restart, c_queue, mult, levels, c_value, c_index = row_tables(
            s, rate_cdf, rate_value, rate_hazard, rate_offset, cat_cdf, cat_restart, cat_queue, cat_offset, lv_mult,
            lv_table, lv_offset, cyc_value, cyc_value_offset, cyc_index, cyc_index_offset)
        state = np.empty((5, mult.size))
        words = np.empty(BATCH, np.uint64)
        for i in range(start, min(start + BLOCK_SIZE, n_jobs)):
            acc = out_cat[s, i]
            acc[:, :] = 0.0
            lv_acc = out_level[s, i]
            lv_acc[:, :] = 0.0
            if mult.size > 0:
                job_out = simulate_levels_job(
                    params[s], cdf, value, c_cdf, c_restart, c_queue, acc, mult, levels, c_value, c_index, lv_acc,
                    state, words, k0, scenario_key[s], first_job + i, max_failures
                )
            else:
                job_out = simulate_job(
                    params[s], cdf, value, hazard, c_cdf, c_restart, c_queue, acc, words, k0, scenario_key[s],
                    first_job + i, max_failures
                )
            store_outcome(out[s, i], job_out)
