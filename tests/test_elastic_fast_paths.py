"""The cluster simulator's fast paths against the straightforward ones they replace.

Each job's options looked up per shape (`OptionsTable`) against `check_job` and
`options_for` job by job; the dynamic program's kept rows (`PrefixSolver`)
against `choose_options` from scratch; the kernel's rows against the recurrence as
written; the waiting queue against a deque; the placement's running totals
against sums over the nodes. And whole simulations against digests recorded
with the code before these fast paths existed: the same outputs, bit for bit.
"""

import hashlib
import json
import math
import warnings
from collections import deque

import numpy as np
import pytest

import relmodel.elastic as el
from relmodel.elastic import _cluster as cluster
from relmodel.elastic._allocation_kernel import solve_allocation
from relmodel.elastic._allocate import PrefixSolver, choose_options
from relmodel.elastic._jobs import JobError, OptionsTable, check_job, options_for, rigid_options
from relmodel.elastic._nodes import Placement, node_sizes



def profiled_model():
    g, b = (1, 2, 4, 8, 16), (32, 64, 128, 256, 512)
    table = np.array([[bb / (0.02 + 0.002 * bb / gg + 0.004 * np.log2(gg)) for bb in b] for gg in g])
    table[4, 0] = table[0, 4] = np.nan
    return el.ProfiledThroughput("prof", g, b, table, max_local_batch=256, batch_sizes=(64, 128))


def varied_jobs():
    """Valid jobs of repeated shapes, and invalid ones of every kind `check_job` names."""
    jobs = list(el.synthetic_workload(12, "6h", seed=11))
    jobs += list(el.synthetic_workload(6, "6h", seed=12, models={"prof": profiled_model()}))
    jobs += list(el.synthetic_workload(6, "4h", seed=13, curve="roofline", batch_scaling="per-gpu", max_gpus=16))
    bad = [dict(model="nosuch"), dict(work=-1.0), dict(work=True), dict(submit_time=-1.0), dict(batch=True),
           dict(batch=64.5), dict(batch=0), dict(batch=-0.0), dict(batch=0.0), dict(batch=64.0), dict(gpus=3),
           dict(min_batch=128, max_batch=96), dict(min_gpus=100), dict(max_gpus=0), dict(min_local_batch=300),
           dict(max_local_batch=0), dict(batch=np.int64(64)), dict(batch=[64]), dict(gpus=2, min_gpus=4),
           dict(batch=4, gpus=8), dict(model=profiled_model(), batch=4096, gpus=1)]
    for k, fields in enumerate(bad * 2):  # twice: the second meets the first's cached error
        jobs.append(el.Job(**{"model": "bert", "work": 1e6, "batch": 64, "gpus": 1, "job_id": f"bad{k}", **fields}))
    return jobs


def reference_options(job, n_gpus, policy):
    bounds = check_job(job, n_gpus)
    return rigid_options(bounds) if policy == "fifo" else options_for(bounds, policy == "fixed-batch")


def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("policy", el.CLUSTER_POLICIES)
def test_options_table_gives_each_job_what_check_job_and_options_for_do(policy):
    table = OptionsTable(64, policy)
    shared = 0
    for job in varied_jobs():
        try:
            want = reference_options(job, 64, policy)
        except JobError as err:
            with pytest.raises(JobError) as got:
                table.options(job)
            assert str(got.value) == str(err) and got.value.field == err.field
            continue
        got = table.options(job)
        assert all(same_bits(getattr(got, f), getattr(want, f)) for f in ("gpus", "batch", "throughput"))
        assert same_bits(got.reference, want.reference)
        shared += sum(got is o for o in table._by_shape.values())
    assert shared > 0  # jobs of one shape share their options


def random_lists(rng, pool, steps):
    """Job lists as a simulator makes them: arrivals appended, departures anywhere."""
    jobs = []
    for _ in range(steps):
        move = rng.integers(4)
        if move == 0 and jobs:
            del jobs[rng.integers(len(jobs))]
        elif move == 1 and jobs:
            jobs[rng.integers(len(jobs))] = pool[rng.integers(len(pool))]
        elif move == 2 or not jobs:
            jobs.append(pool[rng.integers(len(pool))])
        yield list(jobs)


