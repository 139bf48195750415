"""Throughput over a run: failure paths, trace replay, the integrator, and the Datasets."""

import math
from pathlib import Path

import numpy as np
import pytest

import relmodel.pipeline as pl
from relmodel.pipeline import _schedule_kernel as kernel
from relmodel.pipeline import _runs as runs
from relmodel.pipeline._runs import LOSS_CHECKPOINT, LOSS_NONE, LOSS_STEP

TRACES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "spot-traces"
needs_traces = pytest.mark.skipif(
    not (TRACES / "p3-trace.csv").exists(),
    reason=f"spot traces not found under {TRACES} (../shared/data is not in this checkout)")
SMALL = pl.PipelineConfig(2, 2, 4)


def test_event_kinds_match_the_kernel():
    assert (runs.FAIL, runs.RESTORE) == (kernel.FAIL, kernel.RESTORE)


# -- traces -------------------------------------------------------------------------------


@needs_traces
def test_spot_traces_parse():
    p3, g4dn = pl.read_node_trace(TRACES / "p3-trace.csv"), pl.read_node_trace(TRACES / "g4dn-trace.csv")
    assert (p3.time.size, g4dn.time.size) == (344, 153)
    assert p3.duration == pytest.approx(11.37, abs=0.05) and g4dn.duration == pytest.approx(10.6, abs=0.3)
    assert (p3.nodes_present().max(), g4dn.nodes_present().max()) == (32, 24)
    assert p3.time[0] == 0 and np.all(np.diff(p3.time) >= 0)
    for name, lo, hi in (("a100x1-east1b.txt", 17, 64), ("v100x1-east1c.txt", 30, 80)):
        series = pl.read_node_trace(TRACES / name)
        present = series.nodes_present()
        assert present.max() == hi and present[series.time > 0].min() <= lo + 1


@pytest.mark.parametrize("text, where", [
    ("0,add,node1\n1000,launch,node2\n", ":2: action"), ("0,add,node1\nsoon,add,node2\n", ":2: time"),
    ("0,add\n", ":1: expected"), ("5,add,node1\n4,add,node2\n", ":2: time 4 ms goes back"),
    ("0,add,\n", ":1: the node name"), ("", "empty"), ("2021-12-10, 13:07:45, many\n", ":1: count"),
    ("2021-13-10, 13:07:45, 4\n", ":1: expected"), ("-5,add,node1\n", ":1: time must be"),
])
def test_malformed_traces_name_the_line(tmp_path, text, where):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(pl.NodeTraceError, match=f"bad.csv{where}" if where.startswith(":") else where):
        pl.read_node_trace(path)


def test_a_trace_that_is_not_utf8_names_its_line_and_one_with_a_byte_order_mark_reads(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"0,add,node1\n5,add,n\xe9ud2\n")
    with pytest.raises(pl.NodeTraceError, match="bad.csv: line 2: not UTF-8 text \\(byte 0xe9\\)"):
        pl.read_node_trace(path)
    path.write_bytes(b"\xef\xbb\xbf0,add,node1\n5,add,node2\n")
    assert pl.read_node_trace(path).n_nodes == 2


def test_count_series_become_node_events(tmp_path):
    path = tmp_path / "counts.txt"
    path.write_text("2021-12-10, 13:00:00, 3\n2021-12-10, 13:30:00, 1\n2021-12-10, 14:00:00, 2\n")
    trace = pl.read_node_trace(path)
    assert trace.nodes_present().tolist() == [1, 2, 3, 2, 1, 2]
    assert trace.time.tolist() == [0, 0, 0, 0.5, 0.5, 1.0]


# -- the integrator, exactly ----------------------------------------------------------------


def integrate(times, rates, loss, dead, resume, horizon, checkpoint=1.0):
    """One run: rows = start + one per event."""
    n = len(times)
    progress = np.empty(1)
    kernel.integrate_runs(np.array([times + [0.0]]), np.array([n]), np.array([0]), horizon, np.array(rates, float),
                          np.array(loss), np.array(dead, float), np.array(resume, float), checkpoint, progress)
    return progress[0]


