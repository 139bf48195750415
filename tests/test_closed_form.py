"""Closed forms: golden values worked by hand, properties over typical ranges."""

import dataclasses
import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import relmodel as rm
from relmodel._closed_form import long_run_optimal_interval
from relmodel.testing import invariants
from relmodel.testing.strategies import scenarios

EXPONENTIAL = ("exponential",)

# One node failing once a day on average: M = 1 / lam = 24 h.
ONE_A_DAY = dict(n_gpus=8, failure_rate=1.0, work=1000.0)


def test_mttf_golden():
    # 16384 GPUs = 2048 nodes; 2048 * 6.5e-3 = 13.312 failures per day -> 24 / 13.312 h.
    assert rm.mttf(n_gpus=16384, failure_rate=6.5e-3) == pytest.approx(1.8028846153846154, rel=1e-15)
    assert rm.mttf(n_gpus=9, failure_rate=1.0) == 12.0  # 9 GPUs need 2 nodes
    assert rm.mttf(n_gpus=8, failure_rate=0.0) == math.inf
    np.testing.assert_allclose(rm.mttf([8, 16], 1.0), [24.0, 12.0])


def test_young_golden():
    # w = 5 min = 1/12 h, M = 24 h: sqrt(2 * (1/12) * 24) = sqrt(4) = 2 h = 120 min.
    sc = rm.Scenario(**ONE_A_DAY, checkpoint_interval=1, checkpoint_cost="5min")
    assert rm.optimal_interval(sc, "young") == pytest.approx(2.0, rel=1e-15)


def test_daly_golden():
    # sqrt(w / 2M) = sqrt(1/576) = 1/24 and w / 18M = 1/5184, so
    # 2 * (1 + 1/72 + 1/5184) - 1/12 = 1.9448302469...
    sc = rm.Scenario(**ONE_A_DAY, checkpoint_interval=1, checkpoint_cost="5min")
    assert rm.optimal_interval(sc, "daly") == pytest.approx(2 * (1 + 1 / 72 + 1 / 5184) - 1 / 12, rel=1e-14)
    # w >= 2M: Daly's interval is M itself.
    assert rm.optimal_interval(sc.sweep(checkpoint_cost="2d"), "daly") == pytest.approx(24.0)


def test_linear_golden():
    # lam = 1/24, dt = 2 h, u0 = 0.5 h, w = 5 min: (1 - (0.5 + 1) / 24) / (1 + (1/12) / 2) = 0.9375 / (25/24) = 0.9.
    sc = rm.Scenario(**ONE_A_DAY, checkpoint_interval=2, checkpoint_cost="5min", restart_cost=0.5)
    assert rm.ettr(sc, "linear") == pytest.approx(0.9, rel=1e-14)
    # A queue wait q = 1.2 h adds the factor 1 / (1 + 1.2 / 24) = 1 / 1.05.
    assert rm.ettr(sc.sweep(queue_wait=1.2), "linear") == pytest.approx(0.9 / 1.05, rel=1e-14)


def test_renewal_golden():
    # lam = 0.1 per hour (1 node at 2.4 per day), dt = 1 h, no costs, work 2 h:
    # two full intervals, each taking (e^0.1 - 1) / 0.1 = 1.0517091807564762 h on average,
    # the second followed by a zero-cost checkpoint; ETTR = 2 / 2.1034183615129524.
    sc = rm.Scenario(n_gpus=8, failure_rate=2.4, checkpoint_interval=1, work=2)
    assert rm.ettr(sc, "renewal") == pytest.approx(2 / (2 * math.expm1(0.1) / 0.1), rel=1e-14)
    # A restart u0 = 0.5 h and queue q = 0.25 h: R* = q e^(lam u0) + (e^(lam u0) - 1) / lam.
    r_star = 0.25 * math.exp(0.05) + math.expm1(0.05) / 0.1
    sc = sc.sweep(restart_cost=0.5, queue_wait=0.25, work=2.5)  # 2 full intervals + 0.5 h
    wall = 2 * math.expm1(0.1) * (10 + r_star) + math.expm1(0.05) * (10 + r_star)
    assert rm.ettr(sc, "renewal") == pytest.approx(2.5 / wall, rel=1e-14)


