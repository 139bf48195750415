"""`relmodel.fit`: the rate and its exact interval, the fit's report, and the `fit` / `plan --from-log` CLI."""

import json

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner
from scipy import stats

import relmodel as rm
from relmodel.cli import main
from relmodel.fit import FitError, FitResult, poisson_rate_interval, weibull_fit
from relmodel.logs import read_log
from relmodel.synthetic_log import synthetic_log

RATE = 6.5e-3


@pytest.fixture(scope="module")
def cluster_log():
    return synthetic_log(8000, failure_rate=RATE, seed=11)


@pytest.fixture(scope="module")
def log_files(cluster_log, tmp_path_factory):
    folder = tmp_path_factory.mktemp("logs")
    cluster_log.to_csv(folder / "jobs.csv")
    cluster_log.to_sacct(folder / "jobs.sacct")
    return folder / "jobs.csv", folder / "jobs.sacct"


def test_rate_and_interval_are_the_garwood_formula(cluster_log):
    result = rm.fit(cluster_log.to_csv())
    assert isinstance(result, FitResult)
    k, exposure = result.n_failures, result.node_days
    assert result.failure_rate == k / exposure
    low = stats.chi2.ppf(0.025, 2 * k) / 2 / exposure
    high = stats.chi2.ppf(0.975, 2 * k + 2) / 2 / exposure
    assert result.failure_rate_ci == pytest.approx((low, high), rel=1e-12)
    # Counted by hand from the generator's own rows: infrastructure failures of jobs >= 128 GPUs.
    rows = cluster_log.rows
    started, large = rows["start"] >= 0, rows["n_gpus"] >= 128
    infra = (rows["state"] == "NODE_FAIL") | ((rows["state"] == "FAILED")
                                               & np.char.startswith(rows["cause"], "health_check"))
    assert k == int((infra & large & started).sum())
    node_days = (rows["n_nodes"] * (rows["end"] - rows["start"]) / 86400.0)[large & started].sum()
    assert exposure == pytest.approx(node_days, rel=1e-12)


def test_interval_with_no_failures_starts_at_zero():
    low, high = poisson_rate_interval(0, 100.0, 0.9)
    assert low == 0 and high == pytest.approx(stats.chi2.ppf(0.95, 2) / 2 / 100.0)


def _coverage(repetitions, n_jobs=3000):
    hits = 0
    for seed in range(repetitions):
        result = rm.fit(synthetic_log(n_jobs, failure_rate=RATE, seed=1000 + seed).to_csv())
        low, high = result.failure_rate_ci
        hits += low <= RATE <= high
    return hits


def test_round_trip_recovers_the_rate_quick():
    assert _coverage(10) >= 8


@pytest.mark.slow
def test_round_trip_recovers_the_rate_in_93_of_100():
    assert _coverage(100) >= 93


def test_both_formats_give_the_same_fit(cluster_log):
    a, b = rm.fit(cluster_log.to_csv()), rm.fit(cluster_log.to_sacct())
    assert a.failure_rate == b.failure_rate and a.failure_rate_ci == b.failure_rate_ci
    assert a.weibull.shape == pytest.approx(b.weibull.shape, rel=1e-9)
    xr.testing.assert_allclose(a.dataset[["jobs", "gpu_hours", "bin_failures", "mttf_h"]],
                               b.dataset[["jobs", "gpu_hours", "bin_failures", "mttf_h"]])


def test_ignoring_censoring_biases_the_weibull_shape():
    rng = np.random.default_rng(0)
    failure = 2.0 * rng.weibull(0.7, 4000)
    censor = rng.uniform(0, 4, 4000)  # jobs that end first, for other reasons
    observed, times = failure <= censor, np.minimum(failure, censor)
    assert 0.3 < (~observed).mean() < 0.7
    censored = weibull_fit(times, observed)
    naive = weibull_fit(times, observed, ignore_censoring=True)
    assert censored.shape_ci[0] < 0.7 < censored.shape_ci[1]
    assert abs(censored.shape - 0.7) < 0.05 and naive.shape > 0.8  # naive: only short failures survive
    assert censored.lr_pvalue < 1e-6  # shape 0.7 is not exponential


