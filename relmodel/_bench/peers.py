"""The same timeline model written as a user would without relmodel: the
honest competitors of the benchmark. Same semantics as the kernels (docs:
user-guide/job-model.md, 'What a job does'), exponential failures, fixed queue
wait; numpy's own generator.

Each returns per-job (productive, wall, failures) arrays.
"""

from __future__ import annotations

import numpy as np

from .._scenario import Scenario


def numpy_timelines(sc: Scenario, n_jobs: int, seed: int = 0):
    """Simulate job timelines with NumPy as a strong user would: vectorised over jobs.

    The strongest NumPy form we know: numpy's ziggurat exponentials on PCG64;
    a job-level fast path (a job whose first failure falls after its
    failure-free end needs nothing more); state kept only for the jobs still
    running; every whole segment a failure draw spans skipped at once; in-place
    updates; failed restarts redrawn for those jobs alone.

    Parameters
    ----------
    sc : Scenario
        A scalar scenario (exponential failures, fixed queue wait).
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
    rng = np.random.default_rng(seed)  # PCG64
    exponential = rng.standard_exponential
    mtbf = sc.mttf
    n_full, remainder = sc.intervals
    segment = sc.checkpoint_interval + sc.checkpoint_cost
    restart_cost, queue_wait = sc.restart_cost, sc.queue_wait
    overhead = np.zeros(n_jobs)  # lost work, restarts and queue waits
    failures = np.zeros(n_jobs, dtype=np.int64)

    t = exponential(n_jobs)
    t *= mtbf
    # Job-level fast path: only the jobs whose first failure comes before the end are followed.
    running = np.flatnonzero(t < n_full * segment + remainder)
    # State of the running jobs only, compacted as jobs finish.
    t = t[running]
    left = np.full(running.size, float(n_full))  # whole segments still to do
    extra = np.zeros(running.size)  # lost work, restarts and queue waits so far
    count = np.zeros(running.size, dtype=np.int64)
    while running.size:
        # Every job here fails at runtime t after its last checkpoint: skip the whole segments.
        k = np.floor(t / segment)
        np.minimum(k, left, out=k)
        left -= k
        k *= segment
        t -= k  # the lost work
        extra += t
        extra += queue_wait
        count += 1
        # Restart attempts; a failed one is redrawn for those jobs alone.
        r = exponential(running.size)
        r *= mtbf
        retry = np.flatnonzero(r < restart_cost)
        while retry.size:
            extra[retry] += r[retry] + queue_wait
            count[retry] += 1
            fresh = exponential(retry.size)
            fresh *= mtbf
            r[retry] = fresh
            retry = retry[fresh < restart_cost]
        extra += restart_cost
        r -= restart_cost  # runtime to the next failure, from the restored checkpoint
        t = r
        ends = r >= left * segment + remainder
        if ends.any():
            done = np.flatnonzero(ends)
            overhead[running.take(done)] = extra.take(done)
            failures[running.take(done)] = count.take(done)
            going = np.flatnonzero(~ends)  # integer takes: several times faster than masks
            running, t, left, extra, count = (a.take(going) for a in (running, t, left, extra, count))
    wall = overhead
    wall += sc.work + n_full * sc.checkpoint_cost
    return np.full(n_jobs, sc.work), wall, failures


def simpy_timelines(sc: Scenario, n_jobs: int, seed: int = 0):
    """Simulate job timelines with SimPy: a process per job, one timeout per segment, restart and queue step.

    Parameters
    ----------
    sc, n_jobs, seed
        As in `numpy_timelines`.

    Returns
    -------
    productive, wall, failures : numpy.ndarray
        As in `numpy_timelines`.
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
