"""Checkpoint levels in the two kernel twins: Numba and Cython give the same
bits, job by job and in the block sums, whatever the threads or the chunking;
rows without levels take the path without levels."""

import dataclasses

import numba
import numpy as np
import pytest
from hypothesis import assume, given, settings

import relmodel as rm
from relmodel._kernels.layout import (
    J_CAPPED,
    J_FAILURES,
    J_WAIT,
    J_WALL,
    L_RESTORES,
    L_WAIT,
    L_WRITES,
    N_BINS,
    N_LEVEL_STATS,
    P_CKPT,
    P_FF_CKPT,
    P_FF_WAIT,
    P_N_FULL,
    S_CAPPED,
    S_EFF,
    S_FAILURES,
    S_N,
    S_PRODUCTIVE,
    S_WAIT,
    S_WALL,
)
from relmodel._engine import beyond_float_range, pack, run
from relmodel.testing.strategies import level_scenarios

Level = rm.CheckpointLevel

# 512 nodes at 0.05 failures per node-day: about one failure per hour of runtime.
BASE = dict(n_gpus=4096, failure_rate=0.05, checkpoint_interval="1h", checkpoint_cost="3min",
            restart_cost="5min", work="2d")
ONE_FAST = (Level(interval="10min", cost="20s", restart="1min", survives=0.8),)
TAXONOMY = (rm.FailureCategory("a", 0.7, "5min", "2min"), rm.FailureCategory("b", 0.3, "30min", "10min"))

# id -> (scenario, max_failures). Rows whose writes never wait jump from one failure
# to the next with the cycle tables; the others (JUMPS False) step position by position.
CASES = {
    "one-fast": (rm.Scenario(**BASE, fast_checkpoints=ONE_FAST), 2000),
    # multiples 1, 2, 3, 12: the 10min and 15min levels do not divide each other; a remainder
    "three-fast-non-dividing": (rm.Scenario(**{**BASE, "work": 49.3}, checkpoint_persist="5min", fast_checkpoints=(
        Level(interval="5min", cost="5s", restart="30s", survives=0.5),
        Level(interval="10min", cost="10s", restart="1min", persist="1min", survives=0.7),
        Level(interval="15min", cost="30s", restart="2min", persist="2min", survives=0.9),
    )), 2000),
    # persisting longer than an interval: writes wait, on both levels (a top write waits
    # 2h - (6 x 10min + 5 x 5min of fast waits + writes) when no failure intervenes)
    "persist-waits": (rm.Scenario(**BASE, checkpoint_persist="2h", fast_checkpoints=(
        Level(interval="10min", cost="10s", restart="1min", persist="15min", survives=0.6),
    )), 2000),
    # everything at once, stepping (writes wait)
    "persist-waits-taxonomy-weibull-lemons": (rm.Scenario(
        **{k: v for k, v in BASE.items() if k not in ("restart_cost", "work")}, taxonomy=TAXONOMY, weibull_shape=0.7,
        lemon_fraction=0.05, lemon_rate_factor=10, queue_wait_distribution="exponential", work=49.3,
        checkpoint_persist="30min", fast_checkpoints=(Level(interval="10min", cost="10s", restart="1min",
                                                            persist="12min", survives=0.6),)), 2000),
    # a cycle of lcm(1, 7, 11, 13, 60) = 60060 positions: too long for tables, so it steps
    "long-cycle": (rm.Scenario(**{**BASE, "work": 49.3}, fast_checkpoints=(
        Level(interval="1min", cost="2s", restart="20s", survives=0.3),
        Level(interval="7min", cost="5s", restart="30s", survives=0.5),
        Level(interval="11min", cost="8s", restart="40s", persist="3min", survives=0.7),
        Level(interval="13min", cost="10s", restart="50s", survives=0.9),
    )), 2000),
    "persist-only": (rm.Scenario(**BASE, checkpoint_persist="20min"), 2000),
    "persist-only-waits": (rm.Scenario(**BASE, checkpoint_persist="75min"), 2000),
    "taxonomy": (rm.Scenario(**{k: v for k, v in BASE.items() if k != "restart_cost"},
                             taxonomy=TAXONOMY, checkpoint_persist="10min", fast_checkpoints=ONE_FAST), 2000),
    "taxonomy-exponential-queue": (rm.Scenario(**{k: v for k, v in BASE.items() if k != "restart_cost"},
                                               taxonomy=TAXONOMY, queue_wait_distribution="exponential",
                                               fast_checkpoints=ONE_FAST), 2000),
    "weibull": (rm.Scenario(**BASE, weibull_shape=0.7, checkpoint_persist="10min", fast_checkpoints=ONE_FAST),
                2000),
    "lemons": (rm.Scenario(**BASE, lemon_fraction=0.05, lemon_rate_factor=10, fast_checkpoints=ONE_FAST), 2000),
    "exponential-queue": (rm.Scenario(**BASE, queue_wait="10min", queue_wait_distribution="exponential",
                                      fast_checkpoints=ONE_FAST), 2000),
    "capped": (rm.Scenario(**BASE, checkpoint_persist="10min", fast_checkpoints=ONE_FAST), 3),
    "capped-stepping": (rm.Scenario(**BASE, checkpoint_persist="90min", fast_checkpoints=ONE_FAST), 3),
    "no-failures": (rm.Scenario(**{**BASE, "failure_rate": 0.0}, checkpoint_persist="90min",
                                fast_checkpoints=ONE_FAST), 2000),
    "no-failures-jumping": (rm.Scenario(**{**BASE, "failure_rate": 0.0, "work": 49.3}, checkpoint_persist="20min",
                                        fast_checkpoints=ONE_FAST), 2000),
    # a grid: rows with levels (persist > 0) and one without, in the same kernel calls
    "mixed-grid": (rm.Scenario(**{**BASE, "n_gpus": [512, 4096]}, checkpoint_persist=[0.0, "20min"]), 2000),
}
STEPPING = {"persist-waits", "persist-waits-taxonomy-weibull-lemons", "long-cycle", "persist-only-waits",
            "capped-stepping", "no-failures"}
