"""Plans, closed forms and simulations at the edges of the valid space: the right number, a NaN
with the flag that names its cause, or a refusal naming the parameter; never a NumPy warning."""

import contextlib
import dataclasses
import json
import math
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import relmodel as rm
from relmodel._cli import main
from relmodel._closed_form import ClosedFormWarning
from relmodel._engine import expected_failures
from relmodel._errors import ParameterError, ScenarioError
from relmodel._simulate import CappedJobsWarning, OutOfRangeWarning
from relmodel._failures import FailureCategory
from relmodel.testing.strategies import level_scenarios, scenarios

RUN = dict(n_gpus=1024, failure_rate=0.0065, work="7d", checkpoint_interval="1h", checkpoint_cost="5min",
           restart_cost="10min")
# A million failures per node-day on 2**32 GPUs: 1.8e14 failures an hour, so a product with a
# duration near the float limit overflows.
HOPELESS = dict(n_gpus=2**32, failure_rate=1e6)


@contextlib.contextmanager
def strict():
    """Every warning an error, and every floating-point fault NumPy does not silence where it is meant to
    (its own modules attribute some warnings to NumPy, past a module filter on relmodel)."""
    with warnings.catch_warnings(), np.errstate(over="raise", invalid="raise", divide="raise"):
        warnings.simplefilter("error")
        yield


# ---- plans at subnormal work and near-max costs ------------------------------------------

def test_a_plan_for_subnormal_work_writes_no_checkpoint_and_answers_the_renewal_ettr():
    with strict():
        plan = rm.plan(**{**RUN, "work": "1e-320s"}, n_jobs=500)
    sc = plan.scenario
    lam = sc.job_failure_rate
    # No checkpoint: the renewal form of one piece of work, e^(-lam u0) in the limit of no work.
    assert plan.ettr == pytest.approx(math.exp(-lam * sc.restart_cost), rel=1e-12)
    assert plan.ettr == rm.ettr(rm.Scenario(**{**RUN, "work": "1e-320s"}))  # simulate's renewal column
    assert sc.intervals == (0, sc.work)
    row = plan.ettr_by_interval["exact"]
    assert row.simulated == 1.0 and plan.time_per_job_h.checkpoint == 0.0


def test_a_checkpoint_cost_near_the_float_limit_counts_the_failures_of_a_job_that_never_checkpoints():
    with strict():
        plan = rm.plan(**{**RUN, "checkpoint_cost": "1e308h"}, n_jobs=500)
        never = rm.plan(**{**RUN, "checkpoint_cost": "1w"}, n_jobs=500)
    failures = never.ettr_by_interval["exact"].expected_failures
    assert failures == pytest.approx(339.277, rel=1e-5)
    for label in ("young", "exact"):  # past the work: no checkpoint written, whatever it costs
        assert plan.ettr_by_interval[label].expected_failures == failures
        assert plan.ettr_by_interval[label].renewal == never.ettr_by_interval["exact"].renewal
    # Young's interval, sqrt(2 w M), fits a float though 2 w does not.
    assert plan.intervals_h["young"] == pytest.approx(math.sqrt(2.0) * 1e154 * math.sqrt(plan.mttf_h), rel=1e-12)


def test_no_full_interval_adds_no_failures_however_long_its_write():
    assert expected_failures(0.0347, 0, 200.0, 1e308, 168.0, 0.1) == pytest.approx(math.expm1(0.0347 * 168)
                                                                                    * math.exp(0.0347 * 0.1))
    assert expected_failures(0.0347, 1, 1.0, 1e308, 0.0, 0.1) == math.inf


def test_the_plan_command_at_a_checkpoint_cost_near_the_float_limit_prints_no_numpy_warning():
    result = CliRunner().invoke(main, ["plan", "--gpus", "1024", "--checkpoint-cost", "1e308h", "--n-jobs", "500",
                                       "--json"])
    assert result.exit_code == 0, result.output
    assert "Warning" not in result.output and "overflow" not in result.output
    rows = json.loads(result.stdout)["ettr_by_interval"]
    assert rows["exact"]["expected_failures"] == pytest.approx(339.277, rel=1e-5)


