"""Hypothesis strategies for relmodel's inputs.

Every strategy takes keyword-only arguments, draws from the ranges real runs
have by default (``extreme=True`` widens them to the edges that are still
valid), accepts a strategy or a plain value wherever it takes a field, and
raises ``hypothesis.errors.InvalidArgument`` for bounds that cannot be met.
Everything drawn is valid: building it never raises. For example::

    from hypothesis import given
    from relmodel.testing.strategies import scenarios

    @given(scenarios(laws=("exponential",)))
    def test_my_model_in_unit_interval(sc):
        assert 0 <= my_ettr(sc) <= 1
"""

from __future__ import annotations

import math
import sys

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import SearchStrategy

from .._checks import MAX_COUNT, MAX_FAILURE_RATE, QUEUE_WAIT_DISTRIBUTIONS
from .._scenario import MAX_WORK, Scenario
from .._units import to_hours

__all__ = [
    "durations",
    "elastic_jobs",
    "failed_workers",
    "failure_laws",
    "failure_models",
    "job_logs",
    "level_scenarios",
    "pipeline_configs",
    "scenarios",
]

FAILURE_LAWS = ("exponential", "weibull", "lemon")
_UNIT_HOURS = {"s": 1 / 3600, "min": 1 / 60, "h": 1.0, "d": 24.0, "w": 168.0}
_SECOND = 1 / 3600
_YEAR = 365 * 24.0

# (typical, extreme) bounds of each scenario field; durations in hours.
_RANGES = {
    "n_gpus": ((1, 32_768), (1, 1_000_000)),
    "failure_rate": ((1e-4, 2e-2), (1e-9, 10.0)),
    "checkpoint_interval": ((5 / 60, 12.0), (_SECOND, 100 * _YEAR)),  # far beyond any work
    "work": ((1.0, 30 * 24.0), (_SECOND, 50 * _YEAR)),
    "checkpoint_cost": ((1 / 60, 0.5), (_SECOND, 168.0)),
    "restart_cost": ((1 / 60, 1.0), (_SECOND, 168.0)),
    "queue_wait": ((1 / 60, 2.0), (_SECOND, 168.0)),
}
_MAX_INTERVALS = 2.0**40  # Scenario refuses more checkpoint intervals than this
_TINY_RATES = (5e-324, 1e-320, 1e-310, 1e-300, 1e-200)
# float_limits=True: the edges of what a float and the Scenario hold, beside the extreme ranges.
_TINY_HOURS = (5e-324, 1e-320, 1e-310, 2.2250738585072014e-308, 1e-300)
_HUGE_HOURS = (1e300, 1e307, 1e308, 1.7976931348623157e308)
_LIMIT_GPUS = (2**31, MAX_COUNT)
_LIMIT_RATES = (1e3, MAX_FAILURE_RATE)


# ---- argument checks (hypothesis style: InvalidArgument, naming the argument) ----

