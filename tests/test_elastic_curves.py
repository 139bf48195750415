"""The throughput-curve families: the roofline family's formula and shape, its
derivation from the fitted catalogue, and the family chosen in synthetic
workloads and job CSV files."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import relmodel.elastic as el
from relmodel._errors import ParameterError

T_SAMPLE = st.floats(1e-6, 10.0)
SATURATION_BATCH = st.floats(1.0, 4096.0)
SECONDS = st.floats(0.0, 10.0)  # t_fixed and t_comm, 0 included
GPUS = st.integers(1, 65536)
BATCH = st.integers(1, 2**24)


@st.composite
def roofline_models(draw):
    return el.RooflineThroughput("m", t_sample=draw(T_SAMPLE), saturation_batch=draw(SATURATION_BATCH),
                                 t_fixed=draw(SECONDS), t_comm=draw(SECONDS),
                                 max_local_batch=draw(st.integers(1, 4096)))


def stated_step_time(t_sample, saturation_batch, t_fixed, t_comm, g, b):
    """The roofline step time, written out again in plain floats."""
    local = max(b / g, saturation_batch)  # an under-used GPU takes as long as a saturated one
    return t_fixed + t_sample * local + t_comm * (g - 1)


# -- the roofline formula --------------------------------------------------------------
@given(roofline_models(), st.lists(st.tuples(GPUS, BATCH), min_size=1, max_size=8))
def test_step_time_is_the_stated_formula_element_by_element(model, points):
    g = np.array([p[0] for p in points])
    b = np.array([p[1] for p in points])
    step, x = model.step_time(g, b), model.throughput(g, b)
    assert step.shape == x.shape == g.shape
    for k, (gk, bk) in enumerate(points):
        expected = stated_step_time(model.t_sample, model.saturation_batch, model.t_fixed, model.t_comm,
                                    float(gk), float(bk))
        assert step[k] == pytest.approx(expected, rel=1e-12)
        assert x[k] == pytest.approx(bk / expected, rel=1e-12)
        assert float(model.step_time(int(gk), int(bk))) == step[k]  # scalars as arrays
        assert float(model.comm_time(int(gk))) == pytest.approx(model.t_comm * (gk - 1), rel=1e-12)


@given(roofline_models(), GPUS, BATCH, BATCH)
def test_throughput_increases_with_the_batch_at_fixed_gpus(model, g, b1, b2):
    lo, hi = sorted((b1, b2))
    x_lo, x_hi = float(model.throughput(g, lo)), float(model.throughput(g, hi))
    assert x_hi >= x_lo * (1 - 1e-12)
    if hi / g <= model.saturation_batch and hi > lo:
        assert x_hi > x_lo  # strictly below saturation: the step costs the same, on more samples


@given(roofline_models(), GPUS, st.data())
def test_below_saturation_the_step_time_does_not_depend_on_the_batch(model, g, data):
    top = math.floor(g * model.saturation_batch)
    b = data.draw(st.lists(st.integers(1, top), min_size=2, max_size=6))
    step = model.step_time(g, np.array(b))
    assert np.all(step == step[0])
    assert step[0] == pytest.approx(model.t_fixed + model.t_sample * model.saturation_batch
                                    + model.t_comm * (g - 1), rel=1e-12)


@given(roofline_models(), GPUS, GPUS, st.integers(1, 4096))
def test_communication_grows_with_the_gpus(model, g1, g2, local):
    lo, hi = sorted((g1, g2))
    assert float(model.comm_time(1)) == 0.0
    assert float(model.comm_time(hi)) >= float(model.comm_time(lo)) >= 0.0
    # at a fixed local batch (weak scaling) a step takes longer on more GPUs
    assert float(model.step_time(hi, hi * local)) >= float(model.step_time(lo, lo * local)) * (1 - 1e-12)


def test_the_families_are_named():
    assert el.CURVE_FAMILIES == ("fitted", "roofline")
    assert el.ParametricThroughput.family == "fitted" and el.RooflineThroughput.family == "roofline"
    assert el.RooflineThroughput.increasing_in_batch is True
    model = el.RooflineThroughput("m", t_sample=0.01, saturation_batch=32)
    assert (model.t_fixed, model.t_comm, model.max_local_batch, model.batch_sizes) == (0.0, 0.0, 256, (64, 128, 256))
    assert isinstance(model.saturation_batch, float)


# -- bad parameters ----------------------------------------------------------------------
GOOD = {"name": "m", "t_sample": 0.01, "saturation_batch": 32.0, "t_fixed": 0.1, "t_comm": 0.001,
        "max_local_batch": 128, "batch_sizes": (64, 128)}


@pytest.mark.parametrize("field", ["t_sample", "saturation_batch", "t_fixed", "t_comm", "max_local_batch"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -1.0, -1, True, False, "1"])
def test_bad_parameters_name_the_field(field, bad):
    with pytest.raises(ValueError, match=f"^{field}: "):
        el.RooflineThroughput(**{**GOOD, field: bad})


@pytest.mark.parametrize("field, bad", [
    ("t_sample", 0.0), ("saturation_batch", 0.5), ("saturation_batch", 0), ("max_local_batch", 0),
    ("max_local_batch", 1.5), ("batch_sizes", (64, -1)), ("batch_sizes", (True,)), ("batch_sizes", (64.5,)),
    ("batch_sizes", "64"), ("batch_sizes", 64), ("name", ""), ("name", 3),
])
def test_out_of_range_parameters_name_the_field(field, bad):
    with pytest.raises(ValueError, match=f"^{field}: "):
        el.RooflineThroughput(**{**GOOD, field: bad})


# -- the roofline catalogue -----------------------------------------------------------
@given(st.sampled_from(sorted(el.FITTED_MODELS)), st.floats(1e-6, 1.0), st.floats(0.0, 10.0))
def test_roofline_model_keeps_the_single_gpu_full_batch_throughput(name, saturation, comm):
    fitted = el.FITTED_MODELS[name]
    m_hi = fitted.max_local_batch
    roof = el.roofline_model(fitted, saturation, comm)
    assert float(roof.throughput(1, m_hi)) == pytest.approx(float(fitted.throughput(1, m_hi)), rel=1e-12)
    t1 = float(fitted.step_time(1, m_hi))
    assert roof.t_comm == pytest.approx(comm * t1, rel=1e-12) and roof.t_fixed == 0.0
    assert roof.saturation_batch == pytest.approx(max(1.0, saturation * m_hi), rel=1e-12)
    assert (roof.name, roof.max_local_batch, roof.batch_sizes) == (name, m_hi, fitted.batch_sizes)


def test_the_roofline_catalogue_is_derived_from_the_fitted_one():
    assert list(el.ROOFLINE_MODELS) == list(el.FITTED_MODELS)
    for name, fitted in el.FITTED_MODELS.items():
        roof = el.ROOFLINE_MODELS[name]
        assert roof == el.roofline_model(fitted) == el.roofline_model(name)
        assert roof.saturation_batch == 0.5 * fitted.max_local_batch
        m_hi = fitted.max_local_batch
        assert float(roof.throughput(1, m_hi)) == pytest.approx(float(fitted.throughput(1, m_hi)), rel=1e-12)
    assert el.curve_models("fitted") is el.FITTED_MODELS and el.curve_models("roofline") is el.ROOFLINE_MODELS
    other = el.curve_models("roofline", saturation=0.25, comm=0.0)
    assert other["bert"] == el.roofline_model(el.FITTED_MODELS["bert"], 0.25, 0.0)


def test_a_profiled_model_derives_from_its_throughput():
    profiled = el.ProfiledThroughput("p", (1, 2), (64, 128), np.array([[100.0, 160.0], [180.0, 300.0]]),
                                     max_local_batch=128)
    roof = el.roofline_model(profiled)
    assert float(roof.throughput(1, 128)) == pytest.approx(160.0, rel=1e-12)
    with pytest.raises(ParameterError, match="^model: "):  # not profiled on one GPU at batch 128
        el.roofline_model(el.ProfiledThroughput("q", (2,), (128,), np.array([[300.0]]), max_local_batch=128))


def test_in_the_roofline_regime_strong_scaling_stalls_and_elastic_scaling_does_not():
    g = np.array([1, 2, 4, 8, 16, 32, 64])
    for name, roof in el.ROOFLINE_MODELS.items():
        fitted, m_hi = el.FITTED_MODELS[name], roof.max_local_batch
        fixed = roof.throughput(g, m_hi)  # one global batch spread over more GPUs
        assert np.argmax(fixed) == 1 and fixed[-1] < fixed[0]  # best on 2 GPUs, worse on 64 than on 1
        grown = roof.throughput(g, g * m_hi)  # the batch grows with the GPUs
        assert np.all(np.diff(grown) > 0) and grown[-1] > 20 * grown[0]
        assert fitted.throughput(64, m_hi) > fitted.throughput(1, m_hi)  # the fitted family still gains


@pytest.mark.parametrize("kwargs, name", [
    ({"saturation": 0}, "saturation"), ({"saturation": 1.5}, "saturation"), ({"saturation": math.nan}, "saturation"),
    ({"saturation": math.inf}, "saturation"), ({"saturation": True}, "saturation"), ({"comm": -0.1}, "comm"),
    ({"comm": math.nan}, "comm"), ({"comm": math.inf}, "comm"), ({"comm": True}, "comm"),
])
def test_roofline_model_errors_name_the_parameter(kwargs, name):
    with pytest.raises(ParameterError, match=f"^{name}: "):
        el.roofline_model("resnet50", **kwargs)
    with pytest.raises(ParameterError, match=f"^{name}: "):
        el.curve_models("roofline", **kwargs)


@pytest.mark.parametrize("args, kwargs, name", [
    (("bogus",), {}, "curve"), ((None,), {}, "curve"), (("fitted",), {"saturation": 0.25}, "saturation"),
    (("fitted",), {"comm": 0.1}, "comm"),
])
def test_curve_models_errors_name_the_parameter(args, kwargs, name):
    with pytest.raises(ParameterError, match=f"^{name}: "):
        el.curve_models(*args, **kwargs)


# -- synthetic workloads -------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 7])
@pytest.mark.parametrize("scaling", ["global", "per-gpu"])
def test_the_curve_changes_only_the_models_and_the_work(seed, scaling):
    fitted = el.synthetic_workload(8, "24h", seed, batch_scaling=scaling)
    roof = el.synthetic_workload(8, "24h", seed, batch_scaling=scaling, curve="roofline")
    assert len(roof) == len(fitted) > 100
    for a, b in zip(fitted.jobs, roof.jobs):
        same = ("submit_time", "batch", "gpus", "min_batch", "max_batch", "min_local_batch", "max_local_batch",
                "min_gpus", "max_gpus", "job_id")
        assert [getattr(a, f) for f in same] == [getattr(b, f) for f in same]
        assert a.model.name == b.model.name
        assert a.model is el.FITTED_MODELS[a.model.name] and b.model is el.ROOFLINE_MODELS[b.model.name]
        # the same run time at the submitted size, at that curve's throughput
        ratio = float(b.model.throughput(b.gpus, b.batch)) / float(a.model.throughput(a.gpus, a.batch))
        assert b.work == pytest.approx(a.work * ratio, rel=1e-12)
        el.check_job(b, 64)
    assert fitted.attrs["curve"] == "fitted" and roof.attrs["curve"] == "roofline"
    assert {k: v for k, v in fitted.attrs.items() if k != "curve"} == \
        {k: v for k, v in roof.attrs.items() if k != "curve"}


def test_the_default_arguments_leave_the_draws_as_they_were():
    plain = el.synthetic_workload(6, "12h", seed=3)
    explicit = el.synthetic_workload(6, "12h", seed=3, curve="fitted", max_gpus=None, min_local_batch=1)
    assert plain.jobs == explicit.jobs
    assert (plain.attrs["max_gpus"], plain.attrs["min_local_batch"]) == (None, 1)
    custom = el.synthetic_workload(6, "12h", seed=3, models=el.FITTED_MODELS)
    assert custom.jobs == plain.jobs and custom.attrs["curve"] == "custom"


@pytest.mark.parametrize("curve", el.CURVE_FAMILIES)
def test_gpu_and_local_batch_bounds_land_on_the_jobs(curve):
    work = el.synthetic_workload(10, "24h", 4, curve=curve, max_gpus=4, min_local_batch=32)
    assert work.attrs["max_gpus"] == 4 and work.attrs["min_local_batch"] == 32
    for job in work.jobs:
        assert job.max_gpus == 4 and job.min_local_batch == 32
        assert job.gpus <= 4 and job.batch // job.gpus >= 32
        el.check_job(job, 64)
    # the GPU counts that fit the bounds are drawn as before; only the others are redrawn
    free = el.synthetic_workload(10, "24h", 4, curve=curve)
    assert [j.submit_time for j in free.jobs] == [j.submit_time for j in work.jobs]
    assert any(a.gpus != b.gpus for a, b in zip(free.jobs, work.jobs))


@pytest.mark.parametrize("kwargs, name", [
    ({"curve": "bogus"}, "curve"), ({"curve": "roofline", "models": el.FITTED_MODELS}, "curve"),
    ({"max_gpus": 0}, "max_gpus"), ({"max_gpus": 2.5}, "max_gpus"), ({"max_gpus": True}, "max_gpus"),
    ({"min_local_batch": 0}, "min_local_batch"), ({"min_local_batch": "8"}, "min_local_batch"),
    ({"min_local_batch": False}, "min_local_batch"), ({"min_local_batch": 1000}, "min_local_batch"),
])
def test_curve_and_bound_errors_name_the_parameter(kwargs, name):
    with pytest.raises(ParameterError, match=f"^{name}: "):
        el.synthetic_workload(6, "1h", **kwargs)


# -- job CSV files --------------------------------------------------------------------
def write_jobs(tmp_path, *rows, header="submit_time,model,work,batch,gpus,curve,saturation,comm"):
    path = tmp_path / "jobs.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def test_job_csv_rows_choose_their_curve(tmp_path):
    path = write_jobs(tmp_path, "0,resnet50,1e8,128,2,,,", "1,resnet50,1e8,128,2,fitted,,",
                      "2,resnet50,1e8,128,2,roofline,,", "3,bert,1e8,64,1,roofline,0.25,",
                      "4,bert,1e8,64,1,roofline,,0.1", "5,bert,1e8,64,1,roofline,0.25,0.1",
                      "6,bert,1e8,64,1,roofline,0.25,0.1")
    work = el.read_job_csv(path)
    models = [j.model for j in work.jobs]
    assert models[0] is models[1] is el.FITTED_MODELS["resnet50"]
    assert models[2] is el.ROOFLINE_MODELS["resnet50"]
    assert models[3] == el.roofline_model("bert", 0.25, 0.02)
    assert models[4] == el.roofline_model("bert", 0.5, 0.1)
    assert models[5] == el.roofline_model("bert", 0.25, 0.1) and models[6] is models[5]  # derived once
    assert work.attrs["curve"] == "fitted,roofline"
    for job in work.jobs:
        el.check_job(job, 64)
    assert el.read_job_trace(path).jobs == work.jobs


def test_job_csv_default_curve_and_models_mapping(tmp_path):
    path = write_jobs(tmp_path, "0,resnet50,1e8,128,2", "1,bert,1e8,64,1", header="submit_time,model,work,batch,gpus")
    roof = el.read_job_csv(path, curve="roofline")
    assert [j.model for j in roof.jobs] == [el.ROOFLINE_MODELS["resnet50"], el.ROOFLINE_MODELS["bert"]]
    assert roof.attrs["curve"] == "roofline" and el.read_job_trace(path, curve="roofline").jobs == roof.jobs
    mine = {"resnet50": el.ParametricThroughput("resnet50", 0.01, 0.002, max_local_batch=64)}
    path = write_jobs(tmp_path, "0,resnet50,1e8,64,1,,,", "1,resnet50,1e8,64,1,roofline,0.5,0.02")
    work = el.read_job_csv(path, models=mine)
    assert work.jobs[0].model is mine["resnet50"]
    assert work.jobs[1].model == el.roofline_model(mine["resnet50"])  # derived from the mapping's model
    with pytest.raises(ParameterError, match="^curve: "):
        el.read_job_csv(path, models=mine, curve="roofline")
    with pytest.raises(ParameterError, match="^curve: "):
        el.read_job_csv(path, curve="bogus")


@pytest.mark.parametrize("row, column, text", [
    ("1,bert,1e6,64,1,linear,,", "curve", "unknown curve family 'linear'"),
    ("1,bert,1e6,64,1,roofline,half,", "saturation", "'half' is not a number"),
    ("1,bert,1e6,64,1,roofline,nan,", "saturation", "not finite"),
    ("1,bert,1e6,64,1,roofline,0,", "saturation", "(0, 1]"),
    ("1,bert,1e6,64,1,roofline,1.5,", "saturation", "(0, 1]"),
    ("1,bert,1e6,64,1,roofline,,-0.1", "comm", ">= 0"),
    ("1,bert,1e6,64,1,roofline,,inf", "comm", "not finite"),
    ("1,bert,1e6,64,1,roofline,,lots", "comm", "'lots' is not a number"),
    ("1,bert,1e6,64,1,,0.5,", "saturation", "only with curve=roofline"),
    ("1,bert,1e6,64,1,fitted,,0.1", "comm", "only with curve=roofline"),
    ("1,llama,1e6,64,1,roofline,,", "model", "unknown model 'llama'"),
])
def test_malformed_curve_cells_report_the_line_and_column(tmp_path, row, column, text):
    path = write_jobs(tmp_path, "0,bert,1e6,64,1,roofline,,", row)
    with pytest.raises(el.JobTraceError) as err:
        el.read_job_csv(path)
    assert err.value.line == 3 and err.value.column == column
    assert str(err.value).startswith(f"jobs.csv line 3: {column}: ") and text in str(err.value)
    with pytest.warns(el.TraceWarning, match="1 malformed row"):
        skipped = el.read_job_csv(path, errors="skip")
    assert len(skipped) == 1 and skipped.attrs["skipped_lines"] == [3]


# -- ElasticFlow traces ---------------------------------------------------------------
def test_elasticflow_traces_take_a_curve(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text("job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"
                    "a,0,1000,resnet50,9000,128,4,600\nb,60,2000,bert,9000,64,1,900\n")
    fitted, roof = el.read_elasticflow(path), el.read_elasticflow(path, curve="roofline")
    assert [j.model for j in roof.jobs] == [el.ROOFLINE_MODELS["resnet50"], el.ROOFLINE_MODELS["bert"]]
    assert [j.work for j in roof.jobs] == [j.work for j in fitted.jobs]  # work is samples, whatever the curve
    assert (fitted.attrs["curve"], roof.attrs["curve"]) == ("fitted", "roofline")
    with pytest.raises(ParameterError, match="^curve: "):
        el.read_elasticflow(path, curve="bogus")
    with pytest.raises(ParameterError, match="^curve: "):
        el.read_elasticflow(path, curve="roofline", models=el.FITTED_MODELS)