def test_integrator_losses_dead_time_and_restarts():
    rate = 100.0  # steps per hour
    # Degraded at 2.505 h (step in flight lost), 30 s dead, back at 3 h: 250 + 49.5 * 0.5 ... exactly:
    got = integrate([2.505, 3.0], [rate, rate / 2, rate], [LOSS_NONE, LOSS_STEP, LOSS_NONE], [0, 30 / 3600, 0],
                    [0, 0, 0], 4.0)
    assert got == pytest.approx(math.floor(250.5) + (3.0 - 2.505 - 30 / 3600) * rate / 2 + rate)
    # A checkpoint-restart: back to the 2 h checkpoint, stalled to 3 h, then 10 min of restart.
    got = integrate([2.5, 3.0], [rate, 0.0, rate], [LOSS_NONE, LOSS_CHECKPOINT, LOSS_NONE], [0, 0, 0],
                    [0, 0, 1 / 6], 4.0)
    assert got == pytest.approx(200 + (1 - 1 / 6) * rate)
    # No failure: ideal progress, and no checkpoint interval leaves nothing to roll back to.
    assert integrate([], [rate], [0], [0], [0], 7.0) == pytest.approx(700)
    assert integrate([1.5], [rate, 0.0], [0, LOSS_CHECKPOINT], [0, 0], [0, 0], 7.0, checkpoint=math.inf) == 0.0


def test_strategy_costs_on_a_hand_made_path():
    """Slot 0 fails at 1.25 h and is back 5 min later; 3 h runs, checkpoints hourly."""
    model = pl.RunModel(checkpoint_interval="1h", restart_cost="10min", detection_time="30s", reconfig_time="1min",
                        time_unit="1s")
    t, back = 1.25, 1.25 + 5 / 60
    time = np.array([[t, back]])
    slot, kind = np.array([[0, 0]]), np.array([[runs.FAIL, runs.RESTORE]])
    paths = runs._finish(time, slot, kind, np.array([2]), 3.0, np.zeros((1, 4), dtype=np.bool_))
    period_h = pl.fault_free(SMALL).period / 3600  # 15 s a step
    steps = 3.0 / period_h
    got = {s: runs.run_progress(SMALL, s, pl.StrategyOptions(), model, paths)[0] / steps for s in pl.RECOVERY_STRATEGIES}
    assert got["restart"] == pytest.approx(1 - (0.25 + 5 / 60 + 1 / 6) / 3, abs=1e-3)
    assert got["spare"] == pytest.approx(1 - (5 / 60) / 3, abs=1e-3)
    degraded = pl.evaluate(SMALL, "recycle", [(0, 0)]).fraction_of_ideal
    assert got["recycle"] == pytest.approx(1 - (1 - degraded) * (5 / 60 - 30 / 3600) / 3 - (30 / 3600) / 3, abs=1e-3)
    # Bamboo: takeover (detection only) while slot 0 is down.
    bamboo0 = pl.evaluate(SMALL, "bamboo").period
    bamboo1 = pl.evaluate(SMALL, "bamboo", [(0, 0)]).period
    ff = pl.fault_free(SMALL).period
    expect = (3 - 5 / 60) * ff / bamboo0 + (5 / 60 - 30 / 3600) * ff / bamboo1
    assert got["bamboo"] == pytest.approx(expect / 3, abs=1e-3)


# -- Monte Carlo paths ------------------------------------------------------------------------


def test_no_failures_gives_exactly_the_steady_state():
    ds = pl.simulate_runs(SMALL, pl.RunModel(failure_rate=0.0, duration="1d"), n_runs=5, seed=3)
    fraction = ds.fraction_of_ideal.to_series()
    assert (fraction.drop("bamboo") == 1.0).all()
    assert fraction["bamboo"] == pytest.approx(pl.fault_free(SMALL).period / pl.evaluate(SMALL, "bamboo").period)
    assert float(ds.time_fraction.sel(n_failures=0)) == 1.0 and float(ds.failures_per_run) == 0.0
    np.testing.assert_allclose(ds.fraction_of_ideal_ci.sel(bound="low"), ds.fraction_of_ideal)


def test_same_seed_same_bits_and_keys_give_other_streams():
    model = pl.RunModel(failure_rate=2.0, duration="3d")
    a = pl.simulate_runs(SMALL, model, n_runs=30, seed=7)
    b = pl.simulate_runs(SMALL, model, n_runs=30, seed=7)
    c = pl.simulate_runs(SMALL, model, n_runs=30, seed=7, scenario_key=1)
    assert a.fraction_of_ideal.equals(b.fraction_of_ideal) and a.time_fraction.equals(b.time_fraction)
    assert not a.fraction_of_ideal.equals(c.fraction_of_ideal)
    paths = runs.monte_carlo_paths(SMALL, model, 2, 30, 7)
    first = runs.monte_carlo_paths(SMALL, model, 2, 10, 7)
    assert np.array_equal(paths.count[:10], first.count)  # run i draws from its own counter


