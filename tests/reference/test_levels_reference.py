"""The levels reference against itself and the single-level reference, apart from relmodel.

`levels_reference.simulate_levels` is the plain event simulation of the
checkpoint-level semantics (docs: user-guide/checkpoint-strategies.md,
'Semantics'). These tests check it without the package: where the levels reduce
to the single-level model it must agree with `timeline_reference.renewal_ettr`;
its accounting must add up job by job; and on two tiny jobs whose expected wall
is a small linear solve (a pending write that a failure may catch; a fast level
that survives with probability s) it must agree with that exact value.
Statistical checks are within 4 standard errors on fixed seeds, so they are
deterministic.
"""

import math

import mpmath
import numpy as np
import pytest

from . import levels_reference as lv
from . import timeline_reference as ref

BASE = dict(n_gpus=1024, gpus_per_node=8, failure_rate=0.1,  # 128 nodes: 0.533 failures per hour
            work=12.0, checkpoint_interval=0.25, checkpoint_cost=0.02, restart_cost=0.1, queue_wait=0.0,
            levels=[])
TAXONOMY = [(0.6, 0.1, 0.0), (0.3, 0.3, 0.5), (0.1, 1.0, 2.0)]


def fast(interval, cost, restart, persist=0.0, survives=1.0):
    return dict(interval=interval, cost=cost, restart=restart, persist=persist, survives=survives)


def lam_of(sc):
    return ref.n_nodes_of(sc["n_gpus"], sc["gpus_per_node"]) * sc["failure_rate"] / 24


def mean_and_se(x):
    return x.mean(), x.std(ddof=1) / math.sqrt(len(x))


def assert_ettr_within_4se(sc, wall, want_ettr):
    """work / mean wall against an exact ETTR, the SE by the delta method."""
    mean, se_mean = mean_and_se(wall)
    got = sc["work"] / mean
    se = sc["work"] * se_mean / mean**2
    assert abs(got - want_ettr) <= 4 * se, (got, want_ettr, se)


def assert_mean_within_4se(x, want):
    mean, se = mean_and_se(x)
    assert abs(mean - want) <= 4 * se, (mean, want, se)


# ---- 1. no levels, persist 0: today's renewal model --------------------------------------

@pytest.mark.parametrize("changes", [
    {},
    {"queue_wait": 0.3},
    {"queue_wait": 0.3, "queue_wait_distribution": "exponential"},
    {"categories": TAXONOMY},
    {"categories": TAXONOMY, "queue_wait_distribution": "exponential"},
    {"work": 12.1, "restart_cost": 0.5, "checkpoint_interval": 0.4},  # a remainder; restarts that fail
    {"work": 3.0, "checkpoint_interval": 5.0},  # work shorter than one interval: one piece, no checkpoint
], ids=["plain", "queue", "exponential-queue", "taxonomy", "taxonomy-exponential-queue", "remainder", "short"])
def test_no_levels_agrees_with_the_renewal_form(changes):
    sc = dict(BASE, **changes)
    out = lv.simulate_levels(sc, 3000, seed=11)
    assert out["failures"].mean() > 1  # the check has power
    assert_ettr_within_4se(sc, out["wall"], ref.renewal_ettr(sc))
    assert out["writes"].shape == (3000, 1)
    assert (out["restores"][:, 0] == out["failures"]).all()


# ---- 2. accounting, job by job ----------------------------------------------------------

def count_positions(work, multiples, d0):
    """How many positions of each level a finished job writes: lev(j) = max{l : j % m_l == 0}."""
    n_full, _ = ref.split(work, d0)
    counts = [0] * len(multiples)
    for j in range(1, n_full + 1):
        counts[max(l for l, m in enumerate(multiples) if j % m == 0)] += 1
    return counts


# Two fast levels that survive with probability 0.5 and 0.8, persists longer than the
# interval (waits) and shorter, a taxonomy, exponential queues, Weibull failures, a remainder.
RICH = dict(BASE, work=10.1, checkpoint_interval=1.5, checkpoint_cost=0.05, checkpoint_persist=2.0,
            categories=TAXONOMY, queue_wait_distribution="exponential", weibull_shape=0.8,
            levels=[fast(0.25, 0.01, 0.05, persist=0.6, survives=0.5),
                    fast(0.5, 0.02, 0.08, persist=0.2, survives=0.8)])
