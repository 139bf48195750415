"""Reprs a person can read: inputs and results within a few hundred characters (counts and ranges, not
arrays), durations in the units a person types; a scalar Scenario's repr is code that makes it again."""

import re

import pytest
from hypothesis import given, strategies as st

import relmodel as rm
from relmodel import CheckpointLevel, Scenario  # noqa: F401  the names a repr's code uses
from relmodel._synthetic_log import synthetic_log
from relmodel._units import duration_text, to_hours
from relmodel.testing.strategies import scenarios

SHORT = 300
EXACT_SCENARIO = 400  # a scalar scenario's repr is exact: every field away from its default, at full precision


@given(st.floats(min_value=0, max_value=1e15, allow_nan=False) | st.sampled_from([5 / 60, 1 / 3, 336.0, 1e-9]))
def test_a_duration_reads_back_to_the_same_hours(hours):
    assert to_hours(duration_text(hours)) == hours


@pytest.mark.parametrize("hours, text", [(5 / 60, "5min"), (336.0, "14d"), (2.5, "2.5h"), (10 / 3600, "10s"),
                                         (0.0, "0.0")])
def test_a_duration_is_written_as_typed(hours, text):
    assert duration_text(hours) == text


@given(scenarios(extreme=True))
def test_a_scalar_scenarios_repr_makes_it_again(sc):
    text = repr(sc)
    assert len(text) <= EXACT_SCENARIO, text
    assert eval(text) == sc


def test_a_scenarios_repr_shows_what_was_typed_and_a_grid_by_its_range():
    sc = Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h", work="14d", checkpoint_cost="5min",
                  fast_checkpoints=[dict(interval="10min", cost="5s", restart="3min", survives=0.85)])
    assert repr(sc) == ("Scenario(n_gpus=1024, failure_rate=0.0065, checkpoint_interval='1h', work='14d', "
                        "checkpoint_cost='5min', fast_checkpoints=(CheckpointLevel(interval='10min', cost='5s', "
                        "restart='3min', survives=0.85),))")
    grid = Scenario(n_gpus=[8 * k for k in range(1, 1001)], failure_rate=6.5e-3,
                    checkpoint_interval=[k / 60 for k in range(1, 301)], work="14d")
    assert repr(grid) == ("Scenario(n_gpus=<1000 values, 8..8000>, failure_rate=0.0065, "
                          "checkpoint_interval=<300 values, 1min..5h>, work='14d')")


def test_inputs_and_results_print_short():
    taxonomy = rm.load_taxonomy("meta-2024")
    with_taxonomy = Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h", work="14d",
                             taxonomy=taxonomy)
    objects = [rm.elastic.synthetic_workload(60, "24h", seed=1), taxonomy, with_taxonomy,
               synthetic_log(20_000, failure_rate=6.5e-3, seed=1)]
    for obj in objects:
        assert len(repr(obj)) <= SHORT, repr(obj)
    assert re.match(r"Workload\(1,\d{3} jobs submitted over 23\.\d\dh, attrs=\{", repr(objects[0]))


def test_a_job_logs_repr_counts_its_jobs(tmp_path):
    path = tmp_path / "jobs.sacct"
    synthetic_log(5_000, failure_rate=6.5e-3, seed=1, path=path, format="sacct")
    log = rm.read_log(path)
    assert len(repr(log)) <= SHORT and repr(log).startswith(f"JobLog({len(log):,} jobs from ")