N_JOBS = 3000
N_KEPT = 400
SEED = 12345


def totals_equal(a, b, jobs=False):
    fields = ["stats", "hist", "cat_stats", "level_stats"]
    if jobs:
        fields += ["jobs", "cat_jobs", "level_jobs"]
    for name in fields:
        x, y = getattr(a, name), getattr(b, name)
        assert x.shape == y.shape, name
        assert np.array_equal(x, y), name  # bit for bit (no NaN in these outputs)
        assert x.tobytes() == y.tobytes(), name  # -0.0 against 0.0 too


@pytest.fixture(scope="module", params=list(CASES), ids=list(CASES))
def case(request):
    sc, max_failures = CASES[request.param]
    return request.param, pack(sc), max_failures


def test_every_case_but_the_grid_runs_the_level_path(case):
    name, packed, _ = case
    jumps = np.diff(packed.cyc_value_offset) > 0
    if name == "mixed-grid":
        assert packed.has_levels.tolist() == [False, True, False, True]
        assert jumps.tolist() == [False, True, False, True]
    else:
        assert packed.has_levels.all() and packed.n_levels >= 1
        assert jumps.tolist() == [name not in STEPPING]


def test_numba_and_cython_sums_are_bit_identical(case):
    _, packed, max_failures = case
    a = run(packed, N_JOBS, SEED, "numba", max_failures=max_failures)
    b = run(packed, N_JOBS, SEED, "cython", max_failures=max_failures)
    totals_equal(a, b)
    assert a.stats[:, S_N].tolist() == [N_JOBS] * packed.params.shape[0]


