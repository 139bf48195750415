"""compare(), the planner, its figures and `relmodel plan`."""

import dataclasses
import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import relmodel as rm
from relmodel._cli import main
from relmodel._engine import COMPONENTS
from relmodel._plan import best_ettr
from relmodel.testing.strategies import scenarios

RUN = dict(n_gpus=16384, failure_rate=6.5e-3, checkpoint_cost="5min", restart_cost="10min", work="14d")


def test_compare_puts_closed_forms_beside_the_simulation():
    grid = rm.Scenario(**{**RUN, "n_gpus": [1024, 16384]}, checkpoint_interval=["30min", "2h"],
                       weibull_shape=[1.0, 0.7])
    ds = rm.compare(grid, n_jobs=20_000, seed=3)
    exp = ds.sel(weibull_shape=1.0)
    assert np.all(np.abs(exp.z_renewal) < 4)
    assert bool(exp.renewal_exact.all()) and not bool(ds.renewal_exact.sel(weibull_shape=0.7).any())
    assert np.all(np.isnan(ds.ettr_renewal.sel(weibull_shape=0.7)))
    # The linear form is measured against the simulation where the renewal form does not apply.
    weib = ds.sel(weibull_shape=0.7)
    np.testing.assert_allclose(weib.linear_rel_error, (weib.ettr_linear - weib.ettr_sim) / weib.ettr_sim)
    assert "units" in ds.ettr_sim.attrs and ds.attrs["seed"] == 3


@pytest.fixture(scope="module")
def the_plan():
    return rm.plan(**RUN, checkpoint_interval="1h", target_ettr=0.8, n_jobs=5000)


def test_plan_recommends_the_exact_optimum(the_plan):
    p = the_plan
    assert p.mttf_h == pytest.approx(24 / (2048 * 6.5e-3))
    assert set(p.intervals_h) == {"young", "daly", "exact", "current"}
    assert p.ettr == max(e.renewal for e in p.ettr_by_interval.values())
    for e in p.ettr_by_interval.values():
        lo, hi = e.simulated_ci95
        assert lo < e.simulated < hi and abs(e.simulated - e.renewal) < 4 * e.simulated_se
    t = p.time_per_job_h
    parts = ("productive", "checkpoint", "lost", "restart", "queue")
    assert sum(getattr(t, c) for c in parts) == pytest.approx(t.wall)


def test_plan_parts_are_typed_records_that_write_the_plans_json(the_plan):
    p = the_plan
    out = json.loads(json.dumps(p.to_dict()))
    parts = {"time_per_job_h": p.time_per_job_h, "target": p.target,
             **{f"ettr_by_interval.{k}": v for k, v in p.ettr_by_interval.items()},
             **{f"sensitivity.{k}": v for k, v in p.sensitivity.items()}}
    for path, part in parts.items():
        section, _, key = path.partition(".")
        written = out[section][key] if key else out[section]
        assert list(written) == [f.name for f in dataclasses.fields(part)], path
        assert written == json.loads(json.dumps(part.to_dict())), path
    # Every component of the simulated wall, in the estimates' order, then the wall.
    assert [f.name for f in dataclasses.fields(rm.TimePerJob)] == [*COMPONENTS, "wall"]


def test_a_plan_part_read_by_key_warns_and_gives_the_field(the_plan):
    row = the_plan.ettr_by_interval["exact"]
    with pytest.warns(DeprecationWarning, match=r"IntervalETTR\['renewal'\] is deprecated.*read \.renewal"):
        assert row["renewal"] == row.renewal
    with pytest.warns(DeprecationWarning, match="max_gpus"):
        assert the_plan.target["max_gpus"] == the_plan.target.max_gpus
    with pytest.raises(KeyError, match="no_such_field"):
        row["no_such_field"]


def test_plan_targets_are_the_values_that_reach_the_target(the_plan):
    target = the_plan.target
    sc = the_plan.scenario
    for name, needed in target.needed.items():
        if needed is None:
            assert target.best_possible[name] < 0.8
        else:
            assert best_ettr(sc.sweep(**{name: needed})) == pytest.approx(0.8, abs=1e-6)
    assert target.needed["restart_cost"] is None  # 10 min restarts are not what holds this run back
    g = target.max_gpus
    assert best_ettr(sc.sweep(n_gpus=g)) >= 0.8 > best_ettr(sc.sweep(n_gpus=g + sc.gpus_per_node))


def test_plan_sensitivities(the_plan):
    s = the_plan.sensitivity
    assert all(s[k].elasticity < 0 for k in ("failure_rate", "restart_cost", "checkpoint_cost"))
    assert s["queue_wait"].elasticity == 0
    assert all(s[k].ettr_if_halved > the_plan.ettr for k in ("failure_rate", "restart_cost", "checkpoint_cost"))


