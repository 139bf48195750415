"""The Dataset that `simulate` returns: labels, units, provenance, estimators."""

import warnings

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import relmodel as rm
from relmodel.testing.strategies import scenarios

SC = rm.Scenario(n_gpus=[1024, 16384], failure_rate=6.5e-3, checkpoint_interval=["30min", "1h", "2h"],
                 checkpoint_cost="5min", restart_cost="10min", work="7d")


@pytest.fixture(scope="module")
def ds():
    return rm.simulate(SC, n_jobs=4000, seed=7, keep_jobs=True)


def test_dims_coords_and_units(ds):
    assert dict(ds.sizes) == {"n_gpus": 2, "checkpoint_interval": 3, "quantile": 3, "component": 6, "job": 4000}
    for dim in ds.dims:
        assert dim in ds.coords  # every dim has a coordinate
    assert ds.checkpoint_interval.attrs["units"] == "h" and ds.failure_rate.attrs["units"] == "1/(node day)"
    assert float(ds.restart_cost) == pytest.approx(1 / 6)  # fixed parameters are scalar coordinates
    for name in ("ettr", "ettr_se", "ettr_job_mean", "ettr_job_mean_se", "wall_quantile", "failures_mean",
                 "time_mean", "n_capped"):
        assert "units" in ds[name].attrs and "long_name" in ds[name].attrs


def test_provenance(ds):
    for key in ("relmodel_version", "seed", "rng", "backend", "n_jobs", "created", "max_failures"):
        assert key in ds.attrs
    assert ds.attrs["seed"] == 7 and ds.attrs["n_jobs"] == 4000 and "Philox4x32-10" in ds.attrs["rng"]


def test_summaries_match_the_per_job_values(ds):
    wall = ds.job_wall
    np.testing.assert_allclose(ds.wall_mean, wall.mean("job"), rtol=1e-12)
    np.testing.assert_allclose(ds.ettr, ds.job_productive.sum("job") / wall.sum("job"), rtol=1e-12)
    np.testing.assert_allclose(ds.ettr_job_mean, (ds.job_productive / wall).mean("job"), rtol=1e-12)
    np.testing.assert_allclose(ds.ettr_job_mean_se, (ds.job_productive / wall).std("job", ddof=1) / np.sqrt(4000),
                               rtol=1e-8)
    np.testing.assert_allclose(ds.failures_mean, ds.job_failures.mean("job"), rtol=1e-12)
    np.testing.assert_allclose(ds.time_mean.sum("component"), ds.wall_mean, rtol=1e-12)
    # Histogram quantiles: within one bin (relative 1/2048 of y = D/wall) of the exact ones.
    exact = wall.quantile(ds["quantile"], dim="job")
    np.testing.assert_allclose(ds.wall_quantile, exact.transpose(*ds.wall_quantile.dims), rtol=2e-3)
    assert np.all(ds.wall_quantile.diff("quantile") >= 0)


def test_ettr_decreases_with_scale_and_has_an_interior_optimum(ds):
    assert np.all(ds.ettr.sel(n_gpus=16384) < ds.ettr.sel(n_gpus=1024))
    big = ds.ettr.sel(n_gpus=16384)
    assert float(big.sel(checkpoint_interval=0.5)) > float(big.sel(checkpoint_interval=2.0))


def test_memory_does_not_grow_with_n_jobs():
    small = rm.simulate(SC, n_jobs=1000)
    large = rm.simulate(SC, n_jobs=200_000)
    assert small.nbytes == large.nbytes and "job" not in large.dims


def test_round_trip_through_netcdf(tmp_path, ds):
    path = tmp_path / "run.nc"
    ds.drop_dims("job").to_netcdf(path, engine="h5netcdf")
    back = xr.open_dataset(path, engine="h5netcdf")
    xr.testing.assert_identical(back, ds.drop_dims("job"))


