"""Closed forms for checkpoint levels: `levels_expected_wall` and `levels_first_order`.

The exact form is checked four ways: with one level it is the renewal form;
on tiny jobs it equals a brute-force linear solve over the raw states of the
semantics (written here, in 30-digit mpmath, from the level semantics alone);
on a few scenarios it agrees with the plain event simulation of
`reference.levels_reference` within 4 standard errors; and its two shortcuts
(runs slid from the one a position up, the periodic jump) change nothing but
rounding. The first-order form is checked against the exact one for long jobs.
"""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from reference import levels_reference as lvref
from reference import timeline_reference as tref

from relmodel import _levels_closed_form as lcf
from relmodel._closed_form import renewal_expected_wall
from relmodel._levels_closed_form import _expected_wall, levels_expected_wall, levels_first_order
from relmodel._scenario import split_work

ONE_KIND = [(1.0, 0.2, 0.1)]
TAXONOMY = [(0.6, 0.1, 0.0), (0.3, 0.3, 0.5), (0.1, 1.0, 2.0)]


def exact(*args, **kwargs):
    value, reason = levels_expected_wall(*args, **kwargs)
    assert reason is None
    return value


# ---- a brute force: the raw semantics as one linear system ---------------------------------

def brute_force_wall(lam, n_full, rem, d0, mult, cost, restart, persist, survives, categories, dps=30):
    """E[wall] by a linear solve over every reachable raw state, in `dps`-digit mpmath.

    States are those of the semantics document, with nothing summarised:
    ("V", latest, pos) is a compute start at pos with latest[l] the latest
    durable position of each level (0 = the job start); ("U", latest, pos, b, c)
    a queue + restart from level b after a failure of category c. A run from a
    compute start goes to the job's end (no renewal cut); a failure in the
    stretch between two durable times draws (category, first surviving level),
    restores argmax over l >= l_min of (latest[l], l) and zeroes the levels below.
    """
    with mpmath.workdps(dps):
        L = len(mult) - 1
        lam, d0, rem = mpmath.mpf(lam), mpmath.mpf(d0), mpmath.mpf(rem)
        cost = [mpmath.mpf(x) for x in cost]
        persist = [mpmath.mpf(x) for x in persist]
        s = [mpmath.mpf(x) for x in survives[:L]] + [mpmath.mpf(1)]
        first = [s[0]] + [s[l] - s[l - 1] for l in range(1, L + 1)] if L else [mpmath.mpf(1)]
        total = sum(mpmath.mpf(c[0]) for c in categories)
        cats = [(mpmath.mpf(a) / total, mpmath.mpf(r), mpmath.mpf(q)) for a, r, q in categories]
        draws = [(c, l, cats[c][0] * first[l]) for c in range(len(cats)) for l in range(L + 1)
                 if cats[c][0] * first[l] > 0]

        def lev(j):
            return max(l for l in range(L + 1) if j % mult[l] == 0)

        val = [mpmath.mpf(0)]  # path value: the failure-free runtime up to the end of position j's write
        for j in range(1, n_full + 1):
            val.append(val[-1] + d0 + cost[lev(j)])

        # No write may wait for its level's previous one: persist within the gap between them
        # (a wait of float noise, 1e-9 d0, is none: the persist is clamped to the gap, as the simulation does).
        gap = [mpmath.inf] * (L + 1)
        previous = {}
        for j in range(1, n_full + 1):
            l = lev(j)
            if l in previous:
                gap[l] = min(gap[l], val[j] - cost[l] - val[previous[l]])
            previous[l] = j
        for l in range(L + 1):
            assert persist[l] <= gap[l] + 1e-9 * d0, "a write waits: not a case for this check"
            persist[l] = min(persist[l], gap[l])

        def restore(latest, l_min):
            b = max(range(l_min, L + 1), key=lambda l: (latest[l], l))
            return tuple(0 if l < l_min else latest[l] for l in range(L + 1)), latest[b], b

        index, rows, todo = {}, {}, []

        def var(key):
            if key not in index:
                index[key] = len(index)
                todo.append(key)
            return index[key]

        var(("V", (0,) * (L + 1), 0))
        while todo:
            key = todo.pop()
            row, const = {}, mpmath.mpf(0)

            def add(k, weight, row=row):
                row[k] = row.get(k, 0) + weight

            if key[0] == "V":
                _, latest, pos = key
                t_end = val[n_full] + rem - val[pos]
                durable = []
                for j in range(pos + 1, n_full + 1):
                    at = val[j] - val[pos] + persist[lev(j)]
                    if at < t_end:
                        durable.append((at, j, lev(j)))
                durable.sort()
                const += -mpmath.expm1(-lam * t_end) / lam
                bounds = [mpmath.mpf(0)] + [d for d, _, _ in durable] + [t_end]
                now = list(latest)
                for i in range(len(bounds) - 1):
                    if i:
                        _, j, l = durable[i - 1]
                        now[l] = j
                    lo, hi = bounds[i], bounds[i + 1]
                    if hi <= lo:
                        continue
                    weight = mpmath.exp(-lam * lo) - mpmath.exp(-lam * hi)
                    for c, l_min, p in draws:
                        new, pos2, b = restore(tuple(now), l_min)
                        add(var(("U", new, pos2, b, c)), weight * p)
            else:
                _, latest, pos, b, c = key
                duration = mpmath.mpf(restart[b]) if b < L else cats[c][1]
                runs_through = mpmath.exp(-lam * duration)
                const += cats[c][2] + -mpmath.expm1(-lam * duration) / lam
                for c2, l_min, p in draws:
                    new, pos2, b2 = restore(latest, l_min)
                    add(var(("U", new, pos2, b2, c2)), (1 - runs_through) * p)
                add(var(("V", latest, pos)), runs_through)
            rows[index[key]] = (row, const)
        size = len(index)
        A, rhs = mpmath.eye(size), mpmath.zeros(size, 1)
        for i, (row, const) in rows.items():
            for k, weight in row.items():
                A[i, k] -= weight
            rhs[i] = const
        return float(mpmath.lu_solve(A, rhs)[index[("V", (0,) * (L + 1), 0)]])


