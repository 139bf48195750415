"""Failure-model objects, Scenario(failure_model=...), and failure taxonomies in the kernels."""

import dataclasses
import types
import warnings

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import relmodel as rm
from relmodel._closed_form import restart_phase_mean
from relmodel._engine import pack, run
from relmodel._failures import (
    FAILURE_MODELS, Exponential, FailureCategory, LemonMixture, TaxonomyMixture, Weibull, as_categories,
)
from relmodel.testing.strategies import scenarios

RATE = st.floats(1e-4, 5e-2)
N_NODES = st.integers(1, 4096)


@st.composite
def categories(draw, max_size=4):
    n = draw(st.integers(1, max_size))
    weights = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=n, max_size=n)))
    shares = weights / weights.sum()
    return tuple(
        FailureCategory(f"c{i}", float(shares[i]), draw(st.floats(0.0, 2.0)), draw(st.floats(0.0, 2.0)))
        for i in range(n)
    )


# Every model class with a strategy for its valid instances: the shared suite runs over all.
MODEL_STRATEGIES = {
    Exponential: st.builds(Exponential, RATE),
    Weibull: st.builds(Weibull, st.floats(0.5, 3.0), RATE),
    LemonMixture: st.builds(LemonMixture, RATE, st.floats(0.001, 0.2), st.floats(1.5, 50.0)),
    TaxonomyMixture: st.builds(TaxonomyMixture, RATE, categories()),
}
model_class = pytest.mark.parametrize("cls", list(MODEL_STRATEGIES), ids=lambda c: c.__name__)

CATS = (FailureCategory("hardware", 0.6, "2h", "1h", "hardware"),
        FailureCategory("system", 0.3, "20min", "10min", "system"),
        FailureCategory("user", 0.1, "5min", 0.0, "user"))
BASE = dict(n_gpus=4096, checkpoint_interval="1h", checkpoint_cost="5min", work="7d")


def test_the_suite_covers_every_model():
    assert set(MODEL_STRATEGIES) == set(FAILURE_MODELS)


# ---- the shared property suite -------------------------------------------------

@model_class
@given(data=st.data(), n_nodes=N_NODES)
def test_survival_is_a_decreasing_probability_and_hazard_is_nonnegative(cls, data, n_nodes):
    model = data.draw(MODEL_STRATEGIES[cls])
    t = np.linspace(0.0, 5.0, 41) * model.mean(n_nodes)
    s = model.survival(t, n_nodes)
    assert s[0] == pytest.approx(1.0, rel=1e-14)
    assert np.all((s >= 0) & (s <= 1)) and np.all(np.diff(s) <= 1e-15)
    h = model.hazard(t[1:], n_nodes)
    assert np.all(h >= 0) and np.all(np.isfinite(h))


@model_class
@given(data=st.data(), n_nodes=N_NODES)
def test_hazard_is_minus_the_log_derivative_of_survival(cls, data, n_nodes):
    model = data.draw(MODEL_STRATEGIES[cls])
    t = np.array([0.1, 0.5, 1.0, 2.0]) * model.mean(n_nodes)
    step = 1e-5 * t
    log_s = lambda x: np.log(model.survival(x, n_nodes))  # noqa: E731
    numeric = -(log_s(t + step) - log_s(t - step)) / (2 * step)
    np.testing.assert_allclose(numeric, model.hazard(t, n_nodes), rtol=1e-5)


@model_class
@given(data=st.data(), n_nodes=N_NODES, seed=st.integers(0, 2**32 - 1))
def test_sample_mean_matches_mean(cls, data, n_nodes, seed):
    model = data.draw(MODEL_STRATEGIES[cls])
    x = model.sample(20_000, n_nodes, seed)
    assert np.all(x > 0)
    se = x.std() / np.sqrt(x.size)
    assert abs(x.mean() - model.mean(n_nodes)) < 4.5 * se


@model_class
@given(data=st.data())
@settings(max_examples=10)
def test_sample_is_the_timeline_kernels_first_failure(cls, data):
    """Job j has no failure in simulate exactly when its sampled first failure
    comes after the failure-free runtime: the same stream, draws and transform."""
    model = data.draw(MODEL_STRATEGIES[cls])
    sc = rm.Scenario(n_gpus=256, failure_model=model, checkpoint_interval="2h", checkpoint_cost="5min", work="2d")
    ds = rm.simulate(sc, n_jobs=3000, seed=11, keep_jobs=True)
    runtime = sc.failure_free_wall
    first = model.sample(3000, sc.n_nodes, seed=11)
    assert np.array_equal(ds.job_failures.values == 0, first >= runtime)


