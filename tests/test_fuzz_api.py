"""Fuzzing the public API: arguments valid most of the time, edges and junk otherwise
(0, negatives, NaN, infinities, 1e308, 1e-308, huge integers, wrong types, repeated
list items), for the main public functions of relmodel, relmodel.pipeline and
relmodel.elastic and the readers on junk text. Each call ends in a result in range
or one of relmodel's own errors, within a bound on its work and on the memory it
traces, and lets out no warning but relmodel's own."""

import math
import warnings

import numpy as np
import pytest
import xarray as xr
from fuzzing import MEMORY_BUDGET, NoAnswer, budget_in_force, cpu_time_bound, own_warning, traced_peak
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import relmodel as rm
from relmodel._extras import MissingExtraError

# relmodel's refusals: bad input (every ParameterError: ScenarioError, PipelineError, ...),
# a missing optional install, and a pipeline schedule that cannot run.
OWN_ERRORS = (rm.ParameterError, MissingExtraError, rm.pipeline.DeadlockError)
JUNK = st.sampled_from([
    0, -1, -0.0, math.nan, math.inf, -math.inf, 1e308, 1e-308, 2**64, 10**30, "abc", "", None, True, [1, 1], (), {},
    b"x", 1j, np.float64(np.nan), np.int64(-5), "1e308h", "-1h",
])


def arg(*valid):
    """One of the valid values nine times in ten, else junk (so that most calls, of a few
    arguments each, get past the checks into the models)."""
    return st.integers(0, 9).flatmap(lambda i: JUNK if i == 0 else st.sampled_from(valid))


def grid_arg(*valid):
    """A scenario field: a value (or junk), else a sweep of a few distinct values (repeated ones, refused,
    one time in ten)."""
    return st.integers(0, 9).flatmap(lambda i: arg(*valid) if i < 6 else st.lists(
        st.sampled_from(valid), min_size=1, max_size=3, unique=i < 9))


SCENARIO_REQUIRED = {
    "n_gpus": grid_arg(1, 8, 64, 1024, 16384),
    "failure_rate": grid_arg(0, 1e-4, 6.5e-3, 0.1, 1.0, 10.0),
    "checkpoint_interval": grid_arg(1 / 60, 0.5, 1, 4, "20min", "2h"),
    "work": grid_arg(1, 24, 240, "2d"),
}
SCENARIO_OPTIONAL = {
    "checkpoint_cost": grid_arg(0, 0.01, 0.1, "5min"),
    "restart_cost": grid_arg(0, 0.01, 0.25, "10min"),
    "queue_wait": grid_arg(0, 0.1, "30min"),
    "gpus_per_node": grid_arg(1, 8, 16),
    "weibull_shape": grid_arg(0.5, 1.0, 2.0),
    "lemon_fraction": grid_arg(0, 0.01, 0.5),
    "lemon_rate_factor": grid_arg(1, 10, 1000),
    "queue_wait_distribution": grid_arg("fixed", "exponential"),
    "checkpoint_persist": grid_arg(0, 0.05, 0.5),
    "fast_checkpoints": arg(None, (rm.CheckpointLevel(interval=0.1, cost=0.001, restart=0.05, survives=0.9),)),
    "taxonomy": arg(None, "meta-2024"),
}


@st.composite
def keywords(draw, required, optional=None):
    """The required keywords, then a few optional ones."""
    kwargs = {name: draw(value) for name, value in required.items()}
    for name in draw(st.lists(st.sampled_from(sorted(optional or {}) or [""]), max_size=4, unique=True)):
        if name:
            kwargs[name] = draw(optional[name])
    return kwargs


def scenarios():
    return keywords(SCENARIO_REQUIRED, SCENARIO_OPTIONAL)


RUN = {"n_jobs": arg(1, 100, 2000), "max_failures": arg(1, 100, 1000), "seed": arg(0, 1, 2**32 - 1)}
PIPELINE_SHAPE = {"stages": arg(1, 2, 4, 8), "replicas": arg(1, 2, 4), "microbatches": arg(1, 4, 8, 16)}
PIPELINE_TIMES = {"fwd": arg(1.0, 0.5, (1.0, 2.0)), "bwd_input": arg(1.0, 2.0), "bwd_weight": arg(1.0, 0.0)}
FAILED = arg(None, {0: 1}, {1: 1}, {0: 0, 1: 1}, [(0, 1)])