def test_weibull_log_is_told_from_an_exponential_one():
    weibull = rm.fit(synthetic_log(12000, failure_rate=RATE, seed=3, weibull_shape=0.7).to_csv()).weibull
    assert weibull.shape_ci[0] < 0.7 < weibull.shape_ci[1] and weibull.lr_pvalue < 1e-6
    exponential = rm.fit(synthetic_log(12000, failure_rate=RATE, seed=3).to_csv()).weibull
    assert exponential.shape_ci[0] < 1 < exponential.shape_ci[1] and exponential.lr_pvalue > 1e-3


def test_planted_lemon_nodes_are_found():
    log = synthetic_log(20000, failure_rate=RATE, seed=4, n_nodes=128, max_gpus=512, lemon_nodes=2,
                        lemon_rate_factor=30)
    result = rm.fit(log.to_sacct())
    assert set(log.truth["lemon_nodes"]) <= set(result.lemon_nodes) and len(result.lemon_nodes) <= 3
    ds = result.dataset
    assert ds.sizes["node"] == 128 and (ds.node_rate_factor.sel(node=log.truth["lemon_nodes"]) > 5).all()
    clean = rm.fit(synthetic_log(20000, failure_rate=RATE, seed=4, n_nodes=128, max_gpus=512).to_csv())
    assert clean.lemon_nodes == ()


def test_report_dataset_scenario_and_projection(cluster_log, tmp_path):
    result = rm.fit(read_log(cluster_log.to_csv()), min_gpus=256)
    ds = result.dataset
    assert ds.jobs_share.sum() == pytest.approx(1) and ds.gpu_time_share.sum() == pytest.approx(1)
    assert ds.infrastructure_failures.sel(state="NODE_FAIL") == ds.jobs.sel(state="NODE_FAIL")
    assert ds.gpu_time_share.sel(state="NODE_FAIL") > ds.jobs_share.sel(state="NODE_FAIL")  # few jobs, much time
    assert not ds.in_fit.sel(size_bin=ds.gpus_low < 256).any() and ds.in_fit.sel(size_bin=ds.gpus_low >= 256).any()
    assert int(ds.bin_failures.where(ds.in_fit, 0).sum()) == result.n_failures
    assert ds.attrs["gof_pvalue"] > 1e-3 and ds.attrs["min_gpus"] == 256
    assert {"relmodel_version", "source", "taxonomy", "created"} <= set(ds.attrs)
    assert result.mttf_h_at(16384) == pytest.approx(24 / (2048 * result.failure_rate))
    assert result.mttf_h_at(16384) == pytest.approx(rm.mttf(n_gpus=16384, failure_rate=result.failure_rate))
    sc = result.scenario(n_gpus=4096, checkpoint_cost="5min")
    assert isinstance(sc, rm.Scenario) and sc.failure_rate == result.failure_rate and sc.weibull_shape == 1
    assert result.scenario(n_gpus=8, with_weibull_shape=True).weibull_shape == result.weibull.shape
    d = result.to_dict()
    assert set(d["mttf_h_at"]) == {"1024", "4096", "16384", "131072"}
    json.dumps(d, default=float)
    ds.to_netcdf(tmp_path / "fit.nc", engine="h5netcdf")
    assert float(xr.open_dataset(tmp_path / "fit.nc", engine="h5netcdf").attrs["failure_rate_per_node_day"]) == \
        result.failure_rate


def test_bad_arguments_name_the_parameter(cluster_log):
    with pytest.raises(FitError, match="^min_gpus: the log has no runtime"):
        rm.fit(cluster_log.to_csv(), min_gpus=10**6)
    with pytest.raises(FitError, match="^gpus_per_node"):
        rm.fit(cluster_log.to_csv(), gpus_per_node=0)


# The command line.

def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_cli_fit_table_plot_and_dataset(log_files, tmp_path):
    png, nc = tmp_path / "mttf.png", tmp_path / "fit.nc"
    result = invoke("fit", log_files[1], "--plot", png, "--out", nc)
    assert result.exit_code == 0, result.output
    assert "failure rate:" in result.output and "per 1000 node-days" in result.output
    assert "NODE_FAIL" in result.output and "goodness of fit" in result.output and "Weibull" in result.output
    assert png.stat().st_size > 10_000
    assert "bin_failures" in xr.open_dataset(nc, engine="h5netcdf")