def test_renewal_matches_daly_efficiency_for_long_jobs():
    # q = 0, long work: ETTR -> e^(-lam u0) lam dt / (e^(lam (dt + w)) - 1).
    lam, dt, w, u0 = 1 / 24, 1.5, 0.1, 0.3
    sc = rm.Scenario(n_gpus=8, failure_rate=1.0, checkpoint_interval=dt, checkpoint_cost=w, restart_cost=u0,
                     work=dt * 200_000)
    daly = math.exp(-lam * u0) * lam * dt / math.expm1(lam * (dt + w))
    assert rm.ettr(sc, "renewal") == pytest.approx(daly, rel=1e-9)


def test_renewal_is_zero_not_an_overflow_when_hopeless():
    sc = rm.Scenario(n_gpus=10**6, failure_rate=0.02, checkpoint_interval="1w", work="30d", restart_cost="1h")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid-value warnings
        assert rm.ettr(sc, "renewal") == 0.0
        assert 0 <= rm.ettr(sc.sweep(checkpoint_interval="1s", checkpoint_cost="1s"), "renewal") <= 1


def test_linear_is_flagged_outside_its_range():
    sc = rm.Scenario(n_gpus=16384, failure_rate=6.5e-3, checkpoint_interval="4h", work="14d")
    with pytest.warns(rm.ClosedFormWarning, match="numerator"):
        assert math.isnan(rm.ettr(sc, "linear"))


def test_renewal_and_exact_are_nan_and_flagged_for_weibull():
    sc = rm.Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h", work="7d", weibull_shape=0.7,
                     checkpoint_cost="5min")
    with pytest.warns(rm.ClosedFormWarning):
        assert math.isnan(rm.ettr(sc, "renewal"))
    with pytest.warns(rm.ClosedFormWarning):
        assert math.isnan(rm.optimal_interval(sc, "exact"))
    assert rm.optimal_interval(sc, "young") > 0  # the heuristics only need the mean rate


def test_grids_give_labelled_arrays():
    sc = rm.Scenario(n_gpus=[8, 1024, 16384], failure_rate=[2.34e-3, 6.5e-3], checkpoint_interval="1h",
                     checkpoint_cost="5min", restart_cost="10min", work="7d")
    with pytest.warns(rm.ClosedFormWarning, match="at 1 of 6 points"):  # 1 M GPUs: the linear form strays
        linear = rm.ettr(sc, "linear")
    for value in (rm.ettr(sc, "renewal"), linear, rm.optimal_interval(sc, "exact"), rm.ettr(sc, at="exact")):
        assert value.dims == ("n_gpus", "failure_rate") and value.shape == (3, 2) and "units" in value.attrs
    point = rm.ettr(sc, "renewal").sel(n_gpus=1024, failure_rate=6.5e-3)
    assert float(point) == rm.ettr(sc.sweep(n_gpus=1024, failure_rate=6.5e-3), "renewal")


@pytest.mark.parametrize("kwargs, match", [(dict(method="quadratic"), "method"), (dict(at="best"), "at")])
def test_unknown_methods_are_rejected(kwargs, match):
    sc = rm.Scenario(n_gpus=8, failure_rate=1e-3, checkpoint_interval=1, work=10)
    with pytest.raises(ValueError, match=match):
        rm.ettr(sc, **kwargs)
    with pytest.raises(ValueError, match="method"):
        rm.optimal_interval(sc, "newton")


# ---- properties over typical ranges -------------------------------------------

@given(sc=scenarios(laws=EXPONENTIAL))
def test_both_forms_in_unit_interval(sc):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rm.ClosedFormWarning)
        linear = rm.ettr(sc, "linear")
    assert 0 <= rm.ettr(sc, "renewal") <= 1
    assert math.isnan(linear) or 0 < linear <= 1


# Each closed form as a model of ETTR, with the failure-free limit it tends to
# (None: no such limit, the interval itself moves as failures vanish).
CLOSED_FORMS = {
    "renewal": (lambda sc: rm.ettr(sc, "renewal"), invariants.failure_free_ettr),
    "linear": (lambda sc: rm.ettr(sc, "linear"), lambda sc: 1 / (1 + sc.checkpoint_cost / sc.checkpoint_interval)),
    "renewal-at-exact-optimum": (lambda sc: rm.ettr(sc, at="exact"), None),
}


