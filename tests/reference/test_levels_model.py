"""Checkpoint levels (asynchronous writes, fast levels): the kernels against the
plain reference simulation, the jump path against the stepping path, the
failure-free job exactly, and the Scenario, Dataset and command-line surface."""

import dataclasses

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import relmodel as rm
from relmodel import _engine as engine
from relmodel._kernels.layout import L_WAIT, L_WRITES, P_FF_WAIT, S_WAIT
from relmodel._scenario import CheckpointLevel
from relmodel.testing.strategies import level_scenarios, scenarios

from .levels_reference import simulate_levels

FAST = CheckpointLevel(interval="10min", cost="5s", restart="3min", persist="1min", survives=0.85)


def reference_fields(sc: rm.Scenario) -> dict:
    """A scalar Scenario as the plain numbers `levels_reference` reads."""
    out = {name: getattr(sc, name) for name in (
        "n_gpus", "gpus_per_node", "failure_rate", "work", "checkpoint_interval", "checkpoint_cost", "restart_cost",
        "queue_wait", "queue_wait_distribution", "weibull_shape", "checkpoint_persist")}
    if sc.taxonomy:
        out["categories"] = [(c.share, c.restart_cost, c.queue_wait) for c in sc.taxonomy]
    out["levels"] = [dataclasses.asdict(lv) for lv in sc.fast_checkpoints or ()]
    return out


def ratio_and_se(work: float, wall: np.ndarray) -> tuple[float, float]:
    """work / mean wall and its standard error (delta method)."""
    mean = wall.mean()
    return work / mean, work * wall.std(ddof=1) / np.sqrt(wall.size) / mean**2


def assert_agrees_with_reference(sc: rm.Scenario, n_jobs: int, seed: int = 0):
    ds = rm.simulate(sc, n_jobs=n_jobs, seed=seed, backend="numba")
    ref = simulate_levels(reference_fields(sc), n_jobs, seed + 1)
    ettr, se = ratio_and_se(sc.work, ref["wall"])
    gap, se_both = abs(float(ds.ettr) - ettr), np.hypot(float(ds.ettr_se), se)
    # (+1e-12: every job alike, e.g. free writes and restarts, gives no spread at all)
    assert gap < 4 * se_both + 1e-12, f"kernel {float(ds.ettr)} vs reference {ettr} ({gap / se_both:.1f} SE) for {sc}"
    if sc.fast_checkpoints:  # per level: writes and restores per job
        for name, key in (("writes_by_level", "writes"), ("restores_by_level", "restores")):
            ref_mean = ref[key].mean(axis=0)
            ref_se = ref[key].std(axis=0, ddof=1) / np.sqrt(n_jobs)
            # Beside 5 SE of the difference, 10 events over all jobs: a rare level's count can be 0 in one sample.
            assert np.all(np.abs(ds[name].values - ref_mean) <= 5 * np.sqrt(2) * ref_se + 10 / n_jobs), (name, sc)


# Failure rates that give a few failures per job: every path of the model is taken.
# (At most 64 nodes: a job failure rate of at most 0.14 an hour, so no drawn job is
# hopeless and the plain reference, which has no cap but an error, stays quick.)
_BASE = scenarios(
    n_gpus=st.sampled_from([64, 256, 512]), gpus_per_node=8, failure_rate=st.floats(5e-3, 5e-2),
    checkpoint_interval=st.floats(1.0, 3.0), work=st.floats(2.0, 12.0), laws=("exponential", "weibull"),
)


@settings(max_examples=10)
@given(level_scenarios(base=_BASE, max_fast_levels=2, max_multiple=6))
def test_kernel_agrees_with_the_plain_reference_over_drawn_level_sets(sc):
    assert_agrees_with_reference(sc, n_jobs=2000)


@settings(max_examples=15)
@given(level_scenarios(base=scenarios(n_gpus=st.sampled_from([256, 2048, 16384]), gpus_per_node=8,
                                      failure_rate=st.floats(1e-3, 3e-2), checkpoint_interval=st.floats(0.25, 4.0),
                                      work=st.floats(12.0, 24 * 14.0), laws=("exponential", "lemon")),
                       max_fast_levels=2, max_multiple=12, waits=False))
def test_kernel_agrees_with_the_exact_form_over_drawn_level_sets(sc):
    """Exponential failures (lemon mixtures too), no write waiting: the exact form holds."""
    exact = rm.ettr(sc, method="renewal")
    assume(exact == exact)  # a lemon mixture of too many rates: NaN, with a warning
    assume(exact > 0.05)  # not a run whose jobs mostly hit the failure cap (there a capped estimate)
    ds = rm.simulate(sc, n_jobs=4000, seed=7)
    assert abs(float(ds.ettr) - exact) < 4 * float(ds.ettr_se) + 1e-12, (float(ds.ettr), exact, sc)