def test_a_run_no_job_can_finish_past_the_float_range_is_refused_in_a_readable_line():
    result = CliRunner().invoke(main, ["simulate", "--gpus", "4294967296", "--failure-rate", "1e6", "--work", "1h",
                                       "--checkpoint-interval", "1h", "--checkpoint-cost", "1e308h"])
    assert result.exit_code == 2  # the inputs allow no run: a usage problem
    assert "Warning" not in result.output and "overflow" not in result.output
    # 1.8e14 failures an hour over a 1e308 h stretch: e^(2e322) attempts, an exponent of 308 digits.
    assert "takes more than 1e308 attempts;" in result.output and len(result.output) < 300


@pytest.mark.parametrize("fields", [dict(failure_rate=0.0, queue_wait=np.finfo(float).max),
                                    dict(n_gpus=8, failure_rate=1e6, work="1s", checkpoint_interval="1s")],
                         ids=["queue at the float limit", "the largest failure rate"])
def test_sensitivities_at_the_top_of_a_parameters_range_are_one_sided(fields):
    with strict():
        warnings.simplefilter("ignore", CappedJobsWarning)
        plan = rm.plan(**{**RUN, **fields}, n_jobs=20, max_failures=50)
    for name, s in plan.sensitivity.items():
        assert s.elasticity <= 0 or math.isnan(s.elasticity) and plan.ettr == 0, name


# ---- closed forms past float64's range ----------------------------------------------------

@pytest.mark.parametrize("fields", [
    dict(queue_wait=1e308),  # lam q overflows
    dict(restart_cost=1e308),  # e^(-lam u0) underflows and the work splits into whole intervals
    dict(checkpoint_cost=1e308, queue_wait=1e300, queue_wait_distribution="exponential"),
], ids=["queue", "restart", "write and queue"])
def test_the_renewal_form_of_a_hopeless_exponential_job_is_zero_not_nan(fields):
    sc = rm.Scenario(**{**RUN, **HOPELESS, **fields, "work": 168.0, "checkpoint_interval": 1.0})
    with strict():
        assert rm.ettr(sc, "renewal") == 0.0
        for at in ("young", "daly", "exact"):
            assert rm.ettr(sc, "renewal", at=at) == 0.0


def test_young_and_daly_survive_products_past_the_float_range():
    with strict():
        # 2 w overflows: Young's root does not.
        huge = rm.Scenario(**{**RUN, "checkpoint_cost": 1e308})
        assert rm.optimal_interval(huge, "young") == pytest.approx(math.sqrt(2.0) * 1e154 * math.sqrt(huge.mttf))
        # 2 w M underflows to 0 (a subnormal cost, a short MTTF): both roots stay positive.
        tiny = rm.Scenario(**{**RUN, **HOPELESS, "checkpoint_cost": 5e-324})
        expected = math.sqrt(2.0) * math.sqrt(5e-324) * math.sqrt(tiny.mttf)
        for method in ("young", "daly"):
            assert rm.optimal_interval(tiny, method) == pytest.approx(expected, rel=1e-6)


def test_the_linear_form_at_an_undefined_exact_interval_blames_the_interval_not_its_numerator():
    sc = rm.Scenario(**RUN, weibull_shape=0.7)
    with pytest.warns(ClosedFormWarning, match="exact optimal interval is: it needs exponential") as caught:
        assert math.isnan(rm.ettr(sc, "linear", at="exact"))
    assert not any("numerator" in str(w.message) for w in caught)


def test_the_mttf_of_a_subnormal_job_rate_is_infinite_without_a_warning():
    with strict():
        assert rm.mttf(8, 5e-324) == math.inf


