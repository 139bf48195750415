"""Every timeline quantity against its plain reference, over the whole valid space.

As scipy's test_continuous checks that every computation method agrees, each
property draws scenarios from `relmodel.testing.strategies` with
``extreme=True`` (a second to decades of work, intervals of a second to far
beyond the work, 1 to 10^6 GPUs, failure rates from 0 to hopeless) and asserts
that the package equals the reference within the tolerance stated beside it,
or gives NaN with a warning that says why. CI runs the "ci" hypothesis profile
(25 examples each); HYPOTHESIS_PROFILE=thorough runs 500.
"""

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import relmodel as rm
from relmodel._closed_form import MIN_INTERVAL
from relmodel.testing.strategies import failure_models, scenarios

from . import timeline_reference as ref

# Lemon mixtures to 2,048 GPUs: the reference sums every lemon count in 40-digit arithmetic.
EXTREME_EXPONENTIAL = st.one_of(scenarios(extreme=True, laws=("exponential",)),
                                scenarios(extreme=True, laws=("lemon",), max_gpus=2048))


def fields(sc: rm.Scenario) -> dict:
    """The scenario as plain numbers for the reference (which imports nothing of relmodel)."""
    out = {name: getattr(sc, name) for name in rm._scenario.FIELDS}
    if sc.taxonomy:
        out["categories"] = [(c.share, c.restart_cost, c.queue_wait) for c in sc.taxonomy]
    return out


def quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rm.ClosedFormWarning)
        return func(*args, **kwargs)


# ---- closed forms -------------------------------------------------------------------

@given(n_gpus=st.integers(1, 10**6), rate=st.one_of(st.just(0.0), st.floats(1e-12, 1e3)),
       per_node=st.sampled_from([1, 4, 8, 16]))
def test_mttf_equals_the_rational_reference(n_gpus, rate, per_node):
    # 24 / (n * r) in floats rounds twice (product, quotient): within 4 ulps of the exact value.
    got = rm.mttf(n_gpus=n_gpus, failure_rate=rate, gpus_per_node=per_node)
    want = ref.mttf_hours(n_gpus, rate, per_node)
    assert got == want if math.isinf(want) else got == pytest.approx(want, rel=1e-15)


@given(sc=scenarios(extreme=True, laws=("exponential",)))
def test_linear_form_equals_the_rational_reference(sc):
    got = quiet(rm.ettr, sc, "linear")
    want = ref.linear_ettr(sc.job_failure_rate, sc.checkpoint_interval, sc.checkpoint_cost, sc.restart_cost,
                           sc.queue_wait)
    if math.isnan(want):
        assert math.isnan(got)
    else:
        # A ratio in [0, 1] of sums of float products: absolute error of a few ulps of 1,
        # except that 1 - lam (u0 + dt/2) cancels; 1e-12 covers a thousandfold cancellation.
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


def _check_renewal(sc):
    got = rm.ettr(sc, "renewal")
    want = ref.renewal_ettr(fields(sc))
    assert 0.0 <= got <= 1.0
    # float64 exp/expm1 of arguments up to ~700 lose up to |x| ulps (about 1e-13); the
    # lemon table leaves out counts weighing below 2^-60. 1e-9 relative covers both with
    # room; below 1e-300 both sides are zero to float64.
    assert got == pytest.approx(want, rel=1e-9, abs=1e-300)


@given(sc=EXTREME_EXPONENTIAL)
def test_renewal_ettr_equals_the_high_precision_reference(sc):
    _check_renewal(sc)


@given(model=failure_models(kinds=("taxonomy",), min_rate=0.0, max_rate=10.0),
       sc=scenarios(extreme=True, laws=("exponential",), max_gpus=65_536))
def test_renewal_ettr_with_a_taxonomy_equals_the_reference(model, sc):
    from_model = ("failure_rate", "weibull_shape", "lemon_fraction", "lemon_rate_factor", "restart_cost", "queue_wait")
    _check_renewal(rm.Scenario(**{n: getattr(sc, n) for n in rm._scenario.FIELDS if n not in from_model},
                               failure_model=model))


@given(n=st.integers(1, 2**30), p=st.floats(1e-300, 1.0, exclude_max=True), data=st.data())
def test_binomial_log_masses_equal_the_reference(n, p, data):
    # The lemon mixture's E[wall] is carried by tails far below float64's least mass, so
    # their logs must be right to a few ulps of their own size (scipy's logpmf is not:
    # 1.5e-8 relative at 2^26 nodes; it once moved a hopeless ETTR by 3.7e-9).
    ks = data.draw(st.lists(st.integers(0, n), min_size=1, max_size=8))
    got = rm._failures.binomial_log_pmf(np.array(ks), n, p)
    for k, value in zip(ks, got):
        want = ref.binomial_log_pmf(k, n, p)
        assert value == pytest.approx(want, rel=1e-13, abs=1e-13)