@model_class
@given(data=st.data())
def test_models_are_hashable_and_hand_back_their_scenario(cls, data):
    model = data.draw(MODEL_STRATEGIES[cls])
    assert hash(model) == hash(dataclasses.replace(model)) and model == dataclasses.replace(model)
    sc = rm.Scenario(failure_model=model, **BASE)
    assert rm.Scenario(failure_model=sc.to_failure_model(), **BASE) == sc
    if not (cls is Weibull and model.shape == 1.0):  # that one comes back as Exponential
        assert sc.to_failure_model() == model
    assert sc.failure_model is None  # consumed into the flat fields


# ---- validation -----------------------------------------------------------------

@pytest.mark.parametrize("make, parameter", [
    (lambda: Exponential(-1e-3), "rate"),
    (lambda: Exponential(float("nan")), "rate"),
    (lambda: Exponential("often"), "rate"),
    (lambda: Weibull(0.0, 1e-3), "shape"),
    (lambda: Weibull(-2, 1e-3), "shape"),
    (lambda: Weibull(0.7, -1.0), "rate"),
    (lambda: Weibull.from_mean(0.7, 0, 16), "mean"),
    (lambda: Weibull.from_scale(0.7, "-5h", 16), "scale"),
    (lambda: Weibull.from_scale(0.7, "5h", 0), "n_nodes"),
    (lambda: LemonMixture(1e-3, 1.5, 10.0), "lemon_fraction"),
    (lambda: LemonMixture(1e-3, 0.1, -1.0), "lemon_rate_factor"),
    (lambda: TaxonomyMixture(1e-3, []), "categories"),
    (lambda: TaxonomyMixture(1e-3, [FailureCategory("a", 0.5), FailureCategory("b", 0.4)]), "categories"),
    (lambda: TaxonomyMixture(1e-3, [FailureCategory("a", 0.5), FailureCategory("a", 0.5)]), "categories"),
    (lambda: TaxonomyMixture(1e-3, [object()]), "categories"),
    (lambda: FailureCategory("a", 1.0, restart_cost="-5min"), "categories[a].restart_cost"),
    (lambda: FailureCategory("a", 1.0, queue_wait="soon"), "categories[a].queue_wait"),
    (lambda: FailureCategory("a", 1.2), "categories[a].share"),
    (lambda: FailureCategory("", 1.0), "name"),
    (lambda: Exponential(1e-3).survival(1.0, 0), "n_nodes"),
])
def test_invalid_parameters_are_named(make, parameter):
    with pytest.raises(ValueError) as err:
        make()
    assert str(err.value).startswith(parameter + ":")
    if isinstance(err.value, rm.ScenarioError):
        assert err.value.parameter == parameter


def test_weibull_constructors_agree():
    w = Weibull(0.7, 6.5e-3)
    n = 2048
    assert Weibull.from_mean(0.7, w.mean(n), n) == pytest.approx(w)
    assert Weibull.from_scale(0.7, w.scale(n), n).rate == pytest.approx(w.rate, rel=1e-14)
    assert w.mean(n) == pytest.approx(Exponential(6.5e-3).mean(n), rel=1e-14)
    assert Weibull.from_mean(1.5, "1d", 8).mean(8) == pytest.approx(24.0)


def test_taxonomy_from_a_duck_typed_taxonomy():
    stand_in = types.SimpleNamespace(categories=(
        types.SimpleNamespace(name="hw", domain="hardware", share=0.75, restart_cost=0.5, queue_wait=1.0),
        types.SimpleNamespace(name="sw", domain="system", share=0.25, restart_cost=0.1, queue_wait=0.0),
    ))
    model = TaxonomyMixture.from_taxonomy(stand_in, 6.5e-3)
    assert [c.name for c in model.categories] == ["hw", "sw"]
    assert model.categories[0] == FailureCategory("hw", 0.75, 0.5, 1.0, "hardware")
    assert model.mean_restart_cost == pytest.approx(0.75 * 0.5 + 0.25 * 0.1)
    assert rm.Scenario(taxonomy=stand_in, failure_rate=6.5e-3, **BASE) == rm.Scenario(failure_model=model, **BASE)


# ---- Scenario(failure_model=...) ---------------------------------------------------

