# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Cython backend of the timeline kernel: the twin of `rng_numba.py` and
`timeline_numba.py`, written independently line for line, so the two prove each
other bit for bit. No JIT, so short runs start at once. Serial (no OpenMP).
"""

from libc.math cimport floor, log, pow
from libc.stdint cimport int64_t, uint32_t, uint64_t

cdef enum:
    P_INTERVAL = 0
    P_CKPT = 1
    P_RESTART = 2
    P_QUEUE = 3
    P_WORK = 4
    P_N_FULL = 5
    P_REMAINDER = 6
    P_SHAPE = 7
    P_SCALE_FACTOR = 8
    P_QUEUE_EXP = 9
    N_PARAMS = 10
    J_WALL = 0
    J_PRODUCTIVE = 1
    J_CHECKPOINT = 2
    J_LOST = 3
    J_RESTART = 4
    J_QUEUE = 5
    J_FAILURES = 6
    J_CAPPED = 7
    N_JOB_FIELDS = 8
    S_N = 0
    S_WALL = 1
    S_WALL_SQ = 2
    S_PRODUCTIVE = 3
    S_PRODUCTIVE_SQ = 4
    S_PRODUCTIVE_WALL = 5
    S_EFF = 6
    S_EFF_SQ = 7
    S_CHECKPOINT = 8
    S_LOST = 9
    S_RESTART = 10
    S_QUEUE = 11
    S_FAILURES = 12
    S_FAILURES_SQ = 13
    S_CAPPED = 14
    N_STATS = 15
    C_FAILURES = 0
    C_LOST = 1
    C_RESTART = 2
    C_QUEUE = 3
    N_CAT_STATS = 4
    N_BINS = 2048
    BLOCK_SIZE = 1024

LAYOUT = dict(
    P_INTERVAL=P_INTERVAL, P_CKPT=P_CKPT, P_RESTART=P_RESTART, P_QUEUE=P_QUEUE,
    P_WORK=P_WORK, P_N_FULL=P_N_FULL, P_REMAINDER=P_REMAINDER, P_SHAPE=P_SHAPE,
    P_SCALE_FACTOR=P_SCALE_FACTOR, P_QUEUE_EXP=P_QUEUE_EXP, N_PARAMS=N_PARAMS,
    J_WALL=J_WALL, J_PRODUCTIVE=J_PRODUCTIVE, J_CHECKPOINT=J_CHECKPOINT, J_LOST=J_LOST,
    J_RESTART=J_RESTART, J_QUEUE=J_QUEUE, J_FAILURES=J_FAILURES, J_CAPPED=J_CAPPED,
    N_JOB_FIELDS=N_JOB_FIELDS, S_N=S_N, S_WALL=S_WALL, S_WALL_SQ=S_WALL_SQ,
    S_PRODUCTIVE=S_PRODUCTIVE, S_PRODUCTIVE_SQ=S_PRODUCTIVE_SQ,
    S_PRODUCTIVE_WALL=S_PRODUCTIVE_WALL, S_EFF=S_EFF, S_EFF_SQ=S_EFF_SQ,
    S_CHECKPOINT=S_CHECKPOINT, S_LOST=S_LOST, S_RESTART=S_RESTART, S_QUEUE=S_QUEUE,
    S_FAILURES=S_FAILURES, S_FAILURES_SQ=S_FAILURES_SQ, S_CAPPED=S_CAPPED,
    N_STATS=N_STATS, C_FAILURES=C_FAILURES, C_LOST=C_LOST, C_RESTART=C_RESTART,
    C_QUEUE=C_QUEUE, N_CAT_STATS=N_CAT_STATS, N_BINS=N_BINS, BLOCK_SIZE=BLOCK_SIZE,
)


# ---- Philox4x32-10: key (seed, scenario), counter (call lo, call hi, job lo, job hi)

cdef struct Stream:
    uint32_t k0
    uint32_t k1
    uint32_t job_lo
    uint32_t job_hi
    int64_t n_drawn
    double spare


cdef inline void philox4x32_10(uint32_t* c, uint32_t k0, uint32_t k1) noexcept nogil:
    cdef uint64_t p0, p1
    cdef uint32_t c1, c3
    cdef int r
    for r in range(10):
        p0 = <uint64_t>0xD2511F53u * c[0]
        p1 = <uint64_t>0xCD9E8D57u * c[2]
        c1 = c[1]
        c3 = c[3]
        c[0] = <uint32_t>(p1 >> 32) ^ c1 ^ k0
        c[1] = <uint32_t>p1
        c[2] = <uint32_t>(p0 >> 32) ^ c3 ^ k1
        c[3] = <uint32_t>p0
        k0 = k0 + 0x9E3779B9u
        k1 = k1 + 0xBB67AE85u


cdef inline double words_to_uniform(uint32_t a, uint32_t b) noexcept nogil:
    return (<double>(a >> 5) * 67108864.0 + <double>(b >> 6) + 1.0) * (1.0 / 9007199254740992.0)


cdef inline double next_uniform(Stream* st) noexcept nogil:
    cdef uint32_t c[4]
    cdef uint64_t call
    cdef double u
    if st.n_drawn & 1:
        st.n_drawn += 1
        return st.spare
    call = <uint64_t>(st.n_drawn >> 1)
    c[0] = <uint32_t>call
    c[1] = <uint32_t>(call >> 32)
    c[2] = st.job_lo
    c[3] = st.job_hi
    philox4x32_10(c, st.k0, st.k1)
    st.n_drawn += 1
    st.spare = words_to_uniform(c[2], c[3])
    return words_to_uniform(c[0], c[1])


cdef inline void start_stream(Stream* st, uint64_t seed, uint64_t scenario, int64_t job) noexcept nogil:
    st.k0 = <uint32_t>seed
    st.k1 = <uint32_t>scenario
    st.job_lo = <uint32_t>(<uint64_t>job)
    st.job_hi = <uint32_t>(<uint64_t>job >> 32)
    st.n_drawn = 0
    st.spare = 0.0


def philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1):
    """The raw Philox4x32-10 block (for the known-answer test)."""
    cdef uint32_t c[4]
    c[0] = c0
    c[1] = c1
    c[2] = c2
    c[3] = c3
    philox4x32_10(c, k0, k1)
    return c[0], c[1], c[2], c[3]


def uniforms(uint64_t seed, uint64_t scenario, int64_t job, int64_t first, double[::1] out):
    """out[i] = uniform number first + i of (seed, scenario, job)."""
    cdef Stream st
    cdef Py_ssize_t i
    start_stream(&st, seed, scenario, job)
    st.n_drawn = first & ~1
    if first & 1:
        next_uniform(&st)
    for i in range(out.shape[0]):
        out[i] = next_uniform(&st)


# ---- one job

cdef struct JobResult:
    double wall
    double productive
    double checkpoint
    double lost
    double restart
    double queue
    int64_t failures
    int64_t capped


cdef inline double time_to_failure(double u, double mean_ttf, double scale, double shape,
                                   double inv_shape) noexcept nogil:
    """Inverse transform: exponential (shape 1) or Weibull with the same mean."""
    cdef double e = -log(u)
    if shape == 1.0:
        return mean_ttf * e
    return scale * pow(e, inv_shape)


cdef inline Py_ssize_t inverse_cdf(const double* cdf, Py_ssize_t n, double u) noexcept nogil:
    """The first index whose cdf entry is >= u (binary search; cdf[n - 1] == 1)."""
    cdef Py_ssize_t lo = 0, hi = n - 1, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if cdf[mid] < u:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef inline Py_ssize_t draw_category(const double* cat_cdf, Py_ssize_t n_cats, Stream* st) noexcept nogil:
    """A failure's category; a single category takes no draw."""
    if n_cats == 1:
        return 0
    return inverse_cdf(cat_cdf, n_cats, next_uniform(st))


