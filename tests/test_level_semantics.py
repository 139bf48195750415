"""The checkpoint-level semantics docs/user-guide/checkpoint-strategies.md states, each shown by the simulation.

Each scenario is built so that the stated rule and its alternative give clearly
different numbers: a count that is exact per job, or a mean far outside the
other rule's range.
"""

import math

import numpy as np
import pytest

import relmodel as rm
from relmodel import CheckpointLevel

N_JOBS = 4000
RATE_PER_HOUR = dict(n_gpus=640, failure_rate=0.3)  # 80 nodes: one failure per hour of runtime
NEVER = 1000.0  # a durable interval past the work: the job's start is the only durable checkpoint


def simulate(**fields):
    sc = rm.Scenario(**{**RATE_PER_HOUR, "checkpoint_cost": 0.0, **fields})
    assert sc.job_failure_rate == pytest.approx(1.0)
    return rm.simulate(sc, n_jobs=N_JOBS, seed=31)


def component(ds, name):
    return float(ds.time_mean.sel(component=name))


def test_one_restore_per_failure_restarts_included():
    # Fast restarts of 2 h against one failure an hour: most failures strike during a restart.
    ds = simulate(work=2.0, checkpoint_interval=1.0, restart_cost=0.1,
                  fast_checkpoints=(CheckpointLevel(interval=0.25, cost=0.0, restart=2.0, survives=0.5),))
    assert float(ds.restores_by_level.sum()) == pytest.approx(float(ds.failures_mean), rel=1e-12)


def test_a_failure_during_a_restart_draws_survival_again():
    # The job's start is the only durable checkpoint and restarts from it at once; a fast checkpoint a
    # minute old survives half the failures, its restart (10 h) never completes. Drawn again at each
    # failure, half the restores are fast ones; kept from the first draw, a restart's failures would all
    # restore the fast checkpoint again (about nine in ten).
    ds = simulate(work=1.0, checkpoint_interval=NEVER, restart_cost=0.0,
                  fast_checkpoints=(CheckpointLevel(interval=1 / 60, cost=0.0, restart=10.0, survives=0.5),))
    fast, start = ds.restores_by_level.values
    share = fast / (fast + start)
    assert 0.45 < share < 0.5, share  # (a little under a half: failures in the first minute find no fast one)


def test_restoring_the_job_start_pays_the_restart_and_counts_as_durable():
    # A fast level that never survives and no durable write: every failure restores the job's start.
    ds = simulate(work=1.0, checkpoint_interval=NEVER, restart_cost=0.2,
                  fast_checkpoints=(CheckpointLevel(interval=0.1, cost=0.0, restart=0.05, survives=0.0),))
    fast, start = ds.restores_by_level.values
    assert fast == 0 and start == pytest.approx(float(ds.failures_mean), rel=1e-12)
    # Each failure starts a restart of 0.2 h that the next failure may cut: E[min(T, 0.2)] = 1 - e^-0.2.
    per_failure = component(ds, "restart") / float(ds.failures_mean)
    assert per_failure == pytest.approx(-math.expm1(-0.2), rel=0.03)


def test_the_previous_checkpoint_stays_restorable_while_the_next_persists():
    # A fast level that always survives, free, restores at once, persisting for almost its whole interval:
    # a failure finds the previous copy restorable, between one and two intervals old (mean 1.5 * 0.1 h).
    # Were it dropped while the next persists, failures would mostly go back to the job's start (0.5 h).
    interval = 0.1
    ds = simulate(work=3.0, checkpoint_interval=NEVER, restart_cost=0.0,
                  fast_checkpoints=(CheckpointLevel(interval=interval, cost=0.0, restart=0.0,
                                                    persist=0.99 * interval, survives=1.0),))
    lost_per_failure = component(ds, "lost") / float(ds.failures_mean)
    assert 1.3 * interval < lost_per_failure < 1.6 * interval, lost_per_failure


def test_failures_strike_while_a_write_waits_to_persist():
    # The durable checkpoint persists three intervals: each write waits two. Failures are a Poisson process
    # on every hour of runtime, the waits included: E[failures] = lam E[runtime] (runtime = wall - queue).
    ds = simulate(work=8.0, checkpoint_interval=0.25, checkpoint_persist=0.75, restart_cost=0.05)
    assert component(ds, "persist_wait") > 0.3 * float(ds.wall_mean)
    runtime = float(ds.wall_mean) - component(ds, "queue")
    assert float(ds.failures_mean) == pytest.approx(runtime, rel=4 * float(ds.failures_se) / float(ds.failures_mean))


def test_written_again_or_cut_short_a_write_is_lost_time():
    # Writes of 0.25 h and 0.5 h against one failure an hour: many are cut short or written again after a
    # restore. Checkpoint time is the failure-free run's (three of each); every other write's time, the
    # completed ones that writes_by_level counts and the partial ones, is lost time.
    ds = simulate(work=3.0, checkpoint_interval=1.0, checkpoint_cost=0.5, restart_cost=0.0,
                  fast_checkpoints=(CheckpointLevel(interval=0.5, cost=0.25, restart=0.0, survives=0.0),))
    assert component(ds, "checkpoint") == pytest.approx(3 * 0.25 + 3 * 0.5, rel=1e-12)
    writes = ds.writes_by_level.values
    written_again = 0.25 * writes[0] + 0.5 * writes[1] - component(ds, "checkpoint")
    assert written_again > 0.5 and component(ds, "lost") > written_again
    np.testing.assert_allclose(float(ds.time_mean.sum("component")), float(ds.wall_mean), rtol=1e-12)