BRUTE_CASES = {
    # name: (lam, n_full, rem, d0, mult, cost, restart, persist, survives, categories)
    "one level, persist": (0.3, 5, 0.2, 0.5, [1], [0.05], [0.0], [0.3], [1.0], ONE_KIND),
    "one level, persist = interval": (0.9, 6, 0.1, 0.5, [1], [0.05], [0.0], [0.5], [1.0], TAXONOMY),
    "two levels": (0.4, 7, 0.2, 0.5, [1, 3], [0.01, 0.05], [0.05, 0.0], [0.0, 0.6], [0.6, 1.0], ONE_KIND),
    # Level 0 persists past its interval but not past the gap to its next write (level 1 sits between).
    "persist past the interval, no wait": (0.5, 8, 0.3, 0.5, [1, 2], [0.01, 0.05], [0.05, 0.0],
                                           [0.9, 0.6], [0.5, 1.0], ONE_KIND),
    # Level-0 checkpoints after a level-1 one become durable before it: restores past it.
    "two levels, a restore past a pending one": (0.4, 7, 0.0, 0.5, [1, 3], [0.01, 0.05], [0.05, 0.0],
                                                 [0.2, 1.3], [0.6, 1.0], [(0.7, 0.2, 0.1), (0.3, 0.5, 0.4)]),
    "three levels, nested": (0.8, 8, 0.3, 0.4, [1, 2, 4], [0.01, 0.02, 0.05], [0.05, 0.1, 0.0],
                             [0.1, 0.3, 1.5], [0.3, 0.7, 1.0], [(0.7, 0.2, 0.1), (0.3, 0.5, 0.4)]),
    "three levels, not nested (1, 2, 3)": (0.8, 9, 0.3, 0.4, [1, 2, 3], [0.01, 0.02, 0.05], [0.05, 0.1, 0.0],
                                           [0.1, 0.3, 1.1], [0.3, 0.7, 1.0], TAXONOMY),
    "large lam d0": (4.0, 6, 0.2, 0.5, [1, 2], [0.02, 0.05], [0.1, 0.0], [0.3, 0.9], [0.5, 1.0], TAXONOMY),
    "tiny lam d0": (1e-9, 6, 0.2, 0.5, [1, 2], [0.02, 0.05], [0.1, 0.0], [0.3, 0.9], [0.5, 1.0], TAXONOMY),
    # Written once, it waits for nothing however long it persists (here past the job's end).
    "durable level written once": (0.5, 5, 0.2, 0.5, [1, 3], [0.01, 0.05], [0.05, 0.0], [0.2, 5.0], [0.6, 1.0],
                                   ONE_KIND),
}


@pytest.mark.parametrize("case", BRUTE_CASES.values(), ids=BRUTE_CASES.keys())
def test_equals_a_brute_force_solve_on_tiny_jobs(case):
    assert exact(*case) == pytest.approx(brute_force_wall(*case), rel=1e-12)


