"""The elastic allocator: the dynamic program against brute force, the job model
and the throughput models."""

import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import relmodel.elastic as el
from relmodel._kernels.rng_numba import uniforms
from relmodel.elastic._allocation_kernel import solve_allocation, stream_uniforms


# -- the kernel alone ---------------------------------------------------------
@st.composite
def option_sets(draw):
    """Jobs as lists of (g, value), ascending in g, and a capacity."""
    capacity = draw(st.integers(0, 12))
    jobs = []
    for _ in range(draw(st.integers(0, 4))):
        gpus = sorted(draw(st.sets(st.integers(1, 14), min_size=1, max_size=6)))
        values = draw(st.lists(st.floats(0, 100, allow_subnormal=False), min_size=len(gpus), max_size=len(gpus)))
        jobs.append(list(zip(gpus, values)))
    return jobs, capacity


def brute_force(jobs, capacity):
    best = -math.inf
    for combo in itertools.product(*jobs):
        if sum(g for g, _ in combo) <= capacity:
            best = max(best, sum(v for _, v in combo))
    return best


def run_kernel(jobs, capacity):
    offsets = np.cumsum([0] + [len(j) for j in jobs]).astype(np.int64)
    gpus = np.array([g for j in jobs for g, _ in j], dtype=np.int64)
    values = np.array([v for j in jobs for _, v in j], dtype=float)
    return solve_allocation(offsets, gpus, values, capacity), offsets, gpus, values


@given(option_sets())
def test_kernel_equals_brute_force(instance):
    jobs, capacity = instance
    (chosen, total), offsets, gpus, values = run_kernel(jobs, capacity)
    expected = brute_force(jobs, capacity)
    if expected == -math.inf:
        assert total == -math.inf and np.all(chosen == -1)
        return
    assert math.isclose(total, expected, rel_tol=1e-12, abs_tol=1e-9)
    # the backtracked choice is a feasible allocation worth the optimum
    assert all(offsets[j] <= k < offsets[j + 1] for j, k in enumerate(chosen))
    assert gpus[chosen].sum() <= capacity
    assert math.isclose(values[chosen].sum(), total, rel_tol=1e-12, abs_tol=1e-9)


def test_kernel_leaves_gpus_idle_when_no_job_gains():
    # at-most-c: a job whose value falls beyond 2 GPUs keeps 2 of the 8
    (chosen, total), *_ = run_kernel([[(1, 1.0), (2, 3.0), (4, 2.0), (8, 0.5)]], 8)
    assert chosen.tolist() == [1] and total == 3.0


def test_kernel_prefers_fewer_gpus_on_ties():
    (chosen, _), _, gpus, _ = run_kernel([[(1, 5.0), (2, 5.0), (4, 5.0)]], 4)
    assert gpus[chosen].tolist() == [1]


def test_stream_uniforms_are_the_projects_philox_stream():
    for first in (0, 1, 6, 7):
        out = np.empty(9)
        uniforms(11, 3, 42, first, out)
        assert np.array_equal(stream_uniforms(11, 3, 42, first, 9), out)


# -- allocate(): the job model end to end ----------------------------------------
@st.composite
def parametric_models(draw):
    return el.ParametricThroughput(
        "m", t_fixed=draw(st.floats(1e-3, 0.1)), t_sample=draw(st.floats(1e-4, 1e-2)),
        t_log=draw(st.sampled_from([0.0, 0.005])), t_ring=draw(st.sampled_from([0.0, 0.01])),
        t_hop=draw(st.sampled_from([0.0, 0.002])), max_local_batch=draw(st.integers(2, 16)))


@st.composite
def roofline_models(draw):
    return el.RooflineThroughput(
        "r", t_sample=draw(st.floats(1e-5, 1e-2)), saturation_batch=draw(st.floats(1, 32)),
        t_fixed=draw(st.sampled_from([0.0, 0.01])), t_comm=draw(st.floats(0, 0.05)),
        max_local_batch=draw(st.integers(2, 16)))


def profiled_model(max_local_batch):
    gpus, batch = (1, 2, 4, 8), (2, 4, 8, 16, 32)
    table = np.array([[b / (0.01 + 0.002 * b / g + 0.003 * math.log2(g) + 0.004 * g) for b in batch]
                      for g in gpus])
    table[3, 0] = np.nan  # an unprofiled cell
    return el.ProfiledThroughput("table", gpus, batch, table, max_local_batch=max_local_batch)


