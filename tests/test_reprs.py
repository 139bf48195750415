"""Reprs a person can read: inputs and results within a few hundred characters (counts and ranges, not
arrays), durations in the units a person types; a scalar Scenario's repr is code that makes it again."""

import dataclasses
import re

import pytest
from hypothesis import given, strategies as st

import relmodel as rm
from relmodel import CheckpointLevel, Scenario  # noqa: F401  the names a repr's code uses
from relmodel._display import readable
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


def _public_objects(tmp):
    """One of every public input and result object, as a user makes it: (label, object)."""
    pl, el = rm.pipeline, rm.elastic
    taxonomy = rm.load_taxonomy("meta-2024")
    sc = Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h", work="14d", checkpoint_cost="5min",
                  restart_cost="10min")
    log_path = synthetic_log(3_000, failure_rate=6.5e-3, n_nodes=256, seed=1, path=tmp / "jobs.sacct",
                             format="sacct")
    workload = el.synthetic_workload(60, "24h", seed=1)
    config = el.ClusterConfig(n_gpus=64, failure_rate=1.0, checkpoint_cost="2min", unplaceable="queue", max_wait="3h")
    cfg = pl.PipelineConfig(stages=4, replicas=4, microbatches=8)
    mask = pl.failure_mask({0: 1}, replicas=4, stages=4)
    trace = tmp / "trace.csv"
    trace.write_text("0,add,a\n0,add,b\n5400000,remove,a\n10800000,add,a\n")
    profile = pl.stage_profile(pl.model_preset("gpt3-175b"), pl.gpu_preset(list(pl.GPUS)[0]), stages=4)
    return [
        ("Scenario", sc),
        ("Scenario with a taxonomy", Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h",
                                              work="14d", taxonomy=taxonomy)),
        ("Scenario grid", Scenario(n_gpus=[8 * k for k in range(1, 1001)], failure_rate=6.5e-3,
                                   checkpoint_interval=[k / 60 for k in range(1, 301)], work="14d")),
        ("CheckpointLevel", CheckpointLevel(interval="10min", cost="5s", restart="3min", survives=0.85)),
        ("Weibull", rm.Weibull(shape=0.7, rate=6.5e-3)),
        ("TaxonomyMixture", rm.TaxonomyMixture.from_taxonomy(taxonomy, 6.5e-3)),
        ("Taxonomy", taxonomy),
        ("SyntheticLog", synthetic_log(20_000, failure_rate=6.5e-3, seed=1)),
        ("JobLog", rm.read_log(log_path)),
        ("FitResult", rm.fit(rm.read_log(log_path))),
        ("Plan", rm.plan(sc, n_jobs=200)),
        ("RunRecord", rm.simulate_run(Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h",
                                               checkpoint_cost="5min", restart_cost="10min", work="3d"), seed=1)[0]),
        ("Workload", workload),
        ("Job", workload.jobs[0]),
        ("ClusterConfig", config),
        ("Allocation", el.allocate(workload.jobs[:8], n_gpus=64, policy="elastic")),
        ("PolicyRun", el.run_policy(workload.jobs[:20], "elastic", config)),
        ("ParametricThroughput", el.FITTED_MODELS["bert"]),
        ("RooflineThroughput", el.roofline_model("bert")),
        ("PipelineConfig", cfg),
        ("StageProfile", profile),
        ("ModelSpec", profile.model),
        ("GPUSpec", profile.gpu),
        ("StrategyOptions", pl.StrategyOptions(spares=3)),
        ("StrategyResult", pl.evaluate(cfg, "recycle", {0: 1})),
        ("AdaptedPlan", pl.recycle_plan(cfg, mask, method="heuristic")),
        ("Schedule", pl.recycle_schedule(cfg, mask, method="heuristic")),
        ("RunModel", pl.RunModel(duration="3d", repair_time="2h")),
        ("Trace", pl.read_node_trace(trace)),
    ]


@pytest.fixture(scope="module")
def public_objects(tmp_path_factory):
    return _public_objects(tmp_path_factory.mktemp("objects"))


def test_every_public_object_prints_short_with_a_notebook_table(public_objects):
    for label, obj in public_objects:
        text = repr(obj)
        assert len(text) <= SHORT, (label, text)
        assert "\n" not in text and "array(" not in text, (label, text)
        if label != "CheckpointLevel":  # one line of four fields: its repr is its table
            html = obj._repr_html_()
            assert html.startswith("<table>") and "</table>" in html, label


def test_durations_show_as_typed_in_every_repr(public_objects):
    objects = dict(public_objects)
    assert "checkpoint_cost='5min'" in repr(objects["Scenario"])
    assert "duration='3d', repair_time='2h'" in repr(objects["RunModel"])
    assert "checkpoint_cost='2min'" in repr(objects["ClusterConfig"]) and "max_wait='3h'" in repr(
        objects["ClusterConfig"])
    assert re.match(r"Workload\([\d,]+ jobs submitted over 23\.\d\dh, attrs=\{", repr(objects["Workload"]))
    assert re.match(r"RunRecord\(\d+ events: \d+ attempts, \d+ failures over 3\.\d+d, 1,024 GPUs",
                    repr(objects["RunRecord"]))


def test_a_long_repr_elides_its_last_fields():
    cfg = rm.pipeline.PipelineConfig(stages=64, replicas=2, microbatches=128, bwd_input=2.0,
                                     fwd=tuple(1.0 + k / 7 for k in range(64)))
    assert "fwd=<64 values, 1.0..10.0>, bwd_input=<64 values, all 2.0>" in repr(cfg)
    assert repr(rm.pipeline.RunModel()) == "RunModel()"  # every field at its default, though kept in hours
    wide = dataclasses.make_dataclass("Wide", [(f"field_{k}", float) for k in range(40)])
    wide = readable("field_0")(wide)
    text = repr(wide(*(k / 3 for k in range(1, 41))))
    assert len(text) <= SHORT and text.startswith("Wide(field_0='20min', field_1=0.666667, ") and text.endswith(
        ", ...)"), text
    assert "<th>field_39</th>" in wide(*range(40))._repr_html_()  # the table shows every field


def test_a_job_logs_repr_counts_its_jobs(tmp_path):
    path = tmp_path / "jobs.sacct"
    synthetic_log(5_000, failure_rate=6.5e-3, seed=1, path=path, format="sacct")
    log = rm.read_log(path)
    assert len(repr(log)) <= SHORT and repr(log).startswith(f"JobLog({len(log):,} jobs from ")
