"""relmodel.testing: the strategies draw only valid objects within their bounds,
impossible bounds are refused, and the invariants catch broken models."""

import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import relmodel as rm
from relmodel.elastic import check_job
from relmodel.testing import invariants
from relmodel.testing.invariants import InvariantError
from relmodel._job_logs import LogError, read_log
from relmodel.testing.strategies import (durations, elastic_jobs, failed_workers, failure_models, job_logs,
                                         pipeline_configs, scenarios)

REFERENCE = rm.Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min",
                        restart_cost="10min", work="7d")


def test_neither_relmodel_nor_relmodel_testing_imports_hypothesis(tmp_path):
    code = "import sys, relmodel, relmodel.testing; print('hypothesis' in sys.modules)"
    # Outside the checkout: the child imports the installed relmodel, as pytest does.
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=tmp_path).stdout.strip() == "False"


# ---- strategies draw valid objects within their bounds -------------------------

@given(sc=scenarios())
def test_typical_scenarios_are_valid_and_typical(sc):
    assert isinstance(sc, rm.Scenario) and not sc.is_grid
    assert 1 <= sc.n_gpus <= 32_768 and 1e-4 <= sc.failure_rate <= 2e-2
    assert 5 / 60 <= sc.checkpoint_interval <= 12 and 1 <= sc.work <= 30 * 24


@given(sc=scenarios(extreme=True))
def test_extreme_scenarios_are_valid(sc):
    assert 1 <= sc.n_gpus <= 10**6 and 0 <= sc.failure_rate <= 10
    assert sc.work / sc.checkpoint_interval <= 2.0**40


@given(sc=scenarios(min_gpus=100, max_gpus=200, laws=("weibull",), restart_cost="5min",
                    queue_wait=st.just(0.5), queue_wait_distributions=("exponential",)))
def test_scenario_bounds_values_and_strategies_are_respected(sc):
    assert 100 <= sc.n_gpus <= 200 and sc.weibull_shape != 1.0
    assert sc.restart_cost == 5 / 60 and sc.queue_wait == 0.5
    assert sc.queue_wait_distribution == "exponential"


@given(sc=scenarios(laws=("lemon",)))
def test_lemon_scenarios_have_lemons(sc):
    assert 0 < sc.lemon_fraction and sc.lemon_rate_factor > 1


@given(d=durations(min_value=1 / 60, max_value=48.0))
def test_durations_stay_in_bounds_whatever_their_unit(d):
    assert 1 / 60 <= rm.to_hours(d) <= 48.0


@given(d=durations(as_text=True, min_value=0.0, max_value=1.0))
def test_durations_as_text_carry_a_unit(d):
    assert isinstance(d, str) and d[-1].isalpha() and 0 <= rm.to_hours(d) <= 1.0


@given(config=pipeline_configs(max_stages=4, max_replicas=3, max_microbatches=6), data=st.data())
def test_pipeline_configs_and_failure_sets_are_valid(config, data):
    assert config.stages <= 4 and config.replicas <= 3 and config.microbatches <= 6
    failed = data.draw(failed_workers(config))
    assert all(0 <= s < config.stages and 1 <= n < config.replicas for s, n in failed.items())
    assert math.isfinite(rm.pipeline.evaluate(config, "recycle", failed).period)


@settings(max_examples=50)
@given(job=elastic_jobs(n_gpus=32))
def test_elastic_jobs_pass_the_submission_checks(job):
    bounds = check_job(job, 32)
    assert bounds.batch_lo <= job.batch <= bounds.batch_hi and 1 <= job.gpus <= 32


@given(job=elastic_jobs(n_gpus=16, elastic=False))
def test_rigid_elastic_jobs_have_a_single_batch(job):
    assert job.min_batch == job.max_batch == job.batch


@given(model=failure_models(min_rate=1e-3, max_rate=1e-2))
def test_failure_models_are_valid_and_go_into_a_scenario(model):
    assert 1e-3 <= model.rate <= 1e-2 and model.mean(n_nodes=128) > 0
    sc = rm.Scenario(n_gpus=1024, failure_model=model, checkpoint_interval="1h", work="1d")
    assert sc.to_failure_model() == model


@given(model=failure_models(kinds=("taxonomy",), max_categories=2))
def test_taxonomy_models_respect_their_category_bound(model):
    assert 1 <= len(model.categories) <= 2 and sum(c.share for c in model.categories) == pytest.approx(1)


@pytest.mark.parametrize("fmt", ["csv", "sacct"])
@given(data=st.data())
def test_job_logs_read_without_error_and_every_row_is_accounted_for(fmt, data):
    text = data.draw(job_logs(format=fmt, min_jobs=1, max_jobs=8))
    log = read_log(text)
    s = log.summary
    assert s.format == fmt and s.rows_read == len(text.splitlines()) - 1
    assert s.rows_used + s.rows_folded + s.rows_skipped == s.rows_read and not s.errors


