"""`relmodel._fit` against the independent reference in `fit_reference` (mpmath, numerical derivatives).

Tolerances, and why they are what they are:

- ``WEIBULL_RTOL = 1e-9`` for the shape, the scale, the interval ends and the
  standard errors. The package solves the profile score equation to brentq's
  finest relative tolerance (4 machine epsilons) and evaluates closed forms in
  double precision over at most a few hundred terms, so its error is a few
  hundred ulps at worst (about 1e-13; the worst measured over 150 draws
  of up to 120 times was 1e-14). The reference works at 40 digits. 1e-9 leaves four
  orders of magnitude of margin while any formula slip (a missing Hessian
  term, a wrong quantile, a censored term treated as an event) moves these
  numbers by 1e-4 or more.
- ``LOGLIK_RTOL = 1e-11`` for log-likelihoods: sums of O(n) terms of size
  O(|loglik|) in double precision.
- ``LR_ATOL = 1e-8`` for the likelihood-ratio statistic, the difference of two
  log-likelihoods of size up to ~1e4: cancellation leaves ~1e-12 absolute.
- ``GARWOOD_RTOL = 1e-10`` for the Poisson interval: scipy's inverse
  incomplete gamma is accurate to ~1e-13 relative over these counts (the
  worst measured over 150 draws was 9e-16).
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from relmodel._fit import FitError, poisson_rate_interval, weibull_fit

from . import fit_reference as ref

WEIBULL_RTOL = 1e-9
LOGLIK_RTOL = 1e-11
LR_ATOL = 1e-8
GARWOOD_RTOL = 1e-10


def censored_weibull_sample(shape, scale, n, censor_span, seed):
    """Failure times Weibull(shape, scale), censored at Uniform(0, censor_span * scale) (inf: no censoring)."""
    rng = np.random.default_rng(seed)
    failure = scale * rng.weibull(shape, n)
    censor = rng.uniform(0, censor_span * scale, n) if math.isfinite(censor_span) else np.full(n, np.inf)
    return np.minimum(failure, censor), failure <= censor


@st.composite
def weibull_samples(draw, max_size=50):
    """Any (times, flags) pair is a valid input, so the censoring here is chosen for reach, not realism:
    each time is censored with probability `censored_share`, at a uniform fraction of its failure time."""
    shape = draw(st.floats(0.3, 5.0))
    scale = 10.0 ** draw(st.floats(-3.0, 6.0))  # seconds to years, whatever the unit: it must not matter
    n = draw(st.integers(3, max_size))
    censored_share = draw(st.sampled_from([0.0, 0.3, 0.6, 0.85]))  # none to heavy: few failures
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    failure = scale * rng.weibull(shape, n)
    observed = rng.random(n) >= censored_share
    return np.where(observed, failure, failure * rng.random(n)), observed


def _fittable(times, observed):
    return observed.sum() >= 2 and not np.all(times[observed] == times.max())


def _assert_close(actual, expected, rtol, what):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=0, err_msg=what)


@given(weibull_samples())
def test_weibull_mle_and_wald_intervals_equal_the_reference(sample):
    times, observed = sample
    if not _fittable(times, observed):
        with pytest.raises(FitError, match="^(observed|times): "):
            weibull_fit(times, observed)
        return
    fit = weibull_fit(times, observed)
    want = ref.weibull_wald(list(times), list(observed))
    _assert_close(fit.shape, want["shape"], WEIBULL_RTOL, "shape")
    _assert_close(fit.scale, want["scale"], WEIBULL_RTOL, "scale")
    _assert_close(fit.shape_ci, want["shape_ci"], WEIBULL_RTOL, "shape_ci")
    _assert_close(fit.scale_ci, want["scale_ci"], WEIBULL_RTOL, "scale_ci")
    _assert_close([fit.shape_se_log, fit.scale_se_log], [want["shape_se_log"], want["scale_se_log"]],
                  WEIBULL_RTOL, "standard errors")
    _assert_close(fit.loglik, want["loglik"], LOGLIK_RTOL, "loglik")
    exponential_loglik = ref.exponential_loglik(list(times), list(observed))
    _assert_close(fit.exponential_loglik, exponential_loglik, LOGLIK_RTOL, "exponential loglik")
    assert fit.lr_statistic == pytest.approx(max(2 * (want["loglik"] - exponential_loglik), 0.0), abs=LR_ATOL)


# The reference profile likelihood nests numerical root-finding in numerical derivatives
# (seconds per sample), so it checks a fixed spread of cases rather than a hypothesis draw.
@pytest.mark.parametrize("shape, scale, n, censor_span, seed", [
    (0.3, 1e-3, 25, 3.0, 1),   # very spread-out times, small unit
    (0.7, 2.0, 40, 1.0, 2),    # the decreasing hazard of real clusters
    (3.0, 1e5, 30, 0.8, 3),    # wear-out, large unit, heavy censoring
    (5.0, 50.0, 12, math.inf, 4),  # no censoring, few points
    (1.0, 1.0, 30, 0.3, 5),    # few failures among many censored times
])
def test_weibull_profile_intervals_equal_the_reference(shape, scale, n, censor_span, seed):
    times, observed = censored_weibull_sample(shape, scale, n, censor_span, seed)
    assert _fittable(times, observed)
    fit = weibull_fit(times, observed, interval="profile")
    want = ref.weibull_profile(list(times), list(observed))
    _assert_close(fit.shape, want["shape"], WEIBULL_RTOL, "shape")
    _assert_close(fit.shape_ci, want["shape_ci"], WEIBULL_RTOL, "shape_ci")
    _assert_close(fit.scale_ci, want["scale_ci"], WEIBULL_RTOL, "scale_ci")
    wald = weibull_fit(times, observed)
    assert fit.shape_ci != wald.shape_ci  # a different interval, not the Wald one relabelled


@given(count=st.integers(0, 1000), exposure=st.floats(1e-3, 1e7),
       confidence=st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99, 0.999]))
def test_garwood_interval_equals_the_reference(count, exposure, confidence):
    low, high = poisson_rate_interval(count, exposure, confidence)
    want_low, want_high = ref.garwood_interval(count, exposure, confidence)
    if count == 0:
        assert low == want_low == 0.0
    else:
        _assert_close(low, want_low, GARWOOD_RTOL, "lower")
    _assert_close(high, want_high, GARWOOD_RTOL, "upper")


# The reference itself, against what it can be checked with in closed form.

def test_reference_loglik_is_the_textbook_one():
    from scipy import stats

    rng = np.random.default_rng(0)
    times = 10.0 ** rng.uniform(-2, 3, 20)
    observed = rng.random(20) < 0.5
    for shape, scale in ((0.4, 0.7), (1.0, 30.0), (4.5, 200.0)):
        want = (stats.weibull_min.logpdf(times[observed], shape, scale=scale).sum()
                + stats.weibull_min.logsf(times[~observed], shape, scale=scale).sum())
        got = float(ref.weibull_loglik(math.log(shape), math.log(scale), list(times), list(observed)))
        assert got == pytest.approx(want, rel=1e-12)


def test_reference_garwood_has_the_closed_forms_at_zero_and_one():
    # count 0: P(X <= 0) = e^-mu = alpha/2; count 1: P(X >= 1) = 1 - e^-mu = alpha/2.
    alpha = 0.1
    assert ref.garwood_interval(0, 2.0, 0.9) == (0.0, pytest.approx(-math.log(alpha / 2) / 2.0, rel=1e-15))
    assert ref.garwood_interval(1, 1.0, 0.9)[0] == pytest.approx(-math.log1p(-alpha / 2), rel=1e-15)


def test_reference_exponential_fit_is_exposure_over_events():
    # With the shape held at 1 the scale MLE is exposure / events; the LR comparison above relies on it.
    times = [0.5, 1.25, 2.0, 4.0, 7.5]
    observed = [True, False, True, True, False]
    exposure, events = sum(times), sum(observed)
    want = -events * math.log(exposure / events) - events
    assert ref.exponential_loglik(times, observed) == pytest.approx(want, rel=1e-15)