@settings(max_examples=60)
@given(sc=scenarios(extreme=True))
def test_the_edges_of_the_valid_space_give_finite_or_flagged_results(sc):
    """From one GPU to a million, a failure in a billion node-days to ten a day,
    intervals of a second to a year: finite estimates, or a point flagged as
    capped (NaN only where no job was simulated)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rm.CappedJobsWarning)
        ds = rm.simulate(sc, n_jobs=64, max_failures=1000)
    if np.isnan(float(ds.ettr)):
        assert int(ds.n_capped) == 64
    else:
        assert 0 <= float(ds.ettr) <= 1 and np.isfinite(float(ds.wall_mean))
        assert np.all(np.isfinite(ds.time_mean)) and float(ds.failures_mean) <= 1000
        if int(ds.n_capped) == 0:  # capped jobs stop short of their work
            assert float(ds.wall_mean) >= sc.work * (1 - 1e-12)


def test_quantiles_of_capped_jobs_are_their_own_or_nan_on_both_backends():
    """Every job capped at 16,384 GPUs with a day between checkpoints: the histogram of
    failure-free wall / wall read a p50 9 % above the kept jobs' own; now their exact
    quantiles where the jobs are kept, NaN (flagged by n_capped) where they are not."""
    every_job_capped = dict(n_gpus=16384, failure_rate=6.5e-3, checkpoint_interval="1d", work="14d")
    some_capped = dict(n_gpus=16384, failure_rate=6.5e-3, checkpoint_interval="1h", work="1d")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rm.CappedJobsWarning)
        for scenario, max_failures in ((every_job_capped, 300), (some_capped, 20)):
            kept = {backend: rm.simulate(scenario, n_jobs=96, seed=3, keep_jobs=True, backend=backend,
                                         max_failures=max_failures) for backend in ("numba", "cython")}
            for ds in kept.values():
                assert 0 < int(ds.n_capped)
                exact = np.quantile(ds.job_wall.values, ds["quantile"].values)
                assert np.array_equal(ds.wall_quantile.values, exact)
            assert np.array_equal(kept["numba"].wall_quantile.values, kept["cython"].wall_quantile.values)
        not_kept = rm.simulate(some_capped, n_jobs=96, seed=3, max_failures=20)
    assert 0 < int(not_kept.n_capped) < 96 and np.isnan(not_kept.wall_quantile.values).all()


@settings(max_examples=40)
@given(sc=scenarios(extreme=True), n_jobs=st.integers(1, 48), max_failures=st.integers(1, 300),
       levels=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=4, unique=True))
def test_reported_wall_quantiles_are_the_kept_walls_quantiles_or_nan_where_capped(sc, n_jobs, max_failures, levels):
    """Over the whole space (every job, some or none capped): where a job was capped the
    quantiles are numpy's of the kept walls, or NaN with n_capped > 0 when the jobs are not
    kept; a point with no capped job keeps its histogram quantiles, the same bits either way."""
    run = dict(n_jobs=n_jobs, seed=1, backend="cython", max_failures=max_failures, quantiles=levels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rm.CappedJobsWarning)
        kept = rm.simulate(sc, keep_jobs=True, **run)
        summed = rm.simulate(sc, **run)
    if int(kept.n_capped) > 0:
        exact = np.quantile(kept.job_wall.values, levels)
        assert np.array_equal(kept.wall_quantile.values, exact, equal_nan=True)
    if int(summed.n_capped) > 0:
        assert np.isnan(summed.wall_quantile.values).all()
    if int(kept.n_capped) == int(summed.n_capped) == 0:
        assert np.array_equal(kept.wall_quantile.values, summed.wall_quantile.values)


@settings(max_examples=40)
@given(sc=scenarios(extreme=True), n_jobs=st.integers(1, 64),
       levels=st.lists(st.sampled_from([0.0, 1.0]) | st.floats(0.0, 1.0), min_size=1, max_size=4, unique=True))
def test_histogram_wall_quantiles_are_within_a_bin_of_the_jobs_own_extremes_included(sc, n_jobs, levels):
    """Where no job is capped the wall quantiles come from the histogram of y = failure-free
    wall / wall: each y quantile lies in the bin of the jobs' exact one (the least observed
    y that reaches the level), the maximum and minimum walls included, never an infinite wall
    from an empty first bin."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rm.CappedJobsWarning)
        ds = rm.simulate(sc, n_jobs=n_jobs, seed=2, backend="cython", quantiles=levels, keep_jobs=True)
    if int(ds.n_capped) > 0 or not np.isfinite(sc.failure_free_wall) or sc.failure_free_wall <= 0:
        return
    from relmodel._kernels.layout import N_BINS

    y_jobs = sc.failure_free_wall / ds.job_wall.values
    y_reported = sc.failure_free_wall / ds.wall_quantile.values
    for level, y in zip(levels, y_reported):
        exact = np.quantile(y_jobs, 1.0 - level, method="inverted_cdf")
        assert np.isfinite(y) and abs(y - exact) <= 1.0 / N_BINS + 1e-12


def test_a_point_with_its_key_in_the_grid_has_the_grids_bits():
    grid = rm.Scenario(n_gpus=[512, 4096], checkpoint_interval=[0.5, 2.0], failure_rate=6.5e-3, work="3d")
    whole = rm.simulate(grid, n_jobs=2500, seed=7)
    for key, point in enumerate(grid.points()):
        alone = rm.simulate(point, n_jobs=2500, seed=7, scenario_keys=[key])
        there = whole.sel(n_gpus=point.n_gpus, checkpoint_interval=point.checkpoint_interval)
        for name in ("ettr", "ettr_se", "wall_quantile", "failures_mean", "time_mean"):
            assert np.array_equal(alone[name].values, there[name].values), name
    other = rm.simulate(grid.point((1, 1)), n_jobs=2500, seed=7)  # the default key, 0: another stream
    assert other.ettr.item() != whole.ettr.values[1, 1]
    with pytest.raises(ValueError, match="scenario_keys"):
        rm.simulate(grid, n_jobs=10, scenario_keys=[0, 1])