@st.composite
def tiny_levels(draw):
    """Tiny jobs with 0 to 2 fast levels, for the brute force."""
    L = draw(st.integers(0, 2))
    mult = [1]
    for _ in range(L):
        mult.append(mult[-1] + draw(st.integers(1, 2)))
    d0 = draw(st.floats(0.1, 1.0))
    n_full = draw(st.integers(0, 7 if L < 2 else 6))
    rem = draw(st.sampled_from([0.0, 0.4])) * d0
    duration = st.one_of(st.just(0.0), st.floats(0.0, 0.4))
    cost, restart = draw(st.lists(duration, min_size=L + 1, max_size=L + 1)), draw(
        st.lists(duration, min_size=L + 1, max_size=L + 1))
    persist = [draw(st.one_of(st.just(0.0), st.just(1.0), st.floats(0.0, 1.0))) * m * d0 for m in mult]
    survives = sorted(draw(st.lists(st.one_of(st.just(0.0), st.just(1.0), st.floats(0.0, 1.0)),
                                    min_size=L, max_size=L))) + [1.0]
    categories = draw(st.lists(st.tuples(st.floats(0.1, 1.0), st.floats(0.0, 0.6), st.floats(0.0, 0.5)),
                               min_size=1, max_size=3))
    lam = draw(st.sampled_from([1e-7, 0.1, 1.0, 3.0])) / d0
    return lam, n_full, rem, d0, mult, cost, restart, persist, survives, categories


@given(tiny_levels())
def test_equals_a_brute_force_solve_on_drawn_tiny_jobs(case):
    want = brute_force_wall(*case)
    assume(want > 0)  # (no work at all)
    assert exact(*case) == pytest.approx(want, rel=1e-12)


# ---- one level: today's renewal form -------------------------------------------------------

@given(lam_dt=st.one_of(st.just(0.0), st.floats(1e-12, 1e-6), st.floats(1e-4, 30.0)),
       interval=st.floats(0.01, 10.0), n_full=st.one_of(st.integers(0, 20), st.integers(0, 10**6)),
       fraction=st.one_of(st.just(0.0), st.floats(0.01, 0.99)), ckpt=st.one_of(st.just(0.0), st.floats(0.0, 2.0)),
       categories=st.lists(st.tuples(st.floats(0.05, 1.0), st.floats(0.0, 3.0), st.floats(0.0, 3.0)),
                           min_size=1, max_size=3))
def test_one_level_is_the_renewal_form(lam_dt, interval, n_full, fraction, ckpt, categories):
    lam = lam_dt / interval
    work = (n_full + fraction) * interval
    assume(work > 0)
    n, rem = split_work(work, interval)
    share, restart, queue = (np.array(x) for x in zip(*categories))
    want = float(renewal_expected_wall(lam, interval, work, ckpt, restart, queue, share / share.sum()))
    got = exact(lam, n, rem, interval, [1], [ckpt], [123.0], [0.0], [0.5], categories)  # (L's restart, survives unused)
    assert got == pytest.approx(want, rel=1e-12)
    if lam == 0:
        assert got == n * interval + rem + n * ckpt  # the failure-free wall, no rounding of its own


@pytest.mark.parametrize("lam, work", [(0.3, 7.3), (2.0, 12.0), (1e-8, 30.5)])
def test_one_level_is_the_mpmath_renewal_reference(lam, work):
    n, rem = tref.split(work, 0.5)
    want = float(tref.renewal_wall(lam, 0.5, work, 0.05, TAXONOMY))
    assert exact(lam, n, float(rem), 0.5, [1], [0.05], [0.0], [0.0], [1.0], TAXONOMY) == pytest.approx(want, rel=1e-13)


FRACTION = st.one_of(st.just(0.0), st.floats(0.01, 0.99))  # (not within 1e-9 of a whole interval: rounding rules)


@given(lam_dt=st.floats(1e-6, 3.0), m=st.integers(2, 6), n_full=st.integers(0, 200), fraction=FRACTION,
       cost=st.floats(0.0, 0.5), fast_persist=st.floats(0.0, 1.0), categories=st.sampled_from([ONE_KIND, TAXONOMY]))
def test_a_fast_level_that_never_survives_changes_nothing(lam_dt, m, n_full, fraction, cost, fast_persist, categories):
    # Free writes of a level no failure leaves: the job is one level at m times the base interval.
    d0 = 0.25
    lam, work = lam_dt / d0, (n_full + fraction) * d0
    assume(work > 0)
    n, rem = split_work(work, d0)
    share, restart, queue = (np.array(x) for x in zip(*categories))
    want = float(renewal_expected_wall(lam, m * d0, work, cost, restart, queue, share / share.sum()))
    got = exact(lam, n, rem, d0, [1, m], [0.0, cost], [0.7, 0.0], [fast_persist * d0, 0.0], [0.0, 1.0], categories)
    assert got == pytest.approx(want, rel=1e-11)