# ---- job timelines past float64's range ---------------------------------------------------

FLOAT_MAX = float(np.finfo(float).max)


def test_a_timeline_past_the_float_range_is_flagged_on_both_backends_and_crashes_neither():
    # The failure-free wall (5e11 writes of 1.8e308 h) overflows: the Numba kernel counted
    # inf / inf into its histogram at index int(NaN), a write far out of bounds.
    script = textwrap.dedent(f"""
        import json, warnings
        import relmodel as rm
        sc = rm.Scenario(**{HOPELESS!r}, checkpoint_interval=2.2e-308, work=1.2e-296,
                         checkpoint_cost={FLOAT_MAX!r}, queue_wait={FLOAT_MAX!r}, weibull_shape=1.53)
        out = {{}}
        for backend in ("numba", "cython"):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                ds = rm.simulate(sc, n_jobs=4, backend=backend)
            out[backend] = {{"values": {{k: v.values.tolist() for k, v in ds.data_vars.items()}},
                            "warnings": [w.category.__name__ for w in caught]}}
        print(json.dumps(out))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["numba"] == out["cython"]
    assert out["numba"]["warnings"] == ["OutOfRangeWarning"]
    values = out["numba"]["values"]
    assert values.pop("n_capped") == 0
    assert all(math.isnan(v) for v in _numbers(values) for v in [v[1]])


def test_the_summary_of_an_overflowing_failure_free_wall_adds_no_inf_to_minus_inf():
    # 168 writes of 1e308 h: the failure-free wall is inf, a capped job's deviation from it -inf.
    sc = rm.Scenario(**{**RUN, "checkpoint_cost": 1e308, "weibull_shape": 1.5})
    with strict(), pytest.warns(OutOfRangeWarning, match="failure-free wall"):
        ds = rm.simulate(sc, n_jobs=20, max_failures=50, backend="cython")
    assert int(ds.n_capped) == 0 and math.isnan(float(ds.failures_mean))
    assert np.isnan(ds.ettr) and np.isnan(ds.wall_mean) and np.isnan(ds.time_mean).all()


def test_an_interval_and_write_past_the_float_range_hide_no_failure():
    # Work shorter than the interval, so no write; interval + write overflow and the
    # job's hazard read 0 * inf: every job ran failure free (ETTR 1.0, 0 failures a job).
    sc = rm.Scenario(**{**RUN, "checkpoint_interval": FLOAT_MAX, "checkpoint_cost": FLOAT_MAX})
    with strict(), pytest.warns(OutOfRangeWarning):
        ds = rm.simulate(sc, n_jobs=50, backend="cython")
    assert int(ds.n_capped) == 0 and np.isnan(ds.ettr) and np.isnan(ds.failures_mean)


def test_a_plan_runs_no_check_simulation_past_the_float_range():
    # No failures and 168 writes of 1e308 h: the current interval's failure-free wall is inf
    # (its check simulation read ETTR 0, and pack warned of inf * 0).
    sc = rm.Scenario(**{**RUN, "failure_rate": 0.0, "checkpoint_cost": 1e308})
    with strict():
        plan = rm.plan(sc, n_jobs=20, max_failures=50)
    row = plan.ettr_by_interval["current"]
    assert row.simulated_jobs == 0 and math.isnan(row.simulated)
    assert row.renewal == pytest.approx(1e-308, rel=1e-12)


def test_a_check_simulation_that_every_job_would_cap_reports_no_job_simulated():
    # ETTR 2.5e-10: about 4e9 failures a job, past simulate's cap, so it skips the point (NaN).
    sc = rm.Scenario(n_gpus=218838, failure_rate=10.0, checkpoint_interval="1s", work="1s",
                     checkpoint_persist="1s", gpus_per_node=1)
    with pytest.warns(CappedJobsWarning, match="not simulated"):
        planned = rm.plan_checkpoints(sc, strategies=["blocking"], n_jobs=20, backend="cython")
    (blocking,) = planned.strategies
    assert blocking.simulated_jobs == 0 and math.isnan(blocking.simulated)
    assert 0 < blocking.ettr < 1e-9


FREE_LEVEL = dict(cost=0.0, restart=0.0, persist=0.0, survives=0.0)
# Levels whose period of six positions sums past float64 (3.3e307 h apiece), a persist at the float
# limit, and three writes of 1e308 h: each overflowed a sum of the forms or of `pack`.
FLOAT_LIMIT_LEVELS = {
    "fast levels": dict(checkpoint_interval=1e308, work="1s",
                        fast_checkpoints=(rm.CheckpointLevel(interval=1e308 / 3, **FREE_LEVEL),
                                          rm.CheckpointLevel(interval=1e308 / 3 * 2, **FREE_LEVEL))),
    "persist 1e308": dict(checkpoint_interval=1e308, work="1s", checkpoint_persist=1e308),
    "persist 1e300": dict(checkpoint_interval=1e300, work="1s", checkpoint_persist=1e300),
    "writes 1e308": dict(checkpoint_interval=1.0, work=3.0, checkpoint_cost=1e308, checkpoint_persist="1s"),
}


@pytest.mark.parametrize("fields", FLOAT_LIMIT_LEVELS.values(), ids=FLOAT_LIMIT_LEVELS.keys())
def test_checkpoint_levels_at_the_float_limit_answer_without_a_numpy_warning(fields):
    sc = rm.Scenario(n_gpus=1, failure_rate=0.0, **fields)
    with strict():
        warnings.simplefilter("ignore", ClosedFormWarning)  # a write that waits: NaN, flagged
        linear, renewal = (float(rm.ettr(sc, method)) for method in ("linear", "renewal"))
        warnings.simplefilter("ignore", OutOfRangeWarning)  # past float64: NaN failures, flagged
        ds = rm.simulate(sc, n_jobs=4, max_failures=50, backend="cython")
    # No failures: nothing lost, so the ETTR is the share of compute (1 with free writes; 1e-308,
    # three writes of 1e308 h on 3 h of work, where the exact wall passes float64 and reads 0).
    share = 1.0 if sc.checkpoint_cost == 0 else 1e-308
    assert math.isnan(linear) or linear == share
    assert renewal == (share if sc.checkpoint_cost == 0 else 0.0)
    assert float(ds.ettr) == renewal or math.isnan(float(ds.failures_mean))


@settings(max_examples=25)
@given(data=st.data())
@pytest.mark.parametrize("fields", [dict(work=1e-320, checkpoint_interval=5e-324),  # halves round to 0 s
                                    dict(work=2.0**40 / 3600, checkpoint_interval="1s")],  # 2**40 intervals
                         ids=["subnormal interval", "2**40 intervals"])
def test_level_scenarios_draw_valid_levels_from_a_base_at_the_edge(fields, data):
    base = rm.Scenario(n_gpus=1, failure_rate=0.0, **fields)
    sc = data.draw(level_scenarios(base=st.just(base)))
    assert sc.checkpoint_interval == base.checkpoint_interval and not sc.fast_checkpoints


# ---- every public number over the whole valid space ---------------------------------------

# ---- checkpoint levels at the edges ---------------------------------------------------------

def test_the_first_order_ettr_with_free_writes_is_at_most_one():
    # Six pieces of 1/3 h sum to just under 6 * 1/3 h: a negative write fraction read 1.0000000000000002.
    free = dict(cost=0.0, restart=0.0, persist=0.0, survives=0.0)
    sc = rm.Scenario(n_gpus=1, failure_rate=0.0, checkpoint_interval=1.0, work="1s",
                     fast_checkpoints=(rm.CheckpointLevel(interval=1 / 3, **free),
                                       rm.CheckpointLevel(interval=2 / 3, **free)))
    with strict():
        assert float(rm.ettr(sc, "linear", at="given")) == 1.0


def _numbers(value, path=""):
    """(dotted path, number) of every number in nested dicts and lists."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _numbers(item, f"{path}[{i}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, float(value)


RATIOS = {"ettr", "linear", "renewal", "simulated", "ettr_if_halved", "best_possible", "ettr_sim", "ettr_renewal",
          "ettr_job_mean", "ettr_linear"}


def _check_in_range(path: str, value: float, flagged: bool):
    """ETTRs in [0, 1]; counts, times and intervals >= 0, finite but for an interval ("never") or
    an expected failure count past the float range; NaN only where flagged."""
    if math.isnan(value):
        assert flagged, f"{path} is NaN without its flag"
        return
    if "elasticity" in path or "ci95" in path:
        return
    assert value >= 0, f"{path} = {value}"
    if path.rsplit(".", 1)[-1].split("@")[0] in RATIOS:
        assert value <= 1, f"{path} = {value}"
    if math.isinf(value):
        assert "interval" in path or "mttf" in path or "expected_failures" in path, f"{path} is inf"


def _closed_forms(sc):
    """Every closed-form number of a scenario, and whether a ClosedFormWarning flagged one.
    With checkpoint levels, the optimal intervals of a single level are refused (naming `at` or the scenario)."""
    levels = bool(sc.fast_checkpoints or sc.checkpoint_persist)
    out, flagged = {}, False

    def form(name, compute):
        nonlocal flagged
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ClosedFormWarning)
            try:
                out[name] = float(compute())
            except ParameterError as err:
                assert levels and err.parameter in ("at", "scenario"), err
        flagged |= bool(caught)

    for method in ("renewal", "linear"):
        for at in ("given", "young", "daly", "exact"):
            form(f"{method}@{at}", lambda: rm.ettr(sc, method, at=at))
    for method in ("young", "daly", "exact"):
        form(f"interval.{method}", lambda: rm.optimal_interval(sc, method))
    out["mttf"] = rm.mttf(sc.n_gpus, sc.failure_rate, sc.gpus_per_node)
    return out, flagged


EDGE_SCENARIOS = scenarios(extreme=True, float_limits=True)
# Hours of a category's restart or queue wait: none, ordinary, or at a float's edges.
_EDGE_HOURS = st.one_of(st.just(0.0), st.floats(1 / 3600, 168.0),
                        st.sampled_from((5e-324, 2.2250738585072014e-308, 1e300, 1e308, FLOAT_MAX)))


@st.composite
def taxonomy_scenarios(draw):
    """An edge scenario whose failures come in 1 to 3 categories, each with its restart and queue wait."""
    sc = draw(EDGE_SCENARIOS)
    n = draw(st.integers(1, 3))
    shares = [1.0 / n] * (n - 1)
    cats = [FailureCategory(f"kind{i}", share, restart_cost=draw(_EDGE_HOURS), queue_wait=draw(_EDGE_HOURS))
            for i, share in enumerate([*shares, 1.0 - sum(shares)])]
    return dataclasses.replace(sc, taxonomy=tuple(cats), restart_cost=None, queue_wait=None)


@settings(max_examples=25)
@given(sc=st.one_of(EDGE_SCENARIOS, taxonomy_scenarios()))
def test_every_public_number_is_in_range_refused_or_flagged(sc):
    _check_every_number(sc)


@settings(max_examples=10)
@given(sc=level_scenarios(base=scenarios(extreme=True, float_limits=True, laws=("exponential",))))
def test_every_public_number_of_checkpoint_levels_is_in_range_refused_or_flagged(sc):
    _check_every_number(sc)


def _check_every_number(sc):
    # A lemon mixture over millions of nodes makes a table of millions of job rates: minutes a point.
    assume(not (sc.lemon_fraction > 0 and sc.n_nodes > 2**12))
    n_jobs, max_failures = 4, 50
    # The kernels sum each job's times and their squares in float64: durations whose sums over a
    # run's events pass its range read inf or NaN in the means and standard errors (a limit of the
    # kernels' accumulators, not of the forms).
    longest = max(sc.checkpoint_interval, sc.checkpoint_cost, sc.restart_cost, sc.queue_wait)
    sums_overflow = longest * 2 * (max_failures + 1) * 20_000 > math.sqrt(np.finfo(float).max)
    with strict():
        warnings.simplefilter("ignore", ClosedFormWarning)  # recorded where it flags a NaN
        warnings.simplefilter("ignore", CappedJobsWarning)  # the cap bounds the example; n_capped says so
        forms, flagged = _closed_forms(sc)
        for path, value in _numbers(forms):
            _check_in_range(path, value, flagged)
        if sc.fast_checkpoints or sc.checkpoint_persist:
            _check_checkpoint_plan(sc)
        try:
            planned = rm.plan(sc, n_jobs=20, max_failures=50).to_dict()
        except (ParameterError, ScenarioError) as err:
            assert sc.weibull_shape != 1.0 and err.parameter == "weibull_shape"
        else:
            for path, value in _numbers({k: v for k, v in planned.items() if k not in ("scenario", "units")}):
                section, label, key = (path.split(".") + ["", ""])[1:4]
                key = key.split("[")[0]
                # the row of an interval (ettr_by_interval) or of a strategy (checkpoint_strategies)
                row = (planned[section] or {}).get(label) if isinstance(planned[section], dict) else None
                row = row if isinstance(row, dict) else {}
                flagged = (
                    # a check simulation not run: its simulated_jobs is 0
                    (key.startswith("simulated") and row.get("simulated_jobs") == 0)
                    or (key == "linear" and row.get("linear_valid") is False)
                    or (key == "ettr_first_order" and row.get("first_order_valid") is False)
                    # d ln ETTR has no value where the ETTR underflows to 0
                    or (key == "elasticity" and planned["ettr"] < np.finfo(float).tiny)
                    or (key in ("simulated_se", "simulated_ci95") and sums_overflow))
                if not (sums_overflow and not math.isfinite(value) and section == "time_per_job_h"):
                    _check_in_range(path, value, flagged)
        warnings.simplefilter("ignore", OutOfRangeWarning)  # flagged in the Dataset: NaN failures, n_capped 0
        try:
            ds = rm.simulate(sc, n_jobs=n_jobs, max_failures=max_failures)
        except ScenarioError as err:
            # Writes that wait for persistence are stepped one position at a time, up to a stated count.
            assert err.parameter == "checkpoint_persist" and "positions" in str(err), err
            return
    # Not simulated, its timeline past float64's range: NaN failures with no job capped (and its warning).
    capped = int(ds.n_capped.sum()) > 0 or bool(np.isnan(ds.failures_mean).any())
    for name, values in ds.data_vars.items():
        if values.dtype.kind == "f":
            flagged = (name == "ettr_renewal" and sc.weibull_shape != 1) or capped
            for value in np.ravel(values.values):
                if not (sums_overflow and not np.isfinite(value) and name not in RATIOS - {"ettr"}):
                    _check_in_range(name, float(value), flagged)


def _check_checkpoint_plan(sc):
    """Every number of `plan_checkpoints` in range, or refused naming the parameter."""
    try:
        planned = rm.plan_checkpoints(sc, n_jobs=20, backend="cython")
    except (ParameterError, ScenarioError) as err:
        assert err.parameter in ("weibull_shape", "fast_checkpoints", "checkpoint_persist", "strategies"), err
        return
    for strategy in planned.strategies:
        row = strategy.to_dict()
        for path, value in _numbers(row, strategy.name):
            key = path.rsplit(".", 1)[-1]
            flagged = ((key.startswith("simulated") and row["simulated_jobs"] == 0)
                       or (key == "ettr_first_order" and not row["first_order_valid"]))
            _check_in_range(path, value, flagged)