@settings(max_examples=10)
@given(gpus=st.integers(8, 65536), x=st.floats(0.3, 0.97))
def test_max_gpus_bracket_the_target(gpus, x):
    sc = rm.Scenario(**{**RUN, "n_gpus": gpus}, checkpoint_interval=1)
    g = rm.plan(sc, target_ettr=x, n_jobs=200).target.max_gpus
    if g is None:
        assert best_ettr(sc.sweep(n_gpus=8)) < x
    else:
        assert best_ettr(sc.sweep(n_gpus=g)) >= x > best_ettr(sc.sweep(n_gpus=g + 8))


@pytest.mark.parametrize("kwargs, match", [
    (dict(target_ettr=1.2), "target_ettr"), (dict(weibull_shape=0.5), "weibull_shape"),
    (dict(n_gpus=[8, 16]), "grid"),
])
def test_plan_rejects_what_it_cannot_plan(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rm.plan(**{**RUN, **kwargs})


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_cli_plan_json_and_plot(tmp_path):
    png = tmp_path / "plan.png"
    result = invoke("plan", "--gpus", "16384", "--work", "14d", "--target-ettr", "0.8", "--n-jobs", "2000",
                    "--json", "--plot", str(png))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)  # notes and bars, where shown, go to stderr
    assert {"mttf_h", "optimal_interval_h", "ettr", "units"} <= set(out)
    assert out["mttf_h"] == pytest.approx(1.8028846, rel=1e-6) and 0 < out["ettr"] < 1
    assert out["units"]["mttf_h"] == "h" and out["units"]["ettr"] == "1"
    assert out["units"]["scenario.failure_rate"] == "failures per node-day"
    assert png.stat().st_size > 10_000


def test_cli_plan_table_names_every_section():
    result = invoke("plan", "--gpus", "1024", "--n-jobs", "1000", "--target-ettr", "0.95")
    assert result.exit_code == 0, result.output
    for text in ("MTTF", "exact *", "re-done work", "Sensitivity", "To reach ETTR 0.95", "largest job"):
        assert text in result.output


@pytest.mark.parametrize("args, flag", [
    ([], "--gpus"), (["--gpus", "8", "--restart-cost", "-1"], "--restart-cost"),
    (["--gpus", "8", "--checkpoint-cost", "5 minutes later"], "--checkpoint-cost"),
    (["--gpus", "8", "--failure-rate", "inf"], "--failure-rate"),
    (["--gpus", "8", "--target-ettr", "1"], "--target-ettr"), (["--gpus", "8,16"], "--gpus"),
    (["--gpus", "8", "--weibull-shape", "2"], "--weibull-shape"), (["--gpus", "8", "--work", "0"], "--work"),
])
def test_cli_plan_bad_input_is_one_line_naming_the_flag(args, flag):
    result = invoke("plan", *args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and flag in lines[0]


def test_plan_at_extreme_scale_caps_no_legitimate_failure():
    # 131,072 GPUs for 30 days: ~18,000 failures a job at the best interval, past a cap of
    # 10,000 (under which the table would show 16 of 30 days productive). The breakdown adds up
    # to the wall time and its productive part is the work.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", rm.CappedJobsWarning)
        p = rm.plan(n_gpus=131_072, failure_rate=6.5e-3, checkpoint_cost="5min", restart_cost="10min",
                    work="30d", checkpoint_interval="1h", n_jobs=2000)
    t = p.time_per_job_h
    assert t.productive == pytest.approx(720.0, rel=1e-12)
    parts = ("productive", "checkpoint", "lost", "restart", "queue")
    assert sum(getattr(t, c) for c in parts) == pytest.approx(t.wall, rel=1e-12)
    for label, e in p.ettr_by_interval.items():
        assert e.simulated_jobs > 0, label
        assert abs(e.simulated - e.renewal) < 4 * e.simulated_se, label
        assert e.expected_failures > 10_000 and not e.linear_valid
    assert p.ettr_by_interval["current"].simulated_jobs < 2000  # within the event budget
    assert "do not use it" in str(p)


def test_a_hopeless_plan_is_not_simulated_and_says_why():
    p = rm.plan(n_gpus=500_000, failure_rate=6.5e-3, checkpoint_cost="5min", restart_cost="10min", work="30d")
    assert p.time_per_job_h is None
    e = p.ettr_by_interval["exact"]
    assert e.simulated_jobs == 0 and np.isnan(e.simulated) and e.expected_failures > 1e6
    assert 0 < p.ettr < 0.01
    assert "not simulated" in str(p)
    json.dumps(p.to_dict())  # NaN and None are still JSON-ready through the CLI's cleaner


def test_expected_failures_bound_is_the_simulated_mean():
    from relmodel._plan import expected_failures_bound

    sc = rm.Scenario(**RUN, checkpoint_interval="1h")
    mean, highest = expected_failures_bound(sc)
    assert mean == highest
    ds = rm.simulate(sc, n_jobs=20_000, seed=5)
    assert abs(float(ds.failures_mean) - mean) < 4 * float(ds.failures_se)


def test_compare_flags_the_linear_form_wherever_it_strays():
    # 1 h of work: an interval past the work or a long restart puts the linear form far off
    # with a positive numerator; the flag follows the distance, not only the sign.
    grid = rm.Scenario(n_gpus=4096, failure_rate=6.5e-3, checkpoint_cost="5min", work=["1h", "14d"],
                       checkpoint_interval=["30min", "10h"], restart_cost="10min")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rm.ClosedFormWarning)
        ds = rm.compare(grid, n_jobs=2000, seed=1)
        renewal = rm.ettr(grid, "renewal")
    off = np.abs(ds.ettr_linear / renewal - 1)
    np.testing.assert_array_equal(ds.linear_valid, off <= 0.02)
    assert not bool(ds.linear_valid.sel(work=1.0, checkpoint_interval=10.0))
    assert np.isfinite(ds.ettr_linear.sel(work=1.0, checkpoint_interval=10.0))