@pytest.mark.parametrize("model, flat", [
    (Exponential(6.5e-3), dict(failure_rate=6.5e-3)),
    (Weibull(0.7, 6.5e-3), dict(failure_rate=6.5e-3, weibull_shape=0.7)),
    (LemonMixture(6.5e-3, 0.02, 10.0), dict(failure_rate=6.5e-3, lemon_fraction=0.02, lemon_rate_factor=10.0)),
    (TaxonomyMixture(6.5e-3, CATS), dict(failure_rate=6.5e-3, taxonomy=CATS)),
], ids=lambda x: type(x).__name__ if not isinstance(x, dict) else "")
def test_a_failure_model_equals_the_flat_fields(model, flat):
    by_model = rm.Scenario(failure_model=model, **BASE)
    by_fields = rm.Scenario(**flat, **BASE)
    assert by_model == by_fields and hash(by_model) == hash(by_fields)
    a = rm.simulate(by_model, n_jobs=2000, seed=4)
    b = rm.simulate(by_fields, n_jobs=2000, seed=4)
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())


@pytest.mark.parametrize("extra, parameter", [
    (dict(failure_rate=1e-3), "failure_rate"),
    (dict(weibull_shape=0.5), "weibull_shape"),
    (dict(lemon_fraction=0.1), "lemon_fraction"),
    (dict(failure_rate=[1e-3, 2e-3]), "failure_rate"),
    (dict(taxonomy=CATS), "taxonomy"),
])
def test_conflicting_flat_fields_are_rejected(extra, parameter):
    with pytest.raises(rm.ScenarioError) as err:
        rm.Scenario(failure_model=Weibull(0.7, 6.5e-3), **BASE, **extra)
    assert err.value.parameter == parameter


def test_agreeing_flat_fields_and_missing_fields():
    model = Weibull(0.7, 6.5e-3)
    assert rm.Scenario(failure_model=model, failure_rate=6.5e-3, weibull_shape=0.7, **BASE).weibull_shape == 0.7
    with pytest.raises(TypeError, match="missing required argument.*'failure_rate'.*failure_model"):
        rm.Scenario(n_gpus=8, checkpoint_interval=1, work=10)
    with pytest.raises(TypeError, match="missing required argument.*'work'"):
        rm.Scenario(n_gpus=8, failure_rate=1e-3, checkpoint_interval=1)
    with pytest.raises(rm.ScenarioError, match="failure_model"):
        rm.Scenario(failure_model="weibull", **BASE)
    with pytest.raises(rm.ScenarioError, match="taxonomy: shares must sum to 1"):
        rm.Scenario(failure_rate=1e-3, taxonomy=CATS[:2], **BASE)


def test_a_taxonomy_sets_restart_and_queue_to_its_means():
    sc = rm.Scenario(failure_model=TaxonomyMixture(6.5e-3, CATS), **BASE)
    assert sc.restart_cost == pytest.approx(0.6 * 2 + 0.3 / 3 + 0.1 / 12)
    assert sc.queue_wait == pytest.approx(0.6 + 0.3 / 6)
    for name in ("restart_cost", "queue_wait"):
        with pytest.raises(rm.ScenarioError) as err:
            rm.Scenario(failure_model=TaxonomyMixture(6.5e-3, CATS), **BASE, **{name: "10min"})
        assert err.value.parameter == name
    # A grid keeps the taxonomy on every point, and the Dataset round-trips it.
    grid = sc.sweep(n_gpus=[512, 4096])
    assert all(p.taxonomy == sc.taxonomy for p in grid.points())
    ds = rm.simulate(grid, n_jobs=500)
    assert rm.Scenario.from_dataset(ds) == grid
    assert list(ds.category.values) == ["hardware", "system", "user"]


# ---- taxonomy in the kernels ---------------------------------------------------------

def with_taxonomy(sc, cats):
    return dataclasses.replace(sc, taxonomy=cats, restart_cost=None, queue_wait=None)


@settings(max_examples=30)
@given(sc=scenarios(max_gpus=4096), cats=categories(), seed=st.integers(0, 2**32 - 1))
def test_numba_and_cython_are_bit_identical_with_a_taxonomy(sc, cats, seed):
    sc = with_taxonomy(sc, cats)
    a = run(pack(sc), 300, seed, "numba", keep_jobs=True, max_failures=2000)
    b = run(pack(sc), 300, seed, "cython", keep_jobs=True, max_failures=2000)
    assert np.array_equal(a.jobs, b.jobs) and np.array_equal(a.cat_jobs, b.cat_jobs)
    assert np.array_equal(a.stats, b.stats) and np.array_equal(a.cat_stats, b.cat_stats)
    assert np.array_equal(a.hist, b.hist)


