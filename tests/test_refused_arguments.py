"""Arguments the public functions once let through to NumPy, SciPy or Python arithmetic
(a TypeError, a ZeroDivisionError, a MemoryError, SciPy's OverflowError) are refused with
relmodel's own errors naming the parameter, or answered."""

import math

import numpy as np
import pytest

import relmodel as rm


@pytest.mark.parametrize("batch, submitted, noise_scale, parameter", [
    ("abc", 32, 100.0, "batch"),
    ([32, -1], 32, 100.0, "batch"),
    ([32, math.nan], 32, 100.0, "batch"),
    (True, 32, 100.0, "batch"),
    (32, 0, 100.0, "submitted"),
    (32, "32", 100.0, "submitted"),
    (32, 32, 0, "noise_scale"),
    (32, 32, "abc", "noise_scale"),
    (32, 32, math.inf, "noise_scale"),
])
def test_statistical_efficiency_names_a_batch_or_noise_scale_it_cannot_use(batch, submitted, noise_scale, parameter):
    with pytest.raises(rm.ParameterError, match=f"^{parameter}: must be a finite number"):
        rm.elastic.statistical_efficiency(batch, submitted, noise_scale)


def test_statistical_efficiency_of_good_arguments_is_unchanged():
    assert rm.elastic.statistical_efficiency(np.array([32, 64]), 64, 64.0).tolist() == [2 / 1.5, 1.0]
    assert rm.elastic.statistical_efficiency(32, 64, None) == 1.0


@pytest.mark.parametrize("call", [
    lambda: rm.pipeline.failure_mask(None, 2, -0.0),
    lambda: rm.pipeline.failure_mask({0: 1}, -1, 2),
    lambda: rm.pipeline.failure_mask(None, 2**64, 2**64),
    lambda: rm.pipeline.spread_failures(0, 1, -0.0),
    lambda: rm.pipeline.spread_failures(1, 2**40, 2**40),
    lambda: rm.pipeline.failure_set("stacked", 1, 2**64, 2),
], ids=["negative zero stages", "negative replicas", "2**128 workers", "spread over -0.0 stages",
        "spread over 2**80 workers", "stacked on 2**64 replicas"])
def test_failure_masks_refuse_counts_no_schedule_could_hold(call):
    with pytest.raises(rm.pipeline.PipelineError, match="^(replicas|stages): "):
        call()


def test_failure_masks_take_whole_floats_as_counts():
    expected = [[True, False], [False, False]]
    assert rm.pipeline.failure_mask({0: 1}, 2.0, 2.0).tolist() == expected
    assert rm.pipeline.failure_set("stacked", 1, 2.0, 2).tolist() == expected


def test_a_grid_where_one_scenario_is_needed_is_a_scenario_error_naming_its_axis():
    grid = rm.Scenario(n_gpus=[8, 16], failure_rate=1.0, checkpoint_interval=1, work=2)
    with pytest.raises(rm.ScenarioError, match="^n_gpus: is a sweep axis"):
        rm.linear_deviation(grid)


def test_lemons_as_rare_as_float64_allows_are_sampled():
    # SciPy's binomial pmf overflows for a fraction near the least normal float; its logpmf does not.
    model = rm.LemonMixture(rate=6.5e-3, lemon_fraction=1e-308, lemon_rate_factor=10)
    assert model.mean(8) == pytest.approx(24 / (8 * 6.5e-3))
    sim = rm.simulate(rm.Scenario(n_gpus=64, checkpoint_interval=1, work=24, failure_model=model), n_jobs=100)
    assert 0 < float(sim.ettr) < 1


@pytest.mark.parametrize("interval, work, parameter", [
    (0.5, "abc", "work"), (0.5, 0, "work"), (0.5, math.nan, "work"), (0, 10**400, "work"),
    ("abc", 1.0, "interval"), (-1.0, 1.0, "interval"), (True, 1.0, "interval"), (None, 1.0, "interval"),
])
def test_feasible_interval_names_what_it_cannot_use(interval, work, parameter):
    with pytest.raises(rm.ScenarioError, match=f"^{parameter}: "):
        rm.feasible_interval(interval, work)


@pytest.mark.parametrize("interval, work, expected", [
    (0.0, 5.0, 1 / 3600), (math.inf, 5.0, 5.000005), (10**400, 5.0, 5.000005), (3.0, 2.0, 2.000002), (1.5, 5.0, 1.5),
])
def test_feasible_interval_of_an_optimum_is_one_a_scenario_takes(interval, work, expected):
    assert rm.feasible_interval(interval, work) == pytest.approx(expected, rel=1e-12)


def test_feasible_interval_of_no_optimum_is_nan():
    assert math.isnan(rm.feasible_interval(math.nan, 5.0))


def test_a_write_that_would_block_past_float64_is_refused_naming_persist():
    sc = rm.Scenario(n_gpus=8, failure_rate=1e-3, checkpoint_interval=1.0, work=10.0, checkpoint_cost=1e308,
                     checkpoint_persist=1e308)
    with pytest.raises(rm.ScenarioError, match="^checkpoint_persist: with checkpoint_cost, a write that blocks"):
        rm.plan(sc)


def test_the_command_line_names_persist_for_such_a_write():
    from click.testing import CliRunner

    from relmodel._cli import main

    result = CliRunner().invoke(main, ["plan", "--gpus", "1000000000", "--failure-rate", "1e-3", "--queue-wait", "0",
                                       "--checkpoint-cost", "1e308h", "--checkpoint-persist", "1e308h", "--quiet"])
    assert result.exit_code == 2
    assert result.output.startswith("Error: --checkpoint-persist: with --checkpoint-cost, a write that blocks")
