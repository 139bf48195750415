# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Cython backend of the timeline kernel: the twin of `rng_numba.py` and
`timeline_numba.py`, written independently line for line, so the two prove each
other bit for bit. No JIT, so short runs start at once. Serial (no OpenMP), so
it needs none of the Numba kernel's speed devices (word batches, the settling
pass): only their effect on the order of draws and sums.
"""

from libc.math cimport INFINITY, floor, pow
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc

from . import ziggurat as _ziggurat

# The layout's constants (and LAYOUT, which a test holds to the Python one) come from
# relmodel/_kernels/layout.py: setup.py writes _layout.pxi from it before compiling.
include "_layout.pxi"


# ---- Philox4x32-10: key (seed, scenario), counter (call lo, call hi, job lo, job hi)

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


def philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1):
    """The raw Philox4x32-10 block (for the known-answer test)."""
    cdef uint32_t c[4]
    c[0] = c0
    c[1] = c1
    c[2] = c2
    c[3] = c3
    philox4x32_10(c, k0, k1)
    return c[0], c[1], c[2], c[3]


# ---- a job's 64-bit words: word 2c = (r0 << 32) | r1 and 2c + 1 = (r2 << 32) | r3 of call c

cdef double ZIG_WIDTH[256]
cdef uint64_t ZIG_ACCEPT[256]
cdef double ZIG_DENSITY[257]
cdef double INV_FACTORIAL[13]
cdef double ZIG_R = _ziggurat.R
for _i in range(256):
    ZIG_WIDTH[_i] = _ziggurat.WIDTH[_i]
    ZIG_ACCEPT[_i] = int(_ziggurat.ACCEPT[_i])
for _i in range(257):
    ZIG_DENSITY[_i] = _ziggurat.DENSITY[_i]
for _i in range(13):
    INV_FACTORIAL[_i] = _ziggurat.INV_FACTORIAL[_i]


cdef struct Words:
    uint32_t k0
    uint32_t k1
    uint32_t job_lo
    uint32_t job_hi
    int64_t pos
    int64_t odd_pos  # the odd word kept from the last call (-1: none)
    uint64_t odd_word


cdef inline void start_words(Words* ws, uint64_t seed, uint64_t scenario, int64_t job) noexcept nogil:
    ws.k0 = <uint32_t>seed
    ws.k1 = <uint32_t>scenario
    ws.job_lo = <uint32_t>(<uint64_t>job)
    ws.job_hi = <uint32_t>(<uint64_t>job >> 32)
    ws.pos = 0
    ws.odd_pos = -1


cdef inline uint64_t word_at(Words* ws, int64_t pos) noexcept nogil:
    """Word `pos` of the job: one Philox call makes two words, and the odd one
    is kept for the next read (no batches here)."""
    cdef uint32_t c[4]
    cdef uint64_t call = <uint64_t>(pos >> 1)
    if pos == ws.odd_pos:
        return ws.odd_word
    c[0] = <uint32_t>call
    c[1] = <uint32_t>(call >> 32)
    c[2] = ws.job_lo
    c[3] = ws.job_hi
    philox4x32_10(c, ws.k0, ws.k1)
    ws.odd_pos = pos | 1
    ws.odd_word = (<uint64_t>c[2] << 32) | c[3]
    if pos & 1:
        return ws.odd_word
    return (<uint64_t>c[0] << 32) | c[1]


cdef inline uint64_t next_word(Words* ws) noexcept nogil:
    cdef uint64_t w = word_at(ws, ws.pos)
    ws.pos += 1
    return w


cdef inline double word_to_uniform(uint64_t w) noexcept nogil:
    return (<double>(<int64_t>(w >> 11)) + 1.0) * (1.0 / 9007199254740992.0)


def uniforms(uint64_t seed, uint64_t scenario, int64_t job, int64_t first, double[::1] out):
    """out[i] = uniform number first + i of (seed, scenario, job) as `rng_numba.next_uniform`
    draws them (pipeline, elastic): the top 27 bits of a word's high half and
    the top 26 of its low half, (a * 2**26 + b + 1) / 2**53."""
    cdef Words ws
    cdef Py_ssize_t i
    cdef uint64_t w
    start_words(&ws, seed, scenario, job)
    for i in range(out.shape[0]):
        w = word_at(&ws, first + i)
        out[i] = (<double>(w >> 37) * 67108864.0 + <double>((w & 0xFFFFFFFF) >> 6) + 1.0) * (1.0 / 9007199254740992.0)


cdef inline double exp_neg(double x) noexcept nogil:
    """exp(-x), 0 <= x <= 16: the same operations as `rng_numba.exp_neg`."""
    cdef double k = floor(x * 1.4426950408889634 + 0.5)
    cdef double r = (k * 6.93147180369123816490e-01 - x) + k * 1.90821492927058770002e-10
    cdef double p = INV_FACTORIAL[12]
    cdef int n
    for n in range(11, -1, -1):
        p = p * r + INV_FACTORIAL[n]
    return p / <double>((<int64_t>1) << (<int64_t>k))


cdef inline bint ziggurat_candidate(uint64_t w, double* x) noexcept nogil:
    """The ziggurat's first step on word w (`rng_numba.ziggurat_candidate`): sets
    *x and tells whether it is accepted at once."""
    x[0] = <double>(<int64_t>(w >> 11)) * ZIG_WIDTH[w & 0xFF]
    return (w >> 11) < ZIG_ACCEPT[w & 0xFF]


cdef inline double next_exponential(Words* ws) noexcept nogil:
    """The 256-layer ziggurat of `rng_numba.next_exponential`, word for word."""
    cdef double base = 0.0, x, lower
    cdef uint64_t w, layer
    while True:
        w = next_word(ws)
        if ziggurat_candidate(w, &x):
            return base + x
        layer = w & 0xFF
        if layer == 0:
            base += ZIG_R
            continue
        w = next_word(ws)
        lower = ZIG_DENSITY[layer]
        if lower + word_to_uniform(w) * (ZIG_DENSITY[layer + 1] - lower) < exp_neg(x):
            return base + x


def job_draws(uint64_t seed, uint64_t scenario, int64_t job, uint64_t[::1] words, double[::1] xs):
    """words[:] = the job's first words, xs[:] = its exponentials from word 0 on."""
    cdef Words ws
    cdef Py_ssize_t i
    start_words(&ws, seed, scenario, job)
    for i in range(words.shape[0]):
        words[i] = next_word(&ws)
    start_words(&ws, seed, scenario, job)
    for i in range(xs.shape[0]):
        xs[i] = next_exponential(&ws)


