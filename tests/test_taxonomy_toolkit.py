"""A failure taxonomy carried through the toolkit: simulate and plan on the
command line, the planner's breakdown by kind, and studies on disk."""

import json
from importlib.resources import files

import numpy as np
import pytest
from click.testing import CliRunner

import relmodel as rm
from relmodel import _taxonomy as taxonomy
from relmodel._cli import main
from relmodel._study import StudyError, load_study, parse_study
from relmodel._sweep import run_study

RUN = dict(n_gpus=4096, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min", work="7d")


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_a_preset_name_is_a_taxonomy():
    sc = rm.Scenario(**RUN, taxonomy="meta-2024")
    tax = taxonomy.load("meta-2024")
    assert sc.category_names == tuple(c.name for c in tax.categories)
    assert sc.restart_cost == pytest.approx(sum(c.share * c.restart_cost for c in tax.categories))


def test_simulate_takes_a_taxonomy_on_the_command_line():
    result = invoke("simulate", "--gpus", "4096", "--taxonomy", "meta-2024", "--n-jobs", "3000", "--json")
    assert result.exit_code == 0, result.output
    row = json.loads(result.output)["rows"][0]
    sc = rm.Scenario(**{**RUN, "checkpoint_interval": 1.0}, taxonomy="meta-2024")
    assert row["ettr_renewal"] == pytest.approx(rm.ettr(sc))


@pytest.mark.parametrize("args, message", [
    (["--taxonomy", "no-such-preset"], "Error: --taxonomy: unknown taxonomy"),
    (["--taxonomy", "meta-2024", "--restart-cost", "1h"], "Error: --restart-cost: the taxonomy sets it"),
])
def test_bad_taxonomy_input_is_one_line_naming_the_flag(args, message):
    result = invoke("simulate", "--gpus", "64", *args)
    assert result.exit_code == 2 and result.output.startswith(message), result.output


LEVELS = ("--checkpoint-persist", "5min", "--fast-checkpoint",
          "interval=10min,cost=5s,restart=3min,persist=30s,survives=0.85")


@pytest.mark.parametrize("levels", [(), LEVELS], ids=["blocking", "multilevel"])
def test_plan_breaks_time_lost_down_by_kind(levels):
    result = invoke("plan", "--gpus", "4096", "--work", "7d", "--taxonomy", "meta-2024", "--n-jobs", "2000",
                    *levels, "--json")
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    kinds = plan["by_category"]
    assert set(kinds) == set(rm.Scenario(**RUN, taxonomy="meta-2024").category_names)
    t = plan["time_per_job_h"]
    for key, component in (("lost_h", "lost"), ("restart_h", "restart"), ("queue_h", "queue")):
        assert sum(k[key] for k in kinds.values()) == pytest.approx(t[component], rel=1e-9)
    assert plan.get("strategy") == ("multilevel" if levels else None)
    assert "Time lost per job by kind of failure" in invoke(
        "plan", "--gpus", "4096", "--work", "7d", "--taxonomy", "meta-2024", "--n-jobs", "2000", *levels).output


STUDY = """
[fixed]
failure_rate = 6.5e-3
checkpoint_cost = "5min"
work = "7d"
taxonomy = "{taxonomy}"
[sweep]
n_gpus = [1024, 4096]
checkpoint_interval = ["30min", "1h"]
[run]
n_jobs = 3000
seed = 2
chunk_points = 1
"""


def test_a_study_with_a_taxonomy_stores_the_breakdown_and_equals_simulate(tmp_path):
    study = parse_study(STUDY.format(taxonomy="meta-2024"))
    run_study(study, tmp_path / "s.zarr", progress=False)
    stored = rm.open_study(tmp_path / "s.zarr")
    direct = rm.simulate(study.scenario, n_jobs=3000, seed=2)
    for name in ("ettr", "lost_by_category", "unproductive_by_category"):
        np.testing.assert_array_equal(stored[name].values, direct[name].values)
    assert list(stored.category.values) == list(study.scenario.category_names)
    assert np.all(np.abs(rm.compare(stored).z_renewal) < 4)


def test_another_taxonomy_is_another_study(tmp_path):
    run_study(parse_study(STUDY.format(taxonomy="meta-2024")), tmp_path / "s.zarr", progress=False)
    with pytest.raises(StudyError, match="holds another study"):
        run_study(parse_study(STUDY.format(taxonomy="slurm-default")), tmp_path / "s.zarr", progress=False)


def test_a_taxonomy_file_is_found_beside_the_study(tmp_path):
    preset = files("relmodel") / "data" / "taxonomy" / "meta-2024.toml"
    (tmp_path / "mine.toml").write_text(preset.read_text())
    (tmp_path / "study.toml").write_text(STUDY.format(taxonomy="mine.toml"))
    assert load_study(tmp_path / "study.toml").scenario.category_names == rm.Scenario(
        **RUN, taxonomy="meta-2024").category_names
    with pytest.raises(ValueError, match="taxonomy belongs in"):
        parse_study(STUDY.format(taxonomy="meta-2024").replace('taxonomy = "meta-2024"\n', "").replace(
            "[sweep]\n", '[sweep]\ntaxonomy = ["meta-2024"]\n'))