def is_valid(job, n_gpus):
    try:
        el.check_job(job, n_gpus)
    except el.JobError:
        return False
    return True


def jobs(n_gpus):
    """Valid jobs on a cluster of n_gpus (the parametric or a profiled model)."""
    return _jobs(n_gpus).filter(lambda job: is_valid(job, n_gpus))


@st.composite
def _jobs(draw, n_gpus):
    model = draw(st.one_of(parametric_models(), roofline_models(), st.integers(2, 16).map(profiled_model)))
    m_hi = model.max_local_batch
    gpus = draw(st.integers(1, min(n_gpus, 8) if isinstance(model, el.ProfiledThroughput) else n_gpus))
    local = draw(st.integers(1, m_hi))
    batch = gpus * local
    lo = draw(st.integers(1, batch))
    hi = draw(st.integers(batch, batch * 3))
    # A gradient noise scale from well below the batch to none at all (statistical efficiency, goodput).
    noise = draw(st.sampled_from([None, 0.25, 1.0, 8.0, 1e30]))
    return el.Job(model, work=1e5, batch=batch, gpus=gpus, min_batch=lo, max_batch=hi,
                  min_local_batch=draw(st.integers(1, local)), min_gpus=draw(st.integers(1, gpus)),
                  noise_scale=None if noise is None else noise * batch)


def speedup_unit(job):
    """One GPU at the submitted batch, memory or not; a profiled table may lack
    that point: then the submitted allocation's throughput per GPU."""
    x = float(job.model.throughput(1, job.batch))
    return x if math.isfinite(x) and x > 0 else float(job.model.throughput(job.gpus, job.batch)) / job.gpus


def brute_force_allocation(job_list, n_gpus, policy, objective, may_wait=()):
    """Every (g, b) pair of every job, from the model directly; a job that may
    wait also has (0 GPUs, worth 0)."""
    per_job = []
    for n, job in enumerate(job_list):
        lo, hi = (job.batch, job.batch) if policy == "fixed-batch" else (job.min_batch, job.max_batch)
        m_hi = job.model.max_local_batch if job.max_local_batch is None else job.max_local_batch
        pairs = {}
        for g in range(job.min_gpus, n_gpus + 1):
            for b in range(lo, hi + 1):
                if b % g == 0 and job.min_local_batch <= b // g <= m_hi:
                    x = float(job.model.throughput(g, b))
                    if job.noise_scale is not None:  # goodput: samples at b are worth E(b0) / E(b) of b0's
                        x *= (1 + job.batch / job.noise_scale) / (1 + b / job.noise_scale)
                    if math.isfinite(x) and x > 0:
                        pairs[g] = max(pairs.get(g, 0.0), x)
        if objective == "speedup":
            pairs = {g: x / speedup_unit(job) for g, x in pairs.items()}
        if n in may_wait:
            pairs[0] = 0.0
        per_job.append(sorted(pairs.items()))
    return brute_force(per_job, n_gpus)


@given(data=st.data(), n_gpus=st.integers(1, 10), policy=st.sampled_from(["elastic", "fixed-batch"]),
       objective=st.sampled_from(["throughput", "speedup"]))
def test_allocate_equals_brute_force(data, n_gpus, policy, objective):
    job_list = data.draw(st.lists(jobs(n_gpus), min_size=1, max_size=3))
    expected = brute_force_allocation(job_list, n_gpus, policy, objective)
    if expected == -math.inf:
        with pytest.raises(ValueError, match="minimum allocations"):
            el.allocate(job_list, n_gpus, policy, objective)
        return
    alloc = el.allocate(job_list, n_gpus, policy, objective)
    assert math.isclose(alloc.value, expected, rel_tol=1e-9)
    assert alloc.gpus.sum() <= n_gpus
    for job, g, b, x in zip(job_list, alloc.gpus, alloc.batch, alloc.throughput):
        lo, hi = (job.batch, job.batch) if policy == "fixed-batch" else (job.min_batch, job.max_batch)
        assert b % g == 0 and lo <= b <= hi and g >= job.min_gpus
        # Goodput where the job has a noise scale: throughput times the efficiency of its batch.
        assert x == pytest.approx(float(job.model.throughput(g, b)) * el.statistical_efficiency(
            b, job.batch, job.noise_scale), rel=1e-12)


