"""`relmodel._fit`: the rate and its exact interval, the fit's report, and the `fit` / `plan --from-log` CLI."""

import json
import math
import warnings

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import relmodel as rm
from relmodel._cli import main
from relmodel._fit import FitError, FitResult, WeibullFit, poisson_rate_interval, weibull_fit
from relmodel._job_logs import read_log
from relmodel._synthetic_log import synthetic_log

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


def test_the_size_bins_mttf_intervals_are_the_garwood_formula(cluster_log):
    ds = rm.fit(cluster_log.to_csv(), confidence=0.9).dataset
    failures, mttf = ds.bin_failures.values, ds.mttf_h.values
    assert (failures > 0).sum() >= 3
    for k, observed, low, high in zip(failures, mttf, ds.mttf_low_h.values, ds.mttf_high_h.values):
        if k > 0:  # the chi-square form, the bin's job-hours being its MTTF times its failures
            assert low == pytest.approx(observed * k / (stats.chi2.ppf(0.95, 2 * k + 2) / 2), rel=1e-9)
            assert high == pytest.approx(observed * k / (stats.chi2.ppf(0.05, 2 * k) / 2), rel=1e-9)
        else:
            assert high == np.inf


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
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = rm.fit(text)
    assert result.failure_rate == 0 and result.failure_rate_ci[0] == 0 and result.mttf_h_at(1024) == np.inf
    assert result.failure_rate_ci[1] == pytest.approx(stats.chi2.ppf(0.975, 2) / 2 / 32)
    assert np.isnan(result.weibull.shape) and result.lemon_nodes == ()
    assert not result.weibull.estimable and "at least 2 failures (got 0" in result.weibull.note
    assert "failure rate: 0 per 1000" in str(result)
    assert "Weibull times to failure: not fitted (a Weibull fit needs at least 2 failures" in str(result)
    with pytest.raises(FitError, match="^weibull_shape: no Weibull shape was fitted .*at least 2 failures"):
        result.scenario(n_gpus=8, with_weibull_shape=True)


# The censored Weibull fit: method, edge cases, units, coverage.

def _weibull_sample(shape, scale, n, censor_span, seed):
    rng = np.random.default_rng(seed)
    failure = scale * rng.weibull(shape, n)
    censor = rng.uniform(0, censor_span * scale, n)
    return np.minimum(failure, censor), failure <= censor


def test_weibull_fit_satisfies_its_likelihood_equations():
    # At the MLE the two score equations hold; written here from the textbook log-likelihood
    # d log k - d k log s + (k - 1) sum_E log t - sum (t / s)^k.
    times, observed = _weibull_sample(0.8, 5.0, 300, 8.0, seed=1)
    fit = weibull_fit(times, observed)
    k, s, d = fit.shape, fit.scale, observed.sum()
    z = (times / s) ** k
    assert np.sum(z) == pytest.approx(d, rel=1e-12)  # d/d(scale) = 0
    assert d / k + np.sum(np.log(times[observed] / s)) - np.sum(z * np.log(times / s)) == pytest.approx(0, abs=1e-9)
    assert fit.n_events == d and fit.n_censored == (~observed).sum() and fit.interval == "wald"


def test_weibull_wald_interval_comes_from_the_observed_information():
    # Finite differences of the textbook log-likelihood in (log shape, log scale) give the same errors.
    times, observed = _weibull_sample(1.7, 3.0, 200, 4.0, seed=2)
    fit = weibull_fit(times, observed, confidence=0.9)

    def loglik(a, b):
        return (stats.weibull_min.logpdf(times[observed], math.exp(a), scale=math.exp(b)).sum()
                + stats.weibull_min.logsf(times[~observed], math.exp(a), scale=math.exp(b)).sum())

    a, b, h = math.log(fit.shape), math.log(fit.scale), 1e-4
    hessian = np.array([
        [(loglik(a + h, b) - 2 * loglik(a, b) + loglik(a - h, b)) / h**2,
         (loglik(a + h, b + h) - loglik(a + h, b - h) - loglik(a - h, b + h) + loglik(a - h, b - h)) / (4 * h**2)],
        [0.0, (loglik(a, b + h) - 2 * loglik(a, b) + loglik(a, b - h)) / h**2]])
    hessian[1, 0] = hessian[0, 1]
    se = np.sqrt(np.diag(np.linalg.inv(-hessian)))
    assert [fit.shape_se_log, fit.scale_se_log] == pytest.approx(se, rel=1e-5)  # finite-difference error ~h^2
    z = stats.norm.ppf(0.95)
    assert fit.shape_ci == pytest.approx((fit.shape * math.exp(-z * se[0]), fit.shape * math.exp(z * se[0])),
                                         rel=1e-6)
    assert fit.scale_ci[0] < fit.scale < fit.scale_ci[1]