@pytest.mark.parametrize("form", CLOSED_FORMS)
@given(sc=scenarios(laws=EXPONENTIAL), factor=st.floats(1.01, 10))
def test_closed_forms_pass_the_ettr_invariants(form, sc, factor):
    model, failure_free = CLOSED_FORMS[form]
    invariants.check_ettr_model(model, sc, factor=factor, limit_rtol=None if failure_free is None else 1e-6,
                                failure_free=failure_free or invariants.failure_free_ettr)


@settings(max_examples=100)
@given(sc=scenarios(laws=EXPONENTIAL, extreme=True))
def test_renewal_passes_the_invariants_at_the_edges_of_the_valid_space(sc):
    invariants.check_ettr_model(CLOSED_FORMS["renewal"][0], sc)
    for method in ("young", "daly", "exact"):
        assert rm.optimal_interval(sc, method=method) >= 0


@given(sc=scenarios(laws=EXPONENTIAL), shrink=st.sampled_from([1e-2, 1e-3, 1e-4]))
def test_linear_approaches_renewal_as_failures_vanish(sc, shrink):
    # Work a whole number of intervals, so only the failure terms differ.
    sc = sc.sweep(work=sc.checkpoint_interval * 50)
    x = sc.job_failure_rate * (sc.checkpoint_interval + sc.restart_cost + sc.queue_wait)
    small = sc.sweep(failure_rate=sc.failure_rate * shrink / max(x, 1e-300))  # lam (dt + u0 + q) = shrink
    gap = abs(rm.ettr(small, "linear") - rm.ettr(small, "renewal"))
    # The linear form ignores failures during checkpoint writes: a first-order
    # gap of lam w / 2, which vanishes with lam; the rest is second order.
    assert gap <= small.job_failure_rate * sc.checkpoint_cost / 2 * 1.01 + 5 * shrink**2 + 1e-12
    if sc.checkpoint_cost == 0:
        assert gap <= 5 * shrink**2 + 1e-12


@given(sc=scenarios(laws=EXPONENTIAL))
def test_exact_optimum_is_never_worse_than_young_or_daly(sc):
    assume(sc.checkpoint_cost > 0)
    best = rm.ettr(sc, "renewal", at="exact")
    for method in ("young", "daly"):
        assert best >= rm.ettr(sc, "renewal", at=method) * (1 - 1e-6)


@given(lam=st.floats(1e-5, 10), w=st.floats(1e-6, 1e-2))
def test_young_daly_and_exact_agree_to_first_order_when_w_much_less_than_m(lam, w):
    w = w / lam  # w / M between 1e-6 and 1e-2
    young = math.sqrt(2 * w / lam)
    exact = long_run_optimal_interval(lam, w)
    sc = rm.Scenario(n_gpus=8, failure_rate=24 * lam, checkpoint_interval=1, checkpoint_cost=w, work=1.0)
    daly = rm.optimal_interval(sc, "daly")
    eps = math.sqrt(lam * w)  # relative size of the next-order terms
    assert abs(exact / young - 1) <= eps and abs(daly / young - 1) <= eps
    assert abs(exact / daly - 1) <= 2 * lam * w + 1e-9  # Daly is the next order


@given(lam=st.floats(1e-6, 100), w=st.floats(1e-6, 1e3))
def test_long_run_optimum_maximises_long_run_efficiency(lam, w):
    x = lam * long_run_optimal_interval(lam, w)
    c = lam * w
    assert 0 < x <= 1
    def efficiency(x):  # lam dt / (e^(lam (dt + w)) - 1), in log form to avoid overflow
        return math.log(x) - (x + c) - math.log(-math.expm1(-(x + c)))
    for step in (1e-3, 1e-5):
        assert efficiency(x) >= max(efficiency(x * (1 - step)), efficiency(min(x * (1 + step), 1.0))) - 1e-13
    if c < 1:  # the first-order condition (1 - x) e^(x + c) = 1 itself, where it is well conditioned
        assert math.log1p(-x) + x + c == pytest.approx(0, abs=1e-12)