@pytest.mark.parametrize("factor", [1.0, 1.000001, 2.0, 1e3, 1e6])
@given(sc=EXTREME_EXPONENTIAL)
# scipy's binomial logpmf is off by 5e-12 here: the underflowing lemon counts need better.
@example(sc=rm.Scenario(n_gpus=477, failure_rate=10.0, checkpoint_interval=1 / 3600, work=1.0, gpus_per_node=4,
                        lemon_fraction=2.0**-9, lemon_rate_factor=22.0))
def test_an_interval_beyond_the_work_is_no_interval(factor, sc):
    beyond = sc.sweep(checkpoint_interval=sc.work * factor * (1 + 1e-6))
    assume(beyond.work / beyond.checkpoint_interval < 2.0**40)
    got = rm.ettr(beyond, "renewal")
    assert got == rm.ettr(sc.sweep(checkpoint_interval=sc.work * 2.0), "renewal")
    assert got == pytest.approx(ref.renewal_ettr(fields(beyond)), rel=1e-9, abs=1e-300)


@settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(sc=scenarios(extreme=True, laws=("exponential",), max_gpus=65_536))
def test_exact_interval_is_the_brute_force_optimum(sc):
    # Brute force over every checkpoint count, where there are few enough to try them all.
    max_count = min(math.floor(sc.work / MIN_INTERVAL) - 1, 400)
    assume(max_count >= 0)
    long_run = rm._closed_form.long_run_optimal_interval(sc.job_failure_rate, sc.checkpoint_cost)
    assume(sc.job_failure_rate == 0 or sc.work / max(long_run, MIN_INTERVAL) < max_count / 4)
    k, best = ref.best_checkpoint_count(fields(sc), max_count)
    interval = rm.optimal_interval(sc, "exact")
    got = rm.ettr(sc, at="exact")
    if k == 0:  # never checkpoint: any interval past the work
        assert math.isinf(interval)
    # The package's interval sits just past work / (k + 1) (the nudge that keeps k
    # checkpoints costs under 1e-9 relative), and the count it picks ties the best.
    assert got == pytest.approx(best, rel=1e-9, abs=1e-300)
    assert got >= best * (1 - 1e-9)


@given(sc=EXTREME_EXPONENTIAL)
def test_exact_is_never_below_young_or_daly(sc):
    exact = rm.ettr(sc, at="exact")
    for method in ("young", "daly"):
        assert exact >= rm.ettr(sc, at=method) * (1 - 1e-9), method


@given(sc=scenarios(extreme=True))
@example(sc=rm.Scenario(n_gpus=2921, failure_rate=1e-310, checkpoint_interval=1 / 3600, work=1 / 3600,
                        checkpoint_cost=876000.0, gpus_per_node=1))  # Young's 2 w / lam overflowed: inf
