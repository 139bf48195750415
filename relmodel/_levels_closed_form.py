"""Closed forms for checkpoint levels: the exact E[wall] and a first-order ETTR.

Plain functions on floats, ints and sequences over the levels 0..L (fastest
first; level L is the scenario's own checkpoint), for exponential failures at
`lam` per hour of runtime. The semantics are those of docs:
user-guide/checkpoint-strategies.md, 'Semantics': positions j = 1..n_full every
`d0` of compute, position j writes only level
lev(j) = max{l : j % mult[l] == 0}, a write of level l blocks for cost[l] and
becomes restorable persist[l] later, a failure draws one uniform for which
levels survive (nested), restores the latest restorable checkpoint and restarts
from it.

`levels_expected_wall` is exact (to float rounding) where no write ever waits
for the persistence of the one before it, for one level alone also where its
writes wait, and with fast levels where the durable level's writes wait and
the fast levels' do not; `levels_first_order` is the first-order form for long
jobs.
Two engines solve the same equations: `_Cycles` (the default, a cycle of
level-L positions at a time in `_kernels.levels_exact`, linear in the
positions) and `_Exact` (a position at a time, the reference the tests hold
the default to). Nothing here depends on a Scenario: the caller
splits the work (`relmodel._level_pattern.split_work` on the base interval) and
passes the levels as plain sequences.
"""

from __future__ import annotations

import math

import numpy as np

MAX_STATES = 10**6  # runs and restore states one evaluation of the positions engine may solve
# Positions and stretches its runs may walk (building and sliding them): where the durable writes
# wait, the walk grows with the square of the durable level's multiple of the fastest interval
# (800: 4e7 steps), and this bound keeps an evaluation to seconds rather than minutes.
MAX_STEPS = 10**8
# The cycles engine jumps over the periods of the level pattern where it can; it gives up past
# MAX_POSITIONS solved one by one (its rounding grows with them, about eps each).
MAX_POSITIONS = 2**26
# A wait for persistence shorter than this (relative to d0) is float noise, as in the
# simulation: a persist that long past the gap before the next write is clamped to it.
WAIT_TOLERANCE = 1e-9
# levels_first_order is flagged invalid where lam times the longest stretch a failure
# can lose (the oldest checkpoint's age plus the longest restart) exceeds this: the
# terms it drops are of order (lam * stretch)^2.
FIRST_ORDER_LIMIT = 0.1
_PERIOD_RTOL = 4 * np.finfo(float).eps  # "periodic": equal to this, relative (rounding noise)
# B's increment per period is a difference of times that grow with the job: it repeats only to
# the rounding of those times, which is what this bound (relative to B) allows.
_INCREMENT_RTOL = 64 * np.finfo(float).eps
_PATTERN_MAX = 10**6  # longest level pattern (lcm of the multiples) scanned position by position


class _Levels:
    """The levels, checked, with the constants both forms share."""

    def __init__(self, d0, mult, cost, restart, persist, survives, categories):
        self.L = L = len(mult) - 1
        if L < 0 or not all(len(x) == L + 1 for x in (cost, restart, persist, survives)):
            raise ValueError("mult, cost, restart, persist and survives need one entry per level 0..L")
        self.d0 = float(d0)
        if not self.d0 > 0:
            raise ValueError(f"the base interval d0 must be > 0 (got {d0!r})")
        self.m = [int(x) for x in mult]
        if self.m[0] != 1 or any(b <= a for a, b in zip(self.m, self.m[1:])) or any(x != y for x, y in
                                                                                   zip(self.m, mult)):
            raise ValueError(f"mult must be whole, start at 1 and increase strictly (got {list(mult)!r})")
        self.cost = [float(x) for x in cost]
        self.fast_restart = [float(x) for x in restart[:L]]
        self.persist = [float(x) for x in persist]
        # Level L always survives, whatever the caller passed for it.
        self.survives = [float(x) for x in survives[:L]] + [1.0]
        if any(x < 0 for x in self.cost + self.fast_restart + self.persist):
            raise ValueError("costs, restarts and persists must be >= 0")
        if any(not 0.0 <= s <= 1.0 for s in self.survives) or any(
                b < a for a, b in zip(self.survives, self.survives[1:])):
            raise ValueError(f"survives must lie in [0, 1] and not decrease with the level (got {list(survives)!r})")
        # P(first surviving level = l) for the one uniform u <= survives[l]; none drawn without fast levels.
        self.p_first = [self.survives[0]] + [b - a for a, b in zip(self.survives, self.survives[1:])]
        self.p_above = [1.0 - s for s in self.survives]  # P(first surviving level > l), without a subtraction chain
        cats = [(float(s), float(r), float(q)) for s, r, q in categories]
        total = sum(s for s, _, _ in cats)
        if not cats or not total > 0 or any(s < 0 or r < 0 or q < 0 for s, r, q in cats):
            raise ValueError(f"categories must be (share >= 0, restart >= 0, queue >= 0) with a positive share "
                             f"(got {categories!r})")
        self.categories = [(s / total, r, q) for s, r, q in cats]
        self.mean_queue = sum(s * q for s, _, q in self.categories)
        self.period = math.lcm(*self.m)
        self._pattern = None
        if self.period <= _PATTERN_MAX:
            j = np.arange(self.period)
            pattern = np.zeros(self.period, dtype=np.int64)
            for l in range(1, L + 1):
                pattern[j % self.m[l] == 0] = l
            self._pattern = pattern.tolist()  # pattern[j % period] = lev(j); lev(0) = L (the job start)
        self.piece = [self.d0 + c for c in self.cost]  # compute then the blocking write of that level

    def lev(self, j: int) -> int:
        """The level written at position j (L at 0, the job start)."""
        if self._pattern is not None:
            return self._pattern[j % self.period]
        for l in range(self.L, 0, -1):
            if j % self.m[l] == 0:
                return l
        return 0

    def gaps(self):
        """Per level, the least runtime from the end of one of its writes to the start of its next.

        No write waits iff every persist is at most its level's gap. persist <=
        interval is enough (the gap holds mult * d0 of compute); only a longer
        persist needs the pattern scanned (None where it is too long to scan).
        """
        out = []
        for l in range(self.L + 1):
            if self.persist[l] <= self.m[l] * self.d0:
                out.append(math.inf)
                continue
            if self._pattern is None:
                out.append(None)
                continue
            gap, since = math.inf, None
            for j in range(1, 2 * self.period + 1):  # two periods: every gap, the wrap-around included
                k = self.lev(j)
                if since is not None:
                    since += self.d0
                if k == l:
                    if since is not None:
                        gap = min(gap, since)
                    since = 0.0
                elif since is not None:
                    since += self.cost[k]
            out.append(gap)
        return out