def test_numba_and_cython_jobs_are_bit_identical(case):
    _, packed, max_failures = case
    a = run(packed, N_KEPT, SEED + 1, "numba", max_failures=max_failures, keep_jobs=True)
    b = run(packed, N_KEPT, SEED + 1, "cython", max_failures=max_failures, keep_jobs=True)
    totals_equal(a, b, jobs=True)
    # Every failure restores once (a capped job too, before it stops); counts are exact.
    has = packed.has_levels
    restores = a.level_jobs[..., L_RESTORES].sum(axis=2)
    assert np.array_equal(restores[has], a.jobs[has][..., J_FAILURES])
    assert np.array_equal(a.jobs[..., J_WAIT].sum(axis=1) > 0, a.level_jobs[..., L_WAIT].sum(axis=(1, 2)) > 0)
    # The per-job run and the block sums see the same jobs.
    blocks = run(packed, N_KEPT, SEED + 1, "cython", max_failures=max_failures)
    assert np.array_equal(blocks.stats[:, S_FAILURES], a.jobs[..., J_FAILURES].sum(axis=1))
    assert np.array_equal(blocks.stats[:, S_CAPPED], a.jobs[..., J_CAPPED].sum(axis=1))
    for col in (L_WRITES, L_RESTORES):
        assert np.array_equal(blocks.level_stats[..., col], a.level_jobs[..., col].sum(axis=1))


def test_numba_does_not_depend_on_threads_or_chunking(case):
    _, packed, max_failures = case
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two Numba threads")
    ref = run(packed, N_JOBS, SEED, "numba", max_failures=max_failures, n_threads=1)
    totals_equal(ref, run(packed, N_JOBS, SEED, "numba", max_failures=max_failures, n_threads=2))
    for chunk_items in (1, 3):
        totals_equal(ref, run(packed, N_JOBS, SEED, "numba", max_failures=max_failures, n_threads=2,
                              chunk_items=chunk_items))
    kept = run(packed, N_KEPT, SEED, "numba", max_failures=max_failures, keep_jobs=True, n_threads=1)
    totals_equal(kept, run(packed, N_KEPT, SEED, "numba", max_failures=max_failures, keep_jobs=True,
                           n_threads=2), jobs=True)


def test_the_cases_exercise_what_they_name():
    def totals(name, n_jobs=N_JOBS):
        sc, max_failures = CASES[name]
        return run(pack(sc), n_jobs, SEED, "cython", max_failures=max_failures)

    one = totals("one-fast")
    assert one.stats[0, S_FAILURES] > 10 * N_JOBS  # many failures per job
    assert (one.level_stats[0, :, L_RESTORES] > 0).all()  # both levels restored from
    assert one.stats[0, S_WAIT] == 0.0
    three = totals("three-fast-non-dividing")
    assert (three.level_stats[0, :, L_WRITES] > 0).all() and (three.level_stats[0, :, L_RESTORES] > 0).all()
    waits = totals("persist-waits")
    assert (waits.level_stats[0, :, L_WAIT] > 0).all() and waits.stats[0, S_WAIT] > 0
    assert totals("persist-only-waits").stats[0, S_WAIT] > 0
    assert totals("capped").stats[0, S_CAPPED] > 0.9 * N_JOBS
    assert totals("taxonomy").cat_stats.shape[1:] == (2, 4)


@pytest.mark.parametrize("name", ["no-failures", "no-failures-jumping"])
def test_a_job_without_failures_is_exactly_the_failure_free_job(name):
    sc, _ = CASES[name]
    packed = pack(sc)
    assert (packed.params[0, P_FF_WAIT] > 0) == (name in STEPPING)  # the stepping one waits
    for backend in ("numba", "cython"):
        t = run(packed, N_JOBS, SEED, backend, keep_jobs=True)
        assert t.stats[0, S_WALL] == 0.0 and t.stats[0, S_PRODUCTIVE] == 0.0 and t.stats[0, S_EFF] == 0.0
        assert np.isclose(t.stats[0, S_WAIT], N_JOBS * packed.params[0, P_FF_WAIT], rtol=1e-12, atol=0)
        assert t.hist[0, N_BINS] == N_JOBS
        assert np.array_equal(t.level_stats[0, :, L_WRITES], N_JOBS * packed.failure_free_levels[0, :, L_WRITES])
        # Job by job, the same operations in the same order as the packing's failure-free job.
        assert (t.jobs[0, :, J_WAIT] == packed.params[0, P_FF_WAIT]).all()
        assert (t.level_jobs[0] == packed.failure_free_levels[0]).all()
        assert not t.level_jobs[0, :, :, L_RESTORES].any()