def test_uncensored_weibull_fit_is_scipys_uncensored_mle():
    times = 2.5 * np.random.default_rng(3).weibull(2.2, 400)
    fit = weibull_fit(times, np.ones(times.size, bool))
    shape, _, scale = stats.weibull_min.fit(times, floc=0)
    assert fit.n_censored == 0
    assert fit.shape == pytest.approx(shape, rel=1e-5) and fit.scale == pytest.approx(scale, rel=1e-5)


@given(shape=st.floats(0.3, 5.0), log10_scale=st.floats(-3, 6), n=st.integers(5, 80),
       censor_span=st.sampled_from([0.5, 1.0, 3.0]), seed=st.integers(0, 2**32 - 1),
       interval=st.sampled_from(["wald", "profile"]),
       unit=st.sampled_from([3600.0, 1 / 24, 1e-6, 7.0 * 86400]))
def test_weibull_fit_does_not_depend_on_the_time_unit(shape, log10_scale, n, censor_span, seed, interval, unit):
    times, observed = _weibull_sample(shape, 10.0**log10_scale, n, censor_span, seed)
    if observed.sum() < 2:
        with pytest.raises(FitError, match="^observed: a Weibull fit needs at least 2 failures"):
            weibull_fit(times * unit, observed, interval=interval)
        return
    base = weibull_fit(times, observed, interval=interval)
    scaled = weibull_fit(times * unit, observed, interval=interval)
    assert scaled.shape == pytest.approx(base.shape, rel=1e-9)
    assert scaled.shape_ci == pytest.approx(base.shape_ci, rel=1e-9)
    assert scaled.scale == pytest.approx(base.scale * unit, rel=1e-9)
    assert scaled.scale_ci == pytest.approx((base.scale_ci[0] * unit, base.scale_ci[1] * unit), rel=1e-9)
    assert scaled.lr_statistic == pytest.approx(base.lr_statistic, rel=1e-9, abs=1e-8)
    assert scaled.loglik == pytest.approx(base.loglik - base.n_events * math.log(unit), rel=1e-9, abs=1e-8)


@pytest.mark.parametrize("times, observed, needle", [
    ([1.0, 2.0, 3.0], [False, False, False], "^observed: a Weibull fit needs at least 2 failures \\(got 0"),
    ([1.0, 2.0, 3.0], [True, False, False], "^observed: a Weibull fit needs at least 2 failures \\(got 1"),
    ([2.0, 2.0, 2.0], [True, True, True], "^times: every failure is at the longest time"),
    ([1.0, 5.0, 5.0], [False, True, True], "^times: every failure is at the longest time"),
    ([0.0, 1.0, 2.0], [True, True, False], "^times: 1 failures at time 0"),
    ([-1.0, 1.0, 2.0], [True, True, False], "^times: 1 of 3 are negative or not finite"),
    ([np.nan, 1.0, 2.0], [True, True, False], "^times: 1 of 3 are negative or not finite"),
    ([1.0, 2.0], [True, True, False], "^observed: must hold one flag per time"),
    ([1.0, 2.0, 3.0], [2, 1, 0], "^observed: must be True/False"),
])
def test_weibull_fit_refuses_what_it_cannot_fit_by_name(times, observed, needle):
    with pytest.raises(FitError, match=needle):
        weibull_fit(times, observed)


def test_weibull_fit_arguments_are_checked():
    with pytest.raises(FitError, match="^confidence: "):
        weibull_fit([1.0, 2.0, 3.0], [True, True, False], confidence=95)
    with pytest.raises(FitError, match="^interval: "):
        weibull_fit([1.0, 2.0, 3.0], [True, True, False], interval="bootstrap")


def test_censored_zero_times_carry_no_information_and_all_events_is_a_plain_fit():
    times, observed = _weibull_sample(1.3, 2.0, 60, 3.0, seed=4)
    with_zeros = weibull_fit(np.r_[times, 0.0, 0.0], np.r_[observed, False, False])
    without = weibull_fit(times, observed)
    assert with_zeros.shape == without.shape and with_zeros.scale_ci == without.scale_ci
    assert with_zeros.n_censored == without.n_censored  # the zeros are not counted as censored times
    uncensored = weibull_fit(times[observed], observed[observed])
    assert uncensored.n_censored == 0 and math.isfinite(uncensored.shape)
    assert weibull_fit(times, observed.astype(int)).shape == without.shape  # 1/0 flags read as True/False


