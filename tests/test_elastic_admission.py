"""Admission, the queue's waiting-time limit and periodic re-optimisation in the
cluster simulator."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import relmodel.elastic as el

# A step of 1 s whatever the batch (t_sample = 0): X(g, b) = b samples/s, exact in binary,
# so completion times land exactly on the hour and ties with time-outs are real ties.
FLAT = el.ParametricThroughput("flat", t_fixed=1.0, t_sample=0.0)
NO_CHECKPOINTS = {"checkpoint_interval": "1000h", "checkpoint_cost": 0}


def whole_cluster_job(name, submit, hours):
    """A job that needs all 8 GPUs (batch 8) for `hours`: one runs at a time."""
    return el.Job(FLAT, work=hours * 3600 * 8.0, batch=8, gpus=8, min_gpus=8, job_id=name, submit_time=submit)


def run(jobs, policy, **config):
    cfg = el.ClusterConfig(n_gpus=8, **{**NO_CHECKPOINTS, **config})
    return el.run_policy(jobs, policy, cfg)


def times_of(run_, what):
    return {who: t for t, kind, who, *_ in run_.events if kind == what}


QUEUE = [whole_cluster_job("A", 0.0, 2.0),  # runs 0 - 2
         whole_cluster_job("B", 0.5, 2.0),  # limit 1.5: still waiting, dropped
         whole_cluster_job("D", 1.0, 2.0),  # limit 2.0: A ends at 2.0, so D starts at its limit
         whole_cluster_job("C", 1.5, 1.0)]  # limit 2.5: D holds the GPUs until 4.0, dropped


@pytest.mark.parametrize("policy", el.CLUSTER_POLICIES)
@pytest.mark.parametrize("admission", ["first-fit", "optimizer"])
def test_queue_time_outs_drop_the_right_jobs(policy, admission):
    r = run(QUEUE, policy, unplaceable="queue", max_wait="1h", admission=admission)
    outcome = dict(zip("ABDC", (el.OUTCOMES[k] for k in r.outcome)))
    assert outcome == {"A": "completed", "B": "dropped", "D": "completed", "C": "dropped"}
    assert times_of(r, "time-out") == {"B": 1.5, "C": 2.5}
    assert r.start.tolist()[:3] == [0.0, pytest.approx(np.nan, nan_ok=True), 2.0]
    assert r.end[2] == 4.0 and r.counters["timeouts"] == 2


@pytest.mark.parametrize("policy", el.CLUSTER_POLICIES)
def test_the_two_ends_of_the_queue(policy):
    unbounded = run(QUEUE, policy, unplaceable="queue")
    assert (unbounded.outcome == 0).all() and unbounded.end.tolist() == [2.0, 4.0, 6.0, 7.0]
    drop = run(QUEUE, policy)
    zero = run(QUEUE, policy, unplaceable="queue", max_wait=0)
    assert [el.OUTCOMES[k] for k in drop.outcome] == ["completed", "dropped", "dropped", "dropped"]
    assert drop.events == zero.events and np.array_equal(drop.outcome, zero.outcome)


def test_a_time_out_unblocks_the_head_of_a_fifo_queue():
    # R and S hold 4 GPUs each; E (8 GPUs) waits at the head of the queue and F (1 GPU) behind it.
    # S ends at 1.0 and frees 4 GPUs, but F stays behind E until E's limit runs out at 1.5.
    s = el.Job(FLAT, work=3600 * 4.0, batch=4, gpus=4, job_id="S", submit_time=0.0)
    jobs = [dataclasses.replace(s, job_id="R", work=3 * 3600 * 4.0), s,
            dataclasses.replace(s, job_id="E", batch=8, gpus=8, submit_time=0.1),
            dataclasses.replace(s, job_id="F", batch=1, gpus=1, work=3600.0, submit_time=0.2)]
    r = run(jobs, "fifo", unplaceable="queue", max_wait="1.4h")
    assert times_of(r, "time-out") == {"E": pytest.approx(1.5)}
    assert r.start[3] == pytest.approx(1.5) and el.OUTCOMES[r.outcome[3]] == "completed"
    unbounded = run(jobs, "fifo", unplaceable="queue")
    assert unbounded.start[2] == 3.0 and unbounded.start[3] == 3.5  # F waited for all of E (3.0 - 3.5)


def sweep_workload(seed):
    return el.synthetic_workload(60, "6h", seed=seed, batch_range_factor=(0.25, 4.0))


@pytest.mark.parametrize("admission", ["first-fit", "optimizer"])
@pytest.mark.parametrize("policy", el.CLUSTER_POLICIES)
def test_every_wait_respects_the_limit(policy, admission):
    work = sweep_workload(5)
    r = el.run_policy(work, policy, el.ClusterConfig(unplaceable="queue", max_wait="0.75h", admission=admission))
    timed_out = times_of(r, "time-out")
    ids = [j.job_id for j in work]
    for n, job in enumerate(work):
        if job.job_id in timed_out:
            assert np.isnan(r.start[n]) and el.OUTCOMES[r.outcome[n]] == "dropped"
            assert timed_out[job.job_id] == pytest.approx(job.submit_time + 0.75, abs=1e-12)
        elif np.isfinite(r.start[n]):
            assert r.start[n] - job.submit_time <= 0.75 + 1e-12
    assert r.counters["timeouts"] == len(timed_out) > 0  # the load is high enough for some to wait too long
    assert set(timed_out) <= set(ids)


@pytest.mark.parametrize("admission", ["first-fit", "optimizer"])
@pytest.mark.parametrize("policy", el.CLUSTER_POLICIES)
@pytest.mark.parametrize("failure_rate", [0.0, 2.0])
def test_periodic_reoptimisation_changes_nothing_when_nothing_changed(policy, admission, failure_rate):
    # Every arrival, completion, failure and repair re-optimises already; a tick in between finds the
    # same jobs on the same GPUs and must leave them alone: no pause, no rescale, the same bits.
    work = sweep_workload(2)
    config = el.ClusterConfig(unplaceable="queue", max_wait="2h", admission=admission, failure_rate=failure_rate,
                              seed=2)
    plain = el.run_policy(work, policy, config)
    ticked = el.run_policy(work, policy, dataclasses.replace(config, reoptimize_every="7min"))
    assert plain.events == ticked.events and plain.counters == ticked.counters
    assert np.array_equal(plain.end, ticked.end, equal_nan=True)
    assert np.array_equal(plain.start, ticked.start, equal_nan=True)


def test_periodic_reoptimisation_is_recorded():
    ds = el.simulate_cluster(sweep_workload(1), "elastic", reoptimize_every="30min", unplaceable="queue",
                             max_wait="1h", admission="optimizer")
    assert ds.attrs["reoptimize_every_h"] == 0.5 and ds.attrs["max_wait_h"] == 1.0
    assert ds.attrs["admission"] == "optimizer" and int(ds.timeouts[0]) == int(ds.dropped[0]) > 0


# -- admission by the optimizer -------------------------------------------------------
SCALER = el.ParametricThroughput("scaler", t_fixed=0.0, t_sample=0.01, t_hop=0.01)  # sub-linear in GPUs
SLOW = el.ParametricThroughput("slow", t_fixed=1.0, t_sample=0.0)  # 1 sample/s per sample of batch


def contested():
    """A job that scales perfectly holds all 8 GPUs; a slow 1-GPU job arrives at 1 h."""
    big = el.Job(SCALER, work=8 * 100.0 * 3600 * 4, batch=8 * 16, gpus=8, min_batch=16, max_batch=8 * 16,
                 job_id="big")
    small = el.Job(SLOW, work=3600.0, batch=1, gpus=1, job_id="small", submit_time=1.0)
    return [big, small]


def test_first_fit_admits_what_fits_and_the_optimizer_what_pays():
    jobs = contested()
    # First fit: the small job's minimum fits beside the big one's, so it starts on arrival.
    ff = run(jobs, "elastic", **{"admission": "first-fit"})
    assert ff.start[1] == 1.0
    # Throughput: the big job's eighth GPU is worth 47 samples/s, the small job 1; it is left out (dropped).
    opt = run(jobs, "elastic", admission="optimizer")
    assert el.OUTCOMES[opt.outcome[1]] == "dropped" and np.isnan(opt.start[1])
    # Queued, it starts when the big job is done.
    queued = run(jobs, "elastic", admission="optimizer", unplaceable="queue")
    assert queued.start[1] == queued.end[0]
    # Speedup: the small job's first GPU is worth 1, the big job's eighth 0.47: it starts on arrival.
    speedup = run(jobs, "elastic", admission="optimizer", objective="speedup")
    assert speedup.start[1] == 1.0


def test_optimizer_admission_with_fixed_ranges_matches_the_baseline():
    work = el.synthetic_workload(30, "6h", seed=7, batch_range_factor=(1, 1))
    config = el.ClusterConfig(admission="optimizer", unplaceable="queue", max_wait="1h", failure_rate=1.0, seed=7)
    a, b = (el.run_policy(work, p, config) for p in ("elastic", "fixed-batch"))
    assert [e[1:] for e in a.events] == [e[1:] for e in b.events]
    assert np.array_equal(a.end, b.end, equal_nan=True)


@pytest.mark.parametrize("kwargs, name", [
    ({"max_wait": "1h"}, "max_wait"),  # needs a queue
    ({"unplaceable": "queue", "max_wait": -1}, "max_wait"),
    ({"unplaceable": "queue", "max_wait": float("nan")}, "max_wait"),
    ({"reoptimize_every": 0}, "reoptimize_every"),
    ({"reoptimize_every": "-5min"}, "reoptimize_every"),
    ({"reoptimize_every": float("inf")}, "reoptimize_every"),
    ({"admission": "lottery"}, "admission"),
])
def test_bad_queue_settings_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name}"):
        el.ClusterConfig(**kwargs)


# -- an independent reference for the rigid FIFO queue with a waiting-time limit --------
def fifo_reference(jobs, n_gpus, max_wait):
    """Start and end of each job (NaN: dropped) under FIFO with head-of-line blocking.

    At each instant: completions free their GPUs, then arrivals join the queue,
    then jobs whose limit runs out leave it, in arrival order; after each step
    the head of the queue starts while it fits, so a job whose limit runs out at
    t still starts at t if the jobs before it leave then. Times are multiples of
    1/16 h, exact in binary.
    """
    start, end = [np.nan] * len(jobs), [np.nan] * len(jobs)
    queue, free = [], n_gpus
    deadline = {n: job.submit_time + max_wait for n, job in enumerate(jobs)}
    times = sorted({j.submit_time for j in jobs} | ({t for t in deadline.values() if np.isfinite(t)}))

    def start_heads(t):
        nonlocal free
        while queue and jobs[queue[0]].gpus <= free:
            n = queue.pop(0)
            free -= jobs[n].gpus
            start[n], end[n] = t, t + jobs[n].work / (jobs[n].batch * 3600.0)
            times.append(end[n])
            times.sort()

    k = 0
    while k < len(times):
        t = times[k]
        k += 1
        if k < len(times) and times[k] == t:
            continue  # handle each instant once
        free += sum(jobs[n].gpus for n in range(len(jobs)) if end[n] == t)
        start_heads(t)
        for n in (n for n, job in enumerate(jobs) if job.submit_time == t):
            queue.append(n)
            start_heads(t)
            if n in queue and max_wait == 0:
                queue.remove(n)
        for n in [n for n in queue if deadline[n] == t]:
            if n in queue:
                queue.remove(n)
                start_heads(t)
    return np.array(start), np.array(end)


@st.composite
def fifo_workloads(draw):
    n = draw(st.integers(1, 8))
    submits = sorted(draw(st.lists(st.integers(0, 64), min_size=n, max_size=n)))
    jobs = []
    for k, s in enumerate(submits):
        gpus = draw(st.sampled_from([1, 2, 4, 8]))
        sixteenths = draw(st.integers(1, 64))  # run time in 1/16 h
        jobs.append(el.Job(FLAT, work=sixteenths / 16 * 3600 * gpus, batch=gpus, gpus=gpus, job_id=f"j{k}",
                           submit_time=s / 16))
    max_wait = draw(st.one_of(st.just(0.0), st.just(np.inf), st.integers(1, 48).map(lambda k: k / 16)))
    return jobs, max_wait


@given(fifo_workloads())
def test_the_fifo_queue_matches_an_independent_reference(case):
    jobs, max_wait = case
    config = {"unplaceable": "drop"} if max_wait == 0 else {"unplaceable": "queue", "max_wait": max_wait}
    r = run(jobs, "fifo", **config)
    start, end = fifo_reference(jobs, 8, max_wait)
    assert np.array_equal(r.start, start, equal_nan=True) and np.array_equal(r.end, end, equal_nan=True)
    assert [el.OUTCOMES[k] for k in r.outcome] == ["completed" if np.isfinite(s) else "dropped" for s in start]
