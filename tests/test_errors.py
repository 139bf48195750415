"""One vocabulary of bad-input errors: every error class relmodel raises for input
it cannot use derives from `relmodel._errors.ParameterError`, names what is at
fault in ``.parameter`` and says why in ``.reason``, and its message starts with
them. Each case below is real bad input, raised by the code that checks it."""

import pickle

import pytest

import relmodel as rm
from relmodel import elastic as el
from relmodel import pipeline as pl
from relmodel._errors import ParameterError, ScenarioError
from relmodel._checks import check_integer, check_levels, check_number
from relmodel._fit import FitError, weibull_fit
from relmodel._job_logs import LogError, read_log
from relmodel._study import StudyError, parse_study
from relmodel._taxonomy import TaxonomyError
from relmodel._taxonomy import load as load_taxonomy


def _bad_trace(tmp_path, reader, text):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    return lambda: reader(path)


# (error class, what raises it, the parameter it must name)
CASES = {
    "scenario": (ScenarioError, lambda tmp: lambda: rm.Scenario(n_gpus=0, failure_rate=1e-3, checkpoint_interval=1,
                                                                work=10), "n_gpus"),
    "fit": (FitError, lambda tmp: lambda: weibull_fit([1.0, 2.0, 3.0], [True, True, False], confidence=2.0),
            "confidence"),
    "taxonomy": (TaxonomyError, lambda tmp: lambda: load_taxonomy("no-such-preset"), "taxonomy"),
    "log": (LogError, lambda tmp: lambda: read_log("JobID,State\n1,NODE_FAIL\n", format="csv"), "line 1"),
    "study": (StudyError, lambda tmp: lambda: parse_study("[fixed]\nn_gpus = [", name="s.toml"), "s.toml"),
    "pipeline": (pl.PipelineError, lambda tmp: lambda: pl.PipelineConfig(stages=0, replicas=1, microbatches=4),
                 "stages"),
    "pipeline trace": (pl.NodeTraceError,
                       lambda tmp: _bad_trace(tmp, pl.read_node_trace, "0,add,node1\n1000,launch,node2\n"), None),
    "elastic job": (el.JobError, lambda tmp: lambda: el.allocate(
        [el.Job("bert", 1e6, 128, min_batch=256, max_batch=128, job_id="x")], 8), "min_batch"),
    "elastic trace": (el.JobTraceError,
                      lambda tmp: _bad_trace(tmp, el.read_job_trace, "submit_time,model,work,batch\n0,bert,oops,32\n"),
                      "work"),
    "duration": (ParameterError, lambda tmp: lambda: rm.to_hours("5 parsecs", "checkpoint_cost"), "checkpoint_cost"),
    "duration unit": (ParameterError, lambda tmp: lambda: rm.to_hours("5m", "restart_cost"), "restart_cost"),
    "plan of a grid": (ParameterError, lambda tmp: lambda: rm.plan(rm.Scenario(
        n_gpus=[8, 16], failure_rate=1e-3, checkpoint_interval=1, work=10)), "scenario"),
    "throughput curve": (ParameterError, lambda tmp: lambda: el.ParametricThroughput(
        name="m", t_fixed=1.0, t_sample=-1.0), "t_sample"),
}


@pytest.fixture(params=sorted(CASES))
def bad_input(request, tmp_path):
    cls, make, parameter = CASES[request.param]
    return cls, make(tmp_path), parameter


def test_every_input_error_is_a_parameter_error(bad_input):
    cls, call, parameter = bad_input
    assert issubclass(cls, ParameterError) and issubclass(cls, ValueError)
    with pytest.raises(cls) as info:
        call()
    err = info.value
    assert type(err) is cls
    assert err.parameter and err.reason, (err.parameter, err.reason)
    if parameter is not None:
        assert err.parameter == parameter, err.parameter
    # The message names the parameter (after the record it belongs to, if any) and then says why.
    assert str(err).endswith(f"{err.parameter}: {err.reason}") or str(err).startswith(f"{err.parameter}: "), str(err)
    assert err.reason in str(err)
    # Pickled whole (a Dask worker's error reaches the client as it was raised).
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls and str(back) == str(err) and vars(back) == vars(err)


def test_the_record_comes_first():
    err = ParameterError("min_batch", "too big", where="job 'x'")
    assert str(err) == "job 'x': min_batch: too big" and err.parameter == "min_batch" and err.reason == "too big"


def test_a_pipeline_trace_error_names_its_file_and_line(tmp_path):
    with pytest.raises(pl.NodeTraceError) as info:
        _bad_trace(tmp_path, pl.read_node_trace, "0,add,node1\n1000,launch,node2\n")()
    assert info.value.parameter.endswith("bad.csv:2"), info.value.parameter


@pytest.mark.parametrize("call, parameter", [
    (lambda: check_integer("seed", -1, 0, 2**32 - 1), "seed"),
    (lambda: check_integer("n_jobs", 2.0, 1, 10), "n_jobs"),
    (lambda: check_levels("quantiles", [0.5, 0.5]), "quantiles"),
    (lambda: check_number("checkpoint_interval", "0s", kind="duration"), "checkpoint_interval"),
    (lambda: check_number("work", "5 parsecs", kind="duration"), "work"),
    (lambda: check_number("failure_rate", float("nan"), kind="rate"), "failure_rate"),
    (lambda: check_number("weibull_shape", 1000.0, kind="shape"), "weibull_shape"),
    (lambda: rm.simulate({"n_gpus": 8, "failure_rate": 1.0, "checkpoint_interval": 1, "work": 2}, backend="gpu"),
     "backend"),
    (lambda: rm.ettr({"n_gpus": 8, "failure_rate": 1.0, "checkpoint_interval": 1, "work": 2}, method="cubic"),
     "method"),
])
def test_the_validators_name_the_parameter(call, parameter):
    with pytest.raises(ParameterError) as info:
        call()
    assert info.value.parameter == parameter and str(info.value).startswith(f"{parameter}: ")


def _error_classes():
    import relmodel._store  # noqa: F401  (OutputError's module, not imported by the package at start)

    found, todo = set(), [ParameterError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("relmodel") and sub not in found:
                found.add(sub)
                todo.append(sub)
    return sorted(found, key=lambda cls: cls.__name__)


@pytest.mark.parametrize("cls", _error_classes(), ids=lambda cls: cls.__name__)
def test_every_error_class_documents_the_parameters_it_takes(cls):
    import inspect

    doc = inspect.getdoc(cls)
    section = doc[doc.index("Parameters\n----------\n"):]
    taken = [name for name in inspect.signature(cls).parameters]
    documented = [line.split(" : ")[0] for line in section.splitlines()[2:] if " : " in line and not line[0].isspace()]
    assert documented == taken, (documented, taken)