@given(lam_dt=st.floats(1e-6, 3.0), m=st.integers(2, 6), n_full=st.integers(0, 200), fraction=FRACTION,
       cost=st.floats(0.0, 0.5), restart=st.floats(0.0, 1.0), queue=st.floats(0.0, 1.0))
def test_a_fast_level_that_always_survives_like_the_durable_one_is_one_level(lam_dt, m, n_full, fraction, cost,
                                                                              restart, queue):
    # Same cost and restart as level L, always restorable: one level at the base interval.
    d0 = 0.25
    lam, work = lam_dt / d0, (n_full + fraction) * d0
    assume(work > 0)
    n, rem = split_work(work, d0)
    want = float(renewal_expected_wall(lam, d0, work, cost, restart, queue))
    got = exact(lam, n, rem, d0, [1, m], [cost, cost], [restart, 0.0], [0.0, 0.0], [1.0, 1.0], [(1.0, restart, queue)])
    assert got == pytest.approx(want, rel=1e-11)


# ---- the plain event simulation ------------------------------------------------------------

def fast(interval, cost, restart, persist=0.0, survives=0.0):
    return dict(interval=interval, cost=cost, restart=restart, persist=persist, survives=survives)


def closed_form_of(sc):
    """levels_expected_wall's arguments from a levels_reference scenario dict."""
    levels = sc["levels"]
    d0 = levels[0]["interval"] if levels else sc["checkpoint_interval"]
    n_full, rem = tref.split(sc["work"], d0)
    mult = [round(f["interval"] / d0) for f in levels] + [round(sc["checkpoint_interval"] / d0)]
    lam = tref.n_nodes_of(sc["n_gpus"], sc["gpus_per_node"]) * sc["failure_rate"] / 24
    categories = sc.get("categories") or [(1.0, sc["restart_cost"], sc["queue_wait"])]
    return (lam, n_full, float(rem), d0, mult, [f["cost"] for f in levels] + [sc["checkpoint_cost"]],
            [f["restart"] for f in levels] + [sc["restart_cost"]],
            [f["persist"] for f in levels] + [sc.get("checkpoint_persist", 0.0)],
            [f["survives"] for f in levels] + [1.0], categories)


BASE = dict(n_gpus=256, gpus_per_node=8, failure_rate=0.3,  # 32 nodes: 0.4 failures per hour
            work=10.0, checkpoint_interval=1.0, checkpoint_cost=0.05, restart_cost=0.2, queue_wait=0.1)
SIMULATED = {
    "async durable checkpoint": dict(BASE, checkpoint_persist=0.8, levels=[]),
    "fast level, pending durable": dict(BASE, checkpoint_persist=0.7,
                                        levels=[fast(0.25, 0.01, 0.05, persist=0.1, survives=0.7)]),
    "two fast levels, taxonomy, exponential queue": dict(
        BASE, checkpoint_interval=1.5, checkpoint_persist=1.2, queue_wait_distribution="exponential",
        categories=TAXONOMY,
        levels=[fast(0.25, 0.01, 0.05, persist=0.2, survives=0.4), fast(0.5, 0.02, 0.1, persist=0.4, survives=0.8)]),
}


@pytest.mark.parametrize("sc", SIMULATED.values(), ids=SIMULATED.keys())
def test_agrees_with_the_event_simulation(sc):
    wall = lvref.simulate_levels(sc, n_jobs=4000, seed=18)["wall"]
    mean, se = wall.mean(), wall.std(ddof=1) / math.sqrt(wall.size)
    want = exact(*closed_form_of(sc))
    # work / mean wall against work / E[wall], the SE by the delta method.
    assert abs(sc["work"] / mean - sc["work"] / want) <= 4 * sc["work"] * se / mean**2, (mean, want, se)


# ---- the shortcuts change nothing but rounding ---------------------------------------------

LONG_CASES = {
    # (lam, n_full, rem, d0, mult, cost, restart, persist, survives, categories)
    "one level, persist": (1.5, 3000, 0.1, 0.25, [1], [0.02], [0.0], [0.2], [1.0], TAXONOMY),
    "restores past pending durable writes": (1.0, 4000, 0.05, 1 / 6, [1, 12], [0.005, 0.02], [0.05, 0.0],
                                             [0.0, 1.9], [0.9, 1.0], ONE_KIND),
    "three fast levels, not nested": (0.3, 2556, 0.05, 1 / 6, [1, 6, 9, 14], [0.005, 0.01, 0.015, 0.02],
                                      [0.03, 0.05, 0.08, 0.0], [0.1, 0.6, 1.2, 2.0], [0.3, 0.6, 0.9, 1.0], TAXONOMY),
    "large lam": (6.0, 2000, 0.05, 1 / 6, [1, 2, 3], [0.005, 0.01, 0.02], [0.03, 0.05, 0.0], [0.1, 0.2, 0.4],
                  [0.5, 0.7, 1.0], ONE_KIND),
}