@given(data=st.data(), n_gpus=st.integers(1, 10), policy=st.sampled_from(["elastic", "fixed-batch"]),
       objective=st.sampled_from(["throughput", "speedup"]))
def test_admission_by_the_optimizer_equals_brute_force(data, n_gpus, policy, objective):
    # Up to 5 jobs, any subset of which may be left waiting: more jobs than fit is the point.
    job_list = data.draw(st.lists(jobs(n_gpus), min_size=1, max_size=5))
    may_wait = data.draw(st.lists(st.booleans(), min_size=len(job_list), max_size=len(job_list)))
    waits = {n for n, w in enumerate(may_wait) if w}
    expected = brute_force_allocation(job_list, n_gpus, policy, objective, waits)
    if expected == -math.inf:
        with pytest.raises(ValueError, match="minimum allocations"):
            el.allocate(job_list, n_gpus, policy, objective, may_wait=may_wait)
        return
    alloc = el.allocate(job_list, n_gpus, policy, objective, may_wait=may_wait)
    assert math.isclose(alloc.value, expected, rel_tol=1e-9, abs_tol=1e-12)
    assert alloc.gpus.sum() <= n_gpus
    for n, (job, g, b, x) in enumerate(zip(job_list, alloc.gpus, alloc.batch, alloc.throughput)):
        if g == 0:
            assert n in waits and b == 0 and x == 0 and not alloc.admitted[n]
            continue
        assert g >= job.min_gpus and b % g == 0
        assert x == pytest.approx(float(job.model.throughput(g, b)) * el.statistical_efficiency(
            b, job.batch, job.noise_scale), rel=1e-12)
    # Jobs that may not wait are never left out, and the value adds up.
    assert all(alloc.admitted[n] for n in range(len(job_list)) if n not in waits)
    unit = [1.0 if objective == "throughput" else speedup_unit(j) for j in job_list]
    assert math.isclose(sum(x / u for x, u in zip(alloc.throughput, unit)), alloc.value, rel_tol=1e-12, abs_tol=1e-12)


def test_the_optimizer_admits_the_jobs_worth_most():
    # 8 GPUs, three jobs that each need 4: two run, the one that gains least waits.
    fast, slow = el.ParametricThroughput("fast", 0.01, 0.001), el.ParametricThroughput("slow", 0.01, 0.004)
    job_list = [el.Job(m, 1e6, 64, gpus=4, min_gpus=4, max_gpus=4, job_id=m.name + str(k))
                for k, m in enumerate([slow, fast, fast])]
    alloc = el.allocate(job_list, 8, may_wait=True)
    assert alloc.admitted.tolist() == [False, True, True] and alloc.gpus.tolist() == [0, 4, 4]
    assert "1 waiting" in repr(alloc)
    with pytest.raises(ValueError, match="minimum allocations"):
        el.allocate(job_list, 8)  # none may wait: 12 GPUs needed
    with pytest.raises(ValueError, match="may_wait"):
        el.allocate(job_list, 8, may_wait=[True])


def test_speedup_counts_from_one_gpu_at_the_submitted_batch():
    # Submitted at batch 512 on 4 GPUs (128 each); one GPU could not hold 512, but the unit is X(1, 512).
    model = el.FITTED_MODELS["resnet50"]
    job = el.Job(model, 1e6, 512, gpus=4, min_gpus=4, max_gpus=4)
    alloc = el.allocate([job], 64, "fixed-batch", "speedup")
    assert alloc.value == pytest.approx(float(model.throughput(4, 512) / model.throughput(1, 512)), rel=1e-12)


@given(data=st.data(), n_gpus=st.integers(1, 12), objective=st.sampled_from(["throughput", "speedup"]))
def test_fixed_batch_range_makes_the_policies_coincide(data, n_gpus, objective):
    job_list = [j.with_batch_range(j.batch, j.batch) for j in data.draw(st.lists(jobs(n_gpus), min_size=1,
                                                                                  max_size=4))]
    try:
        a = el.allocate(job_list, n_gpus, "elastic", objective)
    except ValueError:
        with pytest.raises(ValueError):
            el.allocate(job_list, n_gpus, "fixed-batch", objective)
        return
    b = el.allocate(job_list, n_gpus, "fixed-batch", objective)
    assert np.array_equal(a.gpus, b.gpus) and np.array_equal(a.batch, b.batch) and a.value == b.value


