"""The two kernel backends, thread counts and chunkings give the same bits."""

import warnings

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import relmodel as rm
from relmodel._kernels.layout import (
    J_CHECKPOINT,
    J_FAILURES,
    J_LOST,
    J_QUEUE,
    J_RESTART,
    J_WALL,
    N_BINS,
    S_CHECKPOINT,
    S_FAILURES,
)
from relmodel._engine import pack, run
from relmodel.testing.strategies import scenarios

REFERENCE = rm.Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h",
                        checkpoint_cost="5min", restart_cost="10min", work="7d")


def job_arrays(sc, backend, n_jobs=300, seed=1, **kw):
    return run(pack(sc), n_jobs, seed, backend, keep_jobs=True, max_failures=2000, **kw)


@settings(max_examples=40)
@given(sc=scenarios(max_gpus=4096), seed=st.integers(0, 2**32 - 1))
def test_numba_and_cython_are_bit_identical(sc, seed):
    a = job_arrays(sc, "numba", seed=seed)
    b = job_arrays(sc, "cython", seed=seed)
    assert np.array_equal(a.jobs, b.jobs)
    assert np.array_equal(a.stats, b.stats) and np.array_equal(a.hist, b.hist)


def strip(ds):
    return ds.drop_attrs()


def test_thread_count_does_not_change_the_dataset():
    grid = REFERENCE.sweep(n_gpus=[8, 1024, 16384], weibull_shape=[1.0, 0.7])
    one = rm.simulate(grid, n_jobs=5000, seed=3, n_threads=1)
    two = rm.simulate(grid, n_jobs=5000, seed=3, n_threads=2)
    xr.testing.assert_identical(strip(one), strip(two))


def test_chunking_and_backend_do_not_change_the_sums():
    packed = pack(REFERENCE.sweep(n_gpus=[64, 2048]))
    ref = run(packed, 10_000, 5, "numba")
    for chunk_items in (1, 3, 7, 1000):
        for backend in ("numba", "cython"):
            other = run(packed, 10_000, 5, backend, chunk_items=chunk_items)
            assert np.array_equal(ref.stats, other.stats) and np.array_equal(ref.hist, other.hist)


@pytest.mark.parametrize("groups", [1, 2, 3, 5, 32])
def test_how_threads_group_the_items_does_not_change_the_sums(groups, monkeypatch):
    """A Numba thread takes consecutive items in groups (`engine.work_groups`),
    and the jobs their blocks leave unsettled share the lanes: any grouping,
    any thread count, the Cython twin's bits. Rows of every path: settled and
    in lanes, Weibull one job at a time, levels; blocks short and whole."""
    from relmodel import _engine as engine

    packed = pack(REFERENCE.sweep(n_gpus=[8, 2048], weibull_shape=[1.0, 0.7], checkpoint_persist=[0.0, "5min"]))
    ref = run(packed, 9000, 4, "cython")
    monkeypatch.setattr(engine, "work_groups", lambda n_items, n_threads: groups)
    for threads in (1, 2):
        for chunk_items in (7, 1000):
            other = run(packed, 9000, 4, "numba", n_threads=threads, chunk_items=chunk_items)
            assert np.array_equal(ref.stats, other.stats) and np.array_equal(ref.hist, other.hist)
            assert np.array_equal(ref.level_stats, other.level_stats)