def test_two_events_give_finite_wide_intervals():
    fit = weibull_fit([1.0, 3.0, 4.0], [True, True, False])
    assert all(math.isfinite(v) for v in (*fit.shape_ci, *fit.scale_ci))
    assert fit.shape_ci[1] / fit.shape_ci[0] > 10  # two failures say little about the shape


def test_profile_interval_is_near_the_wald_one_with_many_failures():
    times, observed = _weibull_sample(0.7, 2.0, 4000, 4.0, seed=5)
    wald, profile = weibull_fit(times, observed), weibull_fit(times, observed, interval="profile")
    assert profile.shape == wald.shape and profile.interval == "profile"
    assert profile.shape_ci == pytest.approx(wald.shape_ci, rel=2e-3)  # asymptotically the same
    assert profile.scale_ci == pytest.approx(wald.scale_ci, rel=2e-3)
    assert profile.shape_ci != wald.shape_ci


def test_weibull_fit_dict_and_not_estimable_fit():
    fit = weibull_fit([1.0, 3.0, 4.0, 0.5], [True, True, False, True])
    d = fit.to_dict()
    assert {"shape_ci", "scale_ci", "interval", "confidence", "shape_se_log", "scale_se_log", "note"} <= set(d)
    json.dumps(d)
    empty = WeibullFit.not_estimable("no failures", n_events=0, n_censored=3)
    assert not empty.estimable and np.isnan(empty.scale_ci).all() and empty.note == "no failures"


def test_failures_at_zero_runtime_count_in_the_rate_but_not_in_the_weibull_fit():
    rows = ["job_id,n_gpus,start,end,state"]
    for i, hours in enumerate([5, 9, 13, 40, 70, 3, 22, 31]):
        state = "NODE_FAIL" if i % 2 else "COMPLETED"
        rows.append(f"{i},256,2024-01-01T00:00:00,2024-01-0{1 + hours // 24}T{hours % 24:02d}:00:00,{state}")
    rows.append("99,256,2024-01-02T00:00:00,2024-01-02T00:00:00,NODE_FAIL")  # a boot failure: no runtime
    result = rm.fit("\n".join(rows) + "\n")
    assert result.n_failures == 5 and result.weibull.n_events == 4
    assert result.dataset.attrs["weibull_zero_time_failures"] == 1
    assert "1 failures at zero runtime count in the rate but not in the Weibull fit" in str(result)
    assert "scale" in str(result) and result.dataset.attrs["weibull_interval"] == "wald (0.95)"


def _weibull_coverage(shape, scale, n, censor_span, repetitions, seed):
    """Share of samples whose 95% intervals hold the true shape and scale, by interval method."""
    hits = {method: np.zeros(2, int) for method in ("wald", "profile")}
    used = 0
    for rep in range(repetitions):
        times, observed = _weibull_sample(shape, scale, n, censor_span, seed=[seed, rep])
        if observed.sum() < 2:
            continue
        used += 1
        for method in hits:
            fit = weibull_fit(times, observed, interval=method)
            hits[method] += [fit.shape_ci[0] <= shape <= fit.shape_ci[1], fit.scale_ci[0] <= scale <= fit.scale_ci[1]]
    return used, hits


# Moderate and heavy censoring with 25 to 70 failures per sample: both interval kinds should cover
# at 95%. Deterministic seeds; the bounds are the central 99.8% of Binomial(used, 0.95).
@pytest.mark.slow
@pytest.mark.parametrize("shape, scale, n, censor_span", [(0.7, 2.0, 100, 3.0), (2.0, 1e4, 100, 1.0)])
def test_weibull_intervals_cover_the_truth_at_the_nominal_rate(shape, scale, n, censor_span):
    used, hits = _weibull_coverage(shape, scale, n, censor_span, repetitions=200, seed=7)
    low, high = stats.binom.ppf([0.001, 0.999], used, 0.95)
    for method, (shape_hits, scale_hits) in hits.items():
        assert low <= shape_hits <= high, (method, "shape", shape_hits, used)
        assert low <= scale_hits <= high, (method, "scale", scale_hits, used)