def test_every_closed_form_is_a_ratio_a_named_nan_or_an_interval(sc):
    # Over every law, Weibull included: a number in [0, 1], or NaN with a warning saying why;
    # intervals positive, infinite only where there is no failure or no checkpoint pays.
    for method in ("linear", "renewal"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = rm.ettr(sc, method)
        assert math.isnan(value) or 0.0 <= value <= 1.0
        if math.isnan(value):
            assert any(issubclass(w.category, rm.ClosedFormWarning) for w in caught)
    for method in ("young", "daly", "exact"):
        interval = quiet(rm.optimal_interval, sc, method)
        if math.isnan(interval):
            assert method == "exact" and sc.weibull_shape != 1.0
        elif math.isinf(interval):
            # No failure; or the interval is finite but past what a float holds (Young's
            # sqrt(2 w M) and Daly's at a subnormal rate, where M = 1 / lam overflows).
            lam, w = sc.job_failure_rate, sc.checkpoint_cost
            overflows = lam > 0 and (-math.log(lam) > 709.0
                                     or w > 0 and 0.5 * (math.log(2 * w) - math.log(lam)) > 709.0)
            assert lam == 0 or method == "exact" or overflows
        else:
            assert interval >= 0


# ---- the simulation against a plain event simulation ------------------------------

LAWS = {
    "exponential": dict(),
    "weibull-0.7": dict(weibull_shape=0.7),
    "weibull-2": dict(weibull_shape=2.0),
    "lemon": dict(lemon_fraction=0.05, lemon_rate_factor=20.0),
    "exponential-queue": dict(queue_wait=0.5, queue_wait_distribution="exponential"),
    "taxonomy": dict(restart_cost=None, queue_wait=None, taxonomy=(
        rm._failures.FailureCategory("short", 0.7, restart_cost=0.1, queue_wait=0.0),
        rm._failures.FailureCategory("long", 0.3, restart_cost=1.5, queue_wait=2.0))),
}
BASE = dict(n_gpus=64, failure_rate=0.6, checkpoint_interval=1.5, checkpoint_cost=0.1, restart_cost=0.3, work=10.0)


@pytest.mark.parametrize("law", LAWS)
def test_simulation_agrees_with_the_plain_event_simulation(law):
    # About 2 failures per hour over 10 h of work: every branch (failure in compute, in a
    # checkpoint write, in a restart) is taken many times. Both sides are unbiased; their
    # means differ by less than 5 combined standard errors (a false alarm once in 1.7 million).
    sc = rm.Scenario(**{**BASE, **LAWS[law]})
    reference = ref.simulate_jobs(fields(sc), n_jobs=4000, seed=11)
    ds = rm.simulate(sc, n_jobs=40_000, seed=11, keep_jobs=True)
    for name in ("wall", "productive", "checkpoint", "lost", "restart", "queue", "failures"):
        ours = ds[f"job_{name}"].values
        theirs = reference[name]
        se = math.sqrt(ours.var() / ours.size + theirs.var() / theirs.size)
        gap = abs(ours.mean() - theirs.mean())
        assert gap <= 5 * se + 1e-12 * abs(theirs.mean()), (name, ours.mean(), theirs.mean(), se)
    assert np.all(reference["productive"] == pytest.approx(sc.work))
    # The mean of per-job ratios (not the ratio of means the closed forms give).
    ratio_ref = sc.work / reference["wall"]
    se = math.sqrt(ratio_ref.var() / ratio_ref.size + float(ds.ettr_job_mean_se) ** 2)
    assert abs(float(ds.ettr_job_mean) - ratio_ref.mean()) <= 5 * se
    # Wall-time quantiles come from a 2048-bin histogram of failure-free wall / wall:
    # within one bin of the reference's empirical quantile, give or take a two-sample
    # Kolmogorov-Smirnov band at 1e-6 (2.76 sqrt(1/n + 1/m)).
    band = 2.76 * math.sqrt(1 / ratio_ref.size + 1 / ds.attrs["n_jobs"])
    walls = np.sort(reference["wall"])
    for level, quantile in zip(ds["quantile"].values, ds.wall_quantile.values):
        step = 1 + 2 * quantile / (sc.failure_free_wall * 2048)  # two bins of y = ffw / wall, in wall
        below = np.searchsorted(walls, quantile / step, side="right") / walls.size
        above = np.searchsorted(walls, quantile * step, side="right") / walls.size
        assert below - band <= level <= above + band, (level, quantile, below, above)
    if sc.weibull_shape == 1.0:  # the renewal form is exact here: the reference simulation agrees with it too
        wall = reference["wall"]
        assert abs(sc.work / rm.ettr(sc, "renewal") - wall.mean()) < 5 * wall.std() / math.sqrt(wall.size)


@given(sc=scenarios(extreme=True, laws=("exponential",)), multiple=st.integers(2, 6),
       fast_restart=st.sampled_from([0.0, 1 / 60, 1.0]))
@example(sc=rm.Scenario(n_gpus=1, failure_rate=1e-320, checkpoint_interval=1 / 3600, work=1 / 3600,
                        checkpoint_cost=168.0, gpus_per_node=1), multiple=2, fast_restart=0.0)  # erred by 1.7e-6
@example(sc=rm.Scenario(n_gpus=1, failure_rate=1e-320, checkpoint_interval=1 / 3600, work=1 / 3600,
                        checkpoint_cost=0.0, gpus_per_node=1), multiple=2, fast_restart=0.0)  # divided by 0
def test_levels_that_never_survive_give_the_high_precision_renewal_reference(sc, multiple, fast_restart):
    """Over the edges of the valid space, through `rm.ettr`: a fast level of no cost whose
    checkpoints never survive a failure, and a durable write that persists at once, is the
    plain model at the durable interval (the levels' exact form against the 40-digit reference)."""
    fast = rm.CheckpointLevel(sc.checkpoint_interval / multiple, cost=0.0, restart=fast_restart, survives=0.0)
    leveled = sc.sweep(fast_checkpoints=(fast,))
    n_fast, rest_fast = rm._level_pattern.split_work(sc.work, fast.interval)
    n_plain, rest_plain = rm._level_pattern.split_work(sc.work, sc.checkpoint_interval)
    # (The exact-multiple rounding rule works on each interval: keep draws where both read the work alike.)
    assume(n_fast // multiple == n_plain and n_fast < 2**36)
    assume(rest_plain == pytest.approx((n_fast % multiple) * fast.interval + rest_fast, rel=1e-12, abs=1e-300))
    got = quiet(rm.ettr, leveled, "renewal")
    want = ref.renewal_ettr(fields(sc))
    assert 0.0 <= got <= 1.0
    assert got == pytest.approx(want, rel=1e-9, abs=1e-300)