cdef JobResult simulate_job(const double* p, const double* rate_cdf, const double* rate_value,
                            const double* rate_survival, Py_ssize_t n_rates,
                            const double* cat_cdf, const double* cat_restart, const double* cat_queue,
                            Py_ssize_t n_cats, double* cat_acc, uint64_t seed,
                            uint64_t scenario, int64_t job, int64_t max_failures) noexcept nogil:
    """One job. With categories (n_cats > 0) it also adds the job's failures, lost
    work, restart and queue time per category into cat_acc[category * N_CAT_STATS + C_*]."""
    cdef double interval = p[P_INTERVAL]
    cdef double ckpt = p[P_CKPT]
    cdef double restart = p[P_RESTART]
    cdef double queue = p[P_QUEUE]
    cdef double n_full = p[P_N_FULL]
    cdef double remainder = p[P_REMAINDER]
    cdef double shape = p[P_SHAPE]
    cdef bint queue_exp = p[P_QUEUE_EXP] != 0.0
    cdef double segment = interval + ckpt
    cdef bint by_category = n_cats > 0
    cdef Py_ssize_t category = 0
    cdef double lost_now, wait
    cdef Stream st
    cdef double u = 1.0, lam, mean_ttf = 0.0, scale = 0.0, inv_shape = 0.0, t, left, k
    cdef Py_ssize_t entry = 0
    cdef JobResult r
    cdef bint finished = True
    start_stream(&st, seed, scenario, job)

    # The job's failure rate (per hour): one value, or one draw from the table.
    if n_rates > 1:
        u = next_uniform(&st)
        entry = inverse_cdf(rate_cdf, n_rates, u)
    lam = rate_value[entry]

    cdef double done = 0.0  # completed (checkpointed) intervals
    r.lost = 0.0
    r.restart = 0.0
    r.queue = 0.0
    r.failures = 0
    r.capped = 0
    if lam > 0.0:
        u = next_uniform(&st)
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
            k = floor(t / segment)
            if k >= left:
                t -= left * segment
                done = n_full
                if t >= remainder:
                    break
            else:
                t -= k * segment
                done += k
            lost_now = t if t > 0.0 else 0.0
            r.lost += lost_now
            r.failures += 1
            if by_category:
                category = draw_category(cat_cdf, n_cats, &st)
                restart = cat_restart[category]
                queue = cat_queue[category]
                cat_acc[category * N_CAT_STATS + C_FAILURES] += 1.0
                cat_acc[category * N_CAT_STATS + C_LOST] += lost_now
            # Queue, then restart attempts until one runs `restart` without failing.
            while True:
                if r.failures >= max_failures:
                    r.capped = 1
                    break
                if queue_exp:
                    wait = queue * -log(next_uniform(&st))
                else:
                    wait = queue
                r.queue += wait
                if by_category:
                    cat_acc[category * N_CAT_STATS + C_QUEUE] += wait
                t = time_to_failure(next_uniform(&st), mean_ttf, scale, shape, inv_shape)
                if t >= restart:
                    r.restart += restart
                    if by_category:
                        cat_acc[category * N_CAT_STATS + C_RESTART] += restart
                    t -= restart
                    break
                r.restart += t
                if by_category:
                    cat_acc[category * N_CAT_STATS + C_RESTART] += t
                r.failures += 1
                if by_category:  # the failed restart's failure draws its own category
                    category = draw_category(cat_cdf, n_cats, &st)
                    restart = cat_restart[category]
                    queue = cat_queue[category]
                    cat_acc[category * N_CAT_STATS + C_FAILURES] += 1.0
            if r.capped:
                finished = False
                break

    if finished:
        done = n_full
    r.productive = p[P_WORK] if finished else done * interval
    r.checkpoint = done * ckpt
    r.wall = r.productive + r.checkpoint + r.lost + r.restart + r.queue
    return r