@pytest.mark.parametrize("n_threads", [1, 2, 3, 8])
def test_work_groups_share_the_items_evenly_between_threads(n_threads):
    """prange gives each thread an equal share of the groups, and the kernel sizes
    them within one item of each other: no thread takes more than its share plus
    a group (a call's slowest thread sets its time)."""
    from relmodel._engine import GROUP_ITEMS, work_groups

    for n_items in (1, 7, 40, 98, 209, 256, 1000):
        groups = work_groups(n_items, n_threads)
        assert groups % n_threads == 0 and groups >= 4 * n_threads
        used = min(groups, n_items)
        sizes = np.diff(np.arange(used + 1) * n_items // used)
        assert sizes.sum() == n_items and sizes.max() - sizes.min() <= 1
        assert sizes.max() <= max(GROUP_ITEMS, 1)
        if used == groups:  # each thread's groups: a contiguous share, equal in count
            shares = sizes.reshape(n_threads, -1).sum(axis=1)
            assert shares.max() - shares.min() <= groups // n_threads


def test_a_sub_grid_with_its_global_keys_reproduces_the_full_grid():
    grid = REFERENCE.sweep(n_gpus=[64, 512, 4096])
    full = run(pack(grid), 3000, 9, "numba")
    part = run(pack(REFERENCE.sweep(n_gpus=[4096])), 3000, 9, "numba", scenario_keys=[2])
    assert np.array_equal(full.stats[2:], part.stats)


def test_scenario_keys_are_checked():
    packed = pack(REFERENCE.sweep(n_gpus=[64, 2048]))
    for keys in ([0], [0, 2**32], [-1, 0], [0.5, 1.5]):
        with pytest.raises(ValueError, match="scenario_keys"):
            run(packed, 100, 0, scenario_keys=keys)


def test_seed_and_scenario_change_the_streams():
    a = job_arrays(REFERENCE, "numba", seed=1).jobs
    assert not np.array_equal(a, job_arrays(REFERENCE, "numba", seed=2).jobs)


@pytest.mark.parametrize("backend", ["numba", "cython"])
@given(sc=scenarios())
@settings(max_examples=15)
def test_failure_free_jobs_are_exact(backend, sc):
    sc = sc.sweep(failure_rate=0.0)
    n_full, _ = sc.intervals
    jobs = job_arrays(sc, backend, n_jobs=50).jobs[0]
    expected_wall = sc.work + sc.checkpoint_cost * n_full
    assert np.all(jobs[:, 0] == expected_wall)
    assert np.all(jobs[:, 1] == sc.work) and np.all(jobs[:, 2:].sum(axis=1) == n_full * sc.checkpoint_cost)
    ds = rm.simulate(sc, n_jobs=3000, backend=backend)
    assert np.all(ds.wall_quantile.values == expected_wall)
    assert float(ds.failures_mean) == 0 and float(ds.ettr_se) == 0
    assert float(ds.ettr) == pytest.approx(sc.work / expected_wall, rel=1e-13)


@given(sc=scenarios(max_gpus=4096))
@settings(max_examples=25)
def test_each_job_time_breakdown_adds_up(sc):
    jobs = job_arrays(sc, "numba").jobs[0]
    wall, parts = jobs[:, 0], jobs[:, 1:6]
    assert np.all(parts >= 0)
    np.testing.assert_allclose(parts.sum(axis=1), wall, rtol=1e-12)
    n_full, _ = sc.intervals
    done = jobs[:, 7] == 0
    assert np.all(jobs[done, 1] == sc.work)
    np.testing.assert_allclose(jobs[done, 2], n_full * sc.checkpoint_cost, rtol=1e-12)
    # A failure loses at most one segment (interval + checkpoint write) of work.
    assert np.all(jobs[:, 3] <= jobs[:, 6] * (sc.checkpoint_interval + sc.checkpoint_cost) * (1 + 1e-12))
    if sc.queue_wait_distribution == "fixed":
        # A capped job stops at its last failure, before that failure's queue wait.
        queued = jobs[:, 6] - (jobs[:, 7] != 0)
        np.testing.assert_allclose(jobs[:, 5], queued * sc.queue_wait, rtol=1e-12)


@pytest.mark.parametrize("backend", ["numba", "cython"])
def test_hopeless_jobs_are_capped_and_flagged(backend):
    # One node failing 15 times an hour, one-hour pieces: each takes e^15 = 3.3e6
    # attempts on average, so every job stops at the cap; simulated, as that is
    # still within reach (max_failures * e^-15 = 1.5e-4 > CERTAINTY).
    hopeless = rm.Scenario(n_gpus=8, failure_rate=15 * 24, checkpoint_interval="1h", work="3h")
    assert rm.ettr(hopeless) < 1e-5
    with pytest.warns(rm.CappedJobsWarning, match="max_failures=500") as caught:
        ds = rm.simulate(hopeless, n_jobs=100, max_failures=500, backend=backend)
    assert "not simulated" not in str(caught[0].message)
    assert int(ds.n_capped) == 100 and float(ds.failures_mean) == 500
    assert float(ds.ettr) < 0.01


@pytest.mark.parametrize("backend", ["numba", "cython"])
def test_points_whose_every_job_would_be_capped_are_flagged_without_simulating(backend):
    hopeless = rm.Scenario(n_gpus=10**6, failure_rate=0.02, checkpoint_interval="12h", work="30d",
                           restart_cost="30min")
    grid = hopeless.sweep(n_gpus=[8, 10**6])
    assert rm.ettr(hopeless) < 1e-100
    with pytest.warns(rm.CappedJobsWarning, match="1 grid point.* not simulated"):
        ds = rm.simulate(grid, n_jobs=100, max_failures=500, backend=backend)
    skipped, fine = ds.sel(n_gpus=10**6), ds.sel(n_gpus=8)
    assert int(skipped.n_capped) == 100 and np.isnan(skipped.ettr) and np.isnan(skipped.failures_mean)
    assert int(fine.n_capped) == 0 and 0.9 < float(fine.ettr) <= 1
    # The other point's bits do not depend on its neighbour being skipped.
    alone = rm.simulate(hopeless.sweep(n_gpus=[8, 16]), n_jobs=100, backend=backend).sel(n_gpus=8)
    assert float(alone.ettr) == float(fine.ettr)


@pytest.mark.parametrize("backend", ["numba", "cython"])
def test_a_persistence_no_job_gets_through_is_flagged_without_simulating(backend):
    """checkpoint_persist="1000d" is flagged at once, not every job capped after minutes of simulation.
    With no fast level, a job gets past a failure only through compute, a write and its
    persistence with no failure between: at 16,384 GPUs, 1000 days of it never happens."""
    sc = rm.Scenario(n_gpus=16384, failure_rate=[0.0, 6.5e-3], work="14d", checkpoint_interval="1h",
                     checkpoint_cost="1min", restart_cost="10min", checkpoint_persist="1000d")
    with pytest.warns(rm.CappedJobsWarning, match="1 grid point.* not simulated"):
        ds = rm.simulate(sc, n_jobs=100, max_failures=500, backend=backend)
    assert int(ds.n_capped.sel(failure_rate=6.5e-3)) == 100 and int(ds.n_capped.sel(failure_rate=0.0)) == 0
    assert float(ds.ettr.sel(failure_rate=0.0)) == pytest.approx(sc.sweep(failure_rate=0.0).work /
                                                                 float(ds.wall_mean.sel(failure_rate=0.0)))


@pytest.mark.parametrize("survives", [0.0, 0.5])
def test_a_durable_level_no_job_gets_through_behind_fast_levels_is_flagged(survives):
    """The same with fast levels: a failure no fast level survives goes back to a durable
    checkpoint, so a job gets past one only through its segment and persistence with none of those
    failures between (at half of them, 1000 days of it still never happens). A fast level that always
    survives takes the bound away: that row is simulated."""
    def run(survives):
        fast = rm.CheckpointLevel(interval="1h", cost="1s", restart="3min", survives=survives)
        sc = rm.Scenario(n_gpus=16384, failure_rate=6.5e-3, work="1d", checkpoint_interval="2h",
                         checkpoint_cost="1min", restart_cost="10min", checkpoint_persist="1000d",
                         fast_checkpoints=(fast,))
        return rm.simulate(sc, n_jobs=100, max_failures=500)

    with pytest.warns(rm.CappedJobsWarning, match="1 grid point.* not simulated"):
        assert int(run(survives).n_capped) == 100
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert int(run(1.0).n_capped) == 0


def test_no_warning_when_no_job_is_capped():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rm.simulate(REFERENCE, n_jobs=2000)


def test_a_restart_that_can_never_finish_caps_every_job_that_fails():
    # One node failing once an hour, 1-minute intervals, a 100-hour restart: a
    # failure means the cap; only a job that never fails escapes it.
    base = rm.Scenario(n_gpus=8, failure_rate=24, checkpoint_interval="1min", restart_cost="100h", work="20h")
    with pytest.warns(rm.CappedJobsWarning, match="not simulated"):
        assert int(rm.simulate(base, n_jobs=50, max_failures=500).n_capped) == 50
    # With 5 hours of work e^-5 of jobs never fail: simulated, and each capped job stops at the cap.
    short = base.sweep(work="5h")
    with pytest.warns(rm.CappedJobsWarning) as caught:
        ds = rm.simulate(short, n_jobs=2000, max_failures=500, keep_jobs=True)
    assert "not simulated" not in str(caught[0].message)
    capped = ds.job_capped.values.astype(bool)
    assert 0 < (~capped).sum() < 100 and np.all(ds.job_failures.values[capped] == 500)


@pytest.mark.parametrize("backend", ["numba", "cython"])
@pytest.mark.parametrize("n_gpus", [8, 64, 512])
def test_settled_jobs_are_the_jobs_that_run_failure_free(backend, n_gpus):
    """A block settles the jobs whose first exponential clears their hazard
    without simulating them; simulated one by one (keep_jobs, which settles
    nothing), exactly those jobs run failure free, and the sums agree."""
    sc = rm.Scenario(n_gpus=n_gpus, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min",
                     restart_cost="10min", work="3d")
    totals = run(pack(sc), 20_000, 4, backend, keep_jobs=True)
    jobs = totals.jobs[0]
    failed = jobs[:, J_FAILURES] > 0
    assert 0 < failed.sum() < jobs.shape[0]
    assert totals.hist[0, N_BINS] == (~failed).sum()
    assert totals.stats[0, S_FAILURES] == jobs[:, J_FAILURES].sum()
    free = jobs[~failed]
    assert np.all(free[:, J_WALL] == sc.failure_free_wall)
    assert np.all(free[:, [J_LOST, J_RESTART, J_QUEUE]] == 0.0)
    assert totals.stats[0, S_CHECKPOINT] == pytest.approx(jobs[:, J_CHECKPOINT].sum(), rel=1e-12)