@pytest.mark.parametrize("sc", [
    rm.Scenario(**BASE),
    rm.Scenario(**BASE, taxonomy=None, weibull_shape=0.7, lemon_fraction=0.05, lemon_rate_factor=10),
    rm.Scenario(**{**BASE, "checkpoint_interval": ["10min", "1h"], "failure_rate": [0.0, 0.05]}),
], ids=["plain", "weibull-lemons", "grid"])
def test_no_fast_levels_and_no_persist_keep_the_old_path(sc):
    packed = pack(sc)
    assert not packed.lv_offset.any() and packed.n_levels == 0 and not packed.has_levels.any()
    assert np.array_equal(packed.params[:, P_FF_CKPT], packed.params[:, P_N_FULL] * packed.params[:, P_CKPT])
    assert not packed.params[:, P_FF_WAIT].any()
    a = run(packed, N_JOBS, SEED, "numba")
    b = run(packed, N_JOBS, SEED, "cython")
    totals_equal(a, b)
    assert a.level_stats.shape == (packed.params.shape[0], 0, N_LEVEL_STATS)
    assert not a.stats[:, S_WAIT].any()


def test_a_row_without_levels_in_a_grid_with_levels_is_the_row_alone():
    sc, _ = CASES["mixed-grid"]
    grid = run(pack(sc), N_JOBS, SEED, "cython")
    for row, n_gpus in enumerate([512, 4096]):  # persist 0 comes first in the grid
        alone = run(pack(rm.Scenario(**{**BASE, "n_gpus": n_gpus})), N_JOBS, SEED, "cython",
                    scenario_keys=[2 * row])
        assert np.array_equal(grid.stats[2 * row], alone.stats[0]) and np.array_equal(grid.hist[2 * row],
                                                                                     alone.hist[0])
        assert not grid.level_stats[2 * row].any()


@settings(max_examples=40)
@given(sc=level_scenarios())
def test_the_scenarios_failure_free_wall_is_the_kernels_to_the_bit(sc):
    # One definition (docs: the job model): work, every level's writes, and the waits for a
    # level's previous write to persist; a job that never fails ends at exactly that wall.
    sc = dataclasses.replace(sc, failure_rate=0.0)
    pack_of = pack(sc)
    assume(not beyond_float_range(pack_of)[0])
    for backend in ("numba", "cython"):
        jobs = run(pack_of, 3, 1, backend, keep_jobs=True).jobs[0]
        assert np.all(jobs[:, J_FAILURES] == 0)
        assert np.all(jobs[:, J_WALL] == sc.failure_free_wall)


def test_the_failure_free_wall_counts_fast_writes_and_persist_waits():
    fast = Level(interval="10min", cost="30s", restart="1min", persist="25min", survives=0.5)
    sc = rm.Scenario(n_gpus=8, failure_rate=0.0, work="2h", checkpoint_interval="1h", checkpoint_cost="2min",
                     fast_checkpoints=(fast,))
    # Positions 1..12 of 10 min: durable at 6 and 12, fast elsewhere. A fast write persists
    # 25 min after it ends, and the next fast write waits for it (a durable write between
    # does not clear it): the wait of each level is its own.
    clock, waits, durable_at = 0.0, 0.0, -1.0
    for k in range(1, 13):
        clock += 10 / 60
        if k % 6:
            if durable_at > clock:
                waits += durable_at - clock
                clock = durable_at
            clock += 0.5 / 60
            durable_at = clock + 25 / 60
        else:
            clock += 2 / 60
    assert sc.failure_free_wall == pytest.approx(clock, rel=1e-12)
    assert waits > 0 and sc.failure_free_wall > 2 + 10 * 0.5 / 60 + 2 * 2 / 60