def test_paths_obey_the_pool():
    """A slot comes back only swap_time after a node is free: at once from a spare, else after a repair."""
    model = pl.RunModel(failure_rate=20.0, duration="2d", repair_time="3h", swap_time="10min")
    for spares in (0, 1):
        paths = runs.monte_carlo_paths(SMALL, model, spares, 50, 1)
        assert np.all(paths.count >= 0)
        for r in range(50):
            downs = {}
            for t, w, k in zip(paths.time[r], paths.slot[r], paths.kind[r][:paths.count[r]]):
                if k == runs.FAIL:
                    downs[w] = t
                else:
                    assert t - downs.pop(w) >= 10 / 60 - 1e-9
        occupancy = paths.occupancy()
        assert occupancy.sum() == pytest.approx(1.0)
    assert runs.monte_carlo_paths(SMALL, model, 0, 50, 1).occupancy()[0] < occupancy[0]  # spares shorten outages


@pytest.mark.slow
def test_outage_share_and_failure_count_agree_with_the_rates():
    """Ample spares: each failure leaves its slot down swap_time; N lam H failures a run."""
    model = pl.RunModel(failure_rate=0.5, duration="30d", swap_time="1h", repair_time="1h")
    n_runs = 4000
    paths = runs.monte_carlo_paths(SMALL, model, 50, n_runs, 11)
    lam = SMALL.n_workers * model.worker_rate
    fails = paths.failures_per_run
    expected = lam * model.duration * (1 - lam * model.swap_time / SMALL.n_workers)  # a down slot cannot fail
    assert abs(fails.mean() - expected) < 4 * fails.std() / math.sqrt(n_runs)
    down = 1 - paths.occupancy()[0]
    assert down == pytest.approx(1 - math.exp(-lam * model.swap_time), rel=0.05)


@pytest.mark.slow
def test_restart_loses_what_a_first_order_model_says():
    """Per failure: the swap, the restart and on average half a checkpoint interval."""
    model = pl.RunModel(failure_rate=0.02, duration="60d", swap_time="5min", restart_cost="10min",
                        checkpoint_interval="1h", time_unit="1s")
    ds = pl.simulate_runs(SMALL, model, strategies=["restart"], options=pl.StrategyOptions(spares=8), n_runs=2000,
                          seed=5)
    lam = SMALL.n_workers * model.worker_rate
    expected = 1 - lam * (model.swap_time + model.restart_cost + model.checkpoint_interval / 2)
    low, high = ds.fraction_of_ideal_ci.sel(strategy="restart").values
    half = (high - low) / 2
    assert abs(float(ds.fraction_of_ideal.sel(strategy="restart")) - expected) < 2 * half + 2e-4


def test_run_dataset_is_labelled():
    ds = pl.simulate_runs(SMALL, pl.RunModel(failure_rate=3.0, duration="2d"), n_runs=20, seed=0)
    assert set(ds.dims) == {"strategy", "n_failures", "bound"} and all(d in ds.coords for d in ds.dims)
    for name, var in ds.data_vars.items():
        assert "long_name" in var.attrs and "units" in var.attrs, name
    assert ds.attrs["relmodel_version"] and ds.attrs["seed"] == 0 and "Philox" in ds.attrs["rng"]
    assert float(ds.time_fraction.sum()) == pytest.approx(1.0)
    low, high = ds.fraction_of_ideal_ci.sel(bound="low"), ds.fraction_of_ideal_ci.sel(bound="high")
    assert bool(((low <= ds.fraction_of_ideal) & (ds.fraction_of_ideal <= high)).all())
    assert float(ds.fraction_of_ideal.sel(strategy="recycle")) >= float(ds.fraction_of_ideal.sel(strategy="restart"))