def test_elastic_batch_sizes_beat_the_fixed_batch():
    job_list = [el.Job("resnet50", 1e6, 64, gpus=4, min_batch=32, max_batch=512, job_id=f"r{i}") for i in range(3)]
    elastic = el.allocate(job_list, n_gpus=64, policy="elastic")
    fixed = el.allocate(job_list, n_gpus=64, policy="fixed-batch")
    assert elastic.value > 1.5 * fixed.value  # larger local batches scale further
    assert np.all(fixed.batch == 64) and np.all(elastic.batch > 64)
    ds = elastic.to_dataset()
    assert ds.gpus.sum() == elastic.gpus.sum() and ds.attrs["policy"] == "elastic"


@pytest.mark.parametrize("call, parameter", [
    (lambda job: el.allocate([job], 8, policy="fifo"), "policy"),
    (lambda job: el.allocate([job], 8, objective="fairness"), "objective"),
    (lambda job: el.run_policy([job], "lifo", el.ClusterConfig(n_gpus=8)), "policy"),
    (lambda job: el.ClusterConfig(n_gpus=8, admission="maybe"), "admission"),
    (lambda job: el.ClusterConfig(n_gpus=8, unplaceable="ignore"), "unplaceable"),
    (lambda job: el.ClusterConfig(n_gpus=8, objective="fairness"), "objective"),
    (lambda job: el.ClusterConfig(n_gpus=8, repair_time=-1.0), "repair_time"),
    (lambda job: el.ClusterConfig(n_gpus=8, pause=math.inf), "pause"),
])
def test_a_bad_choice_or_duration_is_a_parameter_error_naming_it(call, parameter):
    from relmodel import ParameterError

    with pytest.raises(ParameterError) as raised:
        call(el.Job("bert", 1e6, 64, gpus=2, job_id="b"))
    assert raised.value.parameter == parameter


def test_allocate_rejects_bad_arguments_and_jobs():
    job = el.Job("bert", 1e6, 64, gpus=2, job_id="b")
    with pytest.raises(ValueError, match="policy"):
        el.allocate([job], 8, policy="fifo")
    with pytest.raises(ValueError, match="objective"):
        el.allocate([job], 8, objective="fairness")
    pair = [el.Job("bert", 1e6, 64, gpus=2, min_gpus=2, job_id=c) for c in "cd"]
    with pytest.raises(ValueError, match="n_gpus: the jobs need 4 GPUs at their minimum allocations; there are 3"):
        el.allocate(pair, 3)
    with pytest.raises(el.JobError, match="job 'x': min_batch: B_lo = 256 > B_hi = 128"):
        el.allocate([el.Job("bert", 1e6, 128, min_batch=256, max_batch=128, job_id="x")], 8)


@pytest.mark.parametrize("changes, field, text", [
    ({"work": -5.0}, "work", "> 0"),
    ({"work": 0.0}, "work", "> 0"),
    ({"work": math.nan}, "work", "> 0"),
    ({"min_batch": 256, "max_batch": 128}, "min_batch", "B_lo = 256 > B_hi = 128"),
    ({"batch": 512}, "batch", "outside [B_lo, B_hi]"),
    ({"min_gpus": 128}, "min_gpus", "no feasible GPU count"),
    ({"max_local_batch": 1, "max_gpus": 8}, "gpus", "no feasible GPU count"),
    ({"gpus": 3}, "gpus", "not a whole local batch"),
    ({"gpus": 128}, "gpus", "outside [1, 64]"),
    ({"model": "alexnet"}, "model", "unknown model 'alexnet'"),
    ({"batch": 0, "min_batch": 0}, "batch", "whole number in [1, 2**53]"),
    ({"submit_time": -1.0}, "submit_time", "in [0, 2**40 s]"),
    ({"submit_time": 1e300}, "submit_time", "in [0, 2**40 s]"),
])
def test_invalid_jobs_name_the_field(changes, field, text):
    fields = dict(model="resnet50", work=1e6, batch=128, gpus=2, min_batch=64, max_batch=256, job_id="j7")
    fields.update(changes)
    with pytest.raises(el.JobError) as err:
        el.check_job(el.Job(**fields), n_gpus=64)
    assert err.value.field == field and err.value.job_id == "j7" and text in str(err.value)