@pytest.mark.parametrize("case", LONG_CASES.values(), ids=LONG_CASES.keys())
def test_the_shortcuts_change_nothing_but_rounding(case):
    plain = lcf._expected_wall(*case, engine="positions", periodic=False, sliding=False)[0]
    for periodic, sliding in ((False, True), (True, False), (True, True)):
        got = lcf._expected_wall(*case, engine="positions", periodic=periodic, sliding=sliding)[0]
        assert got == pytest.approx(plain, rel=1e-12)
    for periodic in (False, True):  # the default engine, a cycle at a time, with and without its jump
        assert lcf._expected_wall(*case, periodic=periodic)[0] == pytest.approx(plain, rel=1e-12)


@st.composite
def drawn_levels(draw):
    """Jobs of up to 300 positions with 0 to 3 levels, multiples nested or not, persists up to the gap."""
    L = draw(st.integers(0, 3))
    mult = [1]
    for _ in range(L):
        mult.append(draw(st.one_of(st.integers(mult[-1] + 1, mult[-1] + 4), st.integers(2, 3).map(mult[-1].__mul__))))
    d0 = draw(st.sampled_from([1 / 3600, 0.05, 1.0]))
    n_full = draw(st.one_of(st.integers(0, 3 * mult[-1]), st.integers(0, 300)))
    rem = draw(st.sampled_from([0.0, 0.5, 0.999])) * d0
    fraction = st.one_of(st.just(0.0), st.just(1.0), st.floats(0.0, 1.0))
    cost = [draw(fraction) * 0.5 * d0 for _ in mult]
    restart = [draw(fraction) * 3 * d0 for _ in mult]
    persist = [draw(fraction) * m * d0 for m in mult]
    survives = sorted(draw(fraction) for _ in range(L)) + [1.0]
    categories = draw(st.lists(st.tuples(st.floats(0.1, 1.0), st.floats(0.0, 3.0), st.floats(0.0, 3.0)),
                               min_size=1, max_size=3)) if draw(st.booleans()) else ONE_KIND
    lam = draw(st.sampled_from([1e-9, 1e-3, 0.1, 1.0, 5.0])) / d0
    return (lam, n_full, rem, d0, mult, cost, restart, persist, survives,
            [(s, r * d0, q * d0) for s, r, q in categories])


@given(drawn_levels())
def test_the_cycles_engine_is_the_positions_engine(case):
    # Two solutions of the same equations: a cycle at a time (the default) and a position at a time.
    want, why = lcf._expected_wall(*case, engine="positions", periodic=False, sliding=False)
    got, reason = lcf._expected_wall(*case)
    assert reason == why
    assert got == pytest.approx(want, rel=1e-11, nan_ok=True)


def test_the_wall_grows_linearly_far_from_the_ends():
    # Far from both ends a period costs the same: equal steps in n_full, equal steps in E[wall].
    case = LONG_CASES["restores past pending durable writes"]
    walls = [exact(case[0], n, *case[2:]) for n in (12 * 10**5, 12 * 2 * 10**5, 12 * 3 * 10**5)]
    assert walls[2] - walls[1] == pytest.approx(walls[1] - walls[0], rel=1e-9)


# ---- edges ---------------------------------------------------------------------------------

def test_no_failures_is_the_failure_free_wall():
    # Positions 1..10 at multiples (1, 2, 5): levels 0 1 0 1 2 1 0 1 0 2.
    got = exact(0.0, 10, 0.3, 0.5, [1, 2, 5], [0.01, 0.02, 0.05], [0.1, 0.1, 0.0], [0.2, 0.5, 1.0],
                [0.2, 0.5, 1.0], TAXONOMY)
    assert got == 10 * 0.5 + 0.3 + 4 * 0.01 + 4 * 0.02 + 2 * 0.05


WAITING = {
    "persist 1.5 intervals": dict(BASE, checkpoint_persist=1.5, levels=[]),
    "persist past the work": dict(BASE, checkpoint_persist=3.0, work=2.5, levels=[]),
    "short intervals, taxonomy": dict(BASE, checkpoint_persist=2.2, checkpoint_interval=0.5, work=4.0,
                                      categories=TAXONOMY, levels=[]),
}


@pytest.mark.parametrize("sc", WAITING.values(), ids=WAITING.keys())
def test_one_level_that_waits_agrees_with_the_event_simulation(sc):
    # Each write after a restore's first waits for the one before to be durable.
    wall = lvref.simulate_levels(sc, n_jobs=3000, seed=31)["wall"]
    mean, se = wall.mean(), wall.std(ddof=1) / math.sqrt(wall.size)
    assert abs(exact(*closed_form_of(sc)) - mean) <= 4 * se, (mean, se)