@settings(max_examples=25)
@given(sc=scenarios(max_gpus=4096), cats=categories())
def test_the_category_breakdown_adds_up_per_job(sc, cats):
    sc = with_taxonomy(sc, cats)
    t = run(pack(sc), 300, 1, "numba", keep_jobs=True, max_failures=2000)
    jobs, by_cat = t.jobs[0], t.cat_jobs[0]
    assert np.all(by_cat >= 0)
    np.testing.assert_array_equal(by_cat[:, :, 0].sum(axis=1), jobs[:, 6])  # failures: exact counts
    for col, field in ((1, 3), (2, 4), (3, 5)):  # lost, restart, queue
        np.testing.assert_allclose(by_cat[:, :, col].sum(axis=1), jobs[:, field], rtol=1e-12, atol=1e-12)


def test_the_dataset_breakdown_adds_up_to_the_totals():
    sc = rm.Scenario(failure_model=TaxonomyMixture(6.5e-3, CATS), **BASE).sweep(n_gpus=[1024, 16384])
    ds = rm.simulate(sc, n_jobs=5000, seed=2)
    xr.testing.assert_allclose(ds.failures_by_category.sum("category"), ds.failures_mean, rtol=1e-12)
    for name in ("lost", "restart", "queue"):
        xr.testing.assert_allclose(ds[f"{name}_by_category"].sum("category"),
                                   ds.time_mean.sel(component=name, drop=True), rtol=1e-12)
    xr.testing.assert_allclose(ds.unproductive_by_category,
                               ds.lost_by_category + ds.restart_by_category + ds.queue_by_category)
    assert ds.failures_by_category.dims == ("n_gpus", "category")
    assert float(ds.queue_by_category.sel(category="user").sum()) == 0.0
    assert "category" not in rm.simulate(rm.Scenario(failure_rate=6.5e-3, **BASE), n_jobs=100).dims


def test_thread_count_and_chunking_do_not_change_a_taxonomy_run():
    grid = rm.Scenario(failure_model=TaxonomyMixture(6.5e-3, CATS), **BASE).sweep(
        n_gpus=[8, 2048, 16384], queue_wait_distribution=["fixed", "exponential"])
    one = rm.simulate(grid, n_jobs=4000, seed=3, n_threads=1)
    two = rm.simulate(grid, n_jobs=4000, seed=3, n_threads=2)
    xr.testing.assert_identical(one.drop_attrs(), two.drop_attrs())
    ref = run(pack(grid), 4000, 3, "numba")
    for chunk_items in (1, 5):
        other = run(pack(grid), 4000, 3, "cython", chunk_items=chunk_items)
        assert np.array_equal(ref.cat_stats, other.cat_stats) and np.array_equal(ref.stats, other.stats)


def test_a_single_category_is_the_plain_scenario():
    plain = rm.Scenario(failure_rate=6.5e-3, restart_cost="20min", queue_wait="1h", **BASE)
    one = rm.Scenario(failure_rate=6.5e-3, taxonomy=[FailureCategory("all", 1.0, "20min", "1h")], **BASE)
    a, b = rm.simulate(plain, n_jobs=5000, seed=8), rm.simulate(one, n_jobs=5000, seed=8)
    # One category takes no draw: the same streams, so the same bits.
    for name in ("ettr", "wall_mean", "failures_mean", "time_mean"):
        assert np.array_equal(a[name].values, b[name].values)


def test_equal_categories_agree_statistically_with_the_plain_scenario():
    plain = rm.Scenario(failure_rate=6.5e-3, restart_cost="20min", queue_wait="1h", **BASE)
    two = rm.Scenario(failure_rate=6.5e-3, **BASE, taxonomy=[
        FailureCategory("a", 0.3, "20min", "1h"), FailureCategory("b", 0.7, "20min", "1h")])
    a, b = rm.simulate(plain, n_jobs=40_000, seed=5), rm.simulate(two, n_jobs=40_000, seed=6)
    assert abs(float(a.ettr - b.ettr)) < 4 * float(np.hypot(a.ettr_se, b.ettr_se))
    shares = b.failures_by_category / b.failures_mean
    np.testing.assert_allclose(shares.values, [0.3, 0.7], atol=0.01)


def test_restart_phase_mean_reduces_to_the_one_kind_form():
    lam, u, q = 0.3, np.array([0.5]), np.array([0.25])
    np.testing.assert_allclose(restart_phase_mean(lam, u, q, [1.0]), restart_phase_mean(lam, 0.5, 0.25), rtol=1e-14)
    np.testing.assert_allclose(restart_phase_mean(0.0, [0.5, 1.0], [0.1, 0.2], [0.5, 0.5]), 0.9, rtol=1e-14)