def _phase(lam, length):
    """(P(T >= length), P(T < length), E[min(T, length)]) for T ~ Exp(lam), lam > 0, no digits lost."""
    return math.exp(-lam * length), -math.expm1(-lam * length), -math.expm1(-lam * length) / lam


class _Mode:
    """One evaluation pass: result vectors per position and memos, for a given B dimension.

    A result vector is [B (dim_b entries), C, F_0..F_L]: B the expected time until
    a fallback or the job's end (with dim_b > 1, the coefficients of an affine
    function of basis values, the constant first), C the probability of never
    falling back, F_k that of falling back at collapse level k.
    """

    def __init__(self, dim_b, n_levels):
        self.dim_b = dim_b
        self.size = dim_b + 1 + n_levels
        self.res = {}  # position -> result of the run from it (compute start, clock 0)
        self.res_off = {}  # level-L position -> result from its renewal moment (clock persist[L])
        self.memo_x = {}
        self.memo_y = {}
        self.v_ren = {}
        self.run = None  # the last run solved, which the next (one position down) slides from
        self.reach = 0  # how far above p a run refers (the window of the periodic shortcut)


class _Run:
    """The stretches of one run between durable times, and what a failure in each leads to.

    bounds: the stretches' ends on the run's clock (0 = its compute start; the
    last is its end: the next level-L checkpoint's durable time, or the job's
    end); stairs[i], etas[i]: the new checkpoints durable in stretch i (top[k],
    the latest of level >= k, for k < eta); rows[i]: the exit vector of a
    failure there (`_Exact.first_draw`).
    """

    __slots__ = ("p", "J", "renew", "bounds", "rows", "stairs", "etas")

    def __init__(self, p, J, renew, bounds, rows, stairs, etas):
        self.p, self.J, self.renew = p, J, renew
        self.bounds, self.rows, self.stairs, self.etas = bounds, rows, stairs, etas