# 40 positions: level 0 at the odd ones, level 2 at multiples of 6, level 1 at the other even ones.
# Level 0 writes are 0.5 of compute apart (and a write), so its persist 0.6 can make it wait.
RICH_COUNTS = count_positions(10.1, [1, 2, 6], 0.25)


def test_the_accounting_adds_up_job_by_job():
    out = lv.simulate_levels(RICH, 2000, seed=3)
    parts = sum(out[name] for name in ("productive", "checkpoint", "lost", "restart", "queue", "persist_wait"))
    np.testing.assert_allclose(out["wall"], parts, rtol=1e-9, atol=0)
    np.testing.assert_allclose(out["productive"], RICH["work"], rtol=1e-9, atol=0)
    checkpoint_total = sum(n * c for n, c in zip(RICH_COUNTS, (0.01, 0.02, 0.05)))
    np.testing.assert_allclose(out["checkpoint"], checkpoint_total, rtol=1e-9, atol=0)
    # Every failure restores exactly one checkpoint; the per-level waits make up the persist wait.
    assert (out["restores"].sum(axis=1) == out["failures"]).all()
    np.testing.assert_allclose(out["level_wait"].sum(axis=1), out["persist_wait"], rtol=1e-9, atol=1e-12)
    # Rewrites only add writes; every quantity is non-negative.
    assert (out["writes"] >= np.array(RICH_COUNTS)).all()
    for name in ("lost", "restart", "queue", "persist_wait"):
        assert (out[name] >= 0).all()
    # The scenario exercises what it claims: failures, every level restored, waits at levels 0 and 2.
    assert out["failures"].mean() > 2
    assert (out["restores"].sum(axis=0) > 0).all()
    assert (out["level_wait"][:, 0] > 0).any() and (out["level_wait"][:, 2] > 0).any()
    assert (out["level_wait"][:, 1] == 0).all()  # persist 0.2 <= interval 0.5: never a wait


def test_without_failures_the_wall_is_the_failure_free_wall_exactly():
    # Dyadic times: every sum is exact in floats, so equality is exact.
    sc = dict(BASE, failure_rate=0.0, work=12.0, checkpoint_interval=1.0, checkpoint_cost=0.0625, queue_wait=0.5,
              categories=TAXONOMY, levels=[fast(0.25, 0.015625, 0.125, survives=0.5),
                                           fast(0.5, 0.03125, 0.125, survives=0.75)])
    counts = count_positions(12.0, [1, 2, 4], 0.25)
    assert counts == [24, 12, 12]
    want = 12.0 + 24 * 0.015625 + 12 * 0.03125 + 12 * 0.0625
    assert lv.failure_free_wall(sc) == want
    out = lv.simulate_levels(sc, 50, seed=0)
    assert (out["wall"] == want).all()
    assert (out["checkpoint"] == want - 12.0).all()
    for name in ("lost", "restart", "queue", "persist_wait", "failures", "restores", "level_wait"):
        assert (out[name] == 0).all(), name
    assert (out["writes"] == np.array(counts)).all()


def test_the_failure_cap_raises():
    sc = dict(BASE, failure_rate=1000.0, restart_cost=1.0)
    with pytest.raises(RuntimeError, match="failures"):
        lv.simulate_levels(sc, 1, seed=0, max_failures=100)


# ---- 3. a fast level that always survives, at the scenario's cost and restart -----------
# Every position then writes a checkpoint of cost c that survives every failure, and
# every level restarts for R: exactly the single-level model at the fast interval.

@pytest.mark.parametrize("changes", [
    {"levels": [fast(0.25, 0.02, 0.1)], "checkpoint_interval": 1.0},
    {"levels": [fast(0.25, 0.02, 0.1), fast(0.5, 0.02, 0.1)], "checkpoint_interval": 1.5, "work": 12.1,
     "queue_wait": 0.2, "queue_wait_distribution": "exponential"},
], ids=["one-fast-level", "two-fast-levels-remainder-queue"])
def test_a_surviving_fast_level_is_the_single_level_model_at_the_fast_interval(changes):
    sc = dict(BASE, **changes)
    out = lv.simulate_levels(sc, 3000, seed=5)
    assert out["failures"].mean() > 1
    assert_ettr_within_4se(sc, out["wall"], ref.renewal_ettr(sc, interval=0.25))
    # Each failure restores the position just written: it loses at most one piece and its write.
    assert (out["lost"] <= out["failures"] * (0.25 + 0.02) * (1 + 1e-12)).all()
    assert (out["restores"][:, :-1].sum() > 0) and (out["restores"][:, -1].sum() > 0)


