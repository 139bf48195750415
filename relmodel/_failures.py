"""Failure processes: the per-job failure rate and its spread across jobs, and
the failure-model objects that hand a failure process to a `Scenario`.

Failures arrive per node at `failure_rate` per node-day of runtime, independent
across nodes, so a job on N nodes fails at N * failure_rate. With lemon nodes a
fraction of the cluster fails `lemon_rate_factor` times as often as the rest;
the healthy rate is set so that the cluster-average rate stays `failure_rate`,
and each job draws its number of lemons from a binomial, hence its own rate.

The model objects (`Exponential`, `Weibull`, `LemonMixture`,
`TaxonomyMixture`) are frozen and hashable. Each describes the time from a
(re)start of a job on `n_nodes` nodes to its next failure, in hours of runtime:
`hazard`, `survival`, `mean`, and `sample`, which draws through the same
Philox streams and inverse transforms as `simulate`.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ._display import readable
from ._docparts import fill_doc_parts
from ._errors import ScenarioError
from ._checks import check_integer, check_memory, check_number
from ._synthetic_log import synthetic_log  # noqa: F401  re-exported: relmodel._failures.synthetic_log
from ._taxonomy import TaxonomyError
from ._taxonomy import load as load_taxonomy
from ._units import short_repr

# Binomial tails below this mass are dropped: a 53-bit uniform cannot reach them.
_TAIL = 2.0**-60
_SHARE_TOLERANCE = 1e-9  # category shares must sum to 1 within this

# Docstring parts that several docstrings share, written once: a docstring names one as %(name)s.
_DOC_PARTS = {
    "lemon_parameters": """\
n_nodes : int
    Nodes in the job.
failure_rate : float
    Cluster-average failures per node-day.
lemon_fraction : float, default 0.0
    Fraction of nodes that are lemons.
lemon_rate_factor : float, default 1.0
    How many times as often a lemon fails.""",
    "scenario_fields_returns": """\
Returns
-------
dict
    ``failure_rate``, ``weibull_shape``, ``lemon_fraction``,
    ``lemon_rate_factor`` and ``taxonomy``.""",
    "nodes_and_weibull_returns": """\
n_nodes : int
    Nodes in the job.

Returns
-------
Weibull
    The model, with its rate per node-day.""",
}


def job_rate_table(n_nodes: int, failure_rate: float, lemon_fraction: float = 0.0,
                   lemon_rate_factor: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Return the distribution of a job's failure rate in failures per hour, to sample.

    One entry when every job has the same rate; otherwise one per lemon count,
    tails below 2^-60 left out (a 53-bit uniform cannot reach them). The last
    cdf entry is exactly 1. For expectations use `job_rate_log_masses`.

    Parameters
    ----------
    %(lemon_parameters)s

    Returns
    -------
    cdf : numpy.ndarray
        Cumulative probability of each rate; the last entry is 1.
    rate : numpy.ndarray
        The job failure rate per hour for each entry.
    """
    if not has_lemons(failure_rate, lemon_fraction, lemon_rate_factor):
        return np.array([1.0]), np.array([n_nodes * failure_rate / 24.0])
    from scipy import (
        stats,  # here, not at import: it is slow to import and only lemons need it
    )

    binom = stats.binom(n_nodes, lemon_fraction)
    low, high = _binomial_support(n_nodes, lemon_fraction)
    # scipy's quantiles can fail wide (isf(2^-60) = n for 2^26 nodes: a table of
    # every count, minutes and gigabytes); the support bounds them.
    low = max(low, _as_count(binom.ppf(_TAIL), low))
    high = min(high, _as_count(binom.isf(_TAIL), high))
    lemons = np.arange(low, high + 1)
    try:
        mass = binom.pmf(lemons)
    except OverflowError:  # scipy's pmf fails for fractions near float64's least normal; its logpmf does not
        mass = np.exp(binom.logpmf(lemons))
    keep = mass > 0
    cdf = np.cumsum(mass[keep])
    cdf /= cdf[-1]
    return cdf, _lemon_job_rates(n_nodes, failure_rate, lemon_fraction, lemon_rate_factor, lemons[keep])


# Lemon counts of a job with up to this many nodes are all kept by `job_rate_log_masses`.
_EVERY_COUNT_NODES = 2**20