def run_blocks(const double[:, ::1] params, const double[::1] rate_cdf,
               const double[::1] rate_value, const double[::1] rate_survival,
               const int64_t[::1] rate_offset, const double[::1] cat_cdf,
               const double[::1] cat_restart, const double[::1] cat_queue,
               const int64_t[::1] cat_offset, uint64_t seed,
               const uint64_t[::1] scenario_key, const int64_t[::1] item_scenario,
               const int64_t[::1] item_block, int64_t n_jobs, int64_t max_failures,
               double[:, ::1] out_stats, int64_t[:, ::1] out_hist, double[:, :, ::1] out_cat):
    """Sums and histogram of each work item (scenario row, block of BLOCK_SIZE jobs);
    out_cat[item, category] gets the per-category sums (no columns without a taxonomy)."""
    cdef Py_ssize_t it, s, b, c, n_cats
    cdef double* acc
    cdef const double* c_cdf = NULL
    cdef const double* c_restart = NULL
    cdef const double* c_queue = NULL
    cdef int64_t job, first, last
    cdef double work, failure_free_wall, failure_free_eff, d_wall, d_prod, d_eff, fail, y
    cdef double n, wall_sum, wall_sq, prod_sum, prod_sq, prod_wall, eff_sum, eff_sq
    cdef double ckpt_sum, lost_sum, restart_sum, queue_sum, fail_sum, fail_sq, capped_sum
    cdef JobResult r
    with nogil:
        for it in range(item_scenario.shape[0]):
            s = item_scenario[it]
            # Sums of deviations from the failure-free job: exact zeros when no job fails.
            work = params[s, P_WORK]
            failure_free_wall = work + params[s, P_N_FULL] * params[s, P_CKPT]
            failure_free_eff = work / failure_free_wall
            for b in range(N_BINS + 1):
                out_hist[it, b] = 0
            n_cats = cat_offset[s + 1] - cat_offset[s]
            if n_cats > 0:
                c_cdf = &cat_cdf[cat_offset[s]]
                c_restart = &cat_restart[cat_offset[s]]
                c_queue = &cat_queue[cat_offset[s]]
            acc = &out_cat[it, 0, 0] if out_cat.shape[1] > 0 else NULL
            for c in range(out_cat.shape[1] * N_CAT_STATS):
                acc[c] = 0.0
            n = wall_sum = wall_sq = prod_sum = prod_sq = prod_wall = eff_sum = eff_sq = 0.0
            ckpt_sum = lost_sum = restart_sum = queue_sum = fail_sum = fail_sq = capped_sum = 0.0
            first = item_block[it] * BLOCK_SIZE
            last = first + BLOCK_SIZE
            if last > n_jobs:
                last = n_jobs
            for job in range(first, last):
                r = simulate_job(&params[s, 0], &rate_cdf[rate_offset[s]], &rate_value[rate_offset[s]],
                                 &rate_survival[rate_offset[s]], rate_offset[s + 1] - rate_offset[s],
                                 c_cdf, c_restart, c_queue, n_cats, acc,
                                 seed, scenario_key[s], job, max_failures)
                d_wall = r.wall - failure_free_wall
                d_prod = r.productive - work
                d_eff = r.productive / r.wall - failure_free_eff
                fail = <double>r.failures
                n += 1.0
                wall_sum += d_wall
                wall_sq += d_wall * d_wall
                prod_sum += d_prod
                prod_sq += d_prod * d_prod
                prod_wall += d_prod * d_wall
                eff_sum += d_eff
                eff_sq += d_eff * d_eff
                ckpt_sum += r.checkpoint
                lost_sum += r.lost
                restart_sum += r.restart
                queue_sum += r.queue
                fail_sum += fail
                fail_sq += fail * fail
                capped_sum += r.capped
                y = failure_free_wall / r.wall
                if y >= 1.0:
                    out_hist[it, N_BINS] += 1
                else:
                    out_hist[it, <Py_ssize_t>(y * N_BINS)] += 1
            out_stats[it, S_N] = n
            out_stats[it, S_WALL] = wall_sum
            out_stats[it, S_WALL_SQ] = wall_sq
            out_stats[it, S_PRODUCTIVE] = prod_sum
            out_stats[it, S_PRODUCTIVE_SQ] = prod_sq
            out_stats[it, S_PRODUCTIVE_WALL] = prod_wall
            out_stats[it, S_EFF] = eff_sum
            out_stats[it, S_EFF_SQ] = eff_sq
            out_stats[it, S_CHECKPOINT] = ckpt_sum
            out_stats[it, S_LOST] = lost_sum
            out_stats[it, S_RESTART] = restart_sum
            out_stats[it, S_QUEUE] = queue_sum
            out_stats[it, S_FAILURES] = fail_sum
            out_stats[it, S_FAILURES_SQ] = fail_sq
            out_stats[it, S_CAPPED] = capped_sum