# -- throughput models ----------------------------------------------------------
def test_parametric_form():
    m = el.ParametricThroughput("m", t_fixed=0.01, t_sample=0.002, t_log=0.003, t_ring=0.004, t_hop=0.001)
    assert m.step_time(1, 64) == pytest.approx(0.01 + 0.002 * 64)  # no communication on one GPU
    assert m.step_time(8, 64) == pytest.approx(0.01 + 0.002 * 8 + 0.003 * 3 + 0.004 * 2 * 7 / 8 + 0.001 * 7)
    g = np.arange(1, 65)
    assert np.all(np.diff(m.comm_time(g)) > 0)  # communication grows with g
    assert np.all(np.diff(m.throughput(8, np.arange(8, 512, 8))) > 0)  # larger batches go faster
    with pytest.raises(ValueError, match="t_ring"):
        el.ParametricThroughput("m", 0.01, 0.002, t_ring=-1)


def test_fit_parametric_recovers_the_model():
    true = el.ParametricThroughput("m", 0.02, 0.001, 0.004, 0.006, 0.0003)
    g, b = np.meshgrid([1, 2, 4, 8, 16, 32, 64], [32, 64, 128, 256])
    fit = el.fit_parametric("m", g.ravel(), b.ravel(), true.step_time(g.ravel(), b.ravel()))
    for term in ("t_fixed", "t_sample", "t_log", "t_ring", "t_hop"):
        assert getattr(fit, term) == pytest.approx(getattr(true, term), rel=1e-6, abs=1e-12)


def test_profiled_table_interpolates_and_refuses_to_extrapolate():
    t = profiled_model(16)
    assert float(t.throughput(2, 8)) == pytest.approx(t.throughput_table[1, 2])  # on the grid: exact
    mid = float(t.throughput(2, 12))  # between b = 8 and 16, linear in log2 b
    assert min(t.throughput_table[1, 2:4]) < mid < max(t.throughput_table[1, 2:4])
    assert math.isnan(float(t.throughput(16, 8))) and math.isnan(float(t.throughput(1, 64)))
    assert math.isnan(float(t.throughput(8, 3)))  # next to the unprofiled cell
    points = el.ProfiledThroughput.from_points("p", [1, 1, 2], [8, 8, 16], [0.1, 0.3, 0.1])
    assert points.throughput_table[0, 0] == pytest.approx(8 / 0.2)  # the median of repeats
    assert np.isnan(points.throughput_table[0, 1]) and points.max_local_batch == 8


def test_a_hole_in_the_profile_has_the_same_rule_on_every_side():
    """A profiled point whose up-right neighbour is unprofiled reads as its value, not NaN (scipy's
    cell weights 0 x NaN, which would leave a job submitted there 'no throughput'), as on its other sides."""
    table = np.array([[10.0, 20.0, 40.0], [30.0, np.nan, 50.0], [35.0, 45.0, 60.0]])
    t = el.ProfiledThroughput("hole", (1, 2, 4), (8, 16, 32), table)
    for i, g in enumerate(t.gpus):  # every profiled point is its own value, around the hole too
        for k, b in enumerate(t.batch):
            assert float(t.throughput(g, b)) == table[i, k] or (np.isnan(table[i, k]) and np.isnan(t.throughput(g, b)))
    # along a grid line past the hole: linear in log2 between the two profiled ends
    assert float(t.throughput(1, 8 * 2**0.25)) == pytest.approx(10.0 + 0.25 * 10.0)
    assert float(t.throughput(2**1.5, 8)) == pytest.approx(30.0 + 0.5 * 5.0)
    # inside any of the four cells that touch the hole: NaN, on each side alike
    for g, b in ((2**0.5, 8 * 2**0.5), (2**1.5, 8 * 2**0.5), (2**0.5, 16 * 2**0.5), (2**1.5, 16 * 2**0.5)):
        assert math.isnan(float(t.throughput(g, b)))