def test_exact_interval_splits_work_into_equal_pieces():
    sc = rm.Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval=1, checkpoint_cost="5min",
                     restart_cost="10min", work=10)
    interval = rm.optimal_interval(sc, "exact")
    n_full, remainder = sc.sweep(checkpoint_interval=interval).intervals
    assert remainder == pytest.approx(interval, rel=1e-5)  # the last piece is as long as the others
    assert rm.optimal_interval(sc.sweep(failure_rate=0), "exact") == math.inf


@pytest.mark.parametrize("n_gpus", [4096, 65536])
def test_wide_lemon_mixtures_find_the_same_exact_optimum_as_the_exhaustive_search(n_gpus, monkeypatch):
    from relmodel import _closed_form as closed_form

    sc = rm.Scenario(n_gpus=n_gpus, failure_rate=6.5e-3, checkpoint_interval=1, work="14d", checkpoint_cost="5min",
                     restart_cost="10min", lemon_fraction=0.01, lemon_rate_factor=30)
    located = rm.optimal_interval(sc)  # quantiles of the rate locate it, the whole table settles it
    monkeypatch.setattr(closed_form, "_COARSE_RATES", 10**9)
    assert rm.optimal_interval(sc) == located


# ---- families that can go wrong: no silent wrong number ----------------------------

BIG = dict(n_gpus=16384, failure_rate=6.5e-3, checkpoint_cost="5min", restart_cost="10min")


@pytest.mark.parametrize("work", ["1s", "1min", "1h", "3d"])
def test_an_interval_beyond_the_work_does_not_change_the_renewal_ettr(work):
    base = rm.Scenario(**BIG, work=work, checkpoint_interval=rm.to_hours(work) * 1.000001)
    expected = rm.ettr(base, "renewal")
    # No checkpoint is written: one piece of length `work`, e^(lam W) - 1 failures' worth of restarts.
    lam, w = base.job_failure_rate, base.work
    r_star = math.expm1(lam * base.restart_cost) / lam
    assert expected == pytest.approx(w / (math.expm1(lam * w) * (1 / lam + r_star)), rel=1e-12)
    # Up to intervals 10^10 times the work: a work below 1e-9 of the interval once read as none
    # (no piece at all: ETTR 1.0, and a simulated wall of zero).
    for factor in (2, 1e3, 1e6, 1e10):
        far = base.sweep(checkpoint_interval=base.work * factor)
        assert far.intervals == (0, base.work)
        assert rm.ettr(far, "renewal") == expected
    assert 0 < expected < 1


def test_work_far_below_every_cost_is_neither_one_nor_inf():
    sc = rm.Scenario(**BIG, work="1s", checkpoint_interval="1h")
    value = rm.ettr(sc, "renewal")
    assert 0 < value < 1 and math.isfinite(value)
    # One piece of work W, no checkpoint: ETTR = lam W / (e^(lam W) - 1) * e^(-lam u0).
    lam, w = sc.job_failure_rate, sc.work
    assert value == pytest.approx(lam * w / math.expm1(lam * w) * math.exp(-lam * sc.restart_cost), rel=1e-12)


@pytest.mark.parametrize("n_gpus, work, cost", [
    (16384, "260w", "1s"), (16384, "2600w", "5min"), (10**6, "260w", "1h"), (10**6, "2600w", "1s"),
    (8, "2600w", "1h"),
])
def test_the_exact_interval_of_long_jobs_is_the_lambert_w_optimum(n_gpus, work, cost):
    # Hundreds of thousands to a hundred million checkpoints: the finite-work optimum
    # converges on the long-run one (a window sized for typical jobs missed it by 2x).
    sc = rm.Scenario(n_gpus=n_gpus, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost=cost,
                     restart_cost="10min", work=work)
    exact = rm.optimal_interval(sc, "exact")
    assert exact == pytest.approx(long_run_optimal_interval(sc.job_failure_rate, sc.checkpoint_cost), rel=1e-3)
    best = rm.ettr(sc, at="exact")
    for other in ("young", "daly"):
        assert best >= rm.ettr(sc, at=other) * (1 - 1e-12)