def run_jobs(const double[:, ::1] params, const double[::1] rate_cdf,
             const double[::1] rate_value, const double[::1] rate_survival,
             const int64_t[::1] rate_offset, const double[::1] cat_cdf,
             const double[::1] cat_restart, const double[::1] cat_queue,
             const int64_t[::1] cat_offset, uint64_t seed,
             const uint64_t[::1] scenario_key, int64_t first_job, int64_t max_failures,
             double[:, :, ::1] out, double[:, :, :, ::1] out_cat):
    """Per-job outputs: out[s, i] for job first_job + i of scenario row s, and its
    per-category sums in out_cat[s, i]."""
    cdef Py_ssize_t s, i, c, n_cats
    cdef double* acc
    cdef const double* c_cdf = NULL
    cdef const double* c_restart = NULL
    cdef const double* c_queue = NULL
    cdef JobResult r
    with nogil:
        for s in range(out.shape[0]):
            n_cats = cat_offset[s + 1] - cat_offset[s]
            if n_cats > 0:
                c_cdf = &cat_cdf[cat_offset[s]]
                c_restart = &cat_restart[cat_offset[s]]
                c_queue = &cat_queue[cat_offset[s]]
            for i in range(out.shape[1]):
                acc = &out_cat[s, i, 0, 0] if out_cat.shape[2] > 0 else NULL
                for c in range(out_cat.shape[2] * N_CAT_STATS):
                    acc[c] = 0.0
                r = simulate_job(&params[s, 0], &rate_cdf[rate_offset[s]], &rate_value[rate_offset[s]],
                                 &rate_survival[rate_offset[s]], rate_offset[s + 1] - rate_offset[s],
                                 c_cdf, c_restart, c_queue, n_cats, acc,
                                 seed, scenario_key[s], first_job + i, max_failures)
                out[s, i, J_WALL] = r.wall
                out[s, i, J_PRODUCTIVE] = r.productive
                out[s, i, J_CHECKPOINT] = r.checkpoint
                out[s, i, J_LOST] = r.lost
                out[s, i, J_RESTART] = r.restart
                out[s, i, J_QUEUE] = r.queue
                out[s, i, J_FAILURES] = r.failures
                out[s, i, J_CAPPED] = r.capped