def _pipeline_config(fields):
    return rm.pipeline.PipelineConfig(**fields)


def _elastic_jobs(n, n_gpus, seed):
    return rm.elastic.synthetic_workload(2.0, "6h", seed=seed, max_gpus=n_gpus).jobs[:n]


# Each public call: what it is named, the call, the strategy of its keywords and the check of its result.
CALLS = {
    "Scenario": (lambda **kw: rm.Scenario(**kw), scenarios(), "scenario"),
    "simulate": (lambda sc, **kw: rm.simulate(sc, **kw), keywords({"sc": scenarios(), **RUN}), "dataset"),
    "compare": (lambda sc, **kw: rm.compare(sc, **kw), keywords({"sc": scenarios(), **RUN}), "dataset"),
    "plan": (lambda **kw: rm.plan(**kw), keywords(
        {**SCENARIO_REQUIRED, "n_jobs": arg(100, 500)},
        {**SCENARIO_OPTIONAL, "target_ettr": arg(0.5, 0.9, 0.99), "strategy": arg(*rm.CHECKPOINT_STRATEGIES)}),
        "plan"),
    "plan_checkpoints": (lambda sc, **kw: rm.plan_checkpoints(sc, **kw), keywords(
        {"sc": scenarios(), "n_jobs": arg(100, 500)},
        {"strategies": arg(None, ("blocking",), ("asynchronous", "multilevel"), ("blocking", "blocking"))}),
        "any"),
    "ettr": (lambda sc, **kw: rm.ettr(sc, **kw), keywords(
        {"sc": scenarios()}, {"method": arg("renewal", "linear"), "at": arg("given", "young", "daly", "exact")}),
        "ettr"),
    "optimal_interval": (lambda sc, **kw: rm.optimal_interval(sc, **kw), keywords(
        {"sc": scenarios()}, {"method": arg("exact", "young", "daly")}), "time"),
    "linear_deviation": (lambda **kw: rm.linear_deviation(rm.Scenario(**kw)), scenarios(), "any"),
    "mttf": (rm.mttf, keywords({"n_gpus": arg(1, 8, 16384), "failure_rate": arg(0, 6.5e-3, 1.0)},
                               {"gpus_per_node": arg(1, 8)}), "time"),
    "feasible_interval": (rm.feasible_interval, keywords({"interval": arg(0, 0.5, 1, 10, math.inf, 1e308, 1e-308),
                                                          "work": arg(0.1, 1, 100, 1e308, 1e-308)}), "time"),
    # A converter: the sign and finiteness are its callers' to check (its docstring says so).
    "to_hours": (rm.to_hours, keywords({"value": arg("90s", "1h", "1.5d", 2.0, 0, "5 min", "1e-9s")}), "any"),
    "Exponential": (lambda **kw: rm.ettr(rm.Scenario(n_gpus=64, checkpoint_interval=1, work=24,
                                                     failure_model=rm.Exponential(**kw))),
                    keywords({"rate": arg(0, 6.5e-3, 1.0)}), "ettr"),
    "Weibull": (lambda **kw: rm.Weibull(**kw).sample(4, 8),
                keywords({"shape": arg(0.5, 1.0, 3.0), "rate": arg(6.5e-3, 1.0)}), "times"),
    "LemonMixture": (lambda **kw: rm.LemonMixture(**kw).mean(8), keywords(
        {"rate": arg(6.5e-3, 1.0), "lemon_fraction": arg(0, 0.01, 0.5), "lemon_rate_factor": arg(1, 10, 1e3)}),
        "time"),
    "pipeline.iteration_time": (rm.pipeline.iteration_time, keywords(
        {**PIPELINE_SHAPE}, {**PIPELINE_TIMES, "strategy": arg(*rm.pipeline.RECOVERY_STRATEGIES), "failed": FAILED}),
        "time"),
    "pipeline.evaluate": (lambda strategy, failed, **kw: rm.pipeline.evaluate(
        _pipeline_config(kw), strategy, failed), keywords(
        {**PIPELINE_SHAPE, "strategy": arg(*rm.pipeline.RECOVERY_STRATEGIES), "failed": FAILED},
        {**PIPELINE_TIMES, "order": arg("1f1b", "zb-h1"), "p2p_delay": arg(0.0, 0.1)}), "any"),
    "pipeline.failure_mask": (rm.pipeline.failure_mask, keywords(
        {"failed": FAILED, "replicas": arg(1, 2, 4), "stages": arg(1, 2, 4)}), "any"),
    "pipeline.spread_failures": (rm.pipeline.spread_failures, keywords(
        {"n": arg(0, 1, 3), "replicas": arg(1, 2, 4), "stages": arg(1, 2, 4)}), "any"),
    "pipeline.failure_set": (rm.pipeline.failure_set, keywords(
        {"placement": arg(*rm.pipeline.PLACEMENTS), "n": arg(0, 1, 3), "replicas": arg(1, 2, 4),
         "stages": arg(1, 2, 4)}, {"stage": arg(0, 1)}), "any"),
    "pipeline.stage_profile": (rm.pipeline.stage_profile, keywords(
        {"model": arg("gpt3-175b", "llama2-70b"), "gpu": arg("a100-80gb", "h100-80gb"), "stages": arg(1, 8, 16)},
        {"tensor_parallel": arg(1, 8), "microbatch_size": arg(1, 4), "mfu": arg(0.3, 0.5)}), "any"),
    "pipeline.simulate_runs": (lambda n_runs, seed, **kw: rm.pipeline.simulate_runs(
        _pipeline_config({"stages": 2, "replicas": 2, "microbatches": 4}), rm.pipeline.RunModel(**kw),
        strategies=("recycle", "restart"), n_runs=n_runs, seed=seed), keywords(
        {"n_runs": arg(1, 10), "seed": arg(0, 1)},
        {"duration": arg("1d", "14d"), "failure_rate": arg(0.0, 6.5e-3, 1.0), "repair_time": arg("4h", 0),
         "restart_cost": arg("10min", 0), "checkpoint_interval": arg("1h", "10min")}), "dataset"),
    "elastic.synthetic_workload": (rm.elastic.synthetic_workload, keywords(
        {"arrival_rate": arg(0.5, 2.0, 10.0), "duration": arg("1h", "6h", 2.0), "seed": arg(0, 1)},
        {"max_gpus": arg(None, 8, 64), "curve": arg(*rm.elastic.CURVE_FAMILIES)}), "any"),
    "elastic.simulate_cluster": (lambda arrival_rate, duration, seed, **kw: rm.elastic.simulate_cluster(
        rm.elastic.synthetic_workload(arrival_rate, duration, seed=seed), **kw), keywords(
        {"arrival_rate": arg(0.5, 2.0), "duration": arg("1h", "3h"), "seed": arg(0, 1)},
        {"policies": arg("all", "elastic", "fifo", ("elastic", "elastic")), "n_gpus": arg(8, 64),
         "failure_rate": arg(0.0, 0.1, 1.0), "time_bins": arg(1, 96), "max_wait": arg(None, 1.0)}), "dataset"),
    "elastic.allocate": (lambda n, n_gpus, seed, **kw: rm.elastic.allocate(_elastic_jobs(n, 64, seed), n_gpus,
                                                                           **kw), keywords(
        {"n": st.integers(0, 6), "n_gpus": arg(1, 8, 64), "seed": st.just(0)},
        {"policy": arg(*rm.elastic.ALLOCATION_POLICIES), "objective": arg(*rm.elastic.OBJECTIVES),
         "may_wait": arg(False, True)}), "any"),
    "elastic.Job": (lambda **kw: rm.elastic.check_job(rm.elastic.Job(**kw), 64), keywords(
        {"model": arg("resnet50", "gpt2"), "work": arg(1.0, 1e6), "batch": arg(32, 256)},
        {"gpus": arg(1, 8), "min_batch": arg(None, 16), "max_batch": arg(None, 512), "max_gpus": arg(None, 8)}),
        "any"),
    "elastic.statistical_efficiency": (rm.elastic.statistical_efficiency, keywords(
        {"batch": arg(32, 256), "submitted": arg(32, 256), "noise_scale": arg(None, 100.0, 1e4)}), "any"),
    "elastic.curve_models": (rm.elastic.curve_models, keywords(
        {"family": arg(*rm.elastic.CURVE_FAMILIES)}, {"saturation": arg(0.5, 0.9), "comm": arg(0.0, 0.02)}),
        "any"),
}