def test_a_surviving_fast_level_matches_the_single_level_simulation_under_weibull():
    sc = dict(BASE, weibull_shape=0.7, queue_wait=0.1, levels=[fast(0.25, 0.02, 0.1)], checkpoint_interval=0.75)
    got = lv.simulate_levels(sc, 3000, seed=6)["wall"]
    want = ref.simulate_jobs(dict(sc, checkpoint_interval=0.25, levels=[]), 3000, seed=7)["wall"]
    (m1, s1), (m2, s2) = mean_and_se(got), mean_and_se(want)
    assert abs(m1 - m2) <= 4 * math.hypot(s1, s2), (m1, m2)


# ---- 4. a fast level that never survives ------------------------------------------------
# Every failure restores the durable level, so fast writes are pure overhead inside each
# durable piece: with m fast positions per durable one and work a multiple of the durable
# interval D, the job is n pieces of D + (m - 1) w_fast + c, each retried until it runs through.

def durable_only_wall(sc, fast_cost, m):
    lam = lam_of(sc)
    categories = sc.get("categories") or [(1.0, sc["restart_cost"], sc["queue_wait"])]
    r_star = ref.restart_phase(lam, categories)
    n, remainder = ref.split(sc["work"], sc["checkpoint_interval"])
    assert remainder == 0
    piece = mpmath.mpf(sc["checkpoint_interval"]) + (m - 1) * mpmath.mpf(fast_cost) + mpmath.mpf(sc["checkpoint_cost"])
    return float(n * ref.piece_time(lam, piece, r_star))


@pytest.mark.parametrize("changes", [{}, {"categories": TAXONOMY, "queue_wait_distribution": "exponential"}],
                         ids=["plain", "taxonomy"])
def test_a_fast_level_that_never_survives_never_helps(changes):
    sc = dict(BASE, checkpoint_interval=1.0, work=12.0, **changes)
    # Fast cost 0: the durable level alone, in distribution.
    free = dict(sc, levels=[fast(0.25, 0.0, 0.05, survives=0.0)])
    out = lv.simulate_levels(free, 3000, seed=8)
    assert out["failures"].mean() > 1
    assert (out["restores"][:, 0] == 0).all()
    assert_ettr_within_4se(sc, out["wall"], ref.renewal_ettr(sc))
    assert durable_only_wall(sc, 0.0, 4) == pytest.approx(sc["work"] / ref.renewal_ettr(sc), rel=1e-12)
    # Fast cost > 0: the durable pieces just grow; never below the durable level alone.
    costly = dict(sc, levels=[fast(0.25, 0.01, 0.05, survives=0.0)])
    out = lv.simulate_levels(costly, 3000, seed=9)
    assert (out["restores"][:, 0] == 0).all()
    assert_mean_within_4se(out["wall"], durable_only_wall(sc, 0.01, 4))
    mean, se = mean_and_se(out["wall"])
    assert mean + 4 * se >= sc["work"] / ref.renewal_ettr(sc)
    assert durable_only_wall(sc, 0.01, 4) > sc["work"] / ref.renewal_ettr(sc)


# ---- 5. persistence ---------------------------------------------------------------------

def test_persistence_within_the_interval_changes_nothing_without_failures():
    sc = dict(RICH, failure_rate=0.0, checkpoint_persist=1.5,
              levels=[fast(0.25, 0.01, 0.05, persist=0.25, survives=0.5),
                      fast(0.5, 0.02, 0.08, persist=0.2, survives=0.8)])
    with_persist = lv.simulate_levels(sc, 20, seed=1)
    without = lv.simulate_levels(dict(sc, checkpoint_persist=0.0, levels=[dict(f, persist=0.0) for f in sc["levels"]]),
                                 20, seed=1)
    for name in with_persist:
        np.testing.assert_array_equal(with_persist[name], without[name], err_msg=name)
    np.testing.assert_allclose(with_persist["wall"], lv.failure_free_wall(sc), rtol=1e-12)
    assert (with_persist["persist_wait"] == 0).all()