def test_plan_says_why_a_simulated_interval_has_no_spread_and_where_intervals_mean_no_checkpoint():
    """Not a bare "1.0000 [1.0000, 1.0000]" beside the exact 0.9942, nor Young's 2.19 h for a 1 s
    job, with no word: the table says why."""
    out = CliRunner().invoke(main, ["plan", "--gpus", "1024", "--work", "1s", "--checkpoint-cost", "5min",
                                    "--restart-cost", "10min", "--n-jobs", "2000"]).output
    assert "]~," in out and "no simulated job failed" in out
    assert "past the work writes no checkpoint" in out
    free = CliRunner().invoke(main, ["plan", "--gpus", "1024", "--work", "7d", "--checkpoint-cost", "0",
                                     "--restart-cost", "10min", "--n-jobs", "2000"]).output
    assert "checkpoints cost nothing" in free and "no simulated job failed" not in free


@pytest.mark.parametrize("fast, strategy", [(True, None), (False, None), (True, "blocking")])
def test_a_plan_with_strategies_simulates_each_point_once(monkeypatch, fast, strategy):
    # The strategies' check simulations are the plan's own: the chosen one (levelled or blocking) is not
    # simulated a second time, and its check is the same budgeted run as its column in the comparison.
    import importlib

    plan_module = importlib.import_module("relmodel._plan")  # (rm.plan is the function)
    calls = []
    real = plan_module.simulate

    def counted(sc, **kwargs):
        calls.append(sc)
        return real(sc, **kwargs)

    monkeypatch.setattr(plan_module, "simulate", counted)
    level = rm.CheckpointLevel(interval="10min", cost="5s", restart="3min", persist="30s", survives=0.85)
    sc = rm.Scenario(n_gpus=16384, failure_rate=3.8e-3, work="7d", checkpoint_interval="1h", checkpoint_cost="30s",
                     checkpoint_persist="5min", restart_cost="10min", fast_checkpoints=(level,) if fast else None)
    p = rm.plan(sc, n_jobs=2000, strategy=strategy)
    assert len(calls) == len(set(calls))
    chosen = next(s for s in p.checkpoints.strategies if s.name == p.strategy)
    assert chosen.simulated == p.ettr_by_interval["exact" if p.strategy == "blocking" else "best"].simulated


@settings(max_examples=25, deadline=None)
@given(sc=scenarios(extreme=True, float_limits=True, laws=("exponential",)), x=st.floats(0.001, 0.999))
def test_targets_are_found_across_the_whole_float_range(sc, x):
    """A restart of 1e308 h needing 9.8 days ended in `RuntimeError: Failed to converge` (exit 70):
    the root finder was given all 308 decades at once. (Exponential failures here: lemon nodes make each
    exact ETTR a binomial over the nodes, seconds at a million GPUs; the pinned case below has them.)"""
    from relmodel._plan import _targets

    reach = _targets(sc, x)
    for name, needed in reach.needed.items():
        now = getattr(sc, name)
        if needed is None:
            assert reach.best_possible[name] < x
        elif needed == now:
            assert best_ettr(sc) >= x
        elif needed > 0:
            assert best_ettr(sc.sweep(**{name: needed})) >= x * (1 - 1e-6), (name, needed)
            assert best_ettr(sc.sweep(**{name: min(now, needed * 1.01)})) <= x * (1 + 1e-6), (name, needed)


def test_a_restart_of_1e308_hours_has_its_target_named():
    sc = rm.Scenario(n_gpus=1, gpus_per_node=16, failure_rate=0.256, lemon_fraction=0.5, lemon_rate_factor=10,
                     work="1s", checkpoint_interval="261h", checkpoint_cost=1e-300, restart_cost=1e308)
    from relmodel._plan import _targets

    needed = _targets(sc, 0.021).needed
    assert best_ettr(sc.sweep(restart_cost=needed["restart_cost"])) == pytest.approx(0.021, rel=1e-6)
    assert 0 < needed["failure_rate"] < 1e-300