class _Exact:
    """The exact expected wall by a backward pass over positions (see `levels_expected_wall`)."""

    def __init__(self, lam, n_full, rem, lv: _Levels, persist, periodic=True, sliding=True, durable_waits=False):
        self.lam, self.n, self.rem, self.lv = lam, n_full, rem, lv
        # The durable level's writes wait for the one before to persist (the fast levels' never do): a run's
        # second durable write stalls until its first is durable (the run's end), and the run that goes on
        # at a renewal (`step`'s res_off) writes its first one no earlier than its base is durable.
        self.durable_waits = durable_waits
        # The tests' checks of the shortcuts: periodic=False solves every position,
        # sliding=False builds every run from the path.
        self.periodic, self.sliding = periodic, sliding
        self.L = lv.L
        self.persist = persist
        self.mL = lv.m[-1]
        self.window_len = 2 * self.mL  # a run from p reaches positions below p + 2 mult[L]
        cats = lv.categories
        # The restart phase after restoring a level-L checkpoint (category restarts), as without levels.
        spent = sum(s * (q + _phase(lam, r)[2]) for s, r, q in cats)
        completes = sum(s * math.exp(-lam * r) for s, r, q in cats)
        self.r_star = spent / completes if completes > 0 else math.inf
        # One restart attempt from a fast level: (P(runs through), P(cut short), mean time incl. the queue).
        self.fast = []
        for r in lv.fast_restart:
            through, cut, mean = _phase(lam, r)
            self.fast.append((through, cut, lv.mean_queue + mean))
        self.states = 0
        self.steps = 0

    # ---- one run -------------------------------------------------------------------------

    def build(self, p, md: _Mode, continuation=False) -> _Run:
        """The run from position p, built from the path (see `_Run`); continuation: p is a level-L
        position written on this path (not restored), durable at clock persist[L]."""
        lv, L, n = self.lv, self.L, self.n
        J = (p // self.mL + 1) * self.mL  # the next level-L position
        last = min(n, J + self.mL)  # no write past J + mult[L] ends before J is durable
        taus, t = [], 0.0
        for j in range(p + 1, last + 1):
            if self.durable_waits and j % self.mL == 0:  # a durable write waits for the one before
                ready = t + lv.d0
                if j == J and continuation:
                    ready = max(ready, self.persist[L])
                elif j == J + self.mL:
                    ready = max(ready, taus[J - p - 1] + self.persist[L])
                t = ready + lv.cost[L]
            else:
                t += lv.piece[lv.lev(j)]
            taus.append(t)
        end = (taus[-1] if taus else 0.0) + self.rem if last == n else math.inf
        renew, t_cut = False, end
        if J <= n:
            durable_at = taus[J - p - 1] + self.persist[L]
            if durable_at < end:
                renew, t_cut = True, durable_at
        events = []
        for i, tau in enumerate(taus):
            l = lv.lev(p + 1 + i)
            if l < L and tau + self.persist[l] < t_cut:
                events.append((tau + self.persist[l], p + 1 + i, l))
        events.sort()
        bounds, stairs, etas = [0.0], [()], [0]  # nothing new is durable at the start (pieces take time)
        top = [0] * L  # top[k]: the latest durable new position of level >= k
        eta = 0  # levels 0..eta-1 have one
        k = 0
        while k < len(events):
            at = events[k][0]
            while k < len(events) and events[k][0] <= at:
                _, j, l = events[k]
                for i in range(l + 1):
                    top[i] = max(top[i], j)
                eta = max(eta, l + 1)
                k += 1
            bounds.append(at)
            stairs.append(tuple(top[:eta]))
            etas.append(eta)
        bounds.append(t_cut)
        rows = np.array([self.first_draw(stair, md) for stair in stairs])
        self.states += 1
        self.steps += len(taus) + len(bounds)
        return _Run(p, J, renew, np.array(bounds), rows, stairs, etas)

    def slide(self, run: _Run, p, md: _Mode) -> _Run:
        """The run from p out of the run from p + 1 (the same next level-L position, so the same end).

        The run from p first computes and writes p + 1 (time a), then follows
        the run from p + 1: its stretches a later, the first one reaching back to
        0 (nothing is durable before a). Position p + 1 (level l) joins the
        staircase from its durable time until a newer checkpoint of level >= l is
        durable; only the stretches in between get new staircases.
        """
        l = self.lv.lev(p + 1)
        a = self.lv.piece[l]
        bounds = run.bounds + a
        bounds[0] = 0.0
        rows, stairs, etas = run.rows, run.stairs, run.etas
        at = a + self.persist[l]
        if at < bounds[-1]:
            stairs, etas = list(stairs), list(etas)
            i = int(np.searchsorted(bounds, at, side="right")) - 1
            if bounds[i] < at:  # split the stretch it falls in
                bounds = np.insert(bounds, i + 1, at)
                rows = np.insert(rows, i + 1, rows[i], axis=0)
                stairs.insert(i + 1, stairs[i])
                etas.insert(i + 1, etas[i])
                i += 1
            else:
                rows = rows.copy()
            while i < len(stairs) and etas[i] <= l:
                stairs[i] = stairs[i] + (p + 1,) * (l + 1 - etas[i])
                etas[i] = l + 1
                rows[i] = self.first_draw(stairs[i], md)
                i += 1
        self.states += 1
        self.steps += bounds.size
        return _Run(p, run.J, run.renew, bounds, rows, stairs, etas)

    def evaluate(self, run: _Run, t0, md: _Mode):
        """Result vector of `run` with its clock starting at t0 (0, or persist[L] from a renewal).

        A failure in a stretch [lo, hi) (probability e^(-lam (lo - t0)) (1 -
        e^(-lam (hi - lo)))) exits by that stretch's row; surviving to the end
        adds the renewal's value (or ends the job).
        """
        lam, c_at = self.lam, md.dim_b
        t_cut = run.bounds[-1]
        out = np.zeros(md.size)
        if t_cut <= t0:  # (the job ends before this renewal moment: never used)
            out[c_at] = 1.0
            return out
        lo = np.maximum(run.bounds[:-1], t0)
        span = np.maximum(run.bounds[1:] - lo, 0.0)
        out += (np.exp(-lam * (lo - t0)) * -np.expm1(-lam * span)) @ run.rows
        survive, _, mean = _phase(lam, t_cut - t0)
        out[0] += mean
        out[c_at] += survive
        if run.renew:
            out[:c_at] += survive * self.renewal_value(run.J, md)
        return out

    def first_draw(self, stair, md: _Mode):
        """Exit vector of a failure with new durable checkpoints `stair` (stair[k]: latest of level >= k)."""
        y = md.memo_y.get(stair)
        if y is None:
            p_first = self.lv.p_first
            eta = len(stair)
            y = np.zeros(md.size)
            y[md.dim_b + 1 + eta:] = p_first[eta:]  # no new checkpoint survives: fall back
            for l in range(eta):
                if p_first[l] > 0:
                    lev = self.lv.lev(stair[l])
                    y += p_first[l] * self.restore(lev, stair[lev:], md)
            md.memo_y[stair] = y
            self.states += 1
        return y

    def restore(self, lev, tail, md: _Mode):
        """Exit vector after restoring tail[0] (of level `lev`), the surviving new checkpoints above
        being tail[k - lev] for levels k < lev + len(tail); a later collapse past them falls back.

        X = const + sum_k T_k X_k over the collapse levels k > lev the restart
        phase or the run from tail[0] can lead to, the self-loop (a collapse that
        restores tail[0] again) solved: D = 1 - T_self summed from its parts.
        """
        key = (lev, tail)
        x = md.memo_x.get(key)
        if x is not None:
            return x
        L, dim_b = self.L, md.dim_b
        c_at, f_at = dim_b, dim_b + 1
        eta = lev + len(tail)
        r = md.res[tail[0]]
        through, cut, attempt = self.fast[lev]
        x = np.zeros(md.size)
        x[0] = attempt
        x[:dim_b] += through * r[:dim_b]
        x[c_at] = through * r[c_at]
        denominator = cut * self.lv.p_above[lev] + through * (r[c_at] + r[f_at + lev + 1:].sum())
        for k in range(lev + 1, L + 1):
            w = cut * self.lv.p_first[k] + through * r[f_at + k]
            if w == 0:
                continue
            if k >= eta:
                x[f_at + k] += w
            else:
                above = self.lv.lev(tail[k - lev])
                x += w * self.restore(above, tail[above - lev:], md)
        x /= denominator
        md.memo_x[key] = x
        self.states += 1
        return x

    def renewal_value(self, J, md: _Mode):
        """Expected time from the moment J's level-L checkpoint becomes durable to the job's end."""
        v = md.v_ren.get(J)
        if v is None:
            c_at = md.dim_b
            unit = np.zeros(md.dim_b)
            unit[0] = 1.0
            start = md.res[J]
            # From a compute start at J (flat: nothing newer), each fallback restores J itself.
            flat = (start[:c_at] + start[c_at + 1:].sum() * self.r_star * unit) / start[c_at]
            ren = md.res_off.get(J, start)
            v = ren[:c_at] + ren[c_at + 1:].sum() * (self.r_star * unit + flat)
            md.v_ren[J] = v
        return v

    # ---- the pass ------------------------------------------------------------------------

    def far(self, x):
        """Whether the run from x and every run it refers to end before the job's last positions."""
        return (x // self.mL + 2) * self.mL < self.n

    def step(self, p, md: _Mode):
        """Solve the run from p (and from p's renewal moment at a level-L position)."""
        run = md.run
        if self.sliding and run is not None and run.p == p + 1 and (p + 1) % self.mL != 0:
            run = self.slide(run, p, md)
        else:
            run = self.build(p, md)
        md.run = run
        if md.reach is not None and self.far(p):
            md.reach = max(md.reach, max(run.J, max(run.stairs[-1], default=0)) - p)
        md.res[p] = self.evaluate(run, 0.0, md)
        if self.persist[self.L] > 0 and p % self.mL == 0:
            going_on = self.build(p, md, continuation=True) if self.durable_waits else run
            md.res_off[p] = self.evaluate(going_on, self.persist[self.L], md)

    def periodic_match(self, p, md: _Mode):
        q = p + self.lv.period
        pairs = [(md.res.get(p), md.res.get(q))]
        if p in md.res_off:
            pairs.append((md.res_off.get(p), md.res_off.get(q)))
        for a, b in pairs:
            if a is None or b is None:
                return False
            a, b = a[md.dim_b:], b[md.dim_b:]
            if not np.all(np.abs(a - b) <= _PERIOD_RTOL * np.maximum(np.abs(a), np.abs(b))):
                return False
        return True

    def jump(self, p_d, md: _Mode):
        """From periodic C and F at [p_d, p_d + reach]: the B values N periods down (see `iterate`).

        B is affine in the B values of the positions a run refers to (up to
        reach above it); its coefficients repeat with the pattern, so one period
        evaluated with basis vectors for those B gives the map from one window
        to the window a period lower.
        """
        period = self.lv.period
        n_periods = p_d // period
        window = range(p_d, p_d + md.reach + 1)
        basis = [(md.res, q) for q in window] + [(md.res_off, q) for q in window if q in md.res_off]
        dim = len(basis)
        aff = _Mode(1 + dim, self.L + 1)
        aff.reach = None
        for i, (table, q) in enumerate(basis):
            vec = np.zeros(aff.size)
            vec[1 + i] = 1.0
            vec[aff.dim_b:] = table[q][md.dim_b:]
            (aff.res if table is md.res else aff.res_off)[q] = vec
        for x in range(p_d - 1, p_d - period - 1, -1):
            self.step(x, aff)
        M = np.empty((dim, dim))
        c = np.empty(dim)
        for i, (table, q) in enumerate(basis):
            row = (aff.res if table is md.res else aff.res_off)[q - period][:aff.dim_b]
            c[i], M[i] = row[0], row[1:]
        z = self.iterate(M, c, np.array([table[q][0] for table, q in basis]), n_periods)
        shift = n_periods * period
        new = _Mode(1, self.L + 1)
        for i, (table, q) in enumerate(basis):
            vec = table[q].copy()
            vec[0] = z[i]
            (new.res if table is md.res else new.res_off)[q - shift] = vec
        return p_d - shift, new

    @staticmethod
    def iterate(M, c, x, n):
        """x_n of x_(k+1) = c + M x_k: step until the increments d_k = x_(k+1) - x_k settle, then add them.

        The increments converge (the job's time grows linearly with its length)
        to the time of one period; stepping them, d_(k+1) = M d_k, and adding
        n - k of them keeps the relative error at a few ulps times the steps
        taken, where a matrix power would raise M's rounding (its eigenvalue 1
        off by an ulp) to the n-th power, an error of n ulps.
        """
        step = c + M @ x
        d = step - x
        x = step
        k = 1
        limit = max(64, 10**7 // max(len(c), 1) ** 2)
        while k < n:
            if k >= limit:  # (never settled: the rest by a matrix power)
                A = np.block([[np.ones((1, 1)), np.zeros((1, len(c)))], [c[:, None], M]])
                return (np.linalg.matrix_power(A, n - k) @ np.concatenate([[1.0], x]))[1:]
            d_next = M @ d
            x = x + d_next
            k += 1
            if np.all(np.abs(d_next - d) <= _PERIOD_RTOL * np.abs(d)):
                return x + (n - k) * d_next
            d = d_next
        return x

    def expected_wall(self):
        md = _Mode(1, self.L + 1)
        period, W = self.lv.period, self.window_len
        streak = far_runs = 0
        p = self.n
        jumped = False
        while p >= 0:
            self.step(p, md)
            if self.states > MAX_STATES:
                return math.nan, f"more than {MAX_STATES} restore states"
            if self.steps > MAX_STEPS:
                return math.nan, (f"more than {MAX_STEPS:.0e} positions to walk (durable writes that wait, "
                                  f"{self.mL} fastest intervals apart)")
            if self.periodic and not jumped and self.far(p - 1 + period):
                # Below p every run repeats the one a period up; once C and F do too over
                # all a run refers to (its reach, known after a period of runs), so do all below.
                far_runs += 1
                streak = streak + 1 if self.periodic_match(p, md) else 0
                if far_runs >= period and streak > md.reach and p >= period:
                    p, md = self.jump(p, md)
                    jumped = True
            # Results above the window are never read again (after the periodic check's period).
            md.res.pop(p + W + period + 1, None)
            md.res_off.pop(p + W + period + 1, None)
            if p % 4096 == 0:
                self.prune(p, md)
            p -= 1
        start = md.res[0]
        c_at = md.dim_b
        return (start[0] + start[c_at + 1:].sum() * self.r_star) / start[c_at], None

    def prune(self, p, md: _Mode):
        """Drop memo entries of positions no later run can restore."""
        horizon = p + 2 * self.window_len
        md.memo_x = {k: v for k, v in md.memo_x.items() if k[1][-1] <= horizon}
        md.memo_y = {k: v for k, v in md.memo_y.items() if not k or k[-1] <= horizon}
        md.v_ren = {k: v for k, v in md.v_ren.items() if k <= horizon}


def _failure_free_wall_waiting(n_full, rem, lv: _Levels) -> float:
    """The failure-free wall where the durable level's writes wait for the one before to persist."""
    L, mL = lv.L, lv.m[-1]
    t, durable = 0.0, -math.inf  # the previous durable write's durable time
    for j in range(1, n_full + 1):
        if j % mL == 0:
            t = max(t + lv.d0, durable) + lv.cost[L]
            durable = t + lv.persist[L]
        else:
            t += lv.piece[lv.lev(j)]
    return t + rem


def _failure_free_wall(n_full, rem, lv: _Levels) -> float:
    """n_full d0 + rem + the write costs of positions 1..n_full (counted by inclusion-exclusion)."""
    total = n_full * lv.d0 + rem
    for l in range(lv.L + 1):
        higher = lv.m[l + 1:]
        count = 0
        for mask in range(1 << len(higher)):
            chosen = [higher[i] for i in range(len(higher)) if mask >> i & 1]
            count += (-1) ** len(chosen) * (n_full // math.lcm(lv.m[l], *chosen))
        total += count * lv.cost[l]
    return total


def levels_wall_lower_bound(lam, n_full, rem, d0, mult, cost, restart, persist, survives, categories) -> float:
    """Return a lower bound of E[wall] that costs no more than the failure-free wall (arguments as for
    `levels_expected_wall`; it holds whether writes wait or not).

    Failures are a Poisson process at lam on the runtime clock. A failure falls
    back to the durable level with probability p = 1 - survives[L - 1] (1
    without fast levels), independently of the rest, so those failures alone
    are a Poisson process at lam p. A segment between two durable checkpoints
    (C of failure-free runtime) is only done after C of runtime outside
    restarts without such a failure, which takes (e^(lam p C) - 1) / (lam p) of
    that runtime in expectation (the last segment runs to the job's end).
    Restarts add to it: each failure starts an attempt of at least r (the
    least restart) that the next failure may cut, E[min(T, r)] = (1 -
    e^(-lam r)) / lam, and E[failures] = lam E[runtime]; so E[runtime] >=
    (the segments' sum) e^(lam r). Each failure's queue wait (mean q by
    category) adds lam q per hour of runtime. Lost work beyond that only adds.

    Parameters
    ----------
    lam : float
        Job failure rate per hour of runtime, >= 0.
    n_full : int
        Base positions.
    rem : float
        The final remainder of compute (hours).
    d0 : float
        Base interval in hours.
    mult : sequence of int
        Each level's interval over d0.
    cost, restart, persist, survives : sequence of float
        Per level 0..L, as for `levels_expected_wall`.
    categories : sequence of (share, restart, queue)
        The failure taxonomy, as for `levels_expected_wall`.

    Returns
    -------
    float
        The bound in hours (inf where it exceeds float64).
    """
    lv = _Levels(d0, mult, cost, restart, persist, survives, categories)
    lam, n_full, rem = float(lam), int(n_full), float(rem)
    total = _failure_free_wall(n_full, rem, lv)
    mL = lv.m[-1]
    segment = _failure_free_wall(mL, 0.0, lv)  # (positions 1..mL: the same for every full segment)
    full = n_full // mL
    segments = [(full, segment), (1, total - full * segment)]
    deep = lam * (lv.p_above[lv.L - 1] if lv.L else 1.0)
    if deep > 0:
        with np.errstate(over="ignore"):
            runtime = sum(count * float(np.expm1(deep * length)) / deep for count, length in segments if count)
    else:
        runtime = total
    r_min = min([r for _, r, _ in lv.categories] + lv.fast_restart)
    with np.errstate(over="ignore"):
        return float(runtime * np.exp(lam * r_min) * (1.0 + lam * lv.mean_queue))


def levels_expected_wall(lam, n_full, rem, d0, mult, cost, restart, persist, survives, categories):
    """Return (E[wall], reason): the exact expected wall time of a job with checkpoint levels.

    Exponential failures at `lam` per hour of runtime. Exact to float rounding
    wherever no write waits for the persistence of its level's previous write
    (persist[l] <= mult[l] * d0 is enough, and so is a level written at most
    once), with one level alone also where its writes wait (each write
    after a restore's first then starts persist - d0 late, failures striking
    during the wait), and with fast levels where the durable level's writes
    wait and the fast levels' do not (the positions engine: a run's second
    durable write stalls until its first is durable, which ends the run, and
    the run that goes on at a renewal writes its first durable checkpoint no
    earlier than its base is durable; a restored checkpoint has nothing
    pending, so the first durable write after a restore never waits); the
    expectation is the same for fixed and exponential queue waits of the same
    mean.

    Method (exponential failures make every compute start a renewal point).
    After a restore of position q the future depends on q and on the older
    checkpoints still restorable, and those are only reached by a failure that
    leaves no newer one. So the job is solved backwards from its end, one
    compute start p at a time, as a *run*: from p the path is known (pieces of
    d0 + cost[lev(j)], each write durable persist[lev(j)] after it ends) up to
    the next level-L position's durable time (a renewal point: nothing older
    can be restored again, and the rest of the job is a value already known)
    or the job's end. A failure at t sees the new checkpoints durable by t,
    piecewise constant between durable times (fewer than 2 mult[L] stretches),
    as a staircase top[k] = latest new position of level >= k for k < eta;
    the survival draw gives a collapse level k; for k < eta top[k] is
    restored, else the run exits, falling back at k to the checkpoints it
    started with. A restore of q = top[lev] is followed by the restart phase
    (queue + restart[lev]; a failure in it draws again) and the run from q,
    which itself exits at some collapse k'; both only raise the collapse
    level, max(lev, .), so the exit vectors of (staircase, level) follow by
    back substitution over the levels, each self-loop (a collapse that
    restores q again) divided out with its divisor summed from positive
    parts, which keeps every digit for any lam. A run thus gives B (expected
    time until it falls back or the job ends), C (the probability it never
    falls back) and F_k (that it falls back at k). At a level-L position J
    the checkpoints below are all older than J, so a fallback restores J:
    V_flat(J) = (B + (1 - C) R*) / C, with R* the restart phase without levels (the
    category restarts), and from J's durable moment (the run from J, its clock
    starting at persist[L]) V_ren(J) = B' + (1 - C') (R* + V_flat(J)).
    E[wall] = V_flat(0). Without persistence or fast levels every run is one
    interval and this is the renewal form without levels.

    The default engine solves a cycle (the positions sharing the next
    level-L position J) at a time on the cycle's failure-free clock, where the
    stretches between durable times are the same for every run: the run from
    p is the run from p + 1 discounted by its first piece, with p + 1 added to
    the stretches where it is the latest of a level, so each stretch changes
    its exit vector at most L times (`_kernels.levels_exact`); far from the
    end it jumps over periods once the cycles repeat to rounding (`_Cycles`).
    The reference engine takes the same shortcuts a position at a time (below).

    Two shortcuts change only rounding: the run from p is the run from p + 1
    a piece later, with p + 1 added to the staircases only until a newer
    checkpoint of its level is durable, so only those stretches are redone;
    and far from the end the runs repeat with the level pattern (period
    lcm(mult)): C and F settle to periodic values (at once where no
    checkpoint after a level-L one is durable before it, geometrically where
    one is) and B is then affine in the B values a run refers to with
    periodic coefficients, so one period evaluated on basis vectors gives the
    map from one period to the next; its steps are iterated until their
    increments settle (the time of one period) and then added up to the start.

    Parameters
    ----------
    lam : float
        Job failure rate per hour of runtime, >= 0.
    n_full : int
        Base positions (floor(work / d0), the caller's exact-multiple rule).
    rem : float
        The final remainder of compute (hours), with no checkpoint after it.
    d0 : float
        Base interval in hours (level 0's; the scenario's own without fast levels).
    mult : sequence of int
        Each level's interval over d0: 1 first, strictly increasing.
    cost, restart, persist, survives : sequence of float
        Per level 0..L: blocking write (h), restart after restoring it (h; the
        entry of level L is ignored, the category's restart is used), time from
        the write's end until it can be restored (h), and the probability that
        its checkpoints survive a failure (non-decreasing; level L's is taken
        as 1).
    categories : sequence of (share, restart, queue)
        The failure taxonomy: shares (normalised here), the restart after
        restoring a level-L checkpoint (or the job start) and the mean queue
        wait after a failure of that category. ``[(1, restart_cost,
        queue_wait)]`` without a taxonomy.

    Returns
    -------
    value : float
        E[wall] in hours; inf where it exceeds float64's range; NaN where the
        form does not apply (then `reason` says why).
    reason : str or None
        None where `value` is exact; otherwise why it is NaN: a fast level's
        write that waits for persistence, more than
        MAX_POSITIONS positions to solve one by one (a pattern too long to
        jump over periods, or one that does not settle into them), or, where
        the durable writes wait, a walk of more than MAX_STEPS positions and
        stretches (it grows with the square of the durable level's multiple
        of d0: the bound falls at a few thousand).

    Raises
    ------
    ValueError
        If the levels are malformed (lengths, mult, negative durations,
        survives outside [0, 1] or decreasing, no positive share).
    """
    return _expected_wall(lam, n_full, rem, d0, mult, cost, restart, persist, survives, categories)


def _expected_wall(lam, n_full, rem, d0, mult, cost, restart, persist, survives, categories, engine="cycles",
                   periodic=True, sliding=True):
    """`levels_expected_wall`. engine="positions" solves by `_Exact` (the reference the tests hold the
    default to); periodic=False turns either engine's jump over periods off, sliding=False the
    positions engine's sliding runs."""
    lv = _Levels(d0, mult, cost, restart, persist, survives, categories)
    lam, n_full, rem = float(lam), int(n_full), float(rem)
    if not 0 <= lam < math.inf or n_full < 0 or not 0 <= rem < math.inf:
        raise ValueError(f"need a finite lam >= 0, n_full >= 0 and a finite rem >= 0 "
                         f"(got {lam!r}, {n_full!r}, {rem!r})")
    reason = _waiting_writes(lv, n_full)
    # One level alone may wait: each write after a restore's first then starts persist - d0 late.
    waits = reason is not None and lv.L == 0 and engine == "cycles"
    # With fast levels, the durable level may wait as long as the fast ones never do (positions engine).
    durable_waits = reason is not None and lv.L > 0 and _waiting_writes(lv, n_full, levels=range(lv.L)) is None
    if reason is not None and not (waits or durable_waits):
        return math.nan, reason + (" and the job has fast levels" if lv.L else "")
    wait = lv.persist[0] - lv.d0 if waits else 0.0
    # (A persist within float noise of its gap is the gap; a level written at most once keeps its own.)
    persist = lv.persist if waits else [p if _written_once(n_full, m) or (durable_waits and l == lv.L)
                                        else min(p, gap) for l, (p, gap, m) in enumerate(zip(lv.persist, lv.gaps(),
                                                                                             lv.m))]
    if lam == 0:
        if durable_waits:
            return _failure_free_wall_waiting(n_full, rem, lv), None
        return _failure_free_wall(n_full, rem, lv) + max(n_full - 1, 0) * wait, None
    if durable_waits:
        engine = "positions"
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        if engine == "positions":
            value, reason = _Exact(lam, n_full, rem, lv, persist, periodic, sliding, durable_waits).expected_wall()
        else:
            value, reason = _Cycles(lam, n_full, rem, lv, persist, wait).expected_wall(periodic)
    if reason is None and not value < math.inf:
        value = math.inf  # an overflow (inf, or inf * 0 on the way): past float64 either way
    return float(value), reason


class _Cycles:
    """The exact expected wall a cycle of level-L positions at a time (`_kernels.levels_exact`).

    Far from the job's end the cycles repeat with the level pattern (period
    lcm(mult), q cycles): C and F settle to periodic values and B to a constant
    increment per period (the time a period takes). Once the increments of
    everything later cycles read (the results of 2 mult[L] + 1 positions and of
    the level-L renewals) repeat to rounding, the periods down to the job's
    start are jumped over by adding that increment, as `_Exact.iterate` does.
    """

    def __init__(self, lam, n_full, rem, lv: _Levels, persist, wait=0.0):
        from ._feedback import announce_compile

        # Numba compiles on first use, not on import: seconds, said on a terminal first.
        announce_compile("relmodel._kernels.levels_exact", ("solve_cycles",), "exact checkpoint-level kernels")
        from ._kernels.levels_exact import solve_cycles

        self.solve = solve_cycles
        self.lam, self.n, self.rem, self.lv = lam, n_full, rem, lv
        L = lv.L
        self.mL = lv.m[-1]
        self.size = L + 3
        spent = sum(s * (q + _phase(lam, r)[2]) for s, r, q in lv.categories)
        completes = sum(s * math.exp(-lam * r) for s, r, q in lv.categories)
        self.r_star = spent / completes if completes > 0 else math.inf
        attempts = [_phase(lam, r) for r in lv.fast_restart]
        self.args = (lam, n_full, rem, lv.d0, np.array(lv.m, dtype=np.int64), np.array(lv.cost), np.array(persist),
                     float(wait), np.array(lv.p_first), np.array(lv.p_above), np.array([a[0] for a in attempts]),
                     np.array([a[1] for a in attempts]), np.array([lv.mean_queue + a[2] for a in attempts]),
                     self.r_star)

    def run(self, c_hi, c_lo, res, roff):
        if c_hi >= c_lo:
            self.solve(c_hi, c_lo, *self.args, res, roff)

    def expected_wall(self, periodic=True):
        n, mL, size = self.n, self.mL, self.size
        last_cycle = n // mL
        period = self.lv.period
        q = period // mL  # cycles per period
        window = 2 * mL + 1  # positions a cycle reads above its first one
        far = last_cycle - 3  # cycles up to this one never reach the job's end (a cycle reads two above)
        if not (periodic and period <= _PATTERN_MAX and far >= 5 * q):
            if n + 1 > MAX_POSITIONS:
                return math.nan, (f"{n + 1} positions to solve, more than {MAX_POSITIONS} (a level pattern of "
                                  f"{period} positions is too long to jump over periods)")
            res, roff = np.zeros((n + 1, size)), np.zeros((last_cycle + 1, size))
            self.run(last_cycle, 0, res, roff)
            return self.start_value(res), None
        # Rings: three periods and a window of positions; three periods and three cycles of renewals.
        res = np.zeros((3 * period + window + 1, size))
        roff = np.zeros((3 * q + 3, size))
        # The job's end and its last cycles, then whole periods, more of them a call as it goes on
        # (few periods solved before a jump keep its rounding small; many a call keep Python's share small).
        c = far - far % q - 1  # the next cycle to solve: the top of a period
        self.run(last_cycle, c + 1, res, roff)
        periods = 0
        while c + 1 >= 4 * q:
            chunk = min(max(1, periods // 2), (c + 1) // q - 3)
            self.run(c, c - chunk * q + 1, res, roff)
            c -= chunk * q
            periods += chunk
            if periods < 3:
                continue
            low = c + 1  # the lowest cycle solved
            now, up, up2 = (self.window_values(res, roff, low + k * q) for k in range(3))
            if not np.isfinite(now).all():
                # An overflow on the way (inf, or inf * 0), read by every cycle below: the start's value
                # overflows too (inf, as `_expected_wall` takes it), and no period would ever repeat (a walk
                # of MAX_POSITIONS, seconds long, to a NaN).
                return math.inf, None
            d, d_prev = now[:, 0] - up[:, 0], up[:, 0] - up2[:, 0]
            if (np.all(np.abs(now[:, 1:] - up[:, 1:]) <= _PERIOD_RTOL * np.maximum(np.abs(now[:, 1:]),
                                                                                     np.abs(up[:, 1:])))
                    and np.all(np.abs(d - d_prev) <= _INCREMENT_RTOL * np.abs(now[:, 0]))):
                skip = low // q - 1
                now[:, 0] += skip * d
                self.set_window(res, roff, low - skip * q, now)
                c -= skip * q
                break
            if periods * period > MAX_POSITIONS:
                return math.nan, (f"the cycles do not repeat to rounding after {periods} periods of the level "
                                  f"pattern ({period} positions each)")
        self.run(c, 0, res, roff)
        return self.start_value(res), None

    def window_values(self, res, roff, low):
        """What cycles below `low` read: the results of its first 2 mult[L] + 1 positions and the
        renewals of its first three cycles (rows, B first)."""
        positions = (low * self.mL + np.arange(2 * self.mL + 1)) % res.shape[0]
        cycles = (low + np.arange(3)) % roff.shape[0]
        return np.concatenate([res[positions], roff[cycles]])

    def set_window(self, res, roff, low, values):
        positions = (low * self.mL + np.arange(2 * self.mL + 1)) % res.shape[0]
        cycles = (low + np.arange(3)) % roff.shape[0]
        res[positions] = values[:positions.size]
        roff[cycles] = values[positions.size:]

    def start_value(self, res):
        """E[wall] = V_flat(0): from the job's start, each fallback restores the start."""
        start = res[0]
        return (start[0] + start[2:].sum() * self.r_star) / start[1]


def waiting_writes(d0, mult, cost, restart, persist, survives, categories) -> str | None:
    """Why some writes of these levels wait for the persistence of the one before (None: none do).

    The first-order form has no term for such waits; the exact one solves them
    with one level, and with fast levels where only the durable level waits.

    The arguments are those of `levels_expected_wall`; the reason names the level.
    """
    return _waiting_writes(_Levels(d0, mult, cost, restart, persist, survives, categories))


def _written_once(n_full, multiple) -> bool:
    """Whether a level of this multiple is written at most once in n_full positions (so never waits)."""
    return n_full is not None and n_full < 2 * multiple


def _waiting_writes(lv, n_full=None, levels=None) -> str | None:
    """Why writes of `lv` (of `levels`, default all) wait for the persistence of the one before (None:
    they never do; with n_full, in a job of that many positions)."""
    for l, gap in enumerate(lv.gaps()):
        if levels is not None and l not in levels:
            continue
        if _written_once(n_full, lv.m[l]):
            continue
        if gap is None or lv.persist[l] > gap + WAIT_TOLERANCE * lv.d0:
            return (f"level {l}'s writes wait for persistence (persist {lv.persist[l]:g} h is longer "
                    f"than the gap before its next write)")
    return None


def levels_first_order(lam, d0, mult, cost, restart, persist, survives, categories):
    """Return (ettr, valid): the first-order (in lam) ETTR of a long job with checkpoint levels.

    The analogue of the linear form::

        ettr = (1 - lam (E[lost] + E[restart])) / (1 + omega) / (1 + lam E[queue])

    * omega = sum_j cost[lev(j)] / (period d0) over one period of the level
      pattern (period = lcm(mult) positions): the writes per unit of compute.
    * E[lost], E[restart]: per failure, with the failure at a uniform time t of
      the failure-free path (its runtime, writes included) and the survival
      draw: lost = t - (the end of the restored checkpoint's write), the age of
      the latest checkpoint durable by t among the surviving levels, so a
      level's persistence window counts in it; the restart is that level's
      (the share-weighted category restart for level L).
    * E[queue]: the share-weighted mean queue wait (queue time runs no
      failures, hence the separate factor).

    Failures during restarts, the job's start and end, and every product of two
    failure terms are dropped: the error is of order (lam * stretch)^2, with
    stretch the oldest checkpoint's age (level L's spacing plus its persist)
    plus the longest restart.

    Parameters
    ----------
    lam : float
        Job failure rate per hour of runtime, >= 0.
    d0 : float
        Base interval in hours.
    mult : sequence of int
        Each level's interval over d0: 1 first, strictly increasing.
    cost, restart, persist, survives : sequence of float
        Per level 0..L, as for `levels_expected_wall` (level L's restart and
        survives are ignored).
    categories : sequence of (share, restart, queue)
        The failure taxonomy, as for `levels_expected_wall`.

    Returns
    -------
    ettr : float
        The first-order ETTR; NaN where its numerator is <= 0, where a write
        waits for persistence (the form, like the exact one, has no term for
        it) or the pattern is too long to scan (lcm(mult) > 10**6 positions).
    valid : bool
        False where the ETTR is NaN or lam * stretch exceeds FIRST_ORDER_LIMIT.
    """
    lam = float(lam)
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0 (got {lam!r})")
    # Every duration in units of 2**scale hours, near 1 at the longest: a period's sums and products
    # of durations near the float limit stay finite, and a power of two rescales without rounding.
    durations = [d0, *cost, *restart, *persist, *(r for _, r, _ in categories), *(q for _, _, q in categories)]
    scale = math.frexp(max(float(x) for x in durations))[1]

    def scaled(values):
        return [math.ldexp(float(x), -scale) for x in values]

    if math.ldexp(float(d0), -scale) == 0.0:
        return math.nan, False  # the base interval under float64's resolution of the longest duration
    lv = _Levels(math.ldexp(float(d0), -scale), mult, scaled(cost), scaled(restart), scaled(persist), survives,
                 [(share, *scaled((r, q))) for share, r, q in categories])
    if lv._pattern is None or _waiting_writes(lv) is not None:
        return math.nan, False  # a write that waits: the form has no term for it (as the exact one)
    period, L = lv.period, lv.L
    levs = np.array(lv._pattern[1:] + [L])  # positions 1..period
    pieces = lv.d0 + np.array(lv.cost)[levs]
    tau = np.cumsum(pieces)
    T = float(tau[-1])
    # The writes per unit of compute, >= 0: T sums its pieces one by one, so with free writes it can
    # round below period * d0 and lift the ETTR past 1.
    omega = max((T - period * lv.d0) / (period * lv.d0), 0.0)
    # Checkpoints at positions -period..period (the one at -period is durable by time 0).
    pos = np.arange(-period, period + 1)
    all_levs = np.concatenate([[L], levs[:-1], [L], levs])
    all_tau = np.concatenate([[-T], tau[:-1] - T, [0.0], tau])
    durable = all_tau + np.array(lv.persist)[all_levs]
    level_restart = np.array(lv.fast_restart + [sum(s * r for s, r, _ in lv.categories)])
    lost = restart_mean = 0.0
    oldest = 0.0
    for l_min in range(L + 1):
        keep = all_levs >= l_min
        order = np.argsort(durable[keep], kind="stable")
        d = durable[keep][order]
        latest = np.maximum.accumulate(pos[keep][order])  # restored position once each is durable
        restored_tau = all_tau[latest + period]
        restored_lev = all_levs[latest + period]
        lo = np.clip(d, 0.0, T)
        hi = np.clip(np.append(d[1:], np.inf), 0.0, T)
        span = hi - lo
        age = span * ((lo + hi) / 2 - restored_tau)  # integral of t - tau over the stretch
        lost += lv.p_first[l_min] * float(age.sum()) / T
        restart_mean += lv.p_first[l_min] * float((span * level_restart[restored_lev]).sum()) / T
        oldest = max(oldest, float((hi - restored_tau)[span > 0].max()))
    stretch = oldest + max([r for _, r, _ in lv.categories] + lv.fast_restart)
    # Back in hours, where lam multiplies them (without failures they cost nothing, however long).
    with np.errstate(over="ignore"):  # inf where a mean age or stretch passes float64: the answer
        per_failure, stretch, queue = (lam * float(np.ldexp(x, scale)) if lam else 0.0
                                       for x in (lost + restart_mean, stretch, lv.mean_queue))
    numerator = 1.0 - per_failure
    valid = bool(numerator > 0 and stretch <= FIRST_ORDER_LIMIT)
    if not numerator > 0:
        return math.nan, False
    return float(numerator / (1.0 + omega) / (1.0 + queue)), valid