@pytest.mark.parametrize("kwargs, parameter", [
    (dict(duration="0h"), "duration"), (dict(failure_rate=-1.0), "failure_rate"),
    (dict(repair_time="soon"), "repair_time"), (dict(repair_distribution="weibull"), "repair_distribution"),
    (dict(lemon_fraction=2.0), "lemon_fraction"), (dict(time_unit="0ms"), "time_unit"),
])
def test_run_model_errors_name_the_parameter(kwargs, parameter):
    with pytest.raises(ValueError, match=f"^{parameter}:"):
        pl.RunModel(**kwargs)


def test_lemons_and_exponential_repairs_run():
    model = pl.RunModel(failure_rate=1.0, duration="5d", lemon_fraction=0.25, lemon_rate_factor=8.0,
                        repair_distribution="exponential")
    ds = pl.simulate_runs(SMALL, model, n_runs=50, seed=2, strategies=["recycle", "drop-pipeline"])
    assert 0 < float(ds.fraction_of_ideal.sel(strategy="drop-pipeline")) < 1


# -- trace replay --------------------------------------------------------------------------------


def test_replay_of_a_synthetic_trace(tmp_path):
    """Four nodes; one leaves at 1 h and a fifth arrives at 2 h: spare and restart stall until it is in."""
    path = tmp_path / "mini.csv"
    lines = [f"0,add,node{i}" for i in range(4)] + ["3600000,remove,node2", "7200000,add,node9",
                                                    "14400000,add,node8"]
    path.write_text("\n".join(lines) + "\n")
    model = pl.RunModel(swap_time="5min", restart_cost="10min", checkpoint_interval="1h", time_unit="1s")
    ds = pl.replay_traces(SMALL, {"mini": path}, model, n_runs=3, seed=0)
    frac = ds.fraction_of_ideal.sel(trace="mini")
    stalled = 1 + 5 / 60  # from 1 h until the swap at 2 h + 5 min
    assert float(frac.sel(strategy="spare")) == pytest.approx(1 - stalled / 4, abs=2e-3)
    assert float(frac.sel(strategy="restart")) == pytest.approx(1 - (stalled + 1 / 6) / 4, abs=2e-3)
    assert float(ds.duration.sel(trace="mini")) == 4.0 and int(ds.max_nodes.sel(trace="mini")) == 5
    assert float(frac.sel(strategy="recycle")) > float(frac.sel(strategy="spare"))


@needs_traces
def test_replay_of_the_spot_traces():
    cfg = pl.PipelineConfig(2, 4, 4)
    ds = pl.replay_traces(cfg, [TRACES / "p3-trace.csv", TRACES / "g4dn-trace.csv"], n_runs=2, seed=0,
                          strategies=["recycle", "spare", "drop-pipeline"])
    assert list(ds.trace.values) == ["p3-trace", "g4dn-trace"]
    assert ds.fraction_of_ideal.dims == ("strategy", "trace")
    frac = ds.fraction_of_ideal
    assert bool((frac >= 0).all() and (frac <= 1).all())
    assert bool((frac.sel(strategy="recycle") >= frac.sel(strategy="drop-pipeline")).all())
    assert float(ds.time_fraction.sel(trace="g4dn-trace").sum()) == pytest.approx(1.0)


def test_run_model_from_a_timeline_scenario():
    import relmodel as rm

    scenario = rm.Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="30min", work="10d",
                           restart_cost="10min", queue_wait="5min", lemon_fraction=0.1, lemon_rate_factor=3.0)
    model = pl.RunModel.from_scenario(scenario, duration="7d", repair_time="2h")
    assert (model.failure_rate, model.checkpoint_interval, model.restart_cost) == (6.5e-3, 0.5, 0.25)
    assert (model.lemon_fraction, model.lemon_rate_factor, model.duration, model.repair_time) == (0.1, 3.0, 168, 2)
    with pytest.raises(pl.PipelineError, match="weibull_shape"):
        pl.RunModel.from_scenario(rm.Scenario(n_gpus=8, failure_rate=1e-3, checkpoint_interval=1, work=2,
                                              weibull_shape=0.7))