def test_persistence_within_the_interval_never_waits_even_with_failures():
    # Persist equal to the interval at both levels, with a non-dyadic base interval: the clock's
    # rounding must not make a wait of an ulp.
    sc = dict(BASE, work=12.0, checkpoint_interval=1.2, checkpoint_cost=0.05, checkpoint_persist=1.2,
              levels=[fast(0.3, 0.0, 0.05, persist=0.3, survives=0.7)])
    out = lv.simulate_levels(sc, 2000, seed=2)
    assert out["failures"].mean() > 1
    assert (out["persist_wait"] == 0).all() and (out["level_wait"] == 0).all()
    sc = dict(RICH, checkpoint_persist=1.0, levels=[dict(f, persist=min(f["persist"], f["interval"]))
                                                    for f in RICH["levels"]])
    out = lv.simulate_levels(sc, 1000, seed=3)
    assert (out["persist_wait"] == 0).all() and (out["level_wait"] == 0).all()


@pytest.mark.parametrize("sc, level, want", [
    # One level: each durable write after the first waits persist - interval = 0.3; 12 writes.
    (dict(BASE, failure_rate=0.0, work=6.0, checkpoint_interval=0.5, checkpoint_cost=0.05, checkpoint_persist=0.8),
     0, 11 * 0.3),
    # Free fast writes in between: the durable writes (every 1.0, persist 1.5) wait 0.5 each after the first.
    (dict(BASE, failure_rate=0.0, work=6.0, checkpoint_interval=1.0, checkpoint_cost=0.05, checkpoint_persist=1.5,
          levels=[fast(0.25, 0.0, 0.1)]), 1, 5 * 0.5),
    # A fast level of persist 0.3 > 0.25: positions 1, 2, 3 | 5, 6, 7 | ...; the 2nd and 3rd of
    # each run of three wait 0.05; across a durable position the gap is 0.5 and nothing waits.
    (dict(BASE, failure_rate=0.0, work=4.0, checkpoint_interval=1.0, checkpoint_cost=0.0625,
          levels=[fast(0.25, 0.0, 0.1, persist=0.3)]), 0, 8 * 0.05),
], ids=["one-level", "durable-behind-fast", "fast-level"])
def test_persistence_beyond_the_interval_waits_exactly_the_difference(sc, level, want):
    out = lv.simulate_levels(sc, 3, seed=0)
    np.testing.assert_allclose(out["persist_wait"], want, rtol=1e-9)
    np.testing.assert_allclose(out["level_wait"][:, level], want, rtol=1e-9)
    np.testing.assert_allclose(out["wall"], lv.failure_free_wall(sc) + want, rtol=1e-9)
    assert (out["lost"] == 0).all() and (out["failures"] == 0).all()


# ---- exact small jobs: a linear solve over the restore points ---------------------------

def e(lam, x):
    return mpmath.exp(-lam * mpmath.mpf(x))


def m(lam, x):
    """E[min(T, x)] for T exponential at rate lam."""
    return (1 - e(lam, x)) / lam


@pytest.mark.parametrize("persist", [0.0, 0.4, 1.5], ids=["durable-at-once", "pending-0.4", "never-durable"])
def test_a_pending_write_caught_by_a_failure_matches_the_exact_mean(persist):
    # One position (interval D, cost c) then a remainder r < D. A failure s after the write ends
    # restores position 1 if s >= persist (the write is durable by then), else the job start.
    D, c, r, R, q = 1.0, 0.1, 0.9, 0.2, 0.3
    sc = dict(BASE, n_gpus=8, gpus_per_node=8, failure_rate=12.0,  # lam = 0.5 per hour
              work=D + r, checkpoint_interval=D, checkpoint_cost=c, checkpoint_persist=persist,
              restart_cost=R, queue_wait=q)
    lam = mpmath.mpf(lam_of(sc))
    r_star = ref.restart_phase(lam, [(1.0, R, q)])  # every restart here restores one and the same point
    tail = ref.piece_time(lam, r, r_star)  # from position 1, durable
    p = min(persist, r)
    # Y0 = m(D+c) + (1 - e(D+c)) (R* + Y0) + e(D+c) Y1
    # Y1 = m(r) + (1 - e(p)) (R* + Y0) + (e(p) - e(r)) (R* + tail)
    k = m(lam, r) + (1 - e(lam, p)) * r_star + (e(lam, p) - e(lam, r)) * (r_star + tail)
    a = m(lam, D + c) + (1 - e(lam, D + c)) * r_star
    y0 = (a + e(lam, D + c) * k) / (e(lam, D + c) - e(lam, D + c) * (1 - e(lam, p)))
    out = lv.simulate_levels(sc, 20000, seed=12)
    assert out["failures"].mean() > 0.5
    assert_mean_within_4se(out["wall"], float(y0))
    assert (out["persist_wait"] == 0).all()