@pytest.mark.parametrize("interval, restart", [("2h", "10min"), ("10h", "10min"), ("30min", "6h")])
def test_the_linear_form_is_flagged_wherever_it_strays(interval, restart):
    # 1 h of work at 4,096 GPUs: an interval beyond the work or a restart longer than the
    # interval puts the linear form far off (by up to a factor of six), with a positive numerator.
    sc = rm.Scenario(n_gpus=4096, failure_rate=6.5e-3, checkpoint_cost="5min", restart_cost=restart, work="1h",
                     checkpoint_interval=interval)
    with pytest.warns(rm.ClosedFormWarning, match="off the exact renewal form"):
        linear = rm.ettr(sc, "linear")
    from relmodel._closed_form import LINEAR_TOLERANCE, linear_deviation, linear_valid

    assert abs(linear / rm.ettr(sc, "renewal") - 1) > LINEAR_TOLERANCE
    assert linear_deviation(sc) == pytest.approx(linear / rm.ettr(sc, "renewal") - 1)
    assert not linear_valid(sc)


def test_the_linear_form_is_quiet_where_it_holds():
    sc = rm.Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_cost="5min", restart_cost="10min", work="14d",
                     checkpoint_interval="1h")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        linear = rm.ettr(sc, "linear")
    assert linear == pytest.approx(rm.ettr(sc, "renewal"), rel=0.02)


# -- a grid is its points: the closed forms over a grid (arrays, one table of job
# rates per lemon mixture, evaluated in chunks) equal each point's own, to the bit.

@st.composite
def _grids(draw):
    from relmodel.testing.strategies import durations

    sc = draw(st.one_of(scenarios(extreme=True), scenarios()))
    intervals = draw(st.lists(durations(min_value=1 / 3600, max_value=sc.work * 4), min_size=1, max_size=3,
                              unique_by=rm.to_hours))
    gpus = draw(st.lists(st.sampled_from([1, 7, 8, 64, 1000, 4096, 65536]), min_size=1, max_size=3, unique=True))
    return sc.sweep(checkpoint_interval=intervals, n_gpus=gpus)


def _pointwise(grid, method, at):
    from relmodel._closed_form import ettr_arrays

    return np.array([ettr_arrays(p, method, at)[0] for p in grid.points()])


@settings(max_examples=60)
@given(grid=_grids(), at=st.sampled_from(["given", "young", "daly"]))
def test_a_grid_is_its_points(grid, at):
    from relmodel._closed_form import ettr_arrays, grid_closed_forms, grid_linear_deviation, linear_deviation

    for method in ("renewal", "linear"):
        np.testing.assert_array_equal(ettr_arrays(grid, method, at), _pointwise(grid, method, at))
    np.testing.assert_array_equal(grid_linear_deviation(grid), [linear_deviation(p) for p in grid.points()])
    forms = grid_closed_forms(grid)  # compare's: each form evaluated once
    for method in ("renewal", "linear"):
        np.testing.assert_array_equal(forms[f"ettr_{method}"], ettr_arrays(grid, method))
    np.testing.assert_array_equal(forms["linear_deviation"], grid_linear_deviation(grid))
    np.testing.assert_array_equal(forms["renewal_exact"], [rm._closed_form.renewal_applies(p) for p in grid.points()])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rm.ClosedFormWarning)
        labelled = rm.ettr(grid, "renewal", at=at)
    np.testing.assert_array_equal(np.ravel(labelled), _pointwise(grid, "renewal", at))


def test_a_lemon_mixture_evaluated_in_chunks_is_the_same(monkeypatch):
    import relmodel._closed_form as cf

    grid = rm.Scenario(n_gpus=[512, 4096], failure_rate=6.5e-3, lemon_fraction=0.01, lemon_rate_factor=20.0,
                       checkpoint_interval=list(np.geomspace(0.05, 10, 7)), work=[10.0, 300.0], checkpoint_cost=0.05)
    whole = cf.ettr_arrays(grid, "renewal")
    monkeypatch.setattr(cf, "_MIXTURE_ELEMENTS", 1000)  # a few points per chunk, a point per chunk for 4096 GPUs
    np.testing.assert_array_equal(cf.ettr_arrays(grid, "renewal"), whole)
    np.testing.assert_array_equal(whole, _pointwise(grid, "renewal", "given"))
    assert np.all((whole > 0) & (whole < 1))


