"""The same timeline model written as a user would without relmodel: the
honest competitors of the benchmark. Same semantics as the kernels (SPEC
section 3), exponential failures, fixed queue wait; numpy's own generator.

Each returns per-job (productive, wall, failures) arrays.
"""

from __future__ import annotations

import numpy as np

from ..scenario import Scenario


def numpy_timelines(sc: Scenario, n_jobs: int, seed: int = 0):
    """Simulate job timelines with NumPy, vectorised over jobs.

    Each failure draw skips every whole segment it spans, so the loop runs once
    per failure round, not once per checkpoint.

    Parameters
    ----------
    sc : Scenario
        A scalar scenario.
    n_jobs : int
        Jobs simulated.
    seed : int, default 0
        Random seed.

    Returns
    -------
    productive : numpy.ndarray
        Productive time per job (h).
    wall : numpy.ndarray
        Wall time per job (h).
    failures : numpy.ndarray
        Failures per job.
    """
    rng = np.random.default_rng(seed)
    mtbf = sc.mttf
    n_full, remainder = sc.intervals
    segment = sc.checkpoint_interval + sc.checkpoint_cost
    u0, q = sc.restart_cost, sc.queue_wait
    done = np.zeros(n_jobs)
    lost = np.zeros(n_jobs)
    restart = np.zeros(n_jobs)
    queue = np.zeros(n_jobs)
    failures = np.zeros(n_jobs, dtype=np.int64)
    next_t = np.empty(n_jobs)
    active = np.arange(n_jobs)
    t = rng.exponential(mtbf, n_jobs)
    while active.size:
        k = np.minimum(np.floor(t / segment), n_full - done[active])
        done[active] += k
        into = t - k * segment  # runtime spent in the current (unfinished) piece
        failed = (done[active] < n_full) | (into < remainder)
        active, into = active[failed], into[failed]
        lost[active] += into
        failures[active] += 1
        pending = active
        while pending.size:  # queue, then restarts until one survives u0
            queue[pending] += q
            ttf = rng.exponential(mtbf, pending.size)
            ok = ttf >= u0
            restart[pending] += np.where(ok, u0, ttf)
            next_t[pending[ok]] = ttf[ok] - u0
            failures[pending[~ok]] += 1
            pending = pending[~ok]
        t = next_t[active]
    wall = sc.work + n_full * sc.checkpoint_cost + lost + restart + queue
    return np.full(n_jobs, sc.work), wall, failures


def simpy_timelines(sc: Scenario, n_jobs: int, seed: int = 0):
    """Simulate job timelines with SimPy: a process per job, one timeout per segment, restart and queue step.

    Parameters
    ----------
    sc : Scenario
        A scalar scenario.
    n_jobs : int
        Jobs simulated.
    seed : int, default 0
        Random seed.

    Returns
    -------
    productive : numpy.ndarray
        Productive time per job (h).
    wall : numpy.ndarray
        Wall time per job (h).
    failures : numpy.ndarray
        Failures per job.
    """
    import simpy

    rng = np.random.default_rng(seed)
    mtbf = sc.mttf
    n_full, remainder = sc.intervals
    pieces = [(sc.checkpoint_interval, sc.checkpoint_cost)] * n_full + ([(remainder, 0.0)] if remainder else [])
    walls = np.empty(n_jobs)
    failures = np.zeros(n_jobs, dtype=np.int64)

    def job(env, j):
        ttf = rng.exponential(mtbf)
        piece = 0
        while piece < len(pieces):
            length = sum(pieces[piece])
            if ttf >= length:
                yield env.timeout(length)
                ttf -= length
                piece += 1
                continue
            yield env.timeout(ttf)  # failure: the piece is lost
            failures[j] += 1
            while True:
                yield env.timeout(sc.queue_wait)
                ttf = rng.exponential(mtbf)
                if ttf >= sc.restart_cost:
                    yield env.timeout(sc.restart_cost)
                    ttf -= sc.restart_cost
                    break
                yield env.timeout(ttf)
                failures[j] += 1

    for j in range(n_jobs):
        env = simpy.Environment()
        env.process(job(env, j))
        env.run()
        walls[j] = env.now
    return np.full(n_jobs, sc.work), walls, failures
