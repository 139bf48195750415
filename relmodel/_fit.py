"""Fit the failure rate ``r_f`` (infrastructure failures per node-day) from a job log.

The estimator is the one of the Meta study: count the infrastructure failures
(NODE_FAIL, or FAILED with an infrastructure cause) of jobs with at least
``min_gpus`` GPUs and divide by their node-days of runtime. With a Poisson
count that is the maximum-likelihood estimate, and its exact (Garwood)
interval inverts the Poisson tails. Around it: where the jobs and the GPU
time end up by end state, the MTTF against job size with the fitted
``1/(N r_f)`` curve and a goodness-of-fit test, a right-censored Weibull fit of
the times to failure (intervals for shape and scale from the observed
information or the profile likelihood) with a likelihood-ratio test against
the exponential, and lemon-node candidates when the log lists nodes.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import xarray as xr

from . import _labels as labels
from ._display import key_value_table
from ._errors import ParameterError
from ._job_logs import JobLog, read_log
from ._scenario import Scenario
from ._taxonomy import END_STATES
from ._units import format_hours

REPORT_SIZES = (1024, 4096, 16384, 131072)


class FitError(ParameterError):
    """The log cannot support the fit; ``.parameter`` names the parameter to change."""


WEIBULL_INTERVALS = ("wald", "profile")


@dataclasses.dataclass(frozen=True)
class WeibullFit:
    """Maximum-likelihood Weibull fit of right-censored times to failure.

    The law is ``S(t) = exp(-(t / scale) ** shape)``; ``scale`` is in the unit
    of the times given (node-days in `fit`).

    Method: the scale is profiled out in closed form
    (``scale ** shape = sum(t ** shape) / n_events``, the sum over all times)
    and the shape solves the one-dimensional profile score equation, whose
    root is unique, by a bracketed ``brentq``. It works on the times divided
    by the longest one, so the arithmetic, and the result, are the same in any
    time unit and no power overflows.

    Intervals, at ``confidence``, chosen by ``interval``:

    - ``"wald"`` (default): from the observed information, the exact analytic
      Hessian of the censored log-likelihood at the MLE in the parameters
      ``(log shape, log scale)``; the interval is ``exp(log_mle -+ z se)``.
      With ``d`` events, ``z_i = (t_i / scale) ** shape`` and
      ``w_i = log z_i`` (sums over all times, ``sum z = d`` at the MLE) the
      information is ``[[d + sum z w^2, -sum z w], [-sum z w, shape^2 d]]``;
      ``shape_se_log`` and ``scale_se_log`` are the square roots of the
      diagonal of its inverse.
    - ``"profile"``: profile-likelihood intervals: the values where the
      profile log-likelihood is ``chi2_1(confidence) / 2`` below its maximum.

    Both cover at the nominal rate with a few tens of failures (the slow
    coverage test in ``tests/test_fit.py``). With very few they cover less: in
    simulations with about 6 failures per sample, 95% Wald intervals held the
    true shape and scale 89% and 91% of the time, profile intervals 91% and 93%.
    Prefer ``"profile"`` there, and read either as optimistic.

    Both are equivariant: times in another unit give the same ``shape_ci`` and
    the ``scale_ci`` in that unit.

    ``lr_statistic`` and ``lr_pvalue`` test the exponential (shape 1) against
    the Weibull (chi-square, 1 degree of freedom). ``loglik`` and
    ``exponential_loglik`` are log-densities, so they shift with the time unit;
    their difference does not. Where the data cannot support a fit (see
    `weibull_fit`) `WeibullFit.not_estimable` gives NaN numbers and ``note``
    says why.

    Parameters
    ----------
    shape : float
        The Weibull shape (1: exponential; below 1, a falling hazard).
    scale : float
        The Weibull scale, in the unit of the times (node-days in `fit`).
    shape_ci : tuple of float
        Interval on the shape at `confidence`, ``(low, high)``.
    scale_ci : tuple of float
        Interval on the scale at `confidence`, ``(low, high)``, in the unit
        of the times.
    confidence : float
        The confidence level of the intervals, in (0, 1).
    interval : {"wald", "profile"}
        How the intervals were computed (see above).
    shape_se_log : float
        Standard error of ``log(shape)`` from the observed information.
    scale_se_log : float
        Standard error of ``log(scale)`` from the observed information.
    loglik : float
        The maximized Weibull log-likelihood (a log-density, times in their unit).
    exponential_scale : float
        Maximum-likelihood mean of the exponential law (total time over
        failures), in the unit of the times.
    exponential_loglik : float
        The maximized exponential log-likelihood (a log-density).
    lr_statistic : float
        Likelihood-ratio statistic of the Weibull against the exponential.
    lr_pvalue : float
        Its p-value (chi-square, 1 degree of freedom).
    n_events : int
        Failures (uncensored times) in the fit.
    n_censored : int
        Censored times in the fit.
    note : str, default ""
        Why there is no fit, where the numbers are NaN; empty otherwise.
    """

    shape: float
    scale: float
    shape_ci: tuple
    scale_ci: tuple
    confidence: float
    interval: str
    shape_se_log: float
    scale_se_log: float
    loglik: float
    exponential_scale: float
    exponential_loglik: float
    lr_statistic: float
    lr_pvalue: float
    n_events: int
    n_censored: int
    note: str = ""

    @property
    def estimable(self) -> bool:
        """True where the data supported a fit (the numbers are finite, not NaN)."""
        return math.isfinite(self.shape)

    def to_dict(self) -> dict:
        """Return the fit as JSON-ready data.

        Returns
        -------
        dict
            Every field by name; intervals as ``(low, high)`` tuples, the scale
            in the unit of the times (see ``FIT_UNITS`` for `fit`'s).
        """
        return dataclasses.asdict(self)

    @classmethod
    def not_estimable(cls, note: str, *, n_events: int, n_censored: int, confidence: float = 0.95,
                      interval: str = "wald") -> WeibullFit:
        """Return a fit whose numbers are all NaN, with the reason in ``note``.

        Parameters
        ----------
        note : str
            Why the data cannot support a fit.
        n_events : int
            Failures in the data.
        n_censored : int
            Censored times in the data.
        confidence : float, default 0.95
            The confidence level the intervals would have had.
        interval : {"wald", "profile"}, default "wald"
            The interval method that was asked for.

        Returns
        -------
        WeibullFit
            NaN shape, scale, intervals and test; `estimable` is False.
        """
        nan = float("nan")
        return cls(shape=nan, scale=nan, shape_ci=(nan, nan), scale_ci=(nan, nan), confidence=confidence,
                   interval=interval, shape_se_log=nan, scale_se_log=nan, loglik=nan, exponential_scale=nan,
                   exponential_loglik=nan, lr_statistic=nan, lr_pvalue=nan, n_events=int(n_events),
                   n_censored=int(n_censored), note=note)


def weibull_fit(times, observed, *, ignore_censoring: bool = False, confidence: float = 0.95,
                interval: str = "wald") -> WeibullFit:
    """Fit a Weibull law to times to failure, some right-censored, by maximum likelihood.

    Censored times of 0 carry no information (survival to 0 is 1) and are
    left out; data without censoring is an ordinary, uncensored fit.

    Parameters
    ----------
    times : array_like of float
        Times to failure or to censoring, finite and >= 0, in any unit (the
        scale and its interval come out in it; node-days in `fit`).
    observed : array_like of bool
        True where the time ends in a failure, False where it is censored
        (the job ended for another reason first); one per time (1/0 accepted).
    ignore_censoring : bool, default False
        Fit only the observed failure times, as a naive analysis would; kept
        to show how that biases the shape.
    confidence : float, default 0.95
        Confidence level of ``shape_ci`` and ``scale_ci``, in (0, 1).
    interval : {"wald", "profile"}, default "wald"
        Observed information or profile likelihood; see `WeibullFit`.

    Returns
    -------
    WeibullFit
        The shape, the scale (in the unit of `times`), their intervals and
        the likelihood-ratio test against the exponential.

    Raises
    ------
    FitError
        If the data cannot support a fit; the message starts with the argument
        to change: `times` and `observed` that do not pair up, times not finite
        or negative, fewer than two failures (none, or one), a failure at time 0
        (probability 0 under every Weibull law), every failure at the longest
        time, as with identical times (the likelihood then grows without bound
        in the shape), or a bad `confidence` or `interval`.
    """
    from scipy import stats  # here, not at import: `import relmodel` stays light

    if not (isinstance(confidence, float) and 0.0 < confidence < 1.0):
        raise FitError("confidence", f"must be a float in (0, 1) (got {confidence!r})")
    if interval not in WEIBULL_INTERVALS:
        raise FitError("interval", f"must be one of {WEIBULL_INTERVALS} (got {interval!r})")
    t = np.asarray(times, dtype=float)
    event = np.asarray(observed)
    if t.ndim != 1 or event.shape != t.shape:
        raise FitError("observed", f"must hold one flag per time (times {t.shape}, observed {event.shape})")
    if event.dtype != bool:
        if not np.all(np.isin(event, (0, 1))):
            raise FitError("observed", "must be True/False (or 1/0) flags")
        event = event.astype(bool)
    bad = ~np.isfinite(t) | (t < 0)
    if bad.any():
        raise FitError("times", f"{int(bad.sum())} of {t.size} are negative or not finite")
    if ignore_censoring:
        t, event = t[event], event[event]
    zero_failures = int(np.sum(event & (t == 0)))
    if zero_failures:
        raise FitError("times", f"{zero_failures} failures at time 0, which no Weibull law allows; "
                                "leave them out of the fit (and report them)")
    t, event = t[t > 0], event[t > 0]
    n_events, n_censored = int(event.sum()), int((~event).sum())
    if n_events < 2:
        raise FitError("observed", f"a Weibull fit needs at least 2 failures (got {n_events}, "
                                   f"with {n_censored} censored times)")
    t_max = float(t.max())
    log_x = np.log(t / t_max)  # <= 0, and 0 at the longest time
    if np.all(log_x[event] == 0.0):
        raise FitError("times", "every failure is at the longest time (identical times?), so the likelihood "
                                "grows without bound in the shape; there is no finite Weibull fit")
    profile = _WeibullProfile(log_x, event)
    shape = profile.shape_mle()
    scale = t_max * math.exp(profile.log_scale(shape))
    se_shape, se_scale = profile.standard_errors_log(shape)
    if interval == "wald":
        z = float(stats.norm.ppf(0.5 + confidence / 2))
        shape_ci = (shape * math.exp(-z * se_shape), shape * math.exp(z * se_shape))
        scale_ci = (scale * math.exp(-z * se_scale), scale * math.exp(z * se_scale))
    else:
        drop = float(stats.chi2.ppf(confidence, 1)) / 2
        shape_ci = profile.shape_interval(shape, drop, se_shape)
        low, high = profile.log_scale_interval(shape, drop, se_scale)
        scale_ci = (t_max * math.exp(low), t_max * math.exp(high))
    loglik = profile.loglik(shape) - n_events * math.log(t_max)  # density of t = density of t/t_max / t_max
    exp_scale = float(t.sum()) / n_events  # exponential MLE with censoring: exposure / events
    exp_loglik = -n_events * math.log(exp_scale) - n_events
    lr = max(2.0 * (loglik - exp_loglik), 0.0)  # >= 0 in exact arithmetic; rounding can give -1e-12
    return WeibullFit(shape=shape, scale=scale, shape_ci=shape_ci, scale_ci=scale_ci, confidence=confidence,
                      interval=interval, shape_se_log=se_shape, scale_se_log=se_scale, loglik=loglik,
                      exponential_scale=exp_scale, exponential_loglik=exp_loglik, lr_statistic=lr,
                      lr_pvalue=float(stats.chi2.sf(lr, 1)), n_events=n_events, n_censored=n_censored)


_RTOL = 4 * np.finfo(float).eps  # brentq's finest relative tolerance
_MAX_SHAPE = 1e6  # a profile root beyond this is a degenerate sample, not a shape


class _WeibullProfile:
    """Censored Weibull log-likelihood of ``x = t / t_max`` (so ``log x <= 0``, 0 at the longest time).

    With ``d`` failures and ``S_E = sum over failures of log x``, the log-likelihood is
    ``d log k + (k - 1) S_E - d k log s - sum (x / s) ** k`` (shape ``k``, scale ``s``).
    For a fixed shape it peaks at ``s ** k = sum x ** k / d``, which gives the profile
    ``d log k + (k - 1) S_E - d log(sum x ** k / d) - d``.
    """

    def __init__(self, log_x: np.ndarray, event: np.ndarray):
        self.log_x = log_x
        self.d = float(event.sum())
        self.sum_log_event = float(log_x[event].sum())

    def _log_sum_pow(self, shape: float) -> float:
        # log sum x**k; the largest term is 1, so the sum is in [1, n] and never overflows.
        return math.log(float(np.exp(shape * self.log_x).sum()))

    def loglik(self, shape: float) -> float:
        """Profile log-likelihood (scale at its best for this shape), in units of t_max."""
        d = self.d
        return d * math.log(shape) + (shape - 1) * self.sum_log_event - d * (self._log_sum_pow(shape)
                                                                            - math.log(d)) - d

    def score(self, shape: float) -> float:
        """d/dk of the profile log-likelihood, divided by d: strictly decreasing in k."""
        power = np.exp(shape * self.log_x)
        return 1.0 / shape + self.sum_log_event / self.d - float(power @ self.log_x) / float(power.sum())

    def shape_mle(self) -> float:
        from scipy import optimize

        low = high = 1.0
        while self.score(low) <= 0:  # > 0 once k < 1 / |S_E / d|: a few halvings (|log x| < 1500)
            low /= 2
        while self.score(high) >= 0:
            high *= 2
            if high > _MAX_SHAPE:
                raise FitError("times", "the failures are so close to the longest time that the shape "
                                        f"exceeds {_MAX_SHAPE:g}; no meaningful Weibull fit")
        return float(optimize.brentq(self.score, low, high, xtol=1e-300, rtol=_RTOL))

    def log_scale(self, shape: float) -> float:
        """log(scale / t_max) at the profile optimum for `shape`."""
        return (self._log_sum_pow(shape) - math.log(self.d)) / shape

    def standard_errors_log(self, shape: float) -> tuple[float, float]:
        """Standard errors of (log shape, log scale): the inverse observed information (see `WeibullFit`)."""
        d = self.d
        log_z = shape * self.log_x + math.log(d) - self._log_sum_pow(shape)  # log (t_i / scale)**k
        z = np.exp(log_z)
        zw, zww = float(z @ log_z), float(z @ (log_z * log_z))
        # det / k^2 of the information; >= d^2 by Cauchy-Schwarz (sum z = d), so never near 0.
        reduced_det = d * d + d * zww - zw * zw
        return math.sqrt(d / reduced_det), math.sqrt((d + zww) / reduced_det) / shape

    def shape_interval(self, shape: float, drop: float, se_log: float) -> tuple[float, float]:
        """Shapes where the profile log-likelihood is `drop` below its maximum (it is concave in k)."""
        target = self.loglik(shape) - drop
        return (_solve_below(lambda k: self.loglik(k) - target, shape, se_log, log_space=True, side=-1),
                _solve_below(lambda k: self.loglik(k) - target, shape, se_log, log_space=True, side=+1))

    def _max_over_shape(self, log_scale: float, shape_guess: float) -> float:
        """max over k of the log-likelihood at scale exp(log_scale) (units of t_max)."""
        from scipy import optimize

        u = self.log_x - log_scale  # log(x / s)
        sum_u_event = self.sum_log_event - self.d * log_scale

        def score(k):
            # d/dk of the log-likelihood times exp(-m), m the largest k*u: same sign and root, no overflow.
            m = max(float(np.max(k * u)), 0.0)
            return (self.d / k + sum_u_event) * math.exp(-m) - float(u @ np.exp(k * u - m))

        # The score falls from +inf (k -> 0) to below 0: bracket by halving and doubling.
        low = high = shape_guess
        for _ in range(2000):
            if score(low) > 0:
                break
            low /= 2
        for _ in range(2000):
            if score(high) < 0:
                break
            high *= 2
        if not score(low) > 0 > score(high):
            raise FitError("interval", "the profile likelihood of the scale could not be bracketed; "
                                       "use interval='wald'")
        k = float(optimize.brentq(score, low, high, xtol=1e-300, rtol=_RTOL))
        # exp clamped at e^700: only far outside any interval, where the value is hugely negative anyway.
        return (self.d * math.log(k) + k * sum_u_event - self.sum_log_event
                - float(np.exp(np.minimum(k * u, 700.0)).sum()))

    def log_scale_interval(self, shape: float, drop: float, se_log: float) -> tuple[float, float]:
        """log(scale / t_max) where the profile log-likelihood of the scale is `drop` below its maximum."""
        centre = self.log_scale(shape)
        target = self.loglik(shape) - drop

        def excess(log_scale):
            return self._max_over_shape(log_scale, shape) - target

        return (_solve_below(excess, centre, se_log, log_space=False, side=-1),
                _solve_below(excess, centre, se_log, log_space=False, side=+1))


def _solve_below(excess, centre: float, se_log: float, *, log_space: bool, side: int) -> float:
    """The root of `excess` (> 0 at `centre`, falling away from it) on one side of `centre`.

    Steps out by ``2 se`` (about the Wald half-width), doubling, until `excess` is negative,
    then brentq. With ``log_space`` the parameter is positive and the steps multiply it.
    """
    from scipy import optimize

    step = 2.0 * max(se_log, 1e-8)
    for _ in range(64):
        far = centre * math.exp(side * step) if log_space else centre + side * step
        if excess(far) < 0:
            break
        step *= 2
    else:
        raise FitError("interval", "the profile likelihood does not fall that far; use interval='wald'")
    low, high = sorted((centre, far))
    return float(optimize.brentq(excess, low, high, xtol=1e-300 if log_space else 1e-15, rtol=_RTOL))


def poisson_rate_interval(count: int, exposure: float, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Garwood) interval for a Poisson rate: ``count`` events in ``exposure``.

    The bounds are the means ``mu`` with ``P(X >= count; mu) = alpha/2`` (lower;
    0 when ``count`` is 0) and ``P(X <= count; mu) = alpha/2`` (upper), each
    divided by ``exposure``: the regularized incomplete gamma function
    inverted, the same as the chi-square quantiles ``chi2(alpha/2; 2 count) / 2``
    and ``chi2(1 - alpha/2; 2 count + 2) / 2``.

    Parameters
    ----------
    count : int
        The observed number of events, >= 0.
    exposure : float
        The exposure they occurred in, finite and > 0 (node-days in `fit`).
    confidence : float, default 0.95
        The interval's confidence level, in (0, 1).

    Returns
    -------
    tuple of float
        ``(low, high)``: bounds on the rate, events per unit of `exposure`
        (failures per node-day in `fit`).

    Raises
    ------
    FitError
        For a count that is not a non-negative integer, an exposure that is not
        finite and positive, or a confidence outside (0, 1).
    """
    from scipy import special  # here, not at import: `import relmodel` stays light

    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
        raise FitError("count", f"must be a non-negative integer (got {count!r})")
    if not (isinstance(exposure, (int, float, np.integer, np.floating)) and math.isfinite(exposure)
            and exposure > 0):
        raise FitError("exposure", f"must be finite and > 0 (got {exposure!r})")
    if not (isinstance(confidence, float) and 0.0 < confidence < 1.0):
        raise FitError("confidence", f"must be a float in (0, 1) (got {confidence!r})")
    alpha = 1.0 - confidence
    low = float(special.gammaincinv(count, alpha / 2)) if count > 0 else 0.0
    # The upper tail inverted directly: 1 - alpha/2 would lose digits for confidences near 1.
    high = float(special.gammainccinv(count + 1, alpha / 2))
    return low / float(exposure), high / float(exposure)


# Units of the numbers in FitResult.to_dict(), by dotted key path ("*": any key there).
FIT_UNITS = {
    "failure_rate_per_node_day": "failures per node-day", "failure_rate_ci": "failures per node-day",
    "confidence": "1", "infrastructure_failures": "failures", "node_days": "node-days", "jobs_used": "jobs",
    "min_gpus": "GPUs", "gpus_per_node": "GPUs per node", "mttf_h_at.*": "h (keys: GPUs of the job)",
    "goodness_of_fit.deviance": "1", "goodness_of_fit.dof": "1", "goodness_of_fit.p_value": "1",
    "weibull.shape": "1", "weibull.scale": "node-days", "weibull.shape_ci": "1", "weibull.scale_ci": "node-days",
    "weibull.confidence": "1", "weibull.shape_se_log": "1", "weibull.scale_se_log": "1",
    "weibull.loglik": "1 (log-density, times in node-days)", "weibull.exponential_scale": "node-days",
    "weibull.exponential_loglik": "1 (log-density, times in node-days)", "weibull.lr_statistic": "1",
    "weibull.lr_pvalue": "1", "weibull.n_events": "failures", "weibull.n_censored": "jobs",
    "end_states.*.jobs_share": "1", "end_states.*.gpu_time_share": "1", "end_states.*.jobs": "jobs",
    "log.rows_read": "rows", "log.rows_used": "rows", "log.rows_folded": "rows", "log.skipped.*": "rows",
    "log.notes.*": "rows", "log.*": "rows",
}


@dataclasses.dataclass(frozen=True)
class FitResult:
    """What `fit` found.

    Parameters
    ----------
    failure_rate : float
        Infrastructure failures per node-day (jobs >= `min_gpus` GPUs).
    failure_rate_ci : tuple of float
        Exact Poisson interval on the rate at `confidence`.
    confidence : float
        The confidence level of the intervals.
    n_failures : int
        The count of infrastructure failures behind the rate.
    node_days : float
        The exposure behind the rate.
    n_jobs : int
        Job attempts that entered the rate.
    min_gpus : int
        The smallest job size that entered the rate.
    gpus_per_node : int
        GPUs per node, which turn GPU counts into nodes.
    weibull : WeibullFit
        Fit of the times to failure (node-days) of those jobs.
    lemon_nodes : tuple of str
        Names of the lemon-node candidates (empty without node lists).
    dataset : xarray.Dataset
        The full report (see `fit`).
    log : JobLog
        The log that was fitted.
    """

    failure_rate: float
    failure_rate_ci: tuple
    confidence: float
    n_failures: int
    node_days: float
    n_jobs: int
    min_gpus: int
    gpus_per_node: int
    weibull: WeibullFit
    lemon_nodes: tuple
    dataset: xr.Dataset
    log: JobLog = dataclasses.field(repr=False)

    def mttf_h_at(self, n_gpus):
        """Return the projected MTTF of a job at the fitted failure rate, in hours.

        ``24 / (ceil(n_gpus / gpus_per_node) r_f)``, with ``r_f`` the fitted
        rate per node-day; infinite where the rate is 0.

        Parameters
        ----------
        n_gpus : int or array_like
            GPUs in the job.

        Returns
        -------
        float or numpy.ndarray
            The job's MTTF in hours (an array when `n_gpus` is one).
        """
        nodes = np.ceil(np.asarray(n_gpus, dtype=float) / self.gpus_per_node)
        with np.errstate(divide="ignore"):
            out = 24.0 / (nodes * self.failure_rate)
        return float(out) if out.ndim == 0 else out

    def scenario(self, *, with_weibull_shape: bool = False, **fields):
        """Return a `relmodel.Scenario` at the fitted failure rate.

        Parameters
        ----------
        with_weibull_shape : bool, default False
            Use the fitted Weibull shape too (``weibull_shape``).
        **fields
            The other Scenario fields: ``n_gpus`` is needed;
            ``checkpoint_interval`` defaults to 1 hour and ``work`` to 7 days
            (as in the CLI), ``gpus_per_node`` to the fit's.

        Returns
        -------
        Scenario
            The scenario, its ``failure_rate`` the fitted rate per node-day.

        Raises
        ------
        FitError
            If ``with_weibull_shape=True`` and no Weibull shape was fitted.
        ScenarioError
            If a field is outside its valid range.
        TypeError
            If a field name is not a Scenario field.
        """
        fields.setdefault("checkpoint_interval", 1.0)
        fields.setdefault("work", "7d")
        fields.setdefault("gpus_per_node", self.gpus_per_node)
        if with_weibull_shape:
            if not self.weibull.estimable:
                raise FitError("weibull_shape", f"no Weibull shape was fitted from the log ({self.weibull.note})")
            fields["weibull_shape"] = self.weibull.shape
        return Scenario(failure_rate=self.failure_rate, **fields)

    def to_dict(self) -> dict:
        """Return the fit as JSON-ready data, with a `units` block.

        The `units` block gives the unit of every number by its dotted key path
        (``*``: any job size, end state or count).

        Returns
        -------
        dict
            The fitted rate (failures per node-day), its interval, exposure
            (node-days), MTTF by job size (hours), goodness of fit and the rest,
            by key, and ``units``.
        """
        ds = self.dataset
        return {
            "units": dict(FIT_UNITS),
            "failure_rate_per_node_day": self.failure_rate,
            "failure_rate_ci": list(self.failure_rate_ci),
            "confidence": self.confidence,
            "infrastructure_failures": self.n_failures,
            "node_days": self.node_days,
            "jobs_used": self.n_jobs,
            "min_gpus": self.min_gpus,
            "gpus_per_node": self.gpus_per_node,
            "mttf_h_at": {str(n): self.mttf_h_at(n) for n in REPORT_SIZES},
            "goodness_of_fit": {"deviance": ds.attrs["gof_deviance"], "dof": int(ds.attrs["gof_dof"]),
                                "p_value": ds.attrs["gof_pvalue"]},
            "weibull": self.weibull.to_dict(),
            "lemon_nodes": list(self.lemon_nodes),
            "end_states": {str(s): {"jobs_share": float(ds.jobs_share.sel(state=s)),
                                    "gpu_time_share": float(ds.gpu_time_share.sel(state=s)),
                                    "jobs": int(ds.jobs.sel(state=s))} for s in ds.state.values},
            "log": self.log.summary.to_dict(),
            "taxonomy": {"name": self.log.taxonomy.name, "version": self.log.taxonomy.version},
        }

    def __repr__(self) -> str:
        low, high = self.failure_rate_ci
        shape = f", Weibull shape {self.weibull.shape:.3g}" if self.weibull.estimable else ""
        return (f"FitResult({1000 * self.failure_rate:.4g} failures per 1000 node-days "
                f"[{1000 * low:.4g}, {1000 * high:.4g}], {self.n_failures} failures in {self.node_days:.4g} "
                f"node-days, {self.n_jobs} jobs >= {self.min_gpus} GPUs{shape})")

    def _repr_html_(self) -> str:
        """A small table for notebooks: the rate, its interval, the data behind it and projected MTTFs."""
        low, high = self.failure_rate_ci
        rows = [("failure rate", f"{1000 * self.failure_rate:.4g} per 1000 node-days"),
                (f"{self.confidence:.0%} CI", f"{1000 * low:.4g} to {1000 * high:.4g}"),
                ("failures / node-days", f"{self.n_failures} / {self.node_days:.4g}"),
                (f"jobs (>= {self.min_gpus} GPUs)", str(self.n_jobs)),
                ("Weibull shape", f"{self.weibull.shape:.3g}" if self.weibull.estimable else "not fitted"),
                *((f"MTTF at {n} GPUs", _hours(self.mttf_h_at(n))) for n in REPORT_SIZES)]
        return key_value_table("FitResult", rows)

    def __str__(self) -> str:
        ds, low_high = self.dataset, self.failure_rate_ci
        pct = f"{self.confidence:.0%}"
        out = [
            f"log: {self.log.summary}",
            (f"jobs with >= {self.min_gpus} GPUs: {self.n_jobs}, {self.node_days:.6g} node-days, "
             f"{self.n_failures} infrastructure failures"),
            (f"failure rate: {1000 * self.failure_rate:.4g} per 1000 node-days "
             f"({pct} CI {1000 * low_high[0]:.4g} to {1000 * low_high[1]:.4g})"),
            "projected MTTF: " + ", ".join(f"{n} GPUs {_hours(self.mttf_h_at(n))}" for n in REPORT_SIZES),
            "",
            f"{'end state':<14} {'jobs':>8} {'share':>7} {'GPU-time':>9}  infrastructure",
        ]
        for s in ds.state.values:
            row = ds.sel(state=s)
            out.append(f"{s!s:<14} {int(row.jobs):>8} {float(row.jobs_share):>7.1%} "
                       f"{float(row.gpu_time_share):>9.1%}  {int(row.infrastructure_failures)}")
        out += ["", (f"{'GPUs':>13} {'jobs':>7} {'node-days':>10} {'failures':>8} {'MTTF (h)':>9} "
                     f"{'fitted (h)':>10}  in fit")]
        for i in range(ds.sizes["size_bin"]):
            b = ds.isel(size_bin=i)
            if int(b.bin_jobs) == 0:
                continue
            out.append(f"{int(b.gpus_low):>6}-{int(b.gpus_high) - 1:<6} {int(b.bin_jobs):>7} "
                       f"{float(b.bin_node_days):>10.4g} {int(b.bin_failures):>8} {float(b.mttf_h):>9.4g} "
                       f"{float(b.mttf_fitted_h):>10.4g}  {'yes' if bool(b.in_fit) else 'no'}")
        out.append(f"goodness of fit across sizes: deviance {ds.attrs['gof_deviance']:.3g} on "
                   f"{int(ds.attrs['gof_dof'])} dof, p = {ds.attrs['gof_pvalue']:.3g}")
        w = self.weibull
        if w.estimable:
            out.append(f"Weibull times to failure (censored MLE, {w.interval} intervals): shape {w.shape:.3g} "
                       f"({pct} CI {w.shape_ci[0]:.3g} to {w.shape_ci[1]:.3g}), scale {w.scale:.3g} node-days "
                       f"({pct} CI {w.scale_ci[0]:.3g} to {w.scale_ci[1]:.3g}); vs exponential: "
                       f"LR {w.lr_statistic:.3g}, p = {w.lr_pvalue:.3g}")
        else:
            out.append(f"Weibull times to failure: not fitted ({w.note})")
        zero = int(ds.attrs.get("weibull_zero_time_failures", 0))
        if zero:
            out.append(f"  ({zero} failures at zero runtime count in the rate but not in the Weibull fit)")
        if "node" in ds.dims:
            out.append(f"lemon-node candidates ({ds.sizes['node']} nodes tested): "
                       + (", ".join(self.lemon_nodes) if self.lemon_nodes else "none"))
        else:
            out.append("lemon-node candidates: the log has no node lists")
        return "\n".join(out)

    def plot(self, path=None, ax=None):
        """Draw MTTF against job size: binned points with their intervals, the fitted curve, log axes.

        Parameters
        ----------
        path : str or os.PathLike, optional
            Save the figure here when given.
        ax : matplotlib.axes.Axes, optional
            The Axes to draw on (default: a new Figure's).

        Returns
        -------
        matplotlib.figure.Figure
            The figure of `ax` (saved to `path` when given): MTTF in hours
            against job size in GPUs.
        """
        from matplotlib.figure import Figure

        from ._ticks import plain_log_axis

        if ax is None:
            ax = Figure(figsize=(6.5, 4.5), layout="constrained").subplots()
        ds = self.dataset
        seen = ds.bin_failures > 0
        b = ds.where(seen, drop=True)
        centre = b.bin_mean_gpus
        err = np.vstack([b.mttf_h - b.mttf_low_h, b.mttf_high_h - b.mttf_h])
        for flag, colour, label in ((True, "C0", f"jobs >= {self.min_gpus} GPUs (fitted)"),
                                    (False, "0.6", "smaller jobs (not fitted)")):
            sel = (b.in_fit == flag).values
            if sel.any():
                ax.errorbar(centre.values[sel], b.mttf_h.values[sel], yerr=err[:, sel], fmt="o", color=colour,
                            capsize=3, label=label)
        ax.plot(ds.curve_gpus, ds.mttf_curve_h, "C1-",
                label=f"1/(N r_f), r_f = {1000 * self.failure_rate:.3g} per 1000 node-days")
        ax.set(xscale="log", yscale="log", xlabel="job size (GPUs)", ylabel="MTTF of the job (h)",
               title=f"MTTF against job size ({self.confidence:.0%} intervals)")
        plain_log_axis(ax.xaxis)
        plain_log_axis(ax.yaxis)
        ax.legend(fontsize=8)
        if path is not None:
            from ._store import save_figure

            save_figure(ax.figure, path)
        return ax.figure


def fit(log, *, min_gpus: int = 128, gpus_per_node: int = 8, taxonomy="meta-2024", confidence: float = 0.95,
        format: str = "auto", errors: str = "raise") -> FitResult:
    """Fit the infrastructure failure rate per node-day from a scheduler job log.

    Parameters
    ----------
    log : JobLog, str or pathlib.Path
        A `JobLog`, a path to a log file, or the log's text (see `read_log`).
    min_gpus : int, default 128
        Only jobs with at least this many GPUs enter the rate (small
        jobs are dominated by user failures and have little exposure).
    gpus_per_node : int, default 8
        Turns GPU counts into nodes where the log gives no node count.
    taxonomy : str, pathlib.Path or Taxonomy, default "meta-2024"
        Classifies end states (preset name, path or `Taxonomy`).
    confidence : float, default 0.95
        Of the Poisson interval on the rate (and the other intervals).
    format : {"auto", "sacct", "csv"}, default "auto"
        Passed to `read_log` when `log` is not a `JobLog`.
    errors : {"raise", "skip"}, default "raise"
        Passed to `read_log` when `log` is not a `JobLog`.

    Returns
    -------
    FitResult
        Its ``dataset`` holds: by ``state``, ``jobs``, ``jobs_share``,
        ``gpu_hours``, ``gpu_time_share`` (all jobs) and the same for the fitted
        jobs, and ``infrastructure_failures``; by ``size_bin`` (log-spaced GPU
        counts), ``bin_jobs``, ``bin_mean_gpus``, ``bin_node_days``, ``bin_failures``, ``mttf_h``
        with ``mttf_low_h``/``mttf_high_h``, ``mttf_fitted_h``,
        ``expected_failures``, ``in_fit``; ``mttf_curve_h`` along
        ``curve_gpus``; by ``node`` (with node lists) ``node_failures``,
        ``node_days_on_node``, ``expected_node_failures`` (``r_f`` times
        node-days), ``node_rate_factor``, ``node_lr_statistic``, ``tail_p``,
        ``lemon_candidate``; and provenance and the Weibull fit in ``attrs``.

    Raises
    ------
    FitError
        If the log cannot support the fit (no exposure at `min_gpus`, a bad
        `confidence`); the message starts with the parameter to change.
    LogError
        If the log is malformed (with ``errors="raise"``).
    """
    if isinstance(min_gpus, bool) or not isinstance(min_gpus, (int, np.integer)) or min_gpus < 1:
        raise FitError("min_gpus", f"must be a positive integer (got {min_gpus!r})")
    if isinstance(gpus_per_node, bool) or not isinstance(gpus_per_node, (int, np.integer)) or gpus_per_node < 1:
        raise FitError("gpus_per_node", f"must be a positive integer (got {gpus_per_node!r})")
    if not (isinstance(confidence, float) and 0 < confidence < 1):
        raise FitError("confidence", f"must be in (0, 1) (got {confidence!r})")
    if not isinstance(log, JobLog):
        log = read_log(log, format=format, taxonomy=taxonomy, errors=errors)
    ds = log.dataset
    n_gpus, n_nodes = _sizes(ds, gpus_per_node)
    runtime_d = np.where(np.isfinite(ds.runtime_h.values), ds.runtime_h.values, 0.0) / 24.0
    node_days = n_nodes * runtime_d
    infra = ds.infrastructure.values
    large = n_gpus >= min_gpus
    exposure = float(node_days[large].sum())
    if exposure <= 0:
        raise FitError("min_gpus", f"the log has no runtime of jobs with at least {min_gpus} GPUs "
                                   f"({len(log)} jobs read, largest {int(n_gpus.max(initial=0))} GPUs)")
    count = int(infra[large].sum())
    rate = count / exposure
    ci = poisson_rate_interval(count, exposure, confidence)

    # A failure at zero runtime (BOOT_FAIL, say) counts in the rate but has probability 0 under
    # any Weibull law: it is left out of the Weibull fit, and the report says how many were.
    zero_time = large & infra & (node_days <= 0)
    weibull_times, weibull_events = node_days[large & ~zero_time], infra[large & ~zero_time]
    weibull = _weibull_or_note(weibull_times, weibull_events, confidence=confidence)
    naive = _weibull_or_note(weibull_times, weibull_events, confidence=confidence, ignore_censoring=True)
    parts = [_end_states(ds, n_gpus, runtime_d, large), _size_bins(n_gpus, n_nodes, runtime_d, infra, rate,
                                                                   min_gpus, confidence, gpus_per_node)]
    lemons: tuple = ()
    if log.has_node_lists:
        node_ds = _lemon_nodes(log.node_lists, n_nodes, runtime_d, infra, rate)
        lemons = tuple(str(n) for n in node_ds.node.values[node_ds.lemon_candidate.values])
        parts.append(node_ds)
    out = xr.merge(parts, combine_attrs="drop_conflicts")
    gof = parts[1].attrs
    out.attrs = labels.provenance(
        "failure rate fitted from a job log", **{
        "source": log.summary.source, "format": log.summary.format,
        "taxonomy": log.taxonomy.name, "taxonomy_version": log.taxonomy.version,
        "rows_read": log.summary.rows_read, "rows_used": log.summary.rows_used,
        "rows_skipped": log.summary.rows_skipped,
        "min_gpus": int(min_gpus), "gpus_per_node": int(gpus_per_node), "confidence": confidence,
        "failure_rate_per_node_day": rate, "failure_rate_ci": list(ci),
        "infrastructure_failures": count, "node_days": exposure, "jobs_used": int(large.sum()),
        "estimator": "infrastructure failures of jobs >= min_gpus / their node-days; Garwood interval",
        **gof,
        "weibull_shape": weibull.shape, "weibull_scale_node_days": weibull.scale,
        "weibull_shape_ci": list(weibull.shape_ci), "weibull_scale_ci_node_days": list(weibull.scale_ci),
        "weibull_interval": f"{weibull.interval} ({weibull.confidence:g})",
        "weibull_lr_statistic": weibull.lr_statistic,
        "weibull_lr_pvalue": weibull.lr_pvalue, "weibull_shape_ignoring_censoring": naive.shape,
        "weibull_note": weibull.note, "weibull_zero_time_failures": int(zero_time.sum()),
        "lemon_nodes": ",".join(lemons),
    })
    return FitResult(failure_rate=rate, failure_rate_ci=ci, confidence=confidence, n_failures=count,
                     node_days=exposure, n_jobs=int(large.sum()), min_gpus=int(min_gpus),
                     gpus_per_node=int(gpus_per_node), weibull=weibull, lemon_nodes=lemons, dataset=out, log=log)


def _weibull_or_note(times, events, **kwargs) -> WeibullFit:
    """`weibull_fit`, or where the log cannot support it a NaN fit whose ``note`` says why."""
    try:
        return weibull_fit(times, events, **kwargs)
    except FitError as err:
        n_censored = 0 if kwargs.get("ignore_censoring") else int(np.sum(~events))
        return WeibullFit.not_estimable(str(err).partition(": ")[2], n_events=int(np.sum(events)),
                                        n_censored=n_censored, confidence=kwargs.get("confidence", 0.95))


def _sizes(ds: xr.Dataset, gpus_per_node: int) -> tuple[np.ndarray, np.ndarray]:
    """GPUs and nodes of each job, each filled from the other where the log gives one only."""
    gpus, nodes = ds.n_gpus.values.astype(np.int64), ds.n_nodes.values.astype(np.int64)
    gpus = np.where(gpus >= 0, gpus, np.where(nodes >= 0, nodes * gpus_per_node, 0))
    nodes = np.where(nodes >= 0, nodes, -(-gpus // gpus_per_node))
    return gpus, nodes


def _end_states(ds, n_gpus, runtime_d, large) -> xr.Dataset:
    state = ds.state.values
    gpu_hours = n_gpus * runtime_d * 24.0
    infra = ds.infrastructure.values
    cols = {}
    for label, mask in (("", np.ones_like(large)), ("_fitted", large)):
        jobs = np.array([np.sum(mask & (state == s)) for s in END_STATES])
        hours = np.array([gpu_hours[mask & (state == s)].sum() for s in END_STATES])
        cols[f"jobs{label}"] = ("state", jobs)
        cols[f"jobs_share{label}"] = ("state", jobs / max(jobs.sum(), 1))
        cols[f"gpu_hours{label}"] = ("state", hours)
        cols[f"gpu_time_share{label}"] = ("state", hours / hours.sum() if hours.sum() > 0 else hours * 0)
    cols["infrastructure_failures"] = ("state", np.array([np.sum(infra & (state == s)) for s in END_STATES]))
    return xr.Dataset(cols, coords={"state": list(END_STATES)})


def _size_bins(n_gpus, n_nodes, runtime_d, infra, rate, min_gpus, confidence, gpus_per_node) -> xr.Dataset:
    """Jobs binned by GPU count at powers of two (and at min_gpus): observed against fitted MTTF."""
    from scipy import special, stats  # here, not at import: `import relmodel` stays light
    known = n_gpus >= 1
    top = max(int(n_gpus.max(initial=1)), min_gpus)
    edges = np.unique(np.concatenate([2 ** np.arange(int(math.log2(top)) + 2), [min_gpus]]))
    index = np.searchsorted(edges, n_gpus[known], side="right") - 1
    n_bins = edges.size - 1
    jobs = np.bincount(index, minlength=n_bins)[:n_bins]
    job_days = np.bincount(index, weights=runtime_d[known], minlength=n_bins)[:n_bins]
    node_days = np.bincount(index, weights=(n_nodes * runtime_d)[known], minlength=n_bins)[:n_bins]
    gpu_days = np.bincount(index, weights=(n_gpus * runtime_d)[known], minlength=n_bins)[:n_bins]
    failures = np.bincount(index, weights=infra[known], minlength=n_bins)[:n_bins].astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        job_hours = job_days * 24
        mttf = np.where(failures > 0, job_hours / failures, np.inf)
        bounds = np.array([poisson_rate_interval(int(k), 1.0, confidence) for k in failures]).reshape(-1, 2)
        rate_low, rate_high = bounds[:, 0] / job_hours, bounds[:, 1] / job_hours
        mean_nodes = np.where(job_days > 0, node_days / job_days, np.nan)
        mean_gpus = np.where(job_days > 0, gpu_days / job_days, np.nan)  # runtime-weighted, where MTTF is measured
        fitted = 24.0 / (mean_nodes * rate)
        mttf_low, mttf_high = 1 / rate_high, 1 / rate_low
    expected = rate * node_days
    in_fit = (edges[:-1] >= min_gpus) & (node_days > 0)
    k, mu = failures[in_fit], expected[in_fit]
    deviance = float(2 * np.sum(special.rel_entr(k, mu) - k + mu))  # Poisson deviance; 0 log 0 = 0
    dof = int(in_fit.sum()) - 1
    curve = np.geomspace(max(min(edges[0], min_gpus), 1), max(top, 131072), 60)
    ds = xr.Dataset(
        {"bin_jobs": ("size_bin", jobs), "bin_node_days": ("size_bin", node_days),
         "bin_failures": ("size_bin", failures), "mttf_h": ("size_bin", mttf),
         "mttf_low_h": ("size_bin", mttf_low), "mttf_high_h": ("size_bin", mttf_high),
         "mttf_fitted_h": ("size_bin", fitted), "expected_failures": ("size_bin", expected),
         "in_fit": ("size_bin", in_fit), "bin_mean_gpus": ("size_bin", mean_gpus),
         "mttf_curve_h": ("curve_gpus", 24.0 / (np.ceil(curve / gpus_per_node) * rate) if rate > 0
                          else np.full(curve.size, np.inf))},
        coords={"size_bin": np.arange(n_bins), "gpus_low": ("size_bin", edges[:-1]),
                "gpus_high": ("size_bin", edges[1:]), "curve_gpus": curve},
        attrs={"gof_statistic": "Poisson deviance over the fitted size bins",
               "gof_deviance": deviance, "gof_dof": dof,
               "gof_pvalue": float(stats.chi2.sf(deviance, dof)) if dof > 0 else float("nan")},
    )
    ds.mttf_h.attrs["units"] = "h"
    return ds


def _lemon_nodes(node_lists, n_nodes, runtime_d, infra, rate, alpha: float = 0.01,
                 iterations: int = 80) -> xr.Dataset:
    """Per node: does it fail more often than the fitted rate says?

    A scheduler log names the job that failed, not which of its nodes did. So
    each node is tested by the likelihood ratio of its jobs' failure times with
    its own rate ``theta * r_f`` (the other nodes at ``r_f``; a job on ``N``
    nodes then fails at ``(N - 1 + theta) r_f``) against ``theta = 1``. A
    failure of a one-node job counts fully, one of an ``N``-node job about
    ``1/N``. A lemon candidate has a one-sided p-value (half a chi-square with
    one degree of freedom) below ``alpha`` / number of nodes (Bonferroni).
    """
    from scipy import stats  # here, not at import: `import relmodel` stays light
    lengths = np.diff(node_lists.offsets)
    # The nodes that jobs name, sorted by name; where: each entry's node among them.
    used = np.unique(node_lists.ids)
    used_names = node_lists.names[used].astype(str)
    order = np.argsort(used_names, kind="stable")
    names = used_names[order]
    position = np.empty(node_lists.names.size, dtype=np.int64)
    position[used[order]] = np.arange(used.size)
    where = position[node_lists.ids]
    job = np.repeat(np.arange(len(node_lists)), lengths)
    exposure = np.bincount(where, weights=runtime_d[job], minlength=names.size)  # node-days on the node
    failed = infra[job]
    fnode, others = where[failed], lengths[job[failed]] - 1.0
    failures = np.bincount(fnode, minlength=names.size)
    expected = rate * exposure
    theta = np.ones(names.size)
    # Newton on the score, which is convex and decreasing in theta: from theta = 1 it climbs
    # monotonically to the root (or stays at 1 where the node fails no more than expected).
    for _ in range(iterations if rate > 0 else 0):
        inv = 1.0 / (others + theta[fnode])
        score = np.bincount(fnode, weights=inv, minlength=names.size) - expected
        slope = np.bincount(fnode, weights=inv**2, minlength=names.size)
        step = np.where((score > 0) & (slope > 0), score / np.where(slope > 0, slope, 1.0), 0.0)
        theta = theta + step
    gain = np.bincount(fnode, weights=np.log((others + theta[fnode]) / (others + 1.0)), minlength=names.size)
    lr = np.maximum(2.0 * (gain - expected * (theta - 1.0)), 0.0)
    p_value = np.where(theta > 1.0, 0.5 * stats.chi2.sf(lr, 1), 1.0)
    candidate = p_value < alpha / max(names.size, 1)
    return xr.Dataset({"node_failures": ("node", failures), "node_days_on_node": ("node", exposure),
                       "expected_node_failures": ("node", expected), "node_rate_factor": ("node", theta),
                       "node_lr_statistic": ("node", lr), "tail_p": ("node", p_value),
                       "lemon_candidate": ("node", candidate)}, coords={"node": names})


def _hours(h: float) -> str:
    return format_hours(h)