def test_restart_and_spare_stall_at_least_for_detection():
    """With detection slower than the swap, the stall is the detection time."""
    model = pl.RunModel(checkpoint_interval="1h", restart_cost="10min", detection_time="20min", swap_time="5min",
                        time_unit="1s")
    t, back = 1.25, 1.25 + 5 / 60
    paths = runs._finish(np.array([[t, back]]), np.array([[0, 0]]), np.array([[runs.FAIL, runs.RESTORE]]),
                         np.array([2]), 3.0, np.zeros((1, 4), dtype=np.bool_))
    steps = 3.0 / (pl.fault_free(SMALL).period / 3600)
    got = {s: runs.run_progress(SMALL, s, pl.StrategyOptions(), model, paths)[0] / steps for s in ("restart", "spare")}
    assert got["restart"] == pytest.approx(1 - (0.25 + 20 / 60 + 1 / 6) / 3, abs=1e-3)
    assert got["spare"] == pytest.approx(1 - (20 / 60) / 3, abs=1e-3)


def test_monte_carlo_too_large_is_refused_before_allocating():
    cfg = pl.PipelineConfig(8, 8, 16)
    with pytest.raises(pl.PipelineError, match="^duration: .*array entries") as info:
        runs.monte_carlo_paths(cfg, runs.RunModel(duration=1000, failure_rate=1000), 2, 1000, 0)
    assert info.value.parameter == "duration"


def test_cli_monte_carlo_too_large_names_the_flags():
    from click.testing import CliRunner

    from relmodel._cli import main

    result = CliRunner().invoke(main, ["pipeline", "--stages", "2", "--replicas", "2", "--microbatches", "2",
                                       "--run-duration", "1000h", "--failure-rate", "1000"])
    assert result.exit_code == 2
    assert "Error: --run-duration:" in result.output and "--failure-rate" in result.output


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_runs_fraction_is_its_states_rates_over_their_durations_and_is_not_clipped(seed):
    """With no detection, restart or rollback costs, a run's steps are the sum over its
    states of rate x duration (from `row_periods` and the paths alone), less at most the step in flight at
    each failure; and where ReCycle's adapted plan beats the configured schedule (1.235 of it with one of
    32 workers down here: its decoupled backward against a fused 1F1B) run fractions exceed 1, unclipped."""
    cfg = pl.PipelineConfig(4, 8, 4)
    model = pl.RunModel(duration="1d", failure_rate=0.5, repair_time="1h", detection_time="0s", restart_cost="0s",
                        reconfig_time="0s", checkpoint_interval="1000d", time_unit="1s")
    options = pl.StrategyOptions(method="heuristic")  # the accounting is under test, not the plans' proofs
    paths = runs.monte_carlo_paths(cfg, model, spares=0, n_runs=6, seed=seed)
    periods = runs.row_periods(cfg, "recycle", options, paths.down)
    rate = np.where(np.isfinite(periods), 1.0 / (periods * model.time_unit), 0.0)  # steps per hour
    per_row = rate * paths.row_durations()
    run_of_row = np.repeat(np.arange(paths.count.size), paths.count + 1)
    independent = np.bincount(run_of_row, weights=per_row, minlength=paths.count.size)
    steps = runs.run_progress(cfg, "recycle", options, model, paths)
    assert np.all(steps <= independent * (1 + 1e-12))
    assert np.all(independent - steps <= paths.failures_per_run + 1e-9 * independent)
    fraction = steps / runs.ideal_steps(cfg, model, paths.horizon)
    assert fraction.max() > 1.0


@pytest.mark.parametrize("options", [pl.StrategyOptions(method="heuristic"),
                                     pl.StrategyOptions(method="heuristic", recycle_decoupled=False,
                                                        recycle_staggered=False)])
def test_a_replays_recycle_period_is_evaluates_without_its_schedule(options):
    """`runs.recycle_period` takes the period from the plan alone (no schedule built): for every
    placement of failures on a 3 x 3 pipeline, the period `evaluate` reports, memory limits included.
    (The heuristic: the exact search would take seconds a state and decides nothing here.)"""
    from relmodel.pipeline._config import StageMemory

    cfgs = [pl.PipelineConfig(stages=3, replicas=3, microbatches=4, fwd=(1.0, 1.5, 1.0)),
            pl.PipelineConfig(stages=3, replicas=3, microbatches=4, memory=StageMemory(5.0, (1.0, 1.0, 1.0), 1.0))]
    for cfg in cfgs:
        for counts in np.ndindex(3, 3, 3):
            counts = tuple(int(c) for c in counts)
            mask = runs.failure_mask(dict(enumerate(counts)), cfg.replicas, cfg.stages)
            expected = pl.evaluate(cfg, "recycle", mask, options).period
            assert runs.recycle_period(cfg, options, counts) == expected, (cfg.memory, counts)