# At subnormal rates 1 / lam overflows: the form must still give the failure-free job,
# not NaN (blaming Weibull), and its exact optimum not 0.1 h at ETTR 0.
@pytest.mark.parametrize("failure_rate", [5e-324, 1e-320, 1e-310, 1e-300, 1e-200, 1e-30])
def test_the_renewal_form_at_the_tiniest_rates_is_the_failure_free_job(failure_rate):
    sc = rm.Scenario(n_gpus=1024, failure_rate=failure_rate, checkpoint_interval="1h", checkpoint_cost="5min",
                     restart_cost="10min", queue_wait="1h", work="7d")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rm.ettr(sc) == pytest.approx(168 / (168 + 168 / 12), rel=1e-14)
        assert rm.optimal_interval(sc, "exact") == math.inf
        assert rm.ettr(sc, at="exact") == pytest.approx(1.0, rel=1e-14)
        for method in ("young", "daly"):  # past the job's end: no checkpoint (inf where 1 / lam overflows)
            assert rm.optimal_interval(sc, method) > 1e10


@settings(max_examples=60)
@given(exponent=st.floats(-323.0, -1.0), interval=st.floats(0.01, 100.0), restart=st.floats(0.0, 10.0),
       queue=st.floats(0.0, 10.0), ckpt=st.floats(0.0, 1.0))
def test_the_renewal_expected_wall_against_arbitrary_precision(exponent, interval, restart, queue, ckpt):
    """E[wall] of the renewal form (docs: user-guide/closed-forms.md) in 60-digit arithmetic, at job
    rates from 1e-323 per hour up: agreement to 1e-12."""
    import mpmath

    from relmodel._closed_form import renewal_expected_wall
    from relmodel._scenario import split_work

    lam, work = 10.0**exponent, 100.0
    n_full, rem = split_work(work, interval)
    with mpmath.workdps(60):
        lm = mpmath.mpf(lam)
        r_star = queue * mpmath.exp(lm * restart) + mpmath.expm1(lm * restart) / lm

        def segment(s):
            return mpmath.expm1(lm * s) * (1 / lm + r_star)

        expected = float(n_full * segment(mpmath.mpf(interval) + ckpt) + segment(mpmath.mpf(rem)))
    got = float(renewal_expected_wall(lam, interval, work, ckpt, restart, queue))
    assert got == pytest.approx(expected, rel=1e-12)


def test_a_write_that_waits_for_persistence_is_exact_alone_and_refused_with_the_reason_by_the_linear_form():
    """The linear form refuses a write that waits with the reason, not numpy's "zero-size array" error; the
    exact form solves a durable level that waits, alone or under fast levels (held to the kernel's simulation),
    and a fast level that waits is NaN with the reason."""
    sc = rm.Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_persist="3h",
                     checkpoint_cost="5min", restart_cost="10min", work="7d")
    with pytest.warns(rm._closed_form.ClosedFormWarning, match="writes wait for persistence"):
        assert math.isnan(rm.ettr(sc, "linear"))
    cmp = rm.compare(sc, n_jobs=4000)  # closed forms that do not apply are NaN there (documented)
    assert np.isnan(cmp.ettr_linear)
    assert abs(float(cmp.ettr_renewal) - float(cmp.ettr_sim)) <= 4 * float(cmp.ettr_sim_se)
    fast = rm.CheckpointLevel(interval="20min", cost="5s", restart="3min", survives=0.5)
    levelled = sc.sweep(fast_checkpoints=(fast,))
    cmp = rm.compare(levelled, n_jobs=20_000)
    assert abs(float(cmp.ettr_renewal) - float(cmp.ettr_sim)) <= 4 * float(cmp.ettr_sim_se)
    waiting_fast = levelled.sweep(fast_checkpoints=(dataclasses.replace(fast, persist="30min"),))
    with pytest.warns(rm._closed_form.ClosedFormWarning, match="level 0's writes wait for persistence .* fast levels"):
        assert math.isnan(rm.ettr(waiting_fast, "renewal"))