def test_a_wait_for_persistence_that_a_failure_interrupts_matches_the_exact_mean():
    # Two positions (interval D, cost c, persist p > D, p > r) and a remainder r. From the end of
    # write 1 the job computes D, waits p - D (failures strike there too), finds write 1 durable,
    # writes 2 and computes r; write 2 never becomes durable before the end. A failure within p
    # of write 1's end restores the job start, a later one position 1 (state Z1, no pending write).
    D, c, r, p, R, q = 1.0, 0.1, 0.5, 1.4, 0.2, 0.3
    sc = dict(BASE, n_gpus=8, gpus_per_node=8, failure_rate=12.0,  # lam = 0.5 per hour
              work=2 * D + r, checkpoint_interval=D, checkpoint_cost=c, checkpoint_persist=p,
              restart_cost=R, queue_wait=q)
    lam = mpmath.mpf(lam_of(sc))
    r_star = ref.restart_phase(lam, [(1.0, R, q)])
    z1 = ref.piece_time(lam, D + c + r, r_star)
    # Y0 = m(D+c) + (1 - e(D+c)) (R* + Y0) + e(D+c) Y1
    # Y1 = m(p+c+r) + (1 - e(p)) (R* + Y0) + (e(p) - e(p+c+r)) (R* + Z1)
    k = m(lam, p + c + r) + (1 - e(lam, p)) * r_star + (e(lam, p) - e(lam, p + c + r)) * (r_star + z1)
    a = m(lam, D + c) + (1 - e(lam, D + c)) * r_star
    y0 = (a + e(lam, D + c) * k) / (e(lam, D + c) * e(lam, p))
    out = lv.simulate_levels(sc, 20000, seed=14)
    assert_mean_within_4se(out["wall"], float(y0))
    assert (out["persist_wait"] > 0).mean() > 0.5
    # Every finished job waits p - D in full once; some waits were also cut short by a failure.
    waits = out["persist_wait"] / (p - D)
    assert (waits >= 1 - 1e-9).all() and (np.abs(waits - np.round(waits)) > 1e-6).any()


def test_a_fast_level_that_survives_with_probability_s_matches_the_exact_mean():
    # Position 1 fast (cost c0, restart R0, survives s), position 2 durable (cost cL, restart R),
    # no remainder. States: Y0/Y1 running from position 0/1; X0/X1 a queue and restart to 0/1.
    d0, c0, cL, R0, R, q, s = 0.5, 0.05, 0.2, 0.05, 0.4, 0.1, 0.6
    sc = dict(BASE, n_gpus=8, gpus_per_node=8, failure_rate=24.0,  # lam = 1 per hour
              work=2 * d0, checkpoint_interval=2 * d0, checkpoint_cost=cL, restart_cost=R, queue_wait=q,
              levels=[fast(d0, c0, R0, survives=s)])
    lam = mpmath.mpf(lam_of(sc))
    f1, f2 = 1 - e(lam, d0 + c0), 1 - e(lam, d0 + cL)  # failure probabilities of the two pieces
    g0, g1 = 1 - e(lam, R), 1 - e(lam, R0)  # ... and of the two restarts
    # Unknowns (X0, X1, Y0, Y1):
    # X0 = q + m(R) + g0 X0 + (1 - g0) Y0
    # X1 = q + m(R0) + g1 (s X1 + (1 - s) X0) + (1 - g1) Y1
    # Y0 = m(d0 + c0) + f1 X0 + (1 - f1) Y1
    # Y1 = m(d0 + cL) + f2 (s X1 + (1 - s) X0)
    A = mpmath.matrix([[1 - g0, 0, -(1 - g0), 0],
                       [-g1 * (1 - s), 1 - g1 * s, 0, -(1 - g1)],
                       [-f1, 0, 1, -(1 - f1)],
                       [-f2 * (1 - s), -f2 * s, 0, 1]])
    b = mpmath.matrix([q + m(lam, R), q + m(lam, R0), m(lam, d0 + c0), m(lam, d0 + cL)])
    y0 = mpmath.lu_solve(A, b)[2]
    out = lv.simulate_levels(sc, 20000, seed=13)
    assert out["restores"][:, 0].sum() > 1000 and out["restores"][:, 1].sum() > 1000
    assert_mean_within_4se(out["wall"], float(y0))