@pytest.mark.parametrize("queue_wait_distribution", ["fixed", "exponential"])
@pytest.mark.parametrize("n_gpus", [2048, 16384])
def test_simulated_ettr_agrees_with_the_exact_taxonomy_form(n_gpus, queue_wait_distribution):
    sc = rm.Scenario(failure_model=TaxonomyMixture(6.5e-3, CATS), n_gpus=n_gpus, checkpoint_interval="1h",
                     checkpoint_cost="5min", work="7d", queue_wait_distribution=queue_wait_distribution)
    ds = rm.simulate(sc, n_jobs=40_000, seed=n_gpus)
    expected = rm.ettr(sc, "renewal")
    assert abs(float(ds.ettr) - expected) < 4 * float(ds.ettr_se)


def test_the_share_weighted_one_kind_restart_phase_is_not_the_answer():
    """With failures during restarts re-drawing the category, the mix seen in
    restarts is not the shares: the naive sum over R*_c is far off at high rates."""
    lam = Exponential(6.5e-3).mean(2048) ** -1
    per_category = (np.array([getattr(c, f) for c in CATS]) for f in ("restart_cost", "queue_wait", "share"))
    exact = float(restart_phase_mean(lam, *per_category))
    naive = sum(c.share * float(restart_phase_mean(lam, c.restart_cost, c.queue_wait)) for c in CATS)
    assert naive > 1.2 * exact


@settings(max_examples=8)
@given(sc=scenarios(laws=("exponential",), max_gpus=8192), cats=categories(max_size=3))
def test_simulated_ettr_agrees_with_the_exact_form_on_random_taxonomies(sc, cats):
    sc = with_taxonomy(dataclasses.replace(sc, lemon_fraction=0.0), cats)
    ds = rm.simulate(sc, n_jobs=20_000, seed=7)
    if int(ds.n_capped) or float(ds.ettr_se) == 0:
        return
    assert abs(float(ds.ettr) - rm.ettr(sc, "renewal")) < 4.5 * float(ds.ettr_se)


def test_compare_works_with_a_taxonomy_and_weibull_taxonomies_have_no_closed_form():
    sc = rm.Scenario(failure_model=TaxonomyMixture(6.5e-3, CATS), **BASE)
    cmp = rm.compare(sc.sweep(n_gpus=[1024, 4096]), n_jobs=5000)
    assert bool(cmp.renewal_exact.all()) and np.all(np.abs(cmp.z_renewal.values) < 4.5)
    weibull = dataclasses.replace(sc, weibull_shape=0.7)
    with pytest.warns(rm.ClosedFormWarning):
        assert np.isnan(rm.ettr(weibull, "renewal"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert as_categories(CATS) == CATS


def test_sweeping_restart_or_queue_scales_every_category():
    sc = rm.Scenario(failure_model=TaxonomyMixture(6.5e-3, CATS), **BASE)
    halved = sc.sweep(restart_cost=sc.restart_cost / 2)
    assert halved.restart_cost == pytest.approx(sc.restart_cost / 2, rel=1e-14)
    assert [c.restart_cost for c in halved.taxonomy] == pytest.approx([c.restart_cost / 2 for c in CATS])
    assert [c.queue_wait for c in halved.taxonomy] == [c.queue_wait for c in CATS]
    with pytest.raises(rm.ScenarioError, match="queue_wait: cannot be a sweep axis"):
        sc.sweep(queue_wait=[0.1, 0.2])
    no_queue = rm.Scenario(failure_rate=6.5e-3, taxonomy=[FailureCategory("a", 1.0, "5min")], **BASE)
    with pytest.raises(rm.ScenarioError, match="nothing to scale"):
        no_queue.sweep(queue_wait="1h")
    # plan's sensitivities go through sweep, so a taxonomy scenario can be planned.
    p = rm.plan(sc, n_jobs=500)
    assert p.sensitivity["restart_cost"].elasticity < 0


def test_sample_follows_the_scenario_index_of_a_grid():
    model = LemonMixture(6.5e-3, 0.05, 8.0)
    grid = rm.Scenario(failure_model=model, **BASE).sweep(checkpoint_interval=["30min", "2h"])
    ds = rm.simulate(grid, n_jobs=2000, seed=3, keep_jobs=True)
    for i, point in enumerate(grid.points()):
        first = model.sample(2000, point.n_nodes, seed=3, scenario_key=i)
        failed = ds.job_failures.isel(checkpoint_interval=i).values > 0
        assert np.array_equal(failed, first < point.failure_free_wall)