def check_result(kind, result):
    """A result in range: ETTR in [0, 1] (or NaN, where a form does not apply), times >= 0."""
    if kind == "ettr":
        values = np.asarray(result, dtype=float)
        assert np.all(np.isnan(values) | ((values >= 0) & (values <= 1))), result
    elif kind in ("time", "times"):
        values = np.asarray(result, dtype=float)
        assert np.all(np.isnan(values) | (values >= 0)), result
    elif kind == "dataset":
        check_dataset(result)
    elif kind == "plan":
        for interval in result.ettr_by_interval.values():
            for name in ("linear", "renewal", "simulated"):
                check_result("ettr", getattr(interval, name))
        for name, hours in result.intervals_h.items():
            check_result("time", hours)
    elif kind == "scenario":
        assert isinstance(result, rm.Scenario)


# Variables whose values are an ETTR (a share of the wall), and those that are times.
def check_dataset(ds: xr.Dataset):
    for name, variable in ds.data_vars.items():
        if not np.issubdtype(variable.dtype, np.floating):
            continue
        if name.startswith("ettr") and not name.endswith("_se"):
            check_result("ettr", variable.values)
        elif name.startswith(("time_", "wall_")) or name.endswith("_h"):
            check_result("times", variable.values)


@pytest.mark.parametrize("name", sorted(CALLS))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_any_call_ends_in_a_result_in_range_or_an_error_of_relmodel(name, data):
    call, arguments, kind = CALLS[name]
    kwargs = data.draw(arguments, label="arguments")
    with pytest.MonkeyPatch.context() as patch, cpu_time_bound(), warnings.catch_warnings(record=True) as caught, \
            traced_peak() as peak:
        patch.setenv("RELMODEL_MEMORY_BUDGET", MEMORY_BUDGET)
        warnings.simplefilter("always")
        try:
            result = call(**kwargs)
        except OWN_ERRORS as err:
            event(f"refused: {type(err).__name__}")
            result = None
        except TypeError as err:  # None for a required Scenario field is a missing argument, as Python has it
            if not str(err).startswith("Scenario() missing required argument"):
                raise
            event("refused: a missing argument")
            result = None
        except NoAnswer as err:
            pytest.fail(f"{name}({kwargs!r}): {err}")
    foreign = [f"{w.category.__name__}: {w.message}" for w in caught if not own_warning(w.category)]
    assert not foreign, (name, kwargs, foreign)
    assert peak[0] <= budget_in_force(), (name, kwargs, f"{peak[0] / 2**20:.0f} MiB traced")
    if result is not None:
        event("a result")
        check_result(kind, result)