@pytest.mark.parametrize("fmt", ["csv", "sacct"])
@given(data=st.data())
def test_malformed_job_logs_are_reported_with_their_line(fmt, data):
    text = data.draw(job_logs(format=fmt, max_jobs=6, malformed=True))
    with pytest.raises(LogError, match=r"^line \d+: "):
        read_log(text)


@pytest.mark.parametrize("make", [
    lambda: scenarios(min_gpus=10, max_gpus=5),
    lambda: scenarios(min_gpus=0),
    lambda: scenarios(laws=()),
    lambda: scenarios(laws=("gamma",)),
    lambda: scenarios(queue_wait_distributions=("uniform",)),
    lambda: scenarios(extreme="yes"),
    lambda: durations(min_value=2.0, max_value=1.0),
    lambda: durations(min_value=-1.0),
    lambda: durations(max_value=math.nan),
    lambda: durations(as_text="yes"),
    lambda: pipeline_configs(max_stages=0),
    lambda: pipeline_configs(orders=("gpipe",)),
    lambda: elastic_jobs(n_gpus=0),
    lambda: elastic_jobs(models=("no-such-model",)),
    lambda: failure_models(kinds=("gamma",)),
    lambda: failure_models(min_rate=1.0, max_rate=0.1),
    lambda: failure_models(max_categories=0),
    lambda: job_logs(format="json"),
    lambda: job_logs(min_jobs=5, max_jobs=2),
    lambda: job_logs(max_jobs=0, malformed=True),
], ids=lambda f: "")
def test_impossible_bounds_raise_invalid_argument(make):
    with pytest.raises(InvalidArgument):
        make()


# ---- the invariants pass good models and catch broken ones ---------------------

def renewal(sc):
    return rm.ettr(sc, "renewal")


@given(sc=scenarios(laws=("exponential",)))
def test_the_renewal_form_passes_every_invariant(sc):
    invariants.check_ettr_model(renewal, sc)


def test_an_ettr_that_rises_with_restart_cost_is_caught():
    def broken(sc):  # a unit slip: the restart cost enters inverted
        return renewal(rm.Scenario(**{**vars(sc), "restart_cost": 1.0 / (1.0 + sc.restart_cost)}))

    with pytest.raises(InvariantError, match="restart_cost"):
        invariants.check_ettr_model(broken, REFERENCE)


def test_an_ettr_above_one_is_caught():
    with pytest.raises(InvariantError, match=r"outside \[0, 1\]"):
        invariants.check_in_unit_interval(lambda sc: 1 + renewal(sc), REFERENCE)


def test_an_ettr_that_forgets_checkpoint_costs_fails_the_failure_free_limit():
    def no_checkpoints(sc):
        return rm.ettr(rm.Scenario(**{**vars(sc), "checkpoint_cost": 0.0}), "renewal")

    with pytest.raises(InvariantError, match="failure-free"):
        invariants.check_failure_free_limit(no_checkpoints, REFERENCE)


def test_an_ettr_that_grows_with_scale_is_caught():
    def broken(sc):
        return renewal(rm.Scenario(**{**vars(sc), "n_gpus": max(1, 10**6 // sc.n_gpus)}))

    with pytest.raises(InvariantError, match="n_gpus"):
        invariants.check_monotone(broken, REFERENCE, "n_gpus")


def test_simulation_agreement_passes_the_exact_form_and_catches_the_linear_one_where_it_is_poor():
    harsh = REFERENCE.sweep(n_gpus=16384, work="2d")
    z = invariants.check_agrees_with_simulation(renewal, harsh, n_jobs=20_000, seed=3)
    assert abs(z) < 4
    with pytest.raises(InvariantError, match="standard errors apart"):
        invariants.check_agrees_with_simulation(lambda sc: rm.ettr(sc, "linear"), harsh, n_jobs=20_000, seed=3)


def test_mttf_invariants():
    invariants.check_mttf_model(rm.mttf, 1000, 6.5e-3)
    with pytest.raises(InvariantError, match="twice the nodes"):
        invariants.check_mttf_model(lambda n_gpus, failure_rate, gpus_per_node: 24 / (n_gpus**0.5 * failure_rate)
                                    if failure_rate else math.inf, 1000, 6.5e-3)
    with pytest.raises(InvariantError, match="not positive"):
        invariants.check_mttf_model(lambda **kw: -1.0, 1000, 6.5e-3)


def test_a_model_returning_something_else_than_a_number_is_reported():
    with pytest.raises(InvariantError, match="not a number"):
        invariants.check_in_unit_interval(lambda sc: "high", REFERENCE)


@pytest.mark.parametrize("kwargs, match", [(dict(parameter="interval"), "parameter"),
                                           (dict(parameter="restart_cost", factor=1.0), "factor")])
def test_check_monotone_refuses_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        invariants.check_monotone(renewal, REFERENCE, **kwargs)
