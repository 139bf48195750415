"""Monte Carlo against the exact renewal expectation (docs: user-guide/closed-forms.md)."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import relmodel as rm
from relmodel.testing.strategies import scenarios

EXPONENTIAL = ("exponential",)

N_JOBS = 20_000


def z_score(sc, n_jobs=N_JOBS, seed=0, backend="numba"):
    ds = rm.simulate(sc, n_jobs=n_jobs, seed=seed, backend=backend)
    return (float(ds.ettr) - rm.ettr(sc, "renewal")) / float(ds.ettr_se)


def tractable(sc, n_jobs=N_JOBS):
    """ETTR not near 0, a bounded number of failure events to sample, and enough
    of them across the run (at least 50) for a standard error to mean something."""
    expected_failures = sc.job_failure_rate * sc.work / max(rm.ettr(sc), 1e-300)
    return rm.ettr(sc) > 0.05 and expected_failures < 2000 and n_jobs * sc.job_failure_rate * sc.work > 50


@settings(max_examples=30)
@given(sc=scenarios(laws=EXPONENTIAL), seed=st.integers(0, 1000))
def test_simulated_ettr_within_4_standard_errors_of_renewal(sc, seed):
    assume(tractable(sc))
    assert abs(z_score(sc, seed=seed)) < 4


@pytest.mark.parametrize("backend", ["numba", "cython"])
def test_reference_scenarios_agree(backend):
    for gpus, work in [(8, "7d"), (1024, "7d"), (16384, "14d")]:
        sc = rm.Scenario(n_gpus=gpus, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min",
                         restart_cost="10min", work=work, queue_wait="20min", queue_wait_distribution="exponential")
        assert abs(z_score(sc, n_jobs=10_000, backend=backend)) < 4


def test_lemon_mixture_agrees_with_its_mixed_renewal_form():
    sc = rm.Scenario(n_gpus=4096, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min",
                     restart_cost="10min", work="7d", lemon_fraction=0.01, lemon_rate_factor=30)
    plain = rm.ettr(sc.sweep(lemon_fraction=0.0))
    assert rm.ettr(sc) != plain  # the mixture is a different law with the same mean rate
    assert abs(z_score(sc)) < 4


def test_jensen_gap_is_reported_not_hidden():
    sc = rm.Scenario(n_gpus=16384, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min",
                     restart_cost="10min", work="1d")
    ds = rm.simulate(sc, n_jobs=50_000)
    gap = float(ds.ettr_job_mean - ds.ettr)
    assert abs(gap) > 5 * float(np.hypot(ds.ettr_se, ds.ettr_job_mean_se))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
@settings(max_examples=40)
@given(sc=scenarios(laws=EXPONENTIAL))
def test_agreement_many_scenarios_and_seeds(seed, sc):
    assume(tractable(sc, n_jobs=50_000))
    assert abs(z_score(sc, n_jobs=50_000, seed=seed)) < 4.5