def job_rate_log_masses(n_nodes: int, failure_rate: float, lemon_fraction: float = 0.0,
                        lemon_rate_factor: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Return the log probability and rate per hour of every lemon count, for expectations.

    A count far below float64's least mass can still carry E[wall]: its rate is
    higher, and E[wall] grows like e^(rate * work); differences of a cdf would
    lose every mass below 1e-16. So masses stay in logs, over every count for
    jobs of up to 2^20 nodes (beyond that, the counts whose mass float64 can hold).

    Parameters
    ----------
    %(lemon_parameters)s

    Returns
    -------
    log_mass : numpy.ndarray
        Natural log of each lemon count's probability.
    rate : numpy.ndarray
        The job failure rate per hour at each count.
    """
    if not has_lemons(failure_rate, lemon_fraction, lemon_rate_factor):
        return np.array([0.0]), np.array([n_nodes * failure_rate / 24.0])

    low, high = (0, n_nodes) if n_nodes <= _EVERY_COUNT_NODES else _binomial_support(n_nodes, lemon_fraction)
    lemons = np.arange(low, high + 1)
    log_mass = binomial_log_pmf(lemons, n_nodes, lemon_fraction)
    keep = np.isfinite(log_mass)
    return log_mass[keep], _lemon_job_rates(n_nodes, failure_rate, lemon_fraction, lemon_rate_factor, lemons[keep])


def binomial_log_pmf(k: np.ndarray, n: int, p: float) -> np.ndarray:
    """Return log P(X = k) for X ~ Binomial(n, p), accurate to a few ulps of its own size.

    Loader's saddle-point form (as R's dbinom): Stirling remainders and a
    deviance that is summed directly, so no lgamma(n + 1) of size n log n
    cancels. scipy's logpmf takes that difference, losing about 1e-9 at 2^20
    nodes, and its pmf is subnormal (few digits) below 2.2e-308; the mixtures
    of `job_rate_log_masses` are carried by exactly those tails.

    Parameters
    ----------
    k : numpy.ndarray
        Counts, integers in [0, n].
    n : int
        Number of trials.
    p : float
        Success probability.

    Returns
    -------
    numpy.ndarray
        The log probabilities, shaped as `k`.
    """
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        middle = (_stirling_remainder(n) - _stirling_remainder(k) - _stirling_remainder(n - k)
                  - _deviance(k, n * p) - _deviance(n - k, n * (1.0 - p))
                  + 0.5 * np.log(n / (2.0 * math.pi * k * (n - k))))
    ends = np.where(k == 0, n * math.log1p(-p) if p < 1 else -np.inf, n * math.log(p) if p > 0 else -np.inf)
    return np.where((k == 0) | (k == n), ends, middle)


# log(n!) - log(sqrt(2 pi n) (n/e)^n) for n = 0..15, where the series is short of digits.
_STIRLING_TABLE = np.array([0.0] + [math.lgamma(m + 1.0) - (m + 0.5) * math.log(m) + m - 0.5 * math.log(2 * math.pi)
                                    for m in range(1, 16)])


def _stirling_remainder(m):
    m = np.asarray(m, dtype=np.float64)
    small = np.minimum(m, 15).astype(np.int64)
    inverse_square = 1.0 / np.maximum(m, 15.0) ** 2
    series = (1 / 12 - inverse_square * (1 / 360 - inverse_square * (1 / 1260 - inverse_square
              * (1 / 1680 - inverse_square / 1188)))) / np.maximum(m, 15.0)
    return np.where(m > 15, series, _STIRLING_TABLE[small])


def _deviance(x, mean):
    """x log(x / mean) + mean - x, by its series where the two nearly cancel (Loader's bd0)."""
    x = np.asarray(x, dtype=np.float64)
    direct = x * np.log(x / mean) + mean - x
    v = (x - mean) / (x + mean)
    series, term = (x - mean) * v, 2.0 * x * v
    for j in range(1, 40):  # |v| < 0.1: each term is 100 times smaller; 40 reach far below an ulp
        term = term * v * v
        series = series + term / (2 * j + 1)
    return np.where(np.abs(x - mean) < 0.1 * (x + mean), series, direct)


def has_lemons(failure_rate, lemon_fraction, lemon_rate_factor):
    """Tell where a job's failure rate is a mixture over its lemon nodes (arrays broadcast).

    Parameters
    ----------
    failure_rate : float or numpy.ndarray
        Cluster-average failures per node-day.
    lemon_fraction : float or numpy.ndarray
        Fraction of nodes that are lemons.
    lemon_rate_factor : float or numpy.ndarray
        How many times as often a lemon fails.

    Returns
    -------
    bool or numpy.ndarray of bool
        True where there are lemons that fail more often, and failures at all.
    """
    return (lemon_fraction != 0.0) & (lemon_rate_factor != 1.0) & (failure_rate != 0.0)


def _lemon_job_rates(n_nodes, failure_rate, lemon_fraction, lemon_rate_factor, lemons) -> np.ndarray:
    """Failures per hour of a job with `lemons` lemon nodes; the average node fails at failure_rate."""
    healthy = failure_rate / 24.0 / (1.0 - lemon_fraction + lemon_fraction * lemon_rate_factor)
    return healthy * ((n_nodes - lemons) + lemon_rate_factor * lemons)


# A binomial mass below e^-800 is 0 in float64 (whose least positive value is e^-744.4).
_NEGLIGIBLE_LOG_MASS = 800.0


def _binomial_support(n: int, p: float) -> tuple[int, int]:
    """(low, high): every count of Binomial(n, p) whose mass float64 can hold lies
    between them (Chernoff: P(X >= k) <= exp(-n KL(k/n || p)) above the mean, and
    the mirror image below), so a table over them has about sqrt(n) entries, not n."""
    if p >= 1.0:
        return n, n

    def excess(a):  # n KL(a || p) - the cut; 0 log 0 = 0
        kl = (a * math.log(a / p) if a > 0 else 0.0) + ((1 - a) * math.log((1 - a) / (1 - p)) if a < 1 else 0.0)
        return n * kl - _NEGLIGIBLE_LOG_MASS

    def crossing(inside, outside):  # where excess turns positive, between the mean and an end
        if excess(outside) <= 0:
            return outside
        for _ in range(100):
            middle = (inside + outside) / 2
            inside, outside = (inside, middle) if excess(middle) > 0 else (middle, outside)
        return outside

    return max(0, math.floor(crossing(p, 0.0) * n) - 1), min(n, math.ceil(crossing(p, 1.0) * n) + 1)


def _as_count(x, fallback: int) -> int:
    return int(x) if math.isfinite(x) else fallback


def _check_nodes(n_nodes) -> int:
    return check_number("n_nodes", n_nodes, kind="count")


def _as_array(t):
    try:
        t = np.asarray(t, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ScenarioError("t", f"times must be numbers of hours of runtime (got {short_repr(t)})") from None
    if np.any(t < 0) or np.any(np.isnan(t)):
        raise ScenarioError("t", "times must be >= 0 (hours of runtime)")
    return t + 0.0  # no -0.0


def _out(values):
    return values[()] if values.ndim == 0 else values


def _scenario_fields(rate: float, *, weibull_shape: float = 1.0, lemon_fraction: float = 0.0,
                     lemon_rate_factor: float = 1.0, taxonomy=None) -> dict:
    """The flat `Scenario` fields a failure model sets; the defaults: Weibull shape 1, no lemons, no taxonomy."""
    return {"failure_rate": rate, "weibull_shape": weibull_shape, "lemon_fraction": lemon_fraction,
            "lemon_rate_factor": lemon_rate_factor, "taxonomy": taxonomy}


class _RenewalModel:
    """Shared behaviour: a job's failure rate per hour drawn from a table
    (`_rate_table`), then Weibull times with shape `_shape` and that mean."""

    _shape = 1.0

    def _rate_table(self, n_nodes):
        return job_rate_table(_check_nodes(n_nodes), self.rate)

    def _rate_masses(self, n_nodes):
        """(probability, rate per hour) of each entry of the job's rate table."""
        cdf, lam = self._rate_table(n_nodes)
        return np.diff(cdf, prepend=0.0), lam

    def _scale_factor(self) -> float:
        return 1.0 / math.gamma(1.0 + 1.0 / self._shape)

    def survival(self, t, n_nodes):
        """P(no failure in the first `t` hours of runtime) for a job on `n_nodes` nodes."""
        t = _as_array(t)
        prob, lam = self._rate_masses(n_nodes)
        with np.errstate(divide="ignore", invalid="ignore"):
            eta = self._scale_factor() / lam  # Weibull scale per rate entry (inf at rate 0)
            z = np.where(lam > 0, (t[..., None] / eta) ** self._shape, 0.0)
        return _out(np.minimum(np.exp(-z) @ prob, 1.0))  # the shares may sum to 1 + rounding

    def hazard(self, t, n_nodes):
        """Failure rate per hour at runtime `t` given no failure before (for the
        mixture: of the population of jobs still running at `t`)."""
        t = _as_array(t)
        prob, lam = self._rate_masses(n_nodes)
        k = self._shape
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            eta = self._scale_factor() / lam
            x = np.where(lam > 0, t[..., None] / eta, 0.0)
            z = x**k
            h = np.where(lam > 0, k / eta * x ** (k - 1.0), 0.0)
            # Weights relative to the longest-surviving entry: no underflow to 0/0.
            log_w = np.log(prob) - z
            w = np.exp(log_w - log_w.max(axis=-1, keepdims=True))
            return _out((h * w).sum(axis=-1) / w.sum(axis=-1))

    def mean(self, n_nodes) -> float:
        """Mean time to the first failure, in hours (inf without failures)."""
        prob, lam = self._rate_masses(n_nodes)
        with np.errstate(divide="ignore"):
            return float(np.sum(prob * np.where(lam > 0, 1.0 / lam, math.inf)))

    def sample(self, n: int, n_nodes, seed: int = 0, scenario_key: int = 0) -> np.ndarray:
        """`n` times to first failure (hours of runtime), one per job 0..n-1.

        Drawn by the timeline kernel's own path: Philox keyed by (seed,
        scenario_key), counter (job, draw); the same rate-table draw and the same
        inverse transform, so entry j is the first failure time of job j in
        `simulate` for the same seed (and scenario index `scenario_key`).
        """
        from ._kernels.failure_sample import first_failure_times

        n = check_integer("n", n, 0, 2**62)
        seed = check_integer("seed", seed, 0, 2**32 - 1)
        scenario_key = check_integer("scenario_key", scenario_key, 0, 2**32 - 1)
        check_memory("n", 8 * n, f"{n} failure times")
        cdf, lam = self._rate_table(n_nodes)
        out = np.empty(n)
        first_failure_times(np.ascontiguousarray(cdf), np.ascontiguousarray(lam, dtype=float), self._shape,
                            self._scale_factor(), np.uint64(seed), np.uint64(scenario_key), out)
        return out


def _rate(value) -> float:
    return check_number("rate", value, kind="rate")


@dataclasses.dataclass(frozen=True)
class Exponential(_RenewalModel):
    """Poisson failures: each node fails at `rate` per node-day, independently.

    A job on N nodes fails at ``N * rate / 24`` per hour; its MTTF is the inverse.

    Parameters
    ----------
    rate : float
        Failures per node-day of runtime (``failure_rate``, ``r_f``).
    """

    rate: float

    def __post_init__(self):
        object.__setattr__(self, "rate", _rate(self.rate))

    def scenario_fields(self) -> dict:
        """Return the flat `Scenario` fields this model sets.

        %(scenario_fields_returns)s
        """
        return _scenario_fields(self.rate)


@readable()
@dataclasses.dataclass(frozen=True)
class Weibull(_RenewalModel):
    """Weibull times between a job's failures with the mean of `Exponential(rate)`.

    This is the `Scenario` pair (``failure_rate``, ``weibull_shape``): the job's
    failures form a renewal process with Weibull(k, scale) inter-failure times,
    ``scale = mean / Gamma(1 + 1/k)``, restarted at every failure. Use
    `from_scale` or `from_mean` to give the job's scale or MTTF in hours instead.

    Parameters
    ----------
    shape : float
        Weibull shape ``k`` (< 1: infant mortality, failures cluster after
        restarts; > 1: wear-out; 1: exponential).
    rate : float
        Failures per node-day of runtime; the job's mean time between
        failures is ``24 / (n_nodes * rate)`` hours, as for the exponential, so
        `rate` stays the long-run failure rate per node-day.
    """

    shape: float
    rate: float

    def __post_init__(self):
        object.__setattr__(self, "shape", check_number("shape", self.shape, kind="shape"))
        object.__setattr__(self, "rate", _rate(self.rate))

    @property
    def _shape(self):  # the renewal base reads the shape from here
        return self.shape

    @classmethod
    def from_mean(cls, shape, mean, n_nodes) -> Weibull:
        """Build the model whose job on `n_nodes` nodes has mean time between failures `mean`.

        Parameters
        ----------
        shape : float
            Weibull shape ``k``.
        mean : float or str
            The job's mean time between failures (hours, or a duration string).
        %(nodes_and_weibull_returns)s
        """
        hours = _positive_duration("mean", mean)
        rate = 24.0 / (_check_nodes(n_nodes) * hours)
        if not math.isfinite(rate):
            raise ScenarioError("mean", f"{short_repr(mean)} is too short to be a mean time between failures")
        return cls(shape, rate)

    @classmethod
    def from_scale(cls, shape, scale, n_nodes) -> Weibull:
        """Build the model whose job on `n_nodes` nodes has Weibull scale `scale`.

        The mean is ``scale * Gamma(1 + 1/shape)``.

        Parameters
        ----------
        shape : float
            Weibull shape ``k``.
        scale : float or str
            The job's Weibull scale (hours, or a duration string).
        %(nodes_and_weibull_returns)s
        """
        shape = check_number("shape", shape, kind="shape")
        hours = _positive_duration("scale", scale)
        return cls.from_mean(shape, hours * math.gamma(1.0 + 1.0 / shape), n_nodes)

    def scale(self, n_nodes) -> float:
        """Return the Weibull scale of the job's inter-failure times, in hours.

        Parameters
        ----------
        n_nodes : int
            Nodes in the job.

        Returns
        -------
        float
            The scale in hours.
        """
        lam = _check_nodes(n_nodes) * self.rate / 24.0
        return math.inf if lam == 0 else self._scale_factor() / lam

    def scenario_fields(self) -> dict:
        """Return the flat `Scenario` fields this model sets.

        %(scenario_fields_returns)s
        """
        return _scenario_fields(self.rate, weibull_shape=self.shape)


@dataclasses.dataclass(frozen=True)
class LemonMixture(_RenewalModel):
    """Lemon nodes: a fraction of nodes fails `lemon_rate_factor` times as often.

    Each job draws its number of lemons from a binomial, hence its own
    exponential rate (`job_rate_table`); `hazard`, `survival` and `mean` are
    those of the mixture over lemon counts (a decreasing hazard: jobs with many
    lemons fail first).

    Parameters
    ----------
    rate : float
        Cluster-average failures per node-day.
    lemon_fraction : float
        Fraction of nodes that are lemons, in [0, 1].
    lemon_rate_factor : float
        How many times as often a lemon fails as a healthy node.
    """

    rate: float
    lemon_fraction: float
    lemon_rate_factor: float

    def __post_init__(self):
        object.__setattr__(self, "rate", _rate(self.rate))
        for name, kind in (("lemon_fraction", "fraction"), ("lemon_rate_factor", "factor")):
            object.__setattr__(self, name, check_number(name, getattr(self, name), kind=kind))

    def _rate_table(self, n_nodes):
        return job_rate_table(_check_nodes(n_nodes), self.rate, self.lemon_fraction, self.lemon_rate_factor)

    def scenario_fields(self) -> dict:
        """Return the flat `Scenario` fields this model sets.

        %(scenario_fields_returns)s
        """
        return _scenario_fields(self.rate, lemon_fraction=self.lemon_fraction,
                                lemon_rate_factor=self.lemon_rate_factor)


@dataclasses.dataclass(frozen=True)
class FailureCategory:
    """One kind of failure: its share of all failures and what it costs.

    Parameters
    ----------
    name : str
        Label (unique within a taxonomy).
    share : float
        Fraction of failures of this kind, in [0, 1].
    restart_cost : float or str, default 0.0
        Initialisation after a failure of this kind (hours or a duration).
    queue_wait : float or str, default 0.0
        Wait before that restart (hours or a duration); fixed or exponential as
        the scenario's ``queue_wait_distribution`` says.
    domain : str, optional
        Failure domain ("user", "system", "hardware", ...).
    """

    name: str
    share: float
    restart_cost: float = 0.0
    queue_wait: float = 0.0
    domain: str | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ScenarioError("name", f"a category needs a non-empty name (got {short_repr(self.name)})")
        label = f"categories[{self.name}]"
        object.__setattr__(self, "share", check_number(f"{label}.share", self.share, kind="fraction"))
        for field in ("restart_cost", "queue_wait"):
            object.__setattr__(self, field, check_number(f"{label}.{field}", getattr(self, field), kind="duration"))
        if self.domain is not None and not isinstance(self.domain, str):
            raise ScenarioError(f"{label}.domain", f"must be a string or None (got {short_repr(self.domain)})")


def as_categories(value, parameter: str = "categories") -> tuple[FailureCategory, ...]:
    """Normalise failure categories.

    Parameters
    ----------
    value : sequence, object or str
        A sequence of `FailureCategory` (or of objects with `name`, `share`,
        `restart_cost`, `queue_wait` and optionally `domain` attributes), an
        object with such a ``.categories`` (a taxonomy), or the name of a
        taxonomy preset or file (`relmodel._taxonomy.load`).
    parameter : str, default "categories"
        The parameter named in error messages.

    Returns
    -------
    tuple of FailureCategory
        The categories, durations in hours.

    Raises
    ------
    ScenarioError
        If the shares do not sum to 1, names repeat, or a value is invalid.
    """
    if isinstance(value, str):  # a taxonomy preset's name, or the path of a taxonomy file
        try:
            value = load_taxonomy(value)
        except TaxonomyError as err:
            raise ScenarioError(parameter, err.reason if err.parameter == "taxonomy" else str(err)) from None
    items = getattr(value, "categories", value)
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise ScenarioError(parameter, f"expected a sequence of categories (got {short_repr(value)})")
    cats = []
    for item in items:
        if isinstance(item, FailureCategory):
            cats.append(item)
            continue
        try:
            cats.append(FailureCategory(name=item.name, share=item.share, restart_cost=item.restart_cost,
                                        queue_wait=item.queue_wait, domain=getattr(item, "domain", None)))
        except AttributeError as err:
            raise ScenarioError(parameter, f"each category needs name, share, restart_cost and "
                                              f"queue_wait ({err})") from None
    if not cats:
        raise ScenarioError(parameter, "need at least one category")
    names = [c.name for c in cats]
    if len(set(names)) != len(names):
        raise ScenarioError(parameter, f"category names must be unique (got {names})")
    total = math.fsum(c.share for c in cats)
    if abs(total - 1.0) > _SHARE_TOLERANCE:
        raise ScenarioError(parameter, f"shares must sum to 1 (they sum to {total!r})")
    return tuple(cats)


def category_cdf(categories) -> np.ndarray:
    """Return the cumulative shares of failure categories.

    Parameters
    ----------
    categories : sequence of FailureCategory
        The categories.

    Returns
    -------
    numpy.ndarray
        Cumulative shares; the last entry is exactly 1 (a uniform on (0, 1]
        always lands).
    """
    cdf = np.cumsum([c.share for c in categories], dtype=float)
    cdf[-1] = 1.0
    return cdf


def _positive_duration(name, value) -> float:
    hours = check_number(name, value, kind="duration")
    if hours <= 0:
        raise ScenarioError(name, f"must be > 0 (got {short_repr(value)})")
    return hours


@readable()
@dataclasses.dataclass(frozen=True)
class TaxonomyMixture(_RenewalModel):
    """Poisson failures at `rate` whose kinds cost different restarts and queue waits.

    Each failure draws its category (inverse CDF over the shares); the queue
    wait and restart after it are that category's, and a failure during the
    restart draws again. The time to failure is exponential, as for
    `Exponential(rate)`, so `hazard`, `survival`, `mean` and `sample` are its.

    Parameters
    ----------
    rate : float
        Failures per node-day of runtime (all kinds together).
    categories : sequence of FailureCategory
        `FailureCategory` items (or objects with the same attributes), whose
        shares sum to 1.
    """

    rate: float
    categories: tuple

    def __post_init__(self):
        object.__setattr__(self, "rate", _rate(self.rate))
        object.__setattr__(self, "categories", as_categories(self.categories))

    @classmethod
    def from_taxonomy(cls, taxonomy, rate) -> TaxonomyMixture:
        """Build the model from a taxonomy object (e.g. `relmodel._taxonomy.load(name)`).

        Parameters
        ----------
        taxonomy : object
            Anything with ``.categories``, each with `name`, `share`,
            `restart_cost` and `queue_wait` in hours, and optionally `domain`.
        rate : float
            Failures per node-day of runtime.

        Returns
        -------
        TaxonomyMixture
            The model.
        """
        return cls(rate, as_categories(taxonomy))

    @property
    def mean_restart_cost(self) -> float:
        """Share-weighted restart cost (h)."""
        return math.fsum(c.share * c.restart_cost for c in self.categories)

    @property
    def mean_queue_wait(self) -> float:
        """Share-weighted queue wait (h)."""
        return math.fsum(c.share * c.queue_wait for c in self.categories)

    def scenario_fields(self) -> dict:
        """Return the flat `Scenario` fields this model sets.

        %(scenario_fields_returns)s
        """
        return _scenario_fields(self.rate, taxonomy=self.categories)


FAILURE_MODELS = (Exponential, Weibull, LemonMixture, TaxonomyMixture)

fill_doc_parts(_DOC_PARTS, job_rate_table, job_rate_log_masses, Weibull.from_mean, Weibull.from_scale,
               *(model.scenario_fields for model in FAILURE_MODELS))