@pytest.mark.parametrize("sc", [
    # Fast level with persistence, durable level with asynchronous writes.
    rm.Scenario(n_gpus=2048, failure_rate=2e-2, checkpoint_interval="1h", checkpoint_cost="5min",
                restart_cost="10min", work="1d", checkpoint_persist="15min", fast_checkpoints=(FAST,)),
    # Writes that wait: persistence longer than the level's interval.
    rm.Scenario(n_gpus=1024, failure_rate=2e-2, checkpoint_interval="30min", checkpoint_cost="2min",
                restart_cost="5min", work="12h", checkpoint_persist="50min",
                fast_checkpoints=(CheckpointLevel("10min", "10s", "1min", persist="25min", survives=0.5),)),
    # Two fast levels whose multiples do not divide each other, a taxonomy, exponential queue waits.
    rm.Scenario(n_gpus=512, failure_rate=3e-2, checkpoint_interval="1h", checkpoint_cost="4min", work="20h",
                queue_wait_distribution="exponential",
                taxonomy=(rm.FailureCategory("a", 0.7, "5min", "2min"), rm.FailureCategory("b", 0.3, "30min", "10min")),
                fast_checkpoints=(CheckpointLevel("10min", "5s", "1min", survives=0.3),
                                  CheckpointLevel("40min", "20s", "2min", persist="5min", survives=0.9))),
], ids=["async-two-levels", "waits", "three-levels-taxonomy"])
def test_kernel_agrees_with_the_plain_reference(sc):
    assert_agrees_with_reference(sc, n_jobs=6000, seed=3)


def test_jump_path_agrees_with_the_stepping_path(monkeypatch):
    """Rows whose writes never wait go from failure to failure with cycle tables;
    without the tables the same row steps position by position."""
    sc = rm.Scenario(n_gpus=4096, failure_rate=1e-2, checkpoint_interval="1h", checkpoint_cost="5min",
                     restart_cost="10min", work="3d", checkpoint_persist="15min", fast_checkpoints=(FAST,))
    jump = engine.pack(sc)
    assert jump.cyc_value.size > 0
    monkeypatch.setattr(engine, "MAX_JUMP_CYCLE", 0)
    step = engine.pack(sc)
    assert step.cyc_value.size == 0
    n = 20_000
    a, b = engine.run(jump, n, 5, "numba"), engine.run(step, n, 5, "numba")
    ea, eb = engine.summarize(a, jump), engine.summarize(b, step)
    # The same random stream: only rounding at the edges of positions can tell them apart.
    assert abs(ea["ettr"][0] - eb["ettr"][0]) < 1e-3 * ea["ettr_se"][0] + 1e-12
    np.testing.assert_allclose(a.level_stats, b.level_stats, rtol=1e-9)


@pytest.mark.parametrize("persist", [0.0, "30min", "1h", "150min"])
def test_without_failures_the_job_is_the_failure_free_one_exactly(persist):
    sc = rm.Scenario(n_gpus=64, failure_rate=0.0, checkpoint_interval="1h", checkpoint_cost="5min", work="30h",
                     checkpoint_persist=persist,
                     fast_checkpoints=(CheckpointLevel("20min", "1min", "1min", persist="30min", survives=0.5),))
    packed = engine.pack(sc)
    totals = engine.run(packed, 2000, 0, "numba", keep_jobs=True)
    jobs = totals.jobs[0]
    assert np.all(jobs[:, 0] == packed.failure_free_wall[0])
    assert np.all(totals.level_jobs[0] == packed.failure_free_levels[0])
    # 90 positions of 20 min: 30 durable writes, 60 fast ones.
    assert packed.failure_free_levels[0, :, L_WRITES].tolist() == [60, 30]
    assert totals.stats[0, S_WAIT] == pytest.approx(2000 * packed.params[0, P_FF_WAIT], rel=1e-12)
    # A fast write every 20 min persisting for 30 min waits 10 min before each of its
    # writes that follows another fast write (not those that follow a durable one).
    fast_waits = packed.failure_free_levels[0, 0, L_WAIT]
    assert fast_waits == pytest.approx(30 * 10 / 60)
    durable_waits = packed.failure_free_levels[0, 1, L_WAIT]
    # Between durable writes: 3 x 20 min of compute, 2 fast writes of 1 min, one 10 min wait.
    expected = {0.0: 0.0, "30min": 0.0, "1h": 0.0, "150min": 29 * (150 - 72) / 60}[persist]
    assert durable_waits == pytest.approx(expected, abs=1e-9)


