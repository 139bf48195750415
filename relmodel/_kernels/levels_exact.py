"""The exact E[wall] with checkpoint levels, a cycle at a time (Numba).

The semantics and the result vectors are those of
`relmodel._levels_closed_form` (see `levels_expected_wall`): res[p] = [B, C,
F_0..F_L] for the run from compute start p. A *cycle* is the positions
c*mL .. (c+1)*mL - 1 (mL = mult[L]); all their runs end at the same moment,
the next level-L position J's durable time (or the job's end).

Why this is linear in the positions: on the cycle's own failure-free clock
the new checkpoints are durable at fixed times D_j, so the stretches between
them, and G[i, k] (the latest position of level >= k durable by stretch i),
are the same for every run of the cycle. The run from p sees stretch i with
the staircase G[i, :eta], eta the number of levels with G[i, k] > p. So the
failure part of run p is that of run p + 1 discounted by its first piece, plus
the first piece's own (nothing new durable yet), plus a correction on the
stretches where p + 1 is a top: each stretch changes its row at most L times
over the cycle.

Everything is float64 on clocks local to the cycle (no absolute times, which
would lose digits on long jobs). `res` and `roff` are rings (position modulo
res.shape[0], cycle modulo roff.shape[0]) so the caller can keep only the
window later cycles read and jump over periods.
"""

import numpy as np
from numba import njit

from ._jit import JIT_OPTIONS

# Result vector layout: B, C, then F_0..F_L.
_B = 0
_C = 1
_F = 2


@njit(**JIT_OPTIONS)
def level_of(j, mult):
    """The level written at position j (the top level at 0, the job start)."""
    top = mult.size - 1
    for l in range(top, 0, -1):
        if j % mult[l] == 0:
            return l
    return 0


@njit(**JIT_OPTIONS)
def _row(G, i, eta, res, lev, lo, p_first, p_above, through, cut, attempt, X, out, o):
    """Write to out[o] the exit vector of a failure in stretch i with the staircase G[i, :eta] (see
    `_Exact.first_draw`).

    X[l] is the vector after restoring G[i, l] where its level is l, solved
    from the top level down: a restore only ever leads to higher collapse
    levels. (Rows are indexed, not sliced: a view costs reference counting.)
    """
    L = p_first.size - 1
    size = out.shape[1]
    R = res.shape[0]
    for s in range(size):
        out[o, s] = 0.0
    for k in range(eta, L + 1):
        out[o, _F + k] = p_first[k]
    if eta == 0:
        return  # nothing new is durable: the run falls back
    for l in range(eta - 1, -1, -1):
        q = G[i, l]
        if lev[q - lo] != l:
            continue  # G[i, l] has a higher level: its restore is X[that level]
        r = q % R
        for s in range(size):
            X[l, s] = 0.0
        X[l, _B] = attempt[l] + through[l] * res[r, _B]
        X[l, _C] = through[l] * res[r, _C]
        falls = 0.0
        for k in range(l + 1, L + 1):
            falls += res[r, _F + k]
        denominator = cut[l] * p_above[l] + through[l] * (res[r, _C] + falls)
        for k in range(l + 1, L + 1):
            w = cut[l] * p_first[k] + through[l] * res[r, _F + k]
            if w == 0.0:
                continue
            if k >= eta:
                X[l, _F + k] += w
            else:
                above = lev[G[i, k] - lo]
                for s in range(size):
                    X[l, s] += w * X[above, s]
        for s in range(size):
            X[l, s] /= denominator
    for l in range(eta):
        if p_first[l] > 0.0:
            above = lev[G[i, l] - lo]
            for s in range(size):
                out[o, s] += p_first[l] * X[above, s]


@njit(**JIT_OPTIONS)
def _falls(v):
    total = 0.0
    for k in range(_F, v.size):
        total += v[k]
    return total