def test_cli_fit_json(log_files):
    result = invoke("fit", log_files[0], "--json", "--min-gpus", "128")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    fitted = rm.fit(log_files[0])
    assert out["failure_rate_per_node_day"] == pytest.approx(fitted.failure_rate)
    assert out["failure_rate_ci"] == pytest.approx(list(fitted.failure_rate_ci))
    assert out["mttf_h_at"]["16384"] == pytest.approx(fitted.mttf_h_at(16384))
    assert {"weibull", "end_states", "goodness_of_fit", "log", "lemon_nodes"} <= set(out)


@pytest.mark.parametrize("args, needle", [
    (["missing.csv"], "LOG_FILE"),
    (["{csv}", "--min-gpus", "0"], "--min-gpus"),
    (["{csv}", "--min-gpus", "1000000"], "--min-gpus"),
    (["{csv}", "--format", "xml"], "--format"),
    (["{csv}", "--plot", "out.nope"], "--plot"),
    (["{csv}", "--out", "fit.csv"], "--out"),
    (["{csv}", "--taxonomy", "nope"], "--taxonomy"),
    (["{bad}"], "line 3: end before start"),
])
def test_cli_fit_bad_input_is_one_line(log_files, tmp_path, args, needle):
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,n_gpus,start,end,state\n1,8,2024-01-01T00:00:00,2024-01-01T01:00:00,COMPLETED\n"
                   "2,8,2024-01-01T05:00:00,2024-01-01T01:00:00,COMPLETED\n")
    args = [a.format(csv=log_files[0], bad=bad) for a in args]
    result = invoke("fit", *args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and needle in lines[0]


def test_cli_fit_skip_bad_rows(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,n_gpus,start,end,state\n1,256,2024-01-01T00:00:00,2024-01-02T00:00:00,NODE_FAIL\n"
                   "2,256,2024-01-01T05:00:00,2024-01-01T01:00:00,COMPLETED\n")
    out = json.loads(invoke("fit", bad, "--skip-bad-rows", "--json").output)
    assert out["infrastructure_failures"] == 1 and out["log"]["skipped"] == {"malformed (end before start)": 1}
    assert out["failure_rate_per_node_day"] == pytest.approx(1 / 32)


def test_cli_plan_from_log(log_files):
    result = invoke("plan", "--gpus", "16384", "--from-log", log_files[0], "--n-jobs", "500", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    fitted = rm.fit(log_files[0])
    assert out["scenario"]["failure_rate"] == pytest.approx(fitted.failure_rate)
    assert out["mttf_h"] == pytest.approx(fitted.mttf_h_at(16384))
    assert out["failure_rate_from_log"]["failure_rate_ci"] == pytest.approx(list(fitted.failure_rate_ci))
    text = invoke("plan", "--gpus", "16384", "--from-log", log_files[0], "--n-jobs", "500")
    assert text.exit_code == 0 and "failure rate from" in text.output
    for args, needle in ((["--failure-rate", "0.01"], "--from-log"), ([], "LOG")):
        log = log_files[0] if args else "missing.csv"
        result = invoke("plan", "--gpus", "8", "--from-log", log, *args)
        assert result.exit_code == 2 and result.output.count("\n") == 1 and "--from-log" in result.output


def test_a_log_without_large_job_failures_fits_to_zero_without_warnings():
    text = ("job_id,n_gpus,start,end,state,nodes\n"
            '1,256,2024-01-01T00:00:00,2024-01-02T00:00:00,COMPLETED,"n[1-32]"\n'
            "2,8,2024-01-01T00:00:00,2024-01-02T00:00:00,NODE_FAIL,n1\n")
    result = rm.fit(text)
    assert result.failure_rate == 0 and result.failure_rate_ci[0] == 0 and result.mttf_h_at(1024) == np.inf
    assert result.failure_rate_ci[1] == pytest.approx(stats.chi2.ppf(0.975, 2) / 2 / 32)
    assert np.isnan(result.weibull.shape) and result.lemon_nodes == ()
    assert "failure rate: 0 per 1000" in str(result)