def exp_neg_values(const double[::1] x, double[::1] out):
    """out[i] = exp_neg(x[i]) (for the test that both backends agree)."""
    cdef Py_ssize_t i
    for i in range(x.shape[0]):
        out[i] = exp_neg(x[i])


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
    double wait  # waiting for writes to persist (levels only)


cdef inline double time_to_failure(double e, double mean_ttf, double scale, double shape,
                                   double inv_shape) noexcept nogil:
    """A standard exponential as a time to failure: exponential (shape 1) or Weibull with the same mean."""
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


cdef inline Py_ssize_t draw_category(const double* cat_cdf, Py_ssize_t n_cats, Words* ws) noexcept nogil:
    """A failure's category; a single category takes no draw."""
    if n_cats == 1:
        return 0
    return inverse_cdf(cat_cdf, n_cats, word_to_uniform(next_word(ws)))


cdef JobResult simulate_job(const double* p, const double* rate_cdf, const double* rate_value,
                            const double* rate_hazard, Py_ssize_t n_rates,
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
    cdef Words ws
    cdef double e = INFINITY, lam, mean_ttf = 0.0, scale = 0.0, inv_shape = 0.0, t, left, k
    cdef Py_ssize_t entry = 0
    cdef JobResult r
    cdef bint finished = True
    start_words(&ws, seed, scenario, job)

    # The job's failure rate (per hour): one value, or one draw from the table.
    if n_rates > 1:
        entry = inverse_cdf(rate_cdf, n_rates, word_to_uniform(next_word(&ws)))
    lam = rate_value[entry]

    cdef double done = 0.0  # completed (checkpointed) intervals
    r.lost = 0.0
    r.restart = 0.0
    r.queue = 0.0
    r.failures = 0
    r.capped = 0
    r.wait = 0.0
    if lam > 0.0:
        e = next_exponential(&ws)
    # A first exponential at or above the job's cumulative hazard (plus a margin
    # for rounding) means no failure before the end: skip the path below.
    if e < rate_hazard[entry]:
        mean_ttf = 1.0 / lam
        scale = mean_ttf * p[P_SCALE_FACTOR]
        inv_shape = 1.0 / shape
        t = time_to_failure(e, mean_ttf, scale, shape, inv_shape)
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
                category = draw_category(cat_cdf, n_cats, &ws)
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
                    wait = queue * next_exponential(&ws)
                else:
                    wait = queue
                r.queue += wait
                if by_category:
                    cat_acc[category * N_CAT_STATS + C_QUEUE] += wait
                t = time_to_failure(next_exponential(&ws), mean_ttf, scale, shape, inv_shape)
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
                    category = draw_category(cat_cdf, n_cats, &ws)
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


cdef enum:
    _COMPUTE = 0
    _WAIT = 1
    _WRITE = 2


cdef inline Py_ssize_t position_level(int64_t j, const int64_t* lv_mult, Py_ssize_t n_levels) noexcept nogil:
    """The level written at position j: the most durable one due there."""
    cdef Py_ssize_t lv
    for lv in range(n_levels - 1, 0, -1):
        if j % lv_mult[lv] == 0:
            return lv
    return 0


# The cycle tables of a row whose writes never wait (`engine.level_cycle`): over
# one cycle of M positions (the lcm of the level multiples), value[r] is the
# path value (compute and writes) at offset r, and index holds, per level, the
# last offset <= r of that level (0: none) and the count of them up to r.

cdef inline int64_t cycle_quotient(int64_t j, int64_t m, double inv_m) noexcept nogil:
    """j // m for 0 <= j < 2**53 by a multiplication, made exact (`timeline_numba.cycle_quotient`)."""
    cdef int64_t q = <int64_t>(<double>j * inv_m)
    if q * m > j:
        q -= 1
    elif (q + 1) * m <= j:
        q += 1
    return q


cdef inline double cycle_value(int64_t j, const double* value, int64_t m, double inv_m) noexcept nogil:
    """The path value at position j: compute and writes from the job's start (value has m + 1 entries)."""
    cdef int64_t q = cycle_quotient(j, m, inv_m)
    return <double>q * value[m] + value[j - q * m]


cdef inline int64_t cycle_position_at(double x, const double* value, int64_t m, double inv_per_cycle,
                                      int64_t n_full) noexcept nogil:
    """The last position (<= n_full) whose write has ended by path value x (0 if none)."""
    cdef double per_cycle, base
    cdef int64_t q, lo, j, r
    if x < 0.0:
        return 0
    per_cycle = value[m]
    q = <int64_t>(x * inv_per_cycle)
    while q > 0 and <double>q * per_cycle > x:  # rounding of the division either way
        q -= 1
    while <double>(q + 1) * per_cycle <= x:
        q += 1
    base = <double>q * per_cycle
    lo = 0
    for r in range(1, m):  # a count of the offsets reached, as in timeline_numba
        lo += base + value[r] <= x
    j = q * m + lo
    return j if j < n_full else n_full


cdef inline int64_t cycle_last(Py_ssize_t lv, int64_t q, int64_t r, const int64_t* index, int64_t m) noexcept nogil:
    """The last position <= j = q m + r of level lv (0: none)."""
    cdef int64_t row = lv * (m + 1)
    cdef int64_t offset = index[row + r]
    if offset > 0:
        return q * m + offset
    if q > 0 and index[row + m] > 0:
        return (q - 1) * m + index[row + m]
    return 0


cdef JobResult simulate_levels_job(const double* p, const double* rate_cdf, const double* rate_value,
                                   Py_ssize_t n_rates, const double* cat_cdf, const double* cat_restart,
                                   const double* cat_queue, Py_ssize_t n_cats, double* cat_acc,
                                   const int64_t* lv_mult, const double* lv_table, Py_ssize_t n_levels,
                                   const double* cyc_value, Py_ssize_t n_cyc_value, const int64_t* cyc_index,
                                   double* lv_acc, double* state, uint64_t seed, uint64_t scenario,
                                   int64_t job, int64_t max_failures) noexcept nogil:
    """One job with checkpoint levels (fast levels, or a write that persists):
    the twin of `timeline_numba.simulate_levels_job`. lv_table[level * N_LEVEL_PARAMS + V_*]
    are the row's levels; it adds writes, restores and waits into
    lv_acc[level * N_LEVEL_STATS + L_*]; `state` is scratch of 5 * n_levels.
    With cycle tables (n_cyc_value > 0) it jumps from one failure to the next;
    else it steps through positions of the fastest level."""
    cdef double d0 = p[P_INTERVAL]
    cdef int64_t n_full = <int64_t>p[P_N_FULL]
    cdef double remainder = p[P_REMAINDER]
    cdef double restart_top = p[P_RESTART]
    cdef double queue = p[P_QUEUE]
    cdef double shape = p[P_SHAPE]
    cdef bint queue_exp = p[P_QUEUE_EXP] != 0.0
    cdef bint by_category = n_cats > 0
    cdef Py_ssize_t top = n_levels - 1
    cdef double* latest_pos = state
    cdef double* latest_val = state + n_levels
    cdef double* pend_pos = state + 2 * n_levels
    cdef double* pend_val = state + 3 * n_levels
    cdef double* pend_at = state + 4 * n_levels
    cdef Py_ssize_t lv, k, lowest, best
    cdef Py_ssize_t category = 0
    cdef Py_ssize_t entry = 0
    cdef Words ws
    cdef double lam, mean_ttf, scale, inv_shape, fail_at, e, u, t, wait, path, lost_now, restart
    cdef double now, val, end
    cdef int64_t pos
    cdef int phase
    cdef bint finished
    cdef JobResult r
    cdef bint jump, finish
    cdef int64_t m, last, q_last, r_last, q_pos, r_pos, row, durable, reached, q
    cdef double inv_m, inv_per_cycle, end_value, span, persist
    for lv in range(top + 1):
        latest_pos[lv] = 0.0
        latest_val[lv] = 0.0
        pend_pos[lv] = -1.0
    start_words(&ws, seed, scenario, job)
    if n_rates > 1:
        entry = inverse_cdf(rate_cdf, n_rates, word_to_uniform(next_word(&ws)))
    lam = rate_value[entry]
    mean_ttf = 1.0 / lam if lam > 0.0 else INFINITY
    scale = mean_ttf * p[P_SCALE_FACTOR]
    inv_shape = 1.0 / shape
    fail_at = INFINITY
    if lam > 0.0:
        e = next_exponential(&ws)
        fail_at = time_to_failure(e, mean_ttf, scale, shape, inv_shape)

    now = 0.0  # runtime clock: compute, writes, waits, restarts
    pos = 0  # last position written on the current path
    val = 0.0  # path value: compute and writes since the start up to here
    lv = 0
    end = 0.0
    r.lost = 0.0
    r.restart = 0.0
    r.queue = 0.0
    r.wait = 0.0
    r.failures = 0
    r.capped = 0
    finished = False
    phase = _COMPUTE
    jump = n_cyc_value > 0
    m = n_cyc_value - 1
    inv_m = 1.0 / <double>m if jump else 0.0
    inv_per_cycle = 1.0 / cyc_value[m] if jump else 0.0
    end_value = cycle_value(n_full, cyc_value, m, inv_m) + remainder if jump else 0.0
    while True:
        if jump:  # from here to the next failure (or the end) in one step
            span = fail_at - now
            finish = span >= end_value - val
            last = n_full if finish else cycle_position_at(val + span, cyc_value, m, inv_per_cycle, n_full)
            q_last = cycle_quotient(last, m, inv_m)
            r_last = last - q_last * m
            q_pos = cycle_quotient(pos, m, inv_m)
            r_pos = pos - q_pos * m
            for k in range(top + 1):  # writes of positions pos + 1 .. last, from the per-cycle counts
                row = (top + 1 + k) * (m + 1)
                lv_acc[k * N_LEVEL_STATS + L_WRITES] += <double>((q_last - q_pos) * cyc_index[row + m]
                                                                 + cyc_index[row + r_last] - cyc_index[row + r_pos])
            if finish:
                finished = True
                break
            path = val + span
            for k in range(top + 1):  # the latest write of each level durable by the failure
                persist = lv_table[k * N_LEVEL_PARAMS + V_PERSIST]
                if persist == 0.0:
                    durable = cycle_last(k, q_last, r_last, cyc_index, m)
                else:
                    reached = cycle_position_at(path - persist, cyc_value, m, inv_per_cycle, last)
                    q = cycle_quotient(reached, m, inv_m)
                    durable = cycle_last(k, q, reached - q * m, cyc_index, m)
                if durable > pos:
                    latest_pos[k] = <double>durable
                    latest_val[k] = cycle_value(durable, cyc_value, m, inv_m)
        else:
            if phase == _COMPUTE:
                end = now + (remainder if pos >= n_full else d0)
            elif phase == _WAIT:
                end = pend_at[lv]
            else:
                end = now + lv_table[lv * N_LEVEL_PARAMS + V_COST]
            if fail_at >= end:  # the phase completes (a failure exactly at its end does not stop it)
                if phase == _COMPUTE:
                    now = end
                    if pos >= n_full:
                        finished = True
                        break
                    val += d0
                    lv = position_level(pos + 1, lv_mult, n_levels)
                    phase = _WRITE
                    if pend_pos[lv] >= 0.0:
                        # Only a level that persists longer than its interval waits (else
                        # the write is durable by now, up to rounding of the clock).
                        if pend_at[lv] > now and lv_table[lv * N_LEVEL_PARAMS + V_PERSIST] > <double>lv_mult[lv] * d0:
                            phase = _WAIT
                        else:
                            latest_pos[lv] = pend_pos[lv]
                            latest_val[lv] = pend_val[lv]
                            pend_pos[lv] = -1.0
                elif phase == _WAIT:
                    wait = end - now
                    r.wait += wait
                    lv_acc[lv * N_LEVEL_STATS + L_WAIT] += wait
                    now = end
                    latest_pos[lv] = pend_pos[lv]
                    latest_val[lv] = pend_val[lv]
                    pend_pos[lv] = -1.0
                    phase = _WRITE
                else:
                    now = end
                    val += lv_table[lv * N_LEVEL_PARAMS + V_COST]
                    pos += 1
                    lv_acc[lv * N_LEVEL_STATS + L_WRITES] += 1.0
                    if lv_table[lv * N_LEVEL_PARAMS + V_PERSIST] == 0.0:
                        latest_pos[lv] = <double>pos
                        latest_val[lv] = val
                    else:
                        pend_pos[lv] = <double>pos
                        pend_val[lv] = val
                        pend_at[lv] = now + lv_table[lv * N_LEVEL_PARAMS + V_PERSIST]
                    phase = _COMPUTE
                continue

            # A failure at fail_at, in this phase.
            if phase == _WAIT:
                wait = fail_at - now
                r.wait += wait
                lv_acc[lv * N_LEVEL_STATS + L_WAIT] += wait
                path = val
            else:
                path = val + (fail_at - now)
        now = fail_at
        for k in range(0 if jump else top + 1):  # writes durable by now are kept (none pend when jumping)
            if pend_pos[k] >= 0.0 and pend_at[k] <= now:
                latest_pos[k] = pend_pos[k]
                latest_val[k] = pend_val[k]
            pend_pos[k] = -1.0
        r.failures += 1
        if by_category:
            category = draw_category(cat_cdf, n_cats, &ws)
            cat_acc[category * N_CAT_STATS + C_FAILURES] += 1.0
        # Restore, queue, then restart attempts until one runs without failing;
        # a failed restart is a failure that draws and restores again.
        while True:
            lowest = 0
            if top > 0:
                u = word_to_uniform(next_word(&ws))
                while u > lv_table[lowest * N_LEVEL_PARAMS + V_SURVIVES]:
                    lowest += 1
            best = top
            for k in range(top - 1, lowest - 1, -1):
                if latest_pos[k] > latest_pos[best]:
                    best = k
            for k in range(lowest):
                latest_pos[k] = 0.0
                latest_val[k] = 0.0
            lost_now = path - latest_val[best]
            r.lost += lost_now
            pos = <int64_t>latest_pos[best]
            val = latest_val[best]
            path = val
            lv_acc[best * N_LEVEL_STATS + L_RESTORES] += 1.0
            if by_category:
                cat_acc[category * N_CAT_STATS + C_LOST] += lost_now
                queue = cat_queue[category]
                restart_top = cat_restart[category]
            restart = restart_top if best == top else lv_table[best * N_LEVEL_PARAMS + V_RESTART]
            if r.failures >= max_failures:
                r.capped = 1
                break
            if queue_exp:
                wait = queue * next_exponential(&ws)
            else:
                wait = queue
            r.queue += wait
            if by_category:
                cat_acc[category * N_CAT_STATS + C_QUEUE] += wait
            t = time_to_failure(next_exponential(&ws), mean_ttf, scale, shape, inv_shape)
            if t >= restart:
                r.restart += restart
                if by_category:
                    cat_acc[category * N_CAT_STATS + C_RESTART] += restart
                now += restart
                fail_at = now + (t - restart)
                break
            r.restart += t
            if by_category:
                cat_acc[category * N_CAT_STATS + C_RESTART] += t
            now += t
            r.failures += 1
            if by_category:
                category = draw_category(cat_cdf, n_cats, &ws)
                cat_acc[category * N_CAT_STATS + C_FAILURES] += 1.0
        if r.capped:
            break
        phase = _COMPUTE

    if finished:
        r.productive = p[P_WORK]
        r.checkpoint = p[P_FF_CKPT]
    else:
        r.productive = <double>pos * d0
        r.checkpoint = val - r.productive
    r.wall = r.productive + r.checkpoint + r.lost + r.restart + r.queue + r.wait
    return r


cdef double* level_scratch(const int64_t[::1] lv_offset) except? NULL:
    """Scratch of 5 rows by the most levels of any row (`simulate_levels_job`'s
    `state`); NULL when no row has levels. The caller frees it."""
    cdef Py_ssize_t s, most = 0
    cdef double* state
    for s in range(lv_offset.shape[0] - 1):
        if lv_offset[s + 1] - lv_offset[s] > most:
            most = lv_offset[s + 1] - lv_offset[s]
    if most == 0:
        return NULL
    state = <double*>malloc(5 * most * sizeof(double))
    if state == NULL:
        raise MemoryError()
    return state


def run_blocks(const double[:, ::1] params, const double[::1] rate_cdf,
               const double[::1] rate_value, const double[::1] rate_hazard,
               const int64_t[::1] rate_offset, const double[::1] cat_cdf,
               const double[::1] cat_restart, const double[::1] cat_queue,
               const int64_t[::1] cat_offset, const int64_t[::1] lv_mult,
               const double[:, ::1] lv_table, const int64_t[::1] lv_offset, const double[::1] cyc_value,
               const int64_t[::1] cyc_value_offset, const int64_t[::1] cyc_index,
               const int64_t[::1] cyc_index_offset, uint64_t seed,
               const uint64_t[::1] scenario_key, const int64_t[::1] item_scenario,
               const int64_t[::1] item_block, int64_t n_jobs, int64_t max_failures,
               double[:, ::1] out_stats, const int64_t[::1] item_hist, int64_t[:, :, ::1] out_hist,
               double[:, :, ::1] out_cat, double[:, :, ::1] out_level, int64_t n_groups):
    """Sums of each work item (scenario row, block of BLOCK_SIZE jobs) in
    out_stats[item]; its jobs counted into out_hist[0, item_hist[item]] (zeroed
    by the caller); out_cat[item, category] gets the per-category sums,
    out_level[item, level] the per-level ones (none without levels).
    n_groups: the Numba twin's grouping of items, unused (serial: no bit depends on it)."""
    cdef Py_ssize_t it, s, c, n_cats, n_rates, n_levels
    cdef double* acc
    cdef double* lv_acc
    cdef const double* c_cdf = NULL
    cdef const double* c_restart = NULL
    cdef const double* c_queue = NULL
    cdef const int64_t* mult = NULL
    cdef const double* levels = NULL
    cdef const double* c_value = NULL
    cdef const int64_t* c_index = NULL
    cdef Py_ssize_t n_value
    cdef int64_t job, first, last, n_settled
    cdef double work, failure_free_ckpt, failure_free_wall, failure_free_eff, d_wall, d_prod, d_eff, fail, y
    cdef double n, wall_sum, wall_sq, prod_sum, prod_sq, prod_wall, eff_sum, eff_sq
    cdef double ckpt_sum, lost_sum, restart_sum, queue_sum, fail_sum, fail_sq, capped_sum, wait_sum
    cdef double bound
    cdef bint single_rate, no_failures, settle, settle_all, with_levels
    cdef Words ws
    cdef int64_t* hist
    cdef JobResult r
    cdef double* state = level_scratch(lv_offset)
    try:
        with nogil:
            for it in range(item_scenario.shape[0]):
                s = item_scenario[it]
                n_cats = cat_offset[s + 1] - cat_offset[s]
                if n_cats > 0:
                    c_cdf = &cat_cdf[cat_offset[s]]
                    c_restart = &cat_restart[cat_offset[s]]
                    c_queue = &cat_queue[cat_offset[s]]
                acc = &out_cat[it, 0, 0] if out_cat.shape[1] > 0 else NULL
                for c in range(out_cat.shape[1] * N_CAT_STATS):
                    acc[c] = 0.0
                n_levels = lv_offset[s + 1] - lv_offset[s]
                if n_levels > 0:
                    mult = &lv_mult[lv_offset[s]]
                    levels = &lv_table[lv_offset[s], 0]
                n_value = cyc_value_offset[s + 1] - cyc_value_offset[s]
                if n_value > 0:
                    c_value = &cyc_value[cyc_value_offset[s]]
                    c_index = &cyc_index[cyc_index_offset[s]]
                lv_acc = &out_level[it, 0, 0] if out_level.shape[1] > 0 else NULL
                for c in range(out_level.shape[1] * N_LEVEL_STATS):
                    lv_acc[c] = 0.0
                with_levels = n_levels > 0
                # Sums of deviations from the failure-free job: exact zeros when no job fails.
                work = params[s, P_WORK]
                failure_free_ckpt = params[s, P_FF_CKPT]
                failure_free_wall = work + failure_free_ckpt + params[s, P_FF_WAIT]
                failure_free_eff = work / failure_free_wall
                hist = &out_hist[0, item_hist[it], 0]
                n = wall_sum = wall_sq = prod_sum = prod_sq = prod_wall = eff_sum = eff_sq = 0.0
                ckpt_sum = lost_sum = restart_sum = queue_sum = fail_sum = fail_sq = capped_sum = wait_sum = 0.0
                first = item_block[it] * BLOCK_SIZE
                last = first + BLOCK_SIZE
                if last > n_jobs:
                    last = n_jobs
                # The Numba kernel's settling pass, job by job: a job whose first
                # exponential is at or above the bound is added last.
                # Rows with levels are never settled.
                n_rates = rate_offset[s + 1] - rate_offset[s]
                single_rate = n_rates == 1
                no_failures = single_rate and rate_value[rate_offset[s]] == 0.0
                bound = rate_hazard[rate_offset[s]] if single_rate else 0.0
                settle = (single_rate and not no_failures and bound < SETTLE_MAX_HAZARD_MILLI / 1000.0
                          and not with_levels)
                settle_all = no_failures and not with_levels
                n_settled = last - first if settle_all else 0
                for job in range(first, first if settle_all else last):
                    if settle:
                        start_words(&ws, seed, scenario_key[s], job)
                        if next_exponential(&ws) >= bound:
                            n_settled += 1
                            continue
                    if with_levels:
                        r = simulate_levels_job(&params[s, 0], &rate_cdf[rate_offset[s]],
                                                &rate_value[rate_offset[s]], n_rates,
                                                c_cdf, c_restart, c_queue, n_cats, acc,
                                                mult, levels, n_levels, c_value, n_value, c_index, lv_acc, state,
                                                seed, scenario_key[s], job, max_failures)
                        wait_sum += r.wait
                    else:
                        r = simulate_job(&params[s, 0], &rate_cdf[rate_offset[s]], &rate_value[rate_offset[s]],
                                         &rate_hazard[rate_offset[s]], n_rates,
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
                        hist[N_BINS] += 1
                    else:
                        hist[<Py_ssize_t>(y * N_BINS)] += 1
                # Settled jobs ran failure free: deviations of exactly zero, the full checkpoint time.
                n += <double>n_settled
                ckpt_sum += <double>n_settled * failure_free_ckpt
                hist[N_BINS] += n_settled
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
                out_stats[it, S_WAIT] = wait_sum
    finally:
        free(state)


def run_jobs(const double[:, ::1] params, const double[::1] rate_cdf,
             const double[::1] rate_value, const double[::1] rate_hazard,
             const int64_t[::1] rate_offset, const double[::1] cat_cdf,
             const double[::1] cat_restart, const double[::1] cat_queue,
             const int64_t[::1] cat_offset, const int64_t[::1] lv_mult,
             const double[:, ::1] lv_table, const int64_t[::1] lv_offset, const double[::1] cyc_value,
             const int64_t[::1] cyc_value_offset, const int64_t[::1] cyc_index,
             const int64_t[::1] cyc_index_offset, uint64_t seed,
             const uint64_t[::1] scenario_key, int64_t first_job, int64_t max_failures,
             double[:, :, ::1] out, double[:, :, :, ::1] out_cat, double[:, :, :, ::1] out_level):
    """Per-job outputs: out[s, i] for job first_job + i of scenario row s, and its
    per-category and per-level sums in out_cat[s, i] and out_level[s, i]."""
    cdef Py_ssize_t s, i, c, n_cats, n_levels
    cdef double* acc
    cdef double* lv_acc
    cdef const double* c_cdf = NULL
    cdef const double* c_restart = NULL
    cdef const double* c_queue = NULL
    cdef const int64_t* mult = NULL
    cdef const double* levels = NULL
    cdef const double* c_value = NULL
    cdef const int64_t* c_index = NULL
    cdef Py_ssize_t n_value
    cdef JobResult r
    cdef double* state = level_scratch(lv_offset)
    try:
        with nogil:
            for s in range(out.shape[0]):
                n_cats = cat_offset[s + 1] - cat_offset[s]
                if n_cats > 0:
                    c_cdf = &cat_cdf[cat_offset[s]]
                    c_restart = &cat_restart[cat_offset[s]]
                    c_queue = &cat_queue[cat_offset[s]]
                n_levels = lv_offset[s + 1] - lv_offset[s]
                if n_levels > 0:
                    mult = &lv_mult[lv_offset[s]]
                    levels = &lv_table[lv_offset[s], 0]
                n_value = cyc_value_offset[s + 1] - cyc_value_offset[s]
                if n_value > 0:
                    c_value = &cyc_value[cyc_value_offset[s]]
                    c_index = &cyc_index[cyc_index_offset[s]]
                for i in range(out.shape[1]):
                    acc = &out_cat[s, i, 0, 0] if out_cat.shape[2] > 0 else NULL
                    for c in range(out_cat.shape[2] * N_CAT_STATS):
                        acc[c] = 0.0
                    lv_acc = &out_level[s, i, 0, 0] if out_level.shape[2] > 0 else NULL
                    for c in range(out_level.shape[2] * N_LEVEL_STATS):
                        lv_acc[c] = 0.0
                    if n_levels > 0:
                        r = simulate_levels_job(&params[s, 0], &rate_cdf[rate_offset[s]],
                                                &rate_value[rate_offset[s]], rate_offset[s + 1] - rate_offset[s],
                                                c_cdf, c_restart, c_queue, n_cats, acc,
                                                mult, levels, n_levels, c_value, n_value, c_index, lv_acc, state,
                                                seed, scenario_key[s], first_job + i, max_failures)
                    else:
                        r = simulate_job(&params[s, 0], &rate_cdf[rate_offset[s]], &rate_value[rate_offset[s]],
                                         &rate_hazard[rate_offset[s]], rate_offset[s + 1] - rate_offset[s],
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
                    out[s, i, J_WAIT] = r.wait
    finally:
        free(state)