JUNK_TEXTS = st.one_of(
    st.text(max_size=200),
    st.sampled_from(["", "\n", ",,,\n", "a,b\n1,2\n", "\x00\xff", "JobID|State\n1|FAILED\n", "{}\n", "[1,2]\n",
                     "time,event\n2024-01-01T00:00:00+99:00,failure\n"]),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
READERS = {
    "read_log": lambda path: rm.read_log(path),
    "fit": lambda path: rm.fit(path),
    "read_run": lambda path: rm.read_run(path, n_gpus=8),
    "read_run (sacct)": lambda path: rm.read_run(sacct=path),
    "load_taxonomy": lambda path: rm.load_taxonomy(path),
    "open_study": lambda path: rm.open_study(path),
    "pipeline.read_node_trace": lambda path: rm.pipeline.read_node_trace(path),
    "elastic.read_job_csv": lambda path: rm.elastic.read_job_csv(path),
    "elastic.read_elasticflow": lambda path: rm.elastic.read_elasticflow(path),
}


@pytest.mark.parametrize("reader", sorted(READERS))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None)
@given(text=JUNK_TEXTS, suffix=st.sampled_from([".csv", ".log", ".toml", ".jsonl", ".txt", ".nc"]))
def test_readers_refuse_junk_text_with_an_error_of_relmodel(reader, tmp_path_factory, text, suffix):
    path = tmp_path_factory.mktemp("junk") / f"input{suffix}"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    with cpu_time_bound(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            READERS[reader](path)
        except (*OWN_ERRORS, OSError):  # OSError: a file that is not what its suffix says, named by the OS
            pass
        except NoAnswer as err:
            pytest.fail(f"{reader}({text!r}): {err}")
    foreign = [f"{w.category.__name__}: {w.message}" for w in caught if not own_warning(w.category)]
    assert not foreign, (reader, text, foreign)