@pytest.mark.slow
@given(interval=st.floats(0.05, 2.0), persist_over=st.floats(1.0, 20.0), work=st.floats(0.1, 12.0),
       cost=st.floats(0.0, 0.3), rate=st.floats(0.01, 1.0), rem_only=st.booleans())
def test_one_level_that_waits_agrees_with_the_event_simulation_drawn(interval, persist_over, work, cost, rate,
                                                                     rem_only):
    sc = dict(BASE, checkpoint_interval=interval, checkpoint_persist=interval * persist_over,
              work=min(work, 0.9 * interval) if rem_only else work, checkpoint_cost=cost, failure_rate=rate, levels=[])
    args = closed_form_of(sc)
    want = exact(*args)
    # A job that expects thousands of failures is hopeless (and the plain simulation would take minutes).
    assume(args[0] * want < 1e3)
    wall = lvref.simulate_levels(sc, n_jobs=2000, seed=32)["wall"]
    mean, se = wall.mean(), wall.std(ddof=1) / math.sqrt(wall.size)
    assert abs(want - mean) <= 4.5 * se + 1e-9 * want, (mean, se, want)


def test_one_level_that_waits_without_failures():
    # Five writes: the first after 0.5 h of compute, the other four each 1.2 - 0.5 h late; then the remainder.
    assert exact(0.0, 5, 0.3, 0.5, [1], [0.05], [0.0], [1.2], [1.0], ONE_KIND) == pytest.approx(
        5 * (0.5 + 0.05) + 4 * 0.7 + 0.3, rel=1e-15)


def test_a_fast_write_that_waits_is_not_exact():
    # Level 0 persists 0.4 h, its writes are 0.26 h apart: the next one waits (the durable one would not).
    value, reason = levels_expected_wall(0.2, 40, 0.0, 0.25, [1, 4], [0.01, 0.05], [0.05, 0.0], [0.4, 0.5],
                                         [0.5, 1.0], ONE_KIND)
    assert math.isnan(value) and "level 0's writes wait" in reason and "fast levels" in reason


# The durable level's writes wait for the one before to persist, the fast levels' never do.
DURABLE_WAITING = {
    "durable waits, a fast level": dict(BASE, checkpoint_persist=1.6,
                                        levels=[fast(0.25, 0.01, 0.05, persist=0.1, survives=0.7)]),
    "durable waits long, a fast level that never survives": dict(
        BASE, checkpoint_persist=3.5, levels=[fast(0.5, 0.02, 0.1, persist=0.0, survives=0.0)]),
    "durable waits, two fast levels, taxonomy": dict(
        BASE, checkpoint_persist=2.3, categories=TAXONOMY,
        levels=[fast(0.25, 0.01, 0.05, persist=0.2, survives=0.4), fast(0.5, 0.02, 0.1, persist=0.4, survives=0.8)]),
    "durable waits, the job ends in the stall": dict(
        BASE, work=2.0, checkpoint_persist=1.5, levels=[fast(0.5, 0.02, 0.1, persist=0.1, survives=0.9)]),
}


@pytest.mark.parametrize("sc", DURABLE_WAITING.values(), ids=DURABLE_WAITING.keys())
def test_durable_waits_with_fast_levels_agree_with_the_event_simulation(sc):
    wall = lvref.simulate_levels(sc, n_jobs=5000, seed=33)["wall"]
    mean, se = wall.mean(), wall.std(ddof=1) / math.sqrt(wall.size)
    value, reason = levels_expected_wall(*closed_form_of(sc))
    assert reason is None and abs(value - mean) <= 4 * se, (value, mean, se)


@pytest.mark.parametrize("sc", DURABLE_WAITING.values(), ids=DURABLE_WAITING.keys())
def test_durable_waits_the_shortcuts_change_nothing_but_rounding(sc):
    args = closed_form_of(sc)
    fast_path = _expected_wall(*args, engine="positions")[0]
    slow_path = _expected_wall(*args, engine="positions", periodic=False, sliding=False)[0]
    assert fast_path == pytest.approx(slow_path, rel=1e-11)


@pytest.mark.slow
@given(fast_interval=st.floats(0.1, 0.5), m=st.integers(2, 6), persist_over=st.floats(1.0, 4.0),
       fast_persist=st.floats(0.0, 1.0), survives=st.sampled_from([0.0, 0.5, 0.95, 1.0]), work=st.floats(0.5, 10.0),
       rate=st.floats(0.05, 0.6))