def _check_bounds(name: str, low, high, *, minimum, maximum=math.inf):
    for label, value in ((f"min_{name}", low), (f"max_{name}", high)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise InvalidArgument(f"{label}={value!r} must be a number")
        if not minimum <= value <= maximum:
            raise InvalidArgument(f"{label}={value!r} must be in [{minimum}, {maximum}]")
    if low > high:
        raise InvalidArgument(f"min_{name}={low!r} is greater than max_{name}={high!r}")


def _check_choices(name: str, chosen, allowed) -> tuple:
    if isinstance(chosen, str) or not hasattr(chosen, "__iter__"):
        raise InvalidArgument(f"{name}={chosen!r} must be a sequence drawn from {allowed}")
    chosen = tuple(chosen)
    if not chosen:
        raise InvalidArgument(f"{name} must not be empty (choose from {allowed})")
    unknown = [c for c in chosen if c not in allowed]
    if unknown:
        raise InvalidArgument(f"{name}: unknown {unknown!r}; choose from {allowed}")
    return chosen


def _as_strategy(value) -> SearchStrategy:
    return value if isinstance(value, SearchStrategy) else st.just(value)


def _log_uniform(low: float, high: float) -> SearchStrategy[float]:
    """Floats spread over the decades of [low, high] (low > 0), ends included."""
    if low == high:
        return st.just(float(low))
    lo, hi = math.log(low), math.log(high)
    spread = st.floats(lo, hi).map(lambda x: min(max(math.exp(x), low), high))
    return st.one_of(st.sampled_from([float(low), float(high)]), spread)


# ---- durations ----------------------------------------------------------------

def durations(*, min_value: float = _SECOND, max_value: float = _YEAR,
              as_text: bool | None = None) -> SearchStrategy:
    """Draw durations in [min_value, max_value] hours.

    Parameters
    ----------
    min_value : float, default 1 s
        Lower bound in hours.
    max_value : float, default 1 year
        Upper bound in hours.
    as_text : bool or None, default None
        True draws strings with a unit ("90s", "1.5d"), False plain hours
        (floats), None either. Converted with `relmodel.to_hours`, a string
        always lands inside the bounds.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy of floats or strings.
    """
    _check_bounds("value", min_value, max_value, minimum=0.0, maximum=1e12)
    if as_text not in (True, False, None):
        raise InvalidArgument(f"as_text={as_text!r} must be True, False or None")
    positive = max(min_value, 1e-12)
    hours = _log_uniform(positive, max_value) if max_value > 0 else st.just(0.0)
    if min_value == 0:
        hours = st.one_of(st.just(0.0), hours)

    @st.composite
    def text(draw):
        value = draw(hours)
        fits = [u for u, size in _UNIT_HOURS.items() if value == 0 or value / size >= 1e-3] or ["s"]
        unit = draw(st.sampled_from(fits))
        spelled = f"{value / _UNIT_HOURS[unit]!r}{unit}"
        # Printing in another unit may round across a bound by an ulp: fall back to hours.
        return spelled if min_value <= to_hours(spelled) <= max_value else f"{value!r}h"

    if as_text is None:
        return st.one_of(hours, text())
    return text() if as_text else hours


# ---- scenarios ----------------------------------------------------------------

def failure_laws(*, laws=FAILURE_LAWS) -> SearchStrategy[dict]:
    """Draw the Scenario fields of a failure law.

    Exponential, Weibull (shape 0.5 to 3 but never exactly 1, which is the
    exponential law; same mean) or a lemon-node mixture (up to 5% of nodes, 2
    to 50 times the rate).

    Parameters
    ----------
    laws : tuple of str, default ("exponential", "weibull", "lemon")
        The laws to draw from.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy of dicts of Scenario fields.
    """
    laws = _check_choices("laws", laws, FAILURE_LAWS)
    options = {
        "exponential": st.just({}),
        # Shape 1 is the exponential law: "weibull" means the one where only the simulation is exact.
        "weibull": st.builds(dict, weibull_shape=st.floats(0.5, 3.0).filter(lambda shape: shape != 1.0)),
        "lemon": st.builds(dict, lemon_fraction=st.floats(1e-3, 0.05), lemon_rate_factor=st.floats(2.0, 50.0)),
    }
    return st.one_of(*(options[law] for law in laws))


_COSTS = ("checkpoint_cost", "restart_cost", "queue_wait")


@st.composite
def _scenario(draw, fields, laws, queue_wait_distributions, near_mttf=()):
    values = {name: draw(strategy) for name, strategy in fields.items()}
    values.update(draw(laws))
    values["queue_wait_distribution"] = draw(st.sampled_from(queue_wait_distributions))
    # Edge: a cost comparable to the job's MTTF (drawn apart, it almost never is).
    cost = draw(st.sampled_from((None, *near_mttf)))
    if cost is not None and values["failure_rate"] > 0:
        nodes = -(-values["n_gpus"] // values["gpus_per_node"])
        mttf = 24.0 / (nodes * values["failure_rate"])
        values[cost] = min(max(mttf * draw(st.sampled_from([0.01, 0.1, 0.5, 1.0, 2.0, 10.0])), _SECOND), 100 * _YEAR)
    # Keep the checkpoint count within what Scenario accepts.
    work, interval = to_hours(values["work"]), to_hours(values["checkpoint_interval"])
    if work / interval > _MAX_INTERVALS:
        values["work"] = interval * _MAX_INTERVALS / 2
    return Scenario(**values)


def scenarios(*, n_gpus=None, failure_rate=None, checkpoint_interval=None, work=None, checkpoint_cost=None,
              restart_cost=None, queue_wait=None, gpus_per_node=None, min_gpus: int | None = None,
              max_gpus: int | None = None, laws=FAILURE_LAWS,
              queue_wait_distributions=QUEUE_WAIT_DISTRIBUTIONS, extreme: bool = False,
              float_limits: bool = False) -> SearchStrategy[Scenario]:
    """Draw valid scalar `Scenario` objects.

    Each field (``n_gpus``, ``failure_rate``, ...) may be a value or a strategy;
    left out, it is drawn from typical ranges (1 to 32,768 GPUs, 1e-4 to 2e-2
    failures per node-day, intervals of 5 min to 12 h, work of 1 h to 30 days,
    costs of 0 or 1 min up to 30 min, 1 h and 2 h), or with ``extreme=True`` from
    the edges of the valid space (a single GPU to a million, no failures,
    rates as small as a float holds (5e-324: subnormal, so 1 / rate overflows)
    or one a billion node-days to ten a node-day, work of a second to 50 years,
    intervals of a second to a century, far beyond the work, and often a cost
    from a hundredth to ten times the job's MTTF).

    Parameters
    ----------
    n_gpus, failure_rate, checkpoint_interval, work : value or SearchStrategy, optional
        Fix a field, or draw it from the strategy given.
    checkpoint_cost, restart_cost, queue_wait, gpus_per_node : value or SearchStrategy, optional
        Fix a field, or draw it from the strategy given.
    min_gpus, max_gpus : int, optional
        Bounds on the drawn GPU count (when `n_gpus` is not given).
    laws : tuple of str, default ("exponential", "weibull", "lemon")
        Failure laws to draw from.
    queue_wait_distributions : tuple of str, default ("fixed", "exponential")
        Queue-wait laws to draw from.
    extreme : bool, default False
        Draw from the edges of the valid space.
    float_limits : bool, default False
        With `extreme`, also draw the limits a float and the Scenario hold:
        subnormal durations (5e-324 h), durations up to the largest float
        (work up to `MAX_WORK`), up to 2**32 GPUs and failure rates up to
        `MAX_FAILURE_RATE`.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy of `Scenario`.
    """
    if extreme not in (True, False):
        raise InvalidArgument(f"extreme={extreme!r} must be True or False")
    if float_limits not in (True, False) or (float_limits and not extreme):
        raise InvalidArgument(f"float_limits={float_limits!r} must be True or False, and True only with extreme=True")
    pick = 1 if extreme else 0
    g_lo, g_hi = _RANGES["n_gpus"][pick]
    g_hi = MAX_COUNT if float_limits else g_hi
    g_lo = g_lo if min_gpus is None else min_gpus
    g_hi = g_hi if max_gpus is None else max_gpus
    _check_bounds("gpus", g_lo, g_hi, minimum=1, maximum=MAX_COUNT)
    laws_strategy = failure_laws(laws=laws)
    qwd = _check_choices("queue_wait_distributions", queue_wait_distributions, QUEUE_WAIT_DISTRIBUTIONS)

    def default(name):
        return st.one_of(usual(name), *limits(name)) if float_limits else usual(name)

    def usual(name):
        lo, hi = _RANGES[name][pick]
        if name == "n_gpus":  # any count, and often a power of two as real jobs are
            e_lo, e_hi = math.ceil(math.log2(g_lo)), math.floor(math.log2(g_hi))
            powers = [st.integers(e_lo, e_hi).map(lambda e: 2**e)] if e_lo <= e_hi else []
            return st.one_of(st.integers(int(g_lo), int(g_hi)), *powers)
        if name in ("failure_rate",):
            drawn = _log_uniform(lo, hi)
            # Extreme: also the tiniest rates a float holds (subnormal: 1 / rate overflows).
            return st.one_of(st.just(0.0), st.sampled_from(_TINY_RATES), drawn) if extreme else drawn
        if name in ("checkpoint_interval", "work"):
            return durations(min_value=lo, max_value=hi)
        return st.one_of(st.just(0.0), durations(min_value=lo, max_value=hi))

    def limits(name):
        """The float limits of a field (none left where its bounds exclude them)."""
        values = {"n_gpus": [g for g in _LIMIT_GPUS if g_lo <= g <= g_hi], "failure_rate": _LIMIT_RATES,
                  "work": (*_TINY_HOURS, MAX_WORK)}.get(name, _TINY_HOURS + _HUGE_HOURS)
        return [st.sampled_from(values)] if values else []

    given = dict(n_gpus=n_gpus, failure_rate=failure_rate, checkpoint_interval=checkpoint_interval, work=work,
                 checkpoint_cost=checkpoint_cost, restart_cost=restart_cost, queue_wait=queue_wait)
    fields = {name: default(name) if value is None else _as_strategy(value) for name, value in given.items()}
    fields["gpus_per_node"] = st.sampled_from([1, 4, 8]) if gpus_per_node is None else _as_strategy(gpus_per_node)
    near_mttf = tuple(name for name in _COSTS if given[name] is None) if extreme else ()
    return _scenario(fields, laws_strategy, qwd, near_mttf)


# ---- checkpoint levels -----------------------------------------------------------

@st.composite
def _level_scenario(draw, base, max_fast_levels, max_multiple, waits):
    from .._scenario import CheckpointLevel

    sc = draw(base)
    durable = sc.checkpoint_interval
    # The fastest interval a Scenario takes: at most 2**40 of them over the work, and a normal float,
    # whose multiples keep full precision (those of a subnormal one round onto the durable interval).
    fastest = max(float(sc.work) / _MAX_INTERVALS * (1.0 + 1e-9), sys.float_info.min)
    most = int(min(max_multiple, durable / fastest))  # the durable multiple; < 2 allows no fast level
    n_fast = draw(st.integers(0, max(0, min(max_fast_levels, most - 1))))
    top = draw(st.integers(n_fast + 1, max(n_fast + 1, most)))
    inner = sorted(draw(st.lists(st.integers(2, top - 1), min_size=n_fast - 1, max_size=n_fast - 1, unique=True))
                   if n_fast > 1 else [])
    multiples = [1, *inner][:n_fast]
    base_interval = durable / top
    survives = sorted(draw(st.lists(st.sampled_from([0.0, 0.3, 0.5, 0.85, 0.99, 1.0]) | st.floats(0.0, 1.0),
                                    min_size=n_fast, max_size=n_fast)))

    def persist(interval):
        # beyond the interval the next write waits; past float64's largest, no duration
        limit = min(3.0 * interval, sys.float_info.max) if waits else interval
        return draw(st.one_of(st.just(0.0), st.just(interval), st.floats(0.0, limit)))

    levels = []
    for m, survive in zip(multiples, survives):
        interval = m * base_interval
        levels.append(CheckpointLevel(
            interval=interval,
            cost=draw(st.one_of(st.just(0.0), st.floats(0.0, 1.0).map(lambda f: f * sc.checkpoint_cost))),
            restart=draw(st.one_of(st.just(0.0), st.floats(0.0, 1.0).map(lambda f: f * sc.restart_cost))),
            persist=persist(interval), survives=survive))
    return sc.sweep(checkpoint_persist=persist(durable), fast_checkpoints=tuple(levels) or None)


def level_scenarios(*, base=None, max_fast_levels: int = 2, max_multiple: int = 12,
                    waits: bool = True) -> SearchStrategy[Scenario]:
    """Draw scalar `Scenario` objects with checkpoint levels.

    Each draws a base scenario, then up to `max_fast_levels` fast levels whose
    intervals are whole multiples of the fastest (the durable interval is 2 to
    `max_multiple` times it), costs and restarts up to the durable level's,
    `survives` non-decreasing from fast to durable (0 and 1 included), and a
    persistence time for each level: 0, its interval, or anything up to 3 times
    its interval (`waits=False`: up to the interval, so no write ever waits).
    Every draw is valid, from any base: the fastest interval is a normal float
    with at most 2**40 of it over the work, so a durable interval too short for
    that gets fewer fast levels, or none.

    Parameters
    ----------
    base : SearchStrategy of Scenario, optional
        The scenarios to add levels to (default: ``scenarios()``, exponential
        failures).
    max_fast_levels : int, default 2
        At most this many fast levels (0 gives plain or persisting checkpoints).
    max_multiple : int, default 12
        The durable interval is at most this many fastest intervals.
    waits : bool, default True
        Allow persistence longer than an interval (the next write then waits).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy of `Scenario`.
    """
    _check_bounds("fast_levels", 0, max_fast_levels, minimum=0, maximum=8)
    _check_bounds("multiple", 2, max_multiple, minimum=2, maximum=4096)
    if max_multiple <= max_fast_levels:
        raise InvalidArgument(f"max_multiple={max_multiple} must exceed max_fast_levels={max_fast_levels}")
    if waits not in (True, False):
        raise InvalidArgument(f"waits={waits!r} must be True or False")
    base = scenarios(laws=("exponential",)) if base is None else base
    return _level_scenario(base, max_fast_levels, max_multiple, waits)


# ---- failure models -------------------------------------------------------------

FAILURE_MODEL_KINDS = ("exponential", "weibull", "lemon", "taxonomy")


@st.composite
def _categories(draw, max_categories):
    from .._failures import FailureCategory

    n = draw(st.integers(1, max_categories))
    weights = draw(st.lists(st.integers(1, 100), min_size=n, max_size=n))
    total = sum(weights)
    shares = [w / total for w in weights]
    shares[-1] = 1.0 - sum(shares[:-1])  # exact sum despite rounding
    cost = st.one_of(st.just(0.0), _log_uniform(1 / 60, 4.0))
    return tuple(FailureCategory(f"kind{i}", share, restart_cost=draw(cost), queue_wait=draw(cost))
                 for i, share in enumerate(shares))


def failure_models(*, kinds=FAILURE_MODEL_KINDS, min_rate: float = 1e-4, max_rate: float = 2e-2,
                   max_categories: int = 4) -> SearchStrategy:
    """Draw failure models of `relmodel._failures`.

    `Exponential`, `Weibull` (shape 0.5 to 3), `LemonMixture` (up to 5% of
    nodes, 2 to 50 times the rate) and `TaxonomyMixture` (1 to `max_categories`
    kinds with restart costs and queue waits of 0 or 1 min to 4 h). Any of them
    can be handed to ``Scenario(failure_model=...)``.

    Parameters
    ----------
    kinds : tuple of str, default ("exponential", "weibull", "lemon", "taxonomy")
        The kinds to draw from.
    min_rate, max_rate : float, default 1e-4, 2e-2
        Bounds on the rate per node-day.
    max_categories : int, default 4
        Most categories of a taxonomy.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy of failure models.
    """
    from .. import _failures as failures

    kinds = _check_choices("kinds", kinds, FAILURE_MODEL_KINDS)
    _check_bounds("rate", min_rate, max_rate, minimum=0.0, maximum=1e6)
    if isinstance(max_categories, bool) or not isinstance(max_categories, int) or max_categories < 1:
        raise InvalidArgument(f"max_categories={max_categories!r} must be an integer >= 1")
    rate = _log_uniform(min_rate, max_rate) if min_rate > 0 else st.one_of(st.just(0.0), _log_uniform(
        max(max_rate * 1e-6, 1e-12), max_rate) if max_rate > 0 else st.just(0.0))
    options = {
        "exponential": st.builds(failures.Exponential, rate),
        "weibull": st.builds(failures.Weibull, st.floats(0.5, 3.0), rate),
        "lemon": st.builds(failures.LemonMixture, rate, st.floats(1e-3, 0.05), st.floats(2.0, 50.0)),
        "taxonomy": st.builds(failures.TaxonomyMixture, rate, _categories(max_categories)),
    }
    return st.one_of(*(options[kind] for kind in kinds))


# ---- job logs -----------------------------------------------------------------------

LOG_FORMATS = ("csv", "sacct")
_LOG_STATES = ("COMPLETED", "FAILED", "NODE_FAIL", "PREEMPTED", "REQUEUED", "TIMEOUT", "CANCELLED",
               "OUT_OF_MEMORY")
_START = 1_704_067_200  # 2024-01-01T00:00:00Z


def _stamp(seconds: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def _elapsed(seconds: int) -> str:
    days, rest = divmod(seconds, 86_400)
    return (f"{days}-" if days else "") + f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"


# The kinds of malformed row `read_log` must name with their line number.
_BAD_ROWS = ("end before start", "bad time format", "unknown state", "bad number", "missing field")


@st.composite
def _job_log(draw, fmt, min_jobs, max_jobs, malformed):
    n = draw(st.integers(min_jobs, max_jobs))
    csv_header = "job_id,n_gpus,start,end,state,cause"
    sacct_header = "JobID|JobName|State|Start|End|Elapsed|NNodes|AllocTRES|NodeList|Comment"
    lines = [csv_header if fmt == "csv" else sacct_header]
    bad_at = draw(st.integers(0, n - 1)) if malformed and n else None
    for job in range(n):
        nodes = draw(st.sampled_from([1, 2, 4, 16, 64, 256]))
        start = _START + draw(st.integers(0, 90 * 86_400))
        runtime = draw(st.integers(60, 14 * 86_400))
        state = draw(st.sampled_from(_LOG_STATES))
        cause = "health_check: xid 79" if state == "FAILED" and draw(st.booleans()) else ""
        fields = {"id": str(1000 + job), "size": str(8 * nodes), "start": _stamp(start),
                  "end": _stamp(start + runtime), "state": state}
        if job == bad_at:
            kind = draw(st.sampled_from(_BAD_ROWS))
            fields.update({"end": _stamp(start - 3600)} if kind == "end before start" else
                          {"start": "2024-13-45T99:00:00"} if kind == "bad time format" else
                          {"state": "EXPLODED"} if kind == "unknown state" else
                          {"size": "eight"} if kind == "bad number" else {"id": None})
        if fmt == "csv":
            row = [fields["id"], fields["size"], fields["start"], fields["end"], fields["state"], cause]
            if fields["id"] is None:
                row = row[1:]
            lines.append(",".join(row))
        else:
            row = [fields["id"], "train", fields["state"], fields["start"], fields["end"], _elapsed(runtime),
                   str(nodes), f"cpu={12 * nodes},gres/gpu={fields['size']},node={nodes}",
                   f"node[{job * 4:05d}-{job * 4 + nodes - 1:05d}]" if nodes > 1 else f"node{job * 4:05d}", cause]
            if fields["id"] is None:
                row = row[1:]
            lines.append("|".join(row))
    return "\n".join(lines) + "\n"


def job_logs(*, format: str = "csv", min_jobs: int = 1, max_jobs: int = 20, malformed: bool = False) -> SearchStrategy:
    """Draw scheduler job logs as text, readable by `relmodel._job_logs.read_log`.

    Parameters
    ----------
    format : {"csv", "sacct"}, default "csv"
        "csv" (``job_id,n_gpus,start,end,state,cause``) or "sacct"
        (``sacct --parsable2`` with JobID, State, Start, End, Elapsed, NNodes,
        AllocTRES, NodeList, Comment).
    min_jobs, max_jobs : int, default 1, 20
        Bounds on the number of job rows.
    malformed : bool, default False
        Put exactly one malformed row in (end before start, bad time format,
        unknown state, bad number or a missing field), which `read_log` must
        report as a `LogError` naming its line.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy of str.
    """
    if format not in LOG_FORMATS:
        raise InvalidArgument(f"format={format!r} must be one of {LOG_FORMATS}")
    _check_bounds("jobs", min_jobs, max_jobs, minimum=0, maximum=100_000)
    if malformed and max_jobs < 1:
        raise InvalidArgument("malformed=True needs max_jobs >= 1 (a row to break)")
    return _job_log(format, int(max(min_jobs, 1 if malformed else 0)), int(max_jobs), bool(malformed))


# ---- pipelines ----------------------------------------------------------------

@st.composite
def _pipeline(draw, max_stages, max_replicas, max_microbatches, heterogeneous, schedules):
    from ..pipeline._config import PipelineConfig

    p = draw(st.integers(1, max_stages))
    d = draw(st.integers(1, max_replicas))
    m = draw(st.integers(1, max_microbatches))
    time = st.floats(0.1, 4.0).map(lambda t: round(t, 3))
    times = {}
    for name in ("fwd", "bwd_input", "bwd_weight"):
        per_stage = heterogeneous and draw(st.booleans())
        times[name] = tuple(draw(st.lists(time, min_size=p, max_size=p))) if per_stage else draw(time)
    order, backward, optimizer = draw(st.sampled_from(schedules))
    return PipelineConfig(stages=p, replicas=d, microbatches=m, order=order, backward=backward,
                          optimizer=optimizer, **times)


def pipeline_configs(*, max_stages: int = 8, max_replicas: int = 8, max_microbatches: int = 32,
                     heterogeneous: bool = True, orders=None) -> SearchStrategy:
    """Draw valid `relmodel.pipeline.PipelineConfig` objects.

    p stages, d replicas, m micro-batches (each from 1 to its maximum), task
    times 0.1 to 4 (one per stage when `heterogeneous`), any valid
    order/backward/optimizer.

    Parameters
    ----------
    max_stages : int, default 8
        Most pipeline stages.
    max_replicas : int, default 8
        Most data-parallel replicas.
    max_microbatches : int, default 32
        Most micro-batches per iteration.
    heterogeneous : bool, default True
        Draw task times per stage.
    orders : tuple of str, optional
        Restrict to these schedule orders ("1f1b", "zb-h1").

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy of `PipelineConfig`.
    """
    from ..pipeline._config import BACKWARDS, OPTIMIZERS, ORDERS

    _check_bounds("stages", 1, max_stages, minimum=1, maximum=256)
    _check_bounds("replicas", 1, max_replicas, minimum=1, maximum=1024)
    _check_bounds("microbatches", 1, max_microbatches, minimum=1, maximum=4096)
    orders = ORDERS if orders is None else _check_choices("orders", orders, ORDERS)
    schedules = [(o, b, opt) for o in orders for b in BACKWARDS for opt in OPTIMIZERS
                 if not (o == "zb-h1" and b != "decoupled")]
    return _pipeline(max_stages, max_replicas, max_microbatches, heterogeneous, schedules)


@st.composite
def failed_workers(draw, config, *, max_failures: int | None = None, survivable: bool = True) -> dict:
    """Draw a {stage: failed workers} mapping for `config`.

    Called as ``failed_workers(config, max_failures=..., survivable=...)``
    (hypothesis supplies `draw`).

    Parameters
    ----------
    draw : callable
        Supplied by hypothesis.
    config : PipelineConfig
        The pipeline.
    max_failures : int, optional
        Most failed workers in all.
    survivable : bool, default True
        Every stage keeps at least one live replica.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy of dicts from stage to failed replica indices.
    """
    cap = config.replicas - 1 if survivable else config.replicas
    total = config.stages * cap if max_failures is None else max_failures
    failed = {}
    for stage in draw(st.lists(st.integers(0, config.stages - 1), max_size=max(total, 0))):
        if failed.get(stage, 0) < cap:
            failed[stage] = failed.get(stage, 0) + 1
    return failed


# ---- elastic jobs ---------------------------------------------------------------

@st.composite
def _elastic_job(draw, n_gpus, models, elastic):
    from ..elastic._jobs import Job
    from ..elastic._throughput import as_model

    name = draw(st.sampled_from(models))
    model = as_model(name)
    gpus = draw(st.integers(1, n_gpus))
    local = draw(st.integers(1, model.max_local_batch))
    batch = gpus * local
    low, high = batch, batch
    if elastic:
        low = draw(st.integers(1, batch))
        high = draw(st.integers(batch, max(batch, n_gpus * model.max_local_batch)))
    work = draw(_log_uniform(1e3, 1e9))
    return Job(model=name, work=work, batch=batch, gpus=gpus, min_batch=low, max_batch=high,
               submit_time=draw(st.floats(0.0, 24.0)), job_id=f"job-{draw(st.integers(0, 10**6))}")


def elastic_jobs(*, n_gpus: int = 64, models=None, elastic: bool = True) -> SearchStrategy:
    """Draw valid `relmodel.elastic.Job` objects for a cluster of `n_gpus` GPUs.

    A model from `relmodel.elastic.FITTED_MODELS`, a submitted (GPUs, batch) with a
    whole local batch in memory, work of 1e3 to 1e9 samples, and a batch range
    around the submitted batch.

    Parameters
    ----------
    n_gpus : int, default 64
        GPUs in the cluster.
    models : sequence of str, optional
        Models to draw from; all of `relmodel.elastic.FITTED_MODELS` when None.
    elastic : bool, default True
        False gives B_lo = B_hi = batch.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        A strategy of `Job`.
    """
    from ..elastic._throughput import FITTED_MODELS

    _check_bounds("gpus", 1, n_gpus, minimum=1, maximum=1_000_000)
    names = tuple(FITTED_MODELS) if models is None else _check_choices("models", models, tuple(FITTED_MODELS))
    return _elastic_job(n_gpus, names, elastic)