@njit(**JIT_OPTIONS)
def renewal_value(res, roff, J, mL, r_star, has_persist):
    """Expected time from the moment J's level-L checkpoint is durable to the job's end."""
    start = res[J % res.shape[0]]
    flat = (start[_B] + _falls(start) * r_star) / start[_C]
    ren = roff[(J // mL) % roff.shape[0]] if has_persist else start
    return ren[_B] + _falls(ren) * (r_star + flat)


@njit(**JIT_OPTIONS)
def _fail_from(start, bounds, rows, n_s, t_cut, empty, lam, out):
    """Write to out the failure part of a run whose clock starts at `start` (on the cycle's clock):
    each stretch by its row (the one holding `start` from there), nothing new durable before the first."""
    out[:] = 0.0
    for i in range(n_s):
        if bounds[i + 1] <= start:
            continue
        from_ = max(bounds[i], start)
        w = np.exp(-lam * (from_ - start)) * -np.expm1(-lam * (bounds[i + 1] - from_))
        for s in range(out.size):
            out[s] += w * rows[i, s]
    if n_s == 0 or bounds[0] > start:
        w = -np.expm1(-lam * ((bounds[0] if n_s else t_cut) - start))
        for s in range(out.size):
            out[s] += w * empty[s]


@njit(**JIT_OPTIONS)
def _close(table, r, span, lam, renew, v_renew):
    """Add to table[r] what a run of `span` left after its failure part: its mean time, the chance of
    surviving it, and then the renewal's value."""
    survive = np.exp(-lam * span)
    table[r, _B] += -np.expm1(-lam * span) / lam
    table[r, _C] += survive
    if renew:
        table[r, _B] += survive * v_renew


@njit(**JIT_OPTIONS)
def solve_cycles(c_hi, c_lo, lam, n, rem, d0, mult, cost, persist, wait, p_first, p_above, through, cut, attempt,
                 r_star, res, roff):
    """Fill res (and roff) for the cycles c_hi down to c_lo; later cycles must be there already.

    wait: with one level only, how long each write after a run's first waits for
    the one before it to be durable (persist - d0 where positive, else 0): the
    run from a restore has nothing in flight, so its first write never waits.
    """
    L = mult.size - 1
    mL = mult[L]
    size = L + 3
    R = res.shape[0]
    has_persist = persist[L] > 0.0
    # Per-cycle buffers: a cycle sees at most its 2 mL positions above its first (and the job's).
    most = min(2 * mL, n) + 2
    t = np.empty(most)
    lev = np.empty(most, dtype=np.int64)
    order_D = np.empty(most)
    order_j = np.empty(most, dtype=np.int64)
    bounds = np.empty(most)
    G = np.empty((most, max(L, 1)), dtype=np.int64)
    start_of = np.empty(most, dtype=np.int64)
    weight_of = np.empty(most)
    eta = np.empty(most, dtype=np.int64)
    rows = np.empty((most, size))
    top = np.empty(max(L, 1), dtype=np.int64)
    fail = np.empty(size)
    X = np.zeros((max(L, 1), size))
    empty = np.zeros(size)
    for k in range(L + 1):
        empty[_F + k] = p_first[k]
    new_row = np.empty((1, size))
    acc = np.empty(size)
    # The first piece of a run, by the level it writes: e^(-lam piece) and 1 - that (the wait, if
    # any, comes on top for all but a cycle's first position).
    keep_of = np.empty((2, L + 1))
    lost_of = np.empty((2, L + 1))
    for l in range(L + 1):
        for w in range(2):
            keep_of[w, l] = np.exp(-lam * (d0 + cost[l] + w * wait))
            lost_of[w, l] = -np.expm1(-lam * (d0 + cost[l] + w * wait))
    for c in range(c_hi, c_lo - 1, -1):
        lo = c * mL
        hi = min(n, lo + mL - 1)
        J = lo + mL
        last = min(n, J + mL)
        # The failure-free clock of the cycle, 0 at lo's compute start.
        t[0] = 0.0
        lev[0] = level_of(lo, mult)
        for j in range(lo + 1, last + 1):
            lev[j - lo] = level_of(j, mult)
            t[j - lo] = t[j - lo - 1] + d0 + cost[lev[j - lo]] + (wait if j > lo + 1 else 0.0)
        t_end = t[n - lo] + rem if last == n else np.inf
        renew = False
        t_cut = t_end
        if J <= n:
            durable_J = t[J - lo] + persist[L]
            if durable_J < t_end:
                renew = True
                t_cut = durable_J
        # Fast checkpoints durable before the cut, by durable time.
        m = 0
        for j in range(lo + 1, last + 1):
            l = lev[j - lo]
            if l < L and t[j - lo] + persist[l] < t_cut:
                order_D[m] = t[j - lo] + persist[l]
                order_j[m] = j
                m += 1
        order = np.argsort(order_D[:m], kind="mergesort")
        # Stretches [bounds[i], bounds[i + 1]), bounds[n_s] = t_cut; G[i, k] the latest of level >= k durable.
        start_of[:last - lo + 1] = -1  # the stretch at whose start j is durable
        n_s = 0
        top[:] = -1
        e = 0
        while e < m:
            at = order_D[order[e]]
            while e < m and order_D[order[e]] <= at:
                j = order_j[order[e]]
                for k in range(lev[j - lo] + 1):
                    if j > top[k]:
                        top[k] = j
                start_of[j - lo] = n_s
                e += 1
            bounds[n_s] = at
            G[n_s, :] = top
            n_s += 1
        bounds[n_s] = t_cut
        for i in range(n_s):  # a failure in stretch i, from its start: 1 - e^(-lam span)
            weight_of[i] = -np.expm1(-lam * (bounds[i + 1] - bounds[i]))
        # The run from hi, directly; then each run from the one above it.
        for i in range(n_s):
            k = 0
            while k < L and G[i, k] > hi:
                k += 1
            eta[i] = k
            _row(G, i, k, res, lev, lo, p_first, p_above, through, cut, attempt, X, rows, i)
        _fail_from(t[hi - lo], bounds, rows, n_s, t_cut, empty, lam, acc)
        v_renew = renewal_value(res, roff, J, mL, r_star, has_persist) if renew else 0.0
        for p in range(hi, lo - 1, -1):
            if p < hi:
                j = p + 1
                i = start_of[j - lo]
                if i >= 0:
                    lj = lev[j - lo]
                    for s in range(size):
                        fail[s] = 0.0
                    while i < n_s:
                        hit = False
                        for k in range(min(lj + 1, L)):
                            if G[i, k] == j:
                                hit = True
                        if not hit:
                            break
                        k = eta[i]
                        while k < L and G[i, k] >= j:
                            k += 1
                        eta[i] = k
                        _row(G, i, k, res, lev, lo, p_first, p_above, through, cut, attempt, X, new_row, 0)
                        w = np.exp(-lam * (bounds[i] - t[j - lo])) * weight_of[i]
                        for s in range(size):
                            fail[s] += w * (new_row[0, s] - rows[i, s])
                            rows[i, s] = new_row[0, s]
                        i += 1
                    for s in range(size):
                        acc[s] += fail[s]
                waited = 1 if j > lo + 1 else 0
                keep = keep_of[waited, lev[j - lo]]
                lost = lost_of[waited, lev[j - lo]]
                for s in range(size):
                    acc[s] = keep * acc[s] + lost * empty[s]
            r = p % R
            for s in range(size):
                res[r, s] = acc[s]
            _close(res, r, t_cut - t[p - lo], lam, renew, v_renew)
        if has_persist:
            # The run from lo with its clock at lo's durable moment: persist[L], less the wait of the
            # next write (it had computed only d0 of it by then); the job's remainder never waits.
            r = c % roff.shape[0]
            start = persist[L] - (wait if lo < n else 0.0)
            if t_cut <= start:
                roff[r, :] = 0.0
                roff[r, _C] = 1.0
                continue
            _fail_from(start, bounds, rows, n_s, t_cut, empty, lam, fail)
            for s in range(size):
                roff[r, s] = fail[s]
            _close(roff, r, t_cut - start, lam, renew, v_renew)