def test_durable_waits_with_fast_levels_agree_with_the_event_simulation_drawn(fast_interval, m, persist_over,
                                                                              fast_persist, survives, work, rate):
    sc = dict(BASE, checkpoint_interval=m * fast_interval, checkpoint_persist=m * fast_interval * persist_over,
              work=work, failure_rate=rate,
              levels=[fast(fast_interval, 0.01, 0.05, persist=fast_persist * fast_interval, survives=survives)])
    args = closed_form_of(sc)
    value, reason = levels_expected_wall(*args)
    assert reason is None
    assume(args[0] * value < 1e3)  # (a hopeless job: the plain simulation would take minutes)
    wall = lvref.simulate_levels(sc, n_jobs=2000, seed=34)["wall"]
    mean, se = wall.mean(), wall.std(ddof=1) / math.sqrt(wall.size)
    assert abs(value - mean) <= 4.5 * se + 1e-9 * value, (value, mean, se)


def test_durable_waits_without_failures():
    # Ten segments of three fast writes (0.25 h + 0.01 h) and a durable one (0.25 h + 0.05 h): the first
    # ends at 1.08 h, each later durable write waits for the one before to persist (1.6 h after its end).
    sc = DURABLE_WAITING["durable waits, a fast level"]
    args = closed_form_of(sc)
    assert levels_expected_wall(0.0, *args[1:])[0] == pytest.approx(1.08 + 9 * (1.6 + 0.05), rel=1e-14)


@given(drawn_levels(), st.booleans())
def test_the_lower_bound_is_below_the_exact_wall(case, waits):
    # (The planner skips plans by it: it must hold everywhere, one level that waits included.)
    if waits and len(case[4]) == 1:
        case = case[:7] + ([case[3] * 3.5],) + case[8:]
    want, reason = levels_expected_wall(*case)
    assume(reason is None)
    assert lcf.levels_wall_lower_bound(*case) <= want * (1 + 1e-12)


def test_the_lower_bound_counts_segments_redone_after_failures_that_fall_back():
    # No fast level, 10 intervals of 0.5 h at one failure an hour, free writes and restarts: each interval
    # takes (e - 1) / 1 hours at least, as the exact wall of a restart-free interval does.
    args = (1.0, 10, 0.0, 1.0, [1], [0.0], [0.0], [0.0], [1.0], [(1.0, 0.0, 0.0)])
    assert lcf.levels_wall_lower_bound(*args) == pytest.approx(10 * math.expm1(1.0), rel=1e-12)
    assert exact(*args) == pytest.approx(10 * math.expm1(1.0), rel=1e-12)


def test_too_many_states_is_not_exact(monkeypatch):
    monkeypatch.setattr(lcf, "MAX_STATES", 50)
    value, reason = lcf._expected_wall(0.2, 400, 0.0, 0.25, [1, 4], [0.01, 0.05], [0.05, 0.0], [0.0, 0.5],
                                       [0.5, 1.0], ONE_KIND, engine="positions")
    assert math.isnan(value) and "states" in reason


def test_too_many_positions_is_not_exact(monkeypatch):
    # A pattern too long to jump over (lcm(4, 7) = 28 positions, here more than 20) and a job too long to solve.
    monkeypatch.setattr(lcf, "_PATTERN_MAX", 20)
    args = (0.2, 400, 0.0, 0.25, [1, 4, 7], [0.01, 0.02, 0.05], [0.05, 0.05, 0.0], [0.0, 0.5, 0.5],
            [0.5, 0.7, 1.0], ONE_KIND)
    assert not math.isnan(levels_expected_wall(*args)[0])
    monkeypatch.setattr(lcf, "MAX_POSITIONS", 300)
    value, reason = levels_expected_wall(*args)
    assert math.isnan(value) and "positions" in reason


def test_a_hopeless_job_is_inf_without_warnings():
    with np.errstate(all="raise"):
        assert exact(900.0, 1000, 0.05, 1.0, [1, 2], [0.1, 0.1], [0.1, 0.0], [0.5, 1.0], [0.5, 1.0],
                     ONE_KIND) == math.inf


def test_a_hopeless_long_job_overflows_at_once_rather_than_walk_its_positions():
    """Failures every 18 s, 1 h restarts, writes that wait hours to persist, 2**27 positions: the
    periodic shortcut meets values that overflow (inf * 0 on the way), which never repeat: rather than walk
    MAX_POSITIONS waiting for them (then NaN), it is inf at once, as a job of 10**5 positions is."""
    args = dict(lam=200.0, rem=0.0, d0=1 / 3600, mult=[1], cost=[1.0], restart=[1.0], persist=[17385.0],
                survives=[1.0], categories=[(1.0, 1.0, 1 / 3600)])
    assert levels_expected_wall(n_full=10**5, **args) == (math.inf, None)
    assert levels_expected_wall(n_full=2**27, **args) == (math.inf, None)