@given(st.data())
def test_a_full_profile_interpolates_as_scipy_does(data):
    from scipy.interpolate import RegularGridInterpolator

    gpus = tuple(sorted(data.draw(st.sets(st.sampled_from([1, 2, 4, 8, 16, 64]), min_size=2, max_size=5))))
    batch = tuple(sorted(data.draw(st.sets(st.integers(1, 4096), min_size=2, max_size=6))))
    table = np.array(data.draw(st.lists(st.floats(0.1, 1e6), min_size=len(gpus) * len(batch),
                                        max_size=len(gpus) * len(batch)))).reshape(len(gpus), len(batch))
    g = np.array(data.draw(st.lists(st.floats(0.5, 100.0), min_size=1, max_size=20)))
    b = np.array(data.draw(st.lists(st.floats(0.5, 5000.0), min_size=g.size, max_size=g.size)))
    got = el.ProfiledThroughput("full", gpus, batch, table).throughput(g, b)
    scipy = RegularGridInterpolator((np.log2(gpus), np.log2(batch)), table, bounds_error=False,
                                    fill_value=np.nan)(np.stack([np.log2(g), np.log2(b)], axis=-1))
    np.testing.assert_allclose(got, scipy, rtol=1e-12, atol=0)


def test_catalogue_models_are_usable_by_name():
    assert set(el.FITTED_MODELS) == {"bert", "deepspeech2", "gpt2", "inception3", "resnet50", "vgg16"}
    for model in el.FITTED_MODELS.values():
        assert all(b <= model.max_local_batch for b in model.batch_sizes)
        assert float(model.throughput(8, model.batch_sizes[-1])) > float(model.throughput(1, model.batch_sizes[-1]))


def test_allocate_refuses_a_huge_cluster():
    job = el.Job("resnet50", 1e6, 256, job_id="a")
    with pytest.raises(ValueError, match="^n_gpus: at most"):
        el.allocate([job], n_gpus=10**6)


def test_synthetic_workload_refuses_too_many_jobs():
    with pytest.raises(ValueError, match="^arrival_rate: .*limit"):
        el.synthetic_workload(16384, "24h")


@given(data=st.data(), n_gpus=st.integers(1, 12))
def test_no_noise_scale_is_the_limit_of_a_large_one(data, n_gpus):
    # The no-penalty model is statistical efficiency's special case: a noise scale far above every batch
    # gives the same options (GPU counts, best batches and their throughput, to rounding).
    job = data.draw(_jobs(n_gpus))
    try:
        plain = el.job_options(dataclasses.replace(job, noise_scale=None), n_gpus)
    except el.JobError:
        with pytest.raises(el.JobError):
            el.job_options(dataclasses.replace(job, noise_scale=1e300), n_gpus)
        return
    huge = el.job_options(dataclasses.replace(job, noise_scale=1e300), n_gpus)
    np.testing.assert_array_equal(plain.gpus, huge.gpus)
    np.testing.assert_allclose(plain.throughput, huge.throughput, rtol=1e-12)


def test_statistical_efficiency_follows_the_noise_scale_law():
    # E(B) = E_min (1 + B / B_noise) samples to the same loss: efficiency(B) * E(B) is E at the submitted batch.
    b = np.array([1, 16, 64, 256, 4096])
    for scale in (1.0, 64.0, 1e6):
        eff = el.statistical_efficiency(b, 64, scale)
        np.testing.assert_allclose(eff * (1 + b / scale), 1 + 64 / scale)
    assert el.statistical_efficiency(64, 64, 10.0) == 1.0 and el.statistical_efficiency(b, 64, None).tolist() == [1.0] * 5
    with pytest.raises(el.JobError, match="noise_scale"):
        el.job_options(el.Job("resnet50", work=1e5, batch=64, gpus=1, noise_scale=-1.0), 8)


def test_a_lone_jobs_elastic_speedup_shrinks_with_its_noise_scale():
    # The seed's low-load ratio is one job alone on the cluster: with statistical efficiency its larger
    # batches are worth less, so elastic's edge over its fixed batch shrinks as the noise scale does.
    base = el.Job("resnet50", work=1e7, batch=64, gpus=1, min_batch=32, max_batch=2048)
    edge = []
    for scale in (None, 64 * 16.0, 64 * 2.0, 64 / 4):
        job = dataclasses.replace(base, noise_scale=scale)
        elastic = el.job_options(job, 64).throughput.max()
        fixed = el.job_options(job, 64, fixed_batch=True).throughput.max()
        edge.append(elastic / fixed)
    assert edge[0] > edge[1] > edge[2] > edge[3] >= 1.0