@pytest.mark.parametrize("objective", el.OBJECTIVES)
def test_prefix_solver_gives_what_solve_does_on_each_list(objective):
    table = OptionsTable(24, "elastic")
    fixed = OptionsTable(24, "fixed-batch")
    pool = []
    for job in list(el.synthetic_workload(8, "3h", seed=5, max_gpus=24))[:30]:
        pool += [table.options(job), table.options(job).or_wait(), fixed.options(job)]
    rng = np.random.default_rng(3)
    solver = PrefixSolver(objective)
    capacities = [24, 24, 24, 16, 24, 8, 0, 24]
    for step, jobs in enumerate(random_lists(rng, pool, 400)):
        capacity = capacities[step // 20 % len(capacities)]  # now and then nodes down or back
        chosen, total = solver.solve(jobs, capacity)
        want, want_total = choose_options(jobs, capacity, objective)
        assert same_bits(chosen, want) and same_bits(total, want_total)
        if jobs and total != -np.inf:  # the pool's picks are the same options
            assert [solver._gpus[k] for k in solver.pooled] == [o.gpus[c] for o, c in zip(jobs, chosen)]
    assert solver.solve([], 24)[0].size == 0


def recurrence(offsets, gpus, values, capacity):
    """The dynamic program as the allocation kernel's docstring writes it: per c, options in ascending g."""
    prev = [0.0] * (capacity + 1)
    choice = []
    for j in range(len(offsets) - 1):
        cur, row = [], []
        for c in range(capacity + 1):
            best, arg = -math.inf, -1
            for k in range(offsets[j], offsets[j + 1]):
                if gpus[k] > c:
                    break
                v = prev[c - gpus[k]] + values[k]
                if v > best:
                    best, arg = v, k
            cur.append(best)
            row.append(arg)
        prev = cur
        choice.append(row)
    total = prev[capacity] if choice else 0.0
    chosen, c = [-1] * len(choice), capacity
    if total != -math.inf:
        for j in range(len(choice) - 1, -1, -1):
            chosen[j] = choice[j][c]
            c -= gpus[chosen[j]]
    return chosen, total


@pytest.mark.parametrize("seed", range(6))
def test_allocation_kernel_follows_the_recurrence_ties_and_all(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        capacity = int(rng.integers(0, 20))
        sizes = rng.integers(1, 7, size=rng.integers(0, 6))
        gpus = np.concatenate([np.sort(rng.choice(np.arange(0 if rng.random() < 0.3 else 1, 22), n, replace=False))
                               for n in sizes] or [np.zeros(0)]).astype(np.int64)
        values = rng.integers(0, 4, size=gpus.size).astype(float) * 0.1  # ties, and sums that round
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        chosen, total = solve_allocation(offsets, gpus, values, capacity)
        want, want_total = recurrence(offsets.tolist(), gpus.tolist(), values.tolist(), capacity)
        assert chosen.tolist() == want and same_bits(total, want_total)


def test_queue_keeps_order_membership_and_removals_as_a_deque_does():
    rng = np.random.default_rng(7)
    queue, ref = cluster._Queue(), deque()
    for step in range(3000):
        move = rng.integers(5)
        i = int(rng.integers(200))
        if move == 0 and i not in ref:
            queue.append(i), ref.append(i)
        elif move == 1 and ref:
            assert queue.popleft() == ref.popleft()
        elif move == 2 and i in ref:
            queue.remove(i), ref.remove(i)
        elif move == 3:
            front = sorted({int(j) for j in rng.integers(200, size=3)} - set(ref))
            queue.push_front(front), ref.extendleft(reversed(front))
        assert len(queue) == len(ref) and list(queue) == list(ref) and (i in queue) == (i in ref)
        assert not ref or queue.head() == ref[0]


def test_placement_keeps_capacity_and_free_gpus_as_the_sums_over_nodes():
    rng = np.random.default_rng(9)
    place = Placement(node_sizes(30, 8))
    for _ in range(2000):
        move, job, node = rng.integers(4), int(rng.integers(12)), int(rng.integers(place.sizes.size))
        if move == 0 and place.total_free:
            place.acquire(job, int(rng.integers(1, place.total_free + 1)))
        elif move == 1:
            place.release(job, None if rng.random() < 0.5 else min(place.gpus_of(job), int(rng.integers(4))))
        elif move == 2 and place.up[node]:
            place.fail(node)
        elif move == 3 and not place.up[node]:
            place.repair(node)
        assert place.capacity == int(place.sizes[place.up].sum())
        assert place.total_free == int(place.free[place.up].sum())


# -- whole simulations, pinned ------------------------------------------------------
def trace_like_jobs(n, seed):
    """ElasticFlow-like jobs (as the trace reader makes them) at a rate that overloads 16 GPUs."""
    rng = np.random.default_rng(seed)
    names = np.array(["bert", "deepspeech2", "gpt2", "inception3", "resnet50", "vgg16"])
    m = rng.integers(0, 6, n)
    batch = np.array([64, 32, 128, 64, 64, 64])[m] * rng.choice([1, 2], n)
    submit = np.sort(rng.integers(0, 12 * 3600, n)) / 3600.0
    iterations = rng.integers(100, 20000, n)
    gpus = rng.choice([1, 2, 4, 8], n)
    return [el.Job(el.FITTED_MODELS[names[k]], float(it * b), int(b), int(g), min_batch=max(1, round(b * 0.5)),
                   max_batch=int(b * 2), submit_time=float(t), job_id=f"j{i}")
            for i, (k, b, t, it, g) in enumerate(zip(m, batch, submit, iterations, gpus))]


def pinned_cases():
    """(name, jobs, config) of the pinned simulations."""
    mixed = list(el.synthetic_workload(8, "6h", seed=8))
    mixed[2] = el.Job("resnet50", -5.0, 64, 1, submit_time=mixed[2].submit_time, job_id="badwork")
    mixed[7] = el.Job("bert", 1e6, 64, 3, submit_time=mixed[7].submit_time, job_id="badgpus")
    mixed.append(el.Job("bert", 1e6, 64, 1, submit_time=float("nan"), job_id="nansubmit"))
    trace = trace_like_jobs(400, 1)
    small = dict(n_gpus=16)
    return [
        ("mixed-failures", mixed, dict(failure_rate=2.0, seed=3)),
        ("mixed-queue-max-wait", mixed, dict(failure_rate=1.0, seed=2, unplaceable="queue", max_wait="1h")),
        ("mixed-optimizer", mixed, dict(failure_rate=1.0, seed=5, unplaceable="queue", max_wait="2h",
                                        admission="optimizer")),
        ("mixed-ticks-speedup", mixed, dict(failure_rate=1.0, seed=7, reoptimize_every="30min",
                                            objective="speedup", unplaceable="queue", max_wait="3h")),
        ("mixed-explicit-until", mixed, dict(failures=[(0.5, 0), (0.5, 1), (1.0, 2), (3.0, 0)], until=5.0,
                                             gpus_per_node=4, n_gpus=30, unplaceable="queue")),
        ("trace-drop", trace, dict(small, failure_rate=1.0, seed=1)),
        ("trace-queue", trace, dict(small, unplaceable="queue", max_wait="20min", failure_rate=3.0, seed=4)),
    ]


def _hex(x) -> str:
    return float(x).hex()


def digest(run, row) -> str:
    """sha256 of a run's outputs, floats written exactly."""
    record = {
        "events": [[_hex(t), what, str(who), int(g), int(b)] for t, what, who, g, b in run.events],
        "outcome": run.outcome.tolist(), "rejected": [[i, m] for i, m in run.rejected],
        "start": [_hex(x) for x in run.start], "end": [_hex(x) for x in run.end],
        "alloc": [[_hex(t), int(g)] for t, g in zip(run.alloc_times, run.alloc_gpus)],
        "counters": {k: _hex(v) for k, v in run.counters.items()}, "end_time": _hex(run.end_time),
        "summary": {k: _hex(v) for k, v in row.items()},
    }
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


def simulate_pinned(jobs, config):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", el.UnfinishedJobsWarning)
        ds, runs = el.simulate_cluster(jobs, "all", return_runs=True, **config)
    rows = el.summary(ds)
    return {run.policy: (digest(run, rows[run.policy]), len(run.events), rows[run.policy]["completed"],
                         rows[run.policy]["rescales"]) for run in runs}


# Recorded by the simulator before the fast paths (same cases, same digests): policy ->
# (sha256 of the outputs, events logged, jobs completed, rescales).
PINNED = {
    "mixed-explicit-until": {
        "elastic": ("b6e858cafa4d12b23f06c4001c894a61aae1a6163e89abedfdb8706cf12c9c4c", 303, 34, 168),
        "fifo": ("a4811b64a338dd0ce3ed0285cc520c183949387a695a819c6c9f1c64eb34c958", 145, 24, 0),
        "fixed-batch": ("2979828dd07913b87eb19e198b82e9e4e6d0c05608ef6b336da7b649544dc854", 278, 29, 146),
    },
    "mixed-failures": {
        "elastic": ("38c79dffc833def99ba1f0258ca3c04fd39038c9ca2fb2bec5a413983a8c36f6", 399, 47, 236),
        "fifo": ("c918a8d681a8dd70548677913eaea0cf8b4e01e0de2e5094f5f521c0f88bad23", 168, 47, 0),
        "fixed-batch": ("550117f275177e8eb801fb9006e908bac301372d443a9bf7a485d858a5a9adec", 335, 47, 160),
    },
    "mixed-optimizer": {
        "elastic": ("d1a0acbacd71f109233ba27c64a21f222d3f412d843fb35de0f30869fe59c56b", 391, 47, 234),
        "fifo": ("eeb447797caa387d9c12b1b629fd73153d455dc0d64ee61137fab9527fcb6619", 158, 47, 0),
        "fixed-batch": ("297c99adfc13c38b09107cceee51654c93ede2c8d6adad90f781fa93195e1822", 325, 47, 161),
    },
    "mixed-queue-max-wait": {
        "elastic": ("29310d3ed4e19dab63100bacfe5b44ab5fd42c445edff9ea817daa31e2eef65e", 415, 47, 247),
        "fifo": ("a95a6aaaeb7b3da0fd7e893d3079442bcac18ac900e75262816700baf47774c0", 170, 47, 0),
        "fixed-batch": ("39193a78fa745b802fff90b161268183f2222cdd389402e6d00f99a27a3361e0", 352, 47, 177),
    },
    "mixed-ticks-speedup": {
        "elastic": ("a9fd3f2437969349b8ed1dd82f1bd15c63cdebee30e9e523cb4834faacb576d3", 387, 47, 234),
        "fifo": ("9d5da50b2fcf0475817d5eea15dbd7cff9d90446b1ff0f959ef5d89ddcef0bf5", 152, 47, 0),
        "fixed-batch": ("d0c6d24f92127decbb4e2ae55c080ed8d236f361eacdb2f2c32653d4e6ec614b", 303, 47, 145),
    },
    "trace-drop": {
        "elastic": ("234d62b2a52bee1a3939186691a1fd2fa4aabae53f251eed931682a990a806c9", 1596, 240, 556),
        "fifo": ("a9b4886f15d0a2c45ce93565b6433c0bd3fc830737c4ee7f9221aed191b6eeb4", 955, 155, 0),
        "fixed-batch": ("173eace6e2df90252146725dc3458e30468ceafd42cfebacbc9f456271759574", 1582, 230, 552),
    },
    "trace-queue": {
        "elastic": ("17217e2d229bae16d0ba65c2b63042723be948406bc5b061d87bd6dc3cf968a4", 1518, 144, 118),
        "fifo": ("f3250d2d7e5993777540fb7353cc8080455f9a8d8e76fba9a4fcd41f9d55a35d", 1341, 92, 0),
        "fixed-batch": ("55a74bc0a1e8fd873bb68faad23f9c07263f89c9b6b43fa33acb9cb73672ebaf", 1480, 137, 75),
    },
}


@pytest.mark.parametrize("case", pinned_cases(), ids=lambda case: case[0])
def test_simulations_give_the_outputs_recorded_before_the_fast_paths(case):
    name, jobs, config = case
    assert simulate_pinned(jobs, config) == PINNED[name]


def test_progress_callback_counts_every_job_once_per_policy():
    jobs = trace_like_jobs(9000, 2)
    counted = []
    el.run_policy(jobs, "fifo", el.ClusterConfig(n_gpus=16), keep_events=False, on_arrivals=counted.append)
    assert sum(counted) == len(jobs) and len(counted) > 1
    with pytest.warns(el.UnfinishedJobsWarning):
        run = el.run_policy(jobs[:50], "elastic", el.ClusterConfig(n_gpus=16, until=0.5),
                            on_arrivals=counted.append)
    assert sum(counted) == len(jobs) + 50 and run.events  # the jobs past `until` counted too