@pytest.mark.parametrize("change", [
    dict(mult=[2, 4]), dict(mult=[1, 1]), dict(mult=[1, 2.5]), dict(cost=[0.1]), dict(survives=[1.5, 1.0]),
    dict(mult=[1, 2, 4], cost=[0.0] * 3, restart=[0.0] * 3, persist=[0.0] * 3, survives=[0.8, 0.5, 1.0]),
    dict(categories=[(0.0, 0.1, 0.1)]), dict(d0=0.0), dict(persist=[-1.0, 0.0]),
])
def test_malformed_levels_are_refused(change):
    args = dict(lam=0.1, n_full=10, rem=0.0, d0=0.5, mult=[1, 2], cost=[0.01, 0.05], restart=[0.05, 0.0],
                persist=[0.0, 0.0], survives=[0.5, 1.0], categories=ONE_KIND)
    with pytest.raises(ValueError):
        levels_expected_wall(**{**args, **change})


# ---- the first-order form ------------------------------------------------------------------

def test_first_order_golden_one_level():
    # lost = half a path interval (d0 + w) / 2, restart = the share-weighted one, queue the mean:
    # (1 - lam ((d0 + w) / 2 + u)) / (1 + w / d0) / (1 + lam q).
    lam, d0, w = 0.01, 0.5, 0.05
    u = sum(s * r for s, r, _ in TAXONOMY)
    q = sum(s * x for s, _, x in TAXONOMY)
    ettr, valid = levels_first_order(lam, d0, [1], [w], [0.0], [0.0], [1.0], TAXONOMY)
    assert valid
    assert ettr == pytest.approx((1 - lam * ((d0 + w) / 2 + u)) / (1 + w / d0) / (1 + lam * q), rel=1e-14)


FIRST_ORDER_LEVELS = {
    "one level, persist": ([1], [0.05], [0.0], [0.4], [1.0], ONE_KIND),
    "two levels": ([1, 4], [0.01, 0.05], [0.05, 0.0], [0.1, 1.5], [0.7, 1.0], TAXONOMY),
    "three levels": ([1, 2, 6], [0.01, 0.02, 0.05], [0.05, 0.1, 0.0], [0.0, 0.5, 2.5], [0.3, 0.8, 1.0], TAXONOMY),
    "three levels, not nested": ([1, 3, 4], [0.01, 0.02, 0.05], [0.05, 0.1, 0.0], [0.2, 1.1, 1.9],
                                 [0.3, 0.8, 1.0], ONE_KIND),
}


@pytest.mark.parametrize("levels", FIRST_ORDER_LEVELS.values(), ids=FIRST_ORDER_LEVELS.keys())
def test_first_order_is_close_to_exact_when_failures_are_rare(levels):
    d0 = 0.5
    n_full = math.lcm(*levels[0]) * 10**6  # whole periods: no partial one at the end
    gaps = []
    for lam in (1e-4, 1e-3, 1e-2):
        assert lam * d0 * levels[0][-1] <= 0.03
        ettr, valid = levels_first_order(lam, d0, *levels)
        assert valid
        want = n_full * d0 / exact(lam, n_full, 0.0, d0, *levels)
        assert ettr == pytest.approx(want, rel=1e-3)
        gaps.append(abs(ettr / want - 1))
    # First order: the gap is second order, 100 times smaller for 10 times fewer failures.
    assert 50 < gaps[1] / gaps[0] < 200 and 50 < gaps[2] / gaps[1] < 200


@pytest.mark.parametrize("levels", FIRST_ORDER_LEVELS.values(), ids=FIRST_ORDER_LEVELS.keys())
def test_first_order_is_flagged_where_failures_are_not_rare(levels):
    d0 = 0.5
    ettr, valid = levels_first_order(1.0 / (d0 * levels[0][-1]), d0, *levels)  # one failure per level-L interval
    assert not valid
    ettr, valid = levels_first_order(100.0, d0, *levels)
    assert math.isnan(ettr) and not valid  # numerator <= 0


@pytest.mark.parametrize("d0, levels", [
    (0.25, ([1, 4], [0.01, 0.05], [0.05, 0.0], [0.0, 1.2], [0.5, 1.0])),
    (1.0, ([1], [1 / 12], [0.0], [3.0], [1.0])),  # persisting 3 h, an hour apart: refused, not a crash
])
def test_first_order_refuses_writes_that_wait(d0, levels):
    """Neither form has a term for a write that waits for persistence: NaN, as the exact form."""
    ettr, valid = levels_first_order(1e-4, d0, *levels, ONE_KIND)
    assert math.isnan(ettr) and not valid
