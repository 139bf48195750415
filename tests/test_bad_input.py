"""Bad input to the public functions: a named error at once, whose message names
the parameter; never a hang, a crash (another exception type), or a silent
wrong number. (The command line's side is in test_cli.py.)"""

import math
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relmodel as rm
from relmodel import _taxonomy as taxonomy
from relmodel._errors import ParameterError
from relmodel._scenario import FIELDS, MAX_COUNT, ScenarioError
from relmodel._taxonomy import TaxonomyError

BASE = dict(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h", work="7d")
SC = rm.Scenario(**BASE)
HUGE = 2**70  # beyond int64 and uint64
# A keep_jobs run this big needs tens of TiB: more than any machine has.
TOO_MANY_KEPT_JOBS = 2**40
# 2**31 scenario points, made in a blink from two axes (a grid must not fill memory as it is made).
BIG_GRID = {**BASE, "n_gpus": range(1, 2**16 + 1), "failure_rate": [i * 1e-6 for i in range(2**15)]}


def scenario(**fields):
    return rm.Scenario(**{**BASE, **fields})


def simulate(**kwargs):
    return rm.simulate(SC, **{"n_jobs": 16, **kwargs})


def plan(**kwargs):
    return rm.plan(SC, **{"n_jobs": 100, **kwargs})


def cluster(batch_range_factor=(0.5, 2.0), **config):
    workload = rm.elastic.synthetic_workload(2, "4h", seed=0, batch_range_factor=batch_range_factor)
    return rm.elastic.simulate_cluster(workload, n_gpus=16, **config)


def allocate_one(**fields):
    job = rm.elastic.Job(**{"model": "resnet50", "work": 1e6, "batch": 64, "gpus": 8, **fields})
    return rm.elastic.allocate([job], n_gpus=64)


# Stand-ins for files made by the `files` fixture (a FIFO and a huge file need a folder).
FIFO, HUGE_FILE, BINARY_FILE = "<fifo>", "<huge file>", "<binary file>"


# (function, bad keyword arguments, exception, what the message must name)
CASES = [
    # Scenario: each kind of field, and each kind of junk
    (scenario, dict(n_gpus=2**64), ScenarioError, "n_gpus"),
    (scenario, dict(n_gpus=MAX_COUNT + 1), ScenarioError, "n_gpus"),
    (scenario, dict(n_gpus=10**400), ScenarioError, "n_gpus"),  # beyond the float range too
    (scenario, dict(n_gpus=1e300), ScenarioError, "n_gpus"),
    (scenario, dict(n_gpus="8"), ScenarioError, "n_gpus"),
    (scenario, dict(n_gpus=True), ScenarioError, "n_gpus"),
    (scenario, dict(n_gpus=math.nan), ScenarioError, "n_gpus"),
    (scenario, dict(n_gpus=np.uint64(2**64 - 1)), ScenarioError, "n_gpus"),
    (scenario, dict(gpus_per_node=2**64), ScenarioError, "gpus_per_node"),
    (scenario, dict(failure_rate="abc"), ScenarioError, "failure_rate"),
    (scenario, dict(failure_rate="6.5e-3"), ScenarioError, "failure_rate"),
    (scenario, dict(failure_rate=10**400), ScenarioError, "failure_rate"),
    (scenario, dict(failure_rate=1e300), ScenarioError, "failure_rate"),  # n_nodes * rate would overflow
    (scenario, dict(failure_rate=np.float32("nan")), ScenarioError, "failure_rate"),
    (scenario, dict(failure_rate=False), ScenarioError, "failure_rate"),
    (scenario, dict(failure_rate=1j), ScenarioError, "failure_rate"),
    (scenario, dict(work=10**400), ScenarioError, "work"),
    (scenario, dict(work="1e400h"), ScenarioError, "work"),
    (scenario, dict(work=-0.0), ScenarioError, "work"),
    (scenario, dict(checkpoint_interval=math.nan), ScenarioError, "checkpoint_interval"),
    (scenario, dict(checkpoint_cost=None), ScenarioError, "checkpoint_cost"),
    (scenario, dict(checkpoint_cost=b"5min"), ScenarioError, "checkpoint_cost"),
    (scenario, dict(restart_cost=[]), ScenarioError, "restart_cost"),
    (scenario, dict(queue_wait=[1, 1]), ScenarioError, "queue_wait"),
    (scenario, dict(weibull_shape="1"), ScenarioError, "weibull_shape"),
    (scenario, dict(lemon_fraction=math.nan), ScenarioError, "lemon_fraction"),
    (scenario, dict(lemon_rate_factor=1e300), ScenarioError, "lemon_rate_factor"),
    (scenario, dict(queue_wait_distribution=["fixed", None]), ScenarioError, "queue_wait_distribution"),
    (scenario, dict(n_gpus=[8, 8.0]), ScenarioError, "n_gpus"),  # equal once normalised
    (scenario, dict(taxonomy="/dev/zero"), ScenarioError, "taxonomy"),
    (scenario, dict(taxonomy=FIFO), ScenarioError, "taxonomy"),
    (scenario, dict(taxonomy=3), ScenarioError, "taxonomy"),
    (scenario, dict(failure_model="exponential"), ScenarioError, "failure_model"),
    # closed forms
    (rm.mttf, dict(n_gpus=8, failure_rate=math.nan), ValueError, "failure_rate"),
    pytest.param(rm.mttf, dict(n_gpus=2**64, failure_rate=1.0), ValueError, "n_gpus"),
    pytest.param(rm.mttf, dict(n_gpus="8", failure_rate=1.0), ValueError, "n_gpus"),
    pytest.param(rm.mttf, dict(n_gpus=2.5, failure_rate=1.0), ValueError, "n_gpus"),
    pytest.param(rm.mttf, dict(n_gpus=True, failure_rate=1.0), ValueError, "n_gpus"),
    pytest.param(rm.mttf, dict(n_gpus=math.nan, failure_rate=1.0), ValueError, "n_gpus"),
    pytest.param(rm.mttf, dict(n_gpus=8, failure_rate="abc"), ValueError, "failure_rate"),
    (rm.ettr, dict(scenario={**BASE, "n_gpus": HUGE}), ScenarioError, "n_gpus"),
    (rm.ettr, dict(scenario=SC, method=None), ValueError, "method"),
    (rm.ettr, dict(scenario=SC, at=["young"]), ValueError, "at"),
    (rm.optimal_interval, dict(scenario={**BASE, "checkpoint_cost": "5 parsecs"}), ScenarioError, "checkpoint_cost"),
    (rm.optimal_interval, dict(scenario=SC, method=3), ValueError, "method"),
    # simulate and compare: every argument checked before any work (see no_work_before_the_check)
    (simulate, dict(n_jobs=HUGE), ScenarioError, "n_jobs"),
    (simulate, dict(n_jobs=2**62), ScenarioError, "n_jobs"),  # days per point at best: a typing mistake
    (simulate, dict(n_jobs=0), ScenarioError, "n_jobs"),
    (simulate, dict(n_jobs=1e3), ScenarioError, "n_jobs"),
    (simulate, dict(n_jobs="100"), ScenarioError, "n_jobs"),
    (simulate, dict(n_jobs=True), ScenarioError, "n_jobs"),
    (simulate, dict(seed=2**64), ScenarioError, "seed"),
    (simulate, dict(seed=-1), ScenarioError, "seed"),
    (simulate, dict(seed=np.float64(1.0)), ScenarioError, "seed"),
    (simulate, dict(max_failures=math.nan), ScenarioError, "max_failures"),
    (simulate, dict(max_failures=HUGE), ScenarioError, "max_failures"),
    (simulate, dict(quantiles=(0.5, 1.5)), ScenarioError, "quantiles"),
    (simulate, dict(quantiles=(-0.01,)), ScenarioError, "quantiles"),
    (simulate, dict(quantiles=(math.nan,)), ScenarioError, "quantiles"),
    (simulate, dict(quantiles=(True,)), ScenarioError, "quantiles"),
    (simulate, dict(quantiles=(0.5, 0.5)), ScenarioError, "quantiles"),
    (simulate, dict(quantiles=0.5), ScenarioError, "quantiles"),
    (simulate, dict(quantiles="0.5"), ScenarioError, "quantiles"),
    (simulate, dict(keep_jobs="no"), ScenarioError, "keep_jobs"),
    (simulate, dict(keep_jobs=True, n_jobs=TOO_MANY_KEPT_JOBS), ScenarioError, "keep_jobs"),
    (rm.simulate, dict(scenario=BIG_GRID), ScenarioError, "scenario"),  # 2**31 points: tens of TiB of sums
    (simulate, dict(progress="yes"), ScenarioError, "progress"),
    (simulate, dict(n_threads=True), ScenarioError, "n_threads"),
    (simulate, dict(n_threads=HUGE), ScenarioError, "n_threads"),
    (simulate, dict(backend=None), ScenarioError, "backend"),
    (simulate, dict(backend=["numba"]), ScenarioError, "backend"),
    (rm.compare, dict(grid=SC, n_jobs=HUGE), ScenarioError, "n_jobs"),
    (rm.compare, dict(grid=SC, n_jobs=16, seed=-1), ScenarioError, "seed"),
    (rm.compare, dict(grid=SC, n_jobs=16, quantiles=(2,)), ScenarioError, "quantiles"),
    # plan
    (plan, dict(seed=2**64), ScenarioError, "seed"),
    (plan, dict(max_failures=HUGE), ScenarioError, "max_failures"),
    (plan, dict(target_ettr=math.nan), ValueError, "target_ettr"),
    (plan, dict(target_ettr=True), ValueError, "target_ettr"),
    (rm.plan, dict(n_gpus="8", failure_rate=1e-3, work="1d"), ScenarioError, "n_gpus"),
    pytest.param(plan, dict(n_jobs="100"), ValueError, "n_jobs"),
    # failure models
    (rm.Exponential, dict(rate="abc"), ScenarioError, "rate"),
    (rm.Exponential, dict(rate=10**400), ScenarioError, "rate"),
    (rm.Weibull, dict(shape=math.nan, rate=1.0), ScenarioError, "shape"),
    (rm.Weibull.from_mean, dict(shape=1.0, mean=1e-320, n_nodes=8), ScenarioError, "mean"),
    (rm.LemonMixture, dict(rate=1.0, lemon_fraction=1.5, lemon_rate_factor=2.0), ScenarioError, "lemon_fraction"),
    (rm.FailureCategory, dict(name="a", share="abc"), ScenarioError, "share"),
    (rm.TaxonomyMixture, dict(rate=1.0, categories=None), ScenarioError, "categories"),
    (rm.TaxonomyMixture, dict(rate=1.0, categories=[3]), ScenarioError, "categories"),
    (rm.Exponential(1.0).sample, dict(n=2**40, n_nodes=8), ScenarioError, "n"),  # 8 TiB
    (rm.Exponential(1.0).sample, dict(n=HUGE, n_nodes=8), ScenarioError, "n"),
    (rm.Exponential(1.0).sample, dict(n=10, n_nodes=8, seed=-1), ScenarioError, "seed"),
    (rm.Exponential(1.0).mean, dict(n_nodes=2**64), ScenarioError, "n_nodes"),
    (rm.LemonMixture(1.0, 0.5, 3.0).mean, dict(n_nodes=2**40), ScenarioError, "n_nodes"),
    (rm.Exponential(1.0).survival, dict(t="1h", n_nodes=8), ScenarioError, "t"),
    (rm.Exponential(1.0).survival, dict(t=math.nan, n_nodes=8), ScenarioError, "t"),
    # taxonomy files: the message names the file
    (taxonomy.load, dict(name_or_path="/dev/zero"), TaxonomyError, "/dev/zero"),
    (taxonomy.load, dict(name_or_path="/dev/stdin"), TaxonomyError, "/dev/stdin"),
    (taxonomy.load, dict(name_or_path=FIFO), TaxonomyError, FIFO),
    (taxonomy.load, dict(name_or_path=HUGE_FILE), TaxonomyError, HUGE_FILE),
    (taxonomy.load, dict(name_or_path=BINARY_FILE), TaxonomyError, BINARY_FILE),
    (taxonomy.load, dict(name_or_path="/"), TaxonomyError, "/"),
    (taxonomy.load, dict(name_or_path=3), TaxonomyError, "taxonomy"),
    (taxonomy.load, dict(name_or_path="a\0b"), TaxonomyError, "taxonomy"),
    # Overflows: refused naming the field, never an OverflowError or a wrong optimum
    (scenario, dict(work=1e18, checkpoint_interval=1e18), ScenarioError, "work"),
    (scenario, dict(fast_checkpoints=(rm.CheckpointLevel(interval=1e-320, cost="1s", restart="1min",
                                                         survives=0.9),)), ScenarioError, "fast_checkpoints[0].interval"),
    (scenario, dict(checkpoint_interval=1e300, fast_checkpoints=(rm.CheckpointLevel(
        interval="1min", cost="1s", restart="1min", survives=0.9),), work=1e6), ScenarioError, "checkpoint_interval"),
    (cluster, dict(checkpoint_interval=2.2e-309), ParameterError, "checkpoint_interval"),
    (cluster, dict(batch_range_factor=(1e-300, 1e300)), ParameterError, "batch_range_factor"),
    (allocate_one, dict(batch=2**64), rm.elastic.JobError, "batch"),
    (allocate_one, dict(batch=64, max_batch=1e300), rm.elastic.JobError, "max_batch"),
]


@pytest.fixture
def files(tmp_path):
    """The paths behind FIFO, HUGE_FILE and BINARY_FILE."""
    paths = {FIFO: tmp_path / "fifo.toml", HUGE_FILE: tmp_path / "huge.toml", BINARY_FILE: tmp_path / "binary.toml"}
    os.mkfifo(paths[FIFO])  # reading it would block for ever: nothing writes to it
    with open(paths[HUGE_FILE], "wb") as file:
        file.truncate(taxonomy.MAX_TAXONOMY_FILE_BYTES + 1)  # sparse: bigger than any taxonomy, refused by its size
    paths[BINARY_FILE].write_bytes(bytes(range(256)))
    return {key: str(path) for key, path in paths.items()}


@pytest.fixture
def no_work_before_the_check(monkeypatch):
    """Estimating (packing the points, then the kernels) is the first work simulate does: a check
    must come before it."""
    def estimate(*args, **kwargs):
        raise AssertionError("work started before the arguments were checked")
    monkeypatch.setattr(sys.modules["relmodel._simulate"], "estimate", estimate)  # the module, not rm.simulate


@pytest.mark.parametrize("function, kwargs, error, name", CASES)
def test_bad_input_is_a_named_error_at_once(function, kwargs, error, name, files, request):
    if function in (simulate, rm.simulate, rm.compare):
        request.getfixturevalue("no_work_before_the_check")
    kwargs = {key: files.get(value, value) if isinstance(value, str) else value for key, value in kwargs.items()}
    with pytest.raises(error) as info:
        function(**kwargs)
    assert files.get(name, name) in str(info.value)
    if isinstance(info.value, ScenarioError):
        assert info.value.parameter.endswith(name)


@pytest.mark.parametrize("field, value", [
    ("failure_rate", -0.0), ("checkpoint_cost", -0.0), ("checkpoint_cost", "-0s"), ("restart_cost", np.float32(-0.0)),
    ("queue_wait", "-0min"), ("lemon_fraction", -0.0), ("lemon_rate_factor", -0.0),
])
def test_minus_zero_becomes_zero(field, value):
    """-0.0 prints as "-0" and turns 1/x into -inf: a zero is stored as +0.0."""
    stored = getattr(scenario(**{field: value}), field)
    assert stored == 0.0 and math.copysign(1.0, stored) == 1.0
    assert math.copysign(1.0, rm.to_hours(-0.0)) == 1.0 and math.copysign(1.0, rm.Exponential(-0.0).rate) == 1.0


def test_zero_failure_rate_from_minus_zero_is_no_failures():
    sc = scenario(failure_rate=-0.0)
    assert sc.mttf == math.inf and rm.ettr(sc) == pytest.approx(1.0)


def test_numpy_scalars_are_their_values():
    sc = scenario(n_gpus=np.int64(1024), failure_rate=np.float32(0.5), work=np.float64(168.0),
                  gpus_per_node=np.array(8))
    assert sc == scenario(failure_rate=float(np.float32(0.5)), work=168.0)
    assert type(sc.n_gpus) is int and type(sc.failure_rate) is float
    ds = rm.simulate(SC, n_jobs=np.int64(16), seed=np.uint32(3), max_failures=np.int16(50),
                     quantiles=np.array([0.5, -0.0]))
    assert ds.attrs["seed"] == 3 and type(ds.attrs["seed"]) is int
    assert list(ds["quantile"].values) == [0.5, 0.0] and math.copysign(1.0, ds["quantile"].values[1]) == 1.0


def test_a_lemon_mixture_of_a_huge_job_is_a_short_table():
    """2**32 nodes with half of them lemons: a table of some 10^6 likely lemon counts
    (it took one entry per count, 2**32 of them, once scipy's tail quantile failed)."""
    from relmodel._failures import job_rate_log_masses, job_rate_table

    cdf, _ = job_rate_table(MAX_COUNT, 1.0, 0.5, 3.0)
    log_mass, _ = job_rate_log_masses(MAX_COUNT, 1.0, 0.5, 3.0)
    assert cdf.size < 4_000_000 and log_mass.size < 4_000_000 and cdf[-1] == 1.0
    assert math.fsum(np.exp(log_mass)) == pytest.approx(1.0, abs=1e-12)


# -- junk in every scalar field of Scenario -----------------------------------------

JUNK = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.0, 1e308, 5e-324, True, False, None, "", "abc", "nan",
                     "1e400h", "-0s", b"8", 1j, np.float64(math.nan), np.float32(-0.0), np.int64(-1),
                     np.uint64(2**64 - 1), np.bool_(True), np.array([]), object()]),
    st.integers(min_value=2**63, max_value=2**2000), st.integers(max_value=-(2**63)),
    st.floats(), st.text(max_size=8),
    st.lists(st.one_of(st.floats(), st.integers(), st.text(max_size=3), st.none()), max_size=3),
)