def test_no_levels_is_exactly_todays_model():
    plain = rm.Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min",
                        restart_cost="10min", work="7d")
    spelled = plain.sweep(checkpoint_persist="0s", fast_checkpoints=())
    assert spelled == plain
    packed = engine.pack(spelled)
    assert not packed.has_levels.any() and packed.lv_mult.size == 0
    a = rm.simulate(plain, n_jobs=5000, seed=2)
    b = rm.simulate(spelled, n_jobs=5000, seed=2, backend="cython")
    for name in ("ettr", "wall_quantile", "time_mean", "failures_mean"):
        np.testing.assert_array_equal(a[name].values, b[name].values)
    assert float(a.time_mean.sel(component="persist_wait")) == 0.0


def test_a_fast_level_that_always_survives_is_a_plain_checkpoint_at_its_interval():
    """survives = 1, the same cost and restart: every position is a checkpoint as good as
    the durable one, so the renewal form at the fast interval is exact."""
    common = dict(n_gpus=2048, failure_rate=1e-2, checkpoint_cost="2min", restart_cost="6min", work="2d")
    sc = rm.Scenario(**common, checkpoint_interval="1h",
                     fast_checkpoints=(CheckpointLevel("15min", "2min", "6min", survives=1.0),))
    ds = rm.simulate(sc, n_jobs=20_000, seed=4)
    exact = rm.ettr(rm.Scenario(**common, checkpoint_interval="15min"), method="renewal")
    assert abs(float(ds.ettr) - exact) < 4 * float(ds.ettr_se)


def test_dataset_labels_levels_and_rebuilds_the_scenario():
    sc = rm.Scenario(n_gpus=256, failure_rate=1e-2, checkpoint_interval="1h", work="1d",
                     checkpoint_persist=["0s", "20min"], fast_checkpoints=(FAST,))
    ds = rm.simulate(sc, n_jobs=2000, seed=0, keep_jobs=True)
    assert ds.level.values.tolist() == ["fast0", "durable"]
    assert ds.writes_by_level.dims == ("checkpoint_persist", "level")
    assert ds.job_restores_by_level.dims == ("checkpoint_persist", "job", "level")
    assert "persist_wait" in ds.component.values
    np.testing.assert_allclose(ds.time_mean.sum("component"), ds.wall_mean, rtol=1e-12)
    # Restores add up to failures: each failure (during a restart too) restores once.
    np.testing.assert_allclose(ds.restores_by_level.sum("level"), ds.failures_mean, rtol=1e-12)
    assert rm.Scenario.from_dataset(ds) == sc


def level(interval, survives=0.5):
    return CheckpointLevel(interval, restart="1min", survives=survives)


@pytest.mark.parametrize("fields, parameter", [
    (dict(fast_checkpoints=(level("7min"),)), "checkpoint_interval"),
    (dict(fast_checkpoints=(level("10min"), level("10min"))), "fast_checkpoints[1].interval"),
    (dict(fast_checkpoints=(level("10min"), level("25min"))), "fast_checkpoints[1].interval"),
    (dict(fast_checkpoints=(level("10min", survives=0.9), level("20min", survives=0.5))),
     "fast_checkpoints[1].survives"),
    (dict(fast_checkpoints=(level("2h"),)), "checkpoint_interval"),
    (dict(fast_checkpoints=[{"interval": "10min", "survive": 0.5}]), "fast_checkpoints[0].survive"),
    (dict(fast_checkpoints=[{"interval": "10min", "restart": 0, "survives": 0.5, "cost": -1}]),
     "fast_checkpoints[0].cost"),
    (dict(fast_checkpoints=[{"interval": "10min", "restart": "1min"}]), "fast_checkpoints[0].survives"),
    (dict(fast_checkpoints=level("10min")), "fast_checkpoints"),
    (dict(checkpoint_persist=float("nan")), "checkpoint_persist"),
    (dict(checkpoint_persist="-5min"), "checkpoint_persist"),
])
def test_bad_levels_are_refused_by_name(fields, parameter):
    with pytest.raises(rm.ScenarioError) as err:
        rm.Scenario(n_gpus=8, failure_rate=1e-3, checkpoint_interval="1h", work="1d", **fields)
    assert err.value.parameter == parameter


@pytest.mark.parametrize("fields, parameter", [
    (dict(interval=0, restart=0, survives=0.5), "CheckpointLevel.interval"),
    (dict(interval="10min", restart=0, survives=1.5), "CheckpointLevel.survives"),
    (dict(interval="10min", restart=0, survives=0.5, persist="soon"), "CheckpointLevel.persist"),
    (dict(interval=["10min", "20min"], restart=0, survives=0.5), "CheckpointLevel.interval"),
    (dict(interval="10min", survives=0.5), "CheckpointLevel.restart"),
    (dict(interval="10min", restart="1min"), "CheckpointLevel.survives"),
])
def test_bad_checkpoint_level_is_refused_by_name(fields, parameter):
    with pytest.raises(rm.ScenarioError) as err:
        CheckpointLevel(**fields)
    assert err.value.parameter == parameter