@settings(max_examples=300)  # constructing a Scenario takes microseconds
@given(field=st.sampled_from(sorted(FIELDS)), value=JUNK)
def test_junk_in_any_field_is_a_valid_scenario_or_an_error_naming_the_field(field, value):
    try:
        sc = scenario(**{field: value})
    except (ValueError, TypeError) as err:  # ScenarioError is a ValueError
        assert field in str(err), (field, value, err)
        return
    for item in getattr(sc, field) if field in sc.dims else [getattr(sc, field)]:
        kind = FIELDS[field][1]
        if kind == "count":
            assert type(item) is int and 1 <= item <= MAX_COUNT
        elif kind != "choice":
            assert type(item) is float and math.isfinite(item) and math.copysign(1.0, item) == 1.0


@pytest.mark.parametrize("make, match", [
    (lambda folder: "/dev/zero", "not a regular file"),
    (lambda folder: (os.mkfifo(folder / "fifo"), folder / "fifo")[1], "not a regular file"),
    (lambda folder: (folder / "deep.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000) and folder / "deep.toml",
     "nested too deeply"),
    (lambda folder: (folder / "huge.toml").write_bytes(b"#" * (2**20 + 1)) and folder / "huge.toml", "over the limit"),
    (lambda folder: (folder / "jobs.toml").write_text("[sweep]\nn_gpus = [8]\n[fixed]\nfailure_rate = 1e-3\n"
                                                      "checkpoint_interval = '1h'\nwork = '1d'\n[run]\n"
                                                      "n_jobs = 1_000_000_000_000_000\nseed = 0\n") and folder / "jobs.toml",
     "n_jobs"),
])
def test_a_study_file_that_cannot_be_one_is_refused_at_once(tmp_path, make, match):
    from relmodel._study import StudyError, load_study

    with pytest.raises(StudyError, match=match):
        load_study(make(tmp_path))


def test_a_log_that_cannot_be_read_whole_is_refused_at_once(tmp_path):
    from relmodel._job_logs import LogError, read_log

    for path in ("/dev/zero", tmp_path):
        with pytest.raises(LogError, match="not a regular file"):
            read_log(path)
    sparse = tmp_path / "huge.csv"
    with open(sparse, "wb") as file:
        file.truncate(2**40)  # a terabyte of holes: no disk used, and no memory here could hold it read
    with pytest.raises(ScenarioError, match="^log: .* memory"):
        rm.fit(sparse)
