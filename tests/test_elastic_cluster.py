"""The cluster simulator: policies, failures, invalid jobs, the Dataset."""

import dataclasses
import math
import warnings

import numpy as np
import pytest
import xarray as xr

import relmodel.elastic as el

RESNET_2H_ON_16 = 2 * 3600 * float(el.FITTED_MODELS["resnet50"].throughput(16, 256))  # samples: 2 h on 16 GPUs


def run(workload, policies="all", **config):
    return el.simulate_cluster(workload, policies, return_runs=True, **config)


def same_run(a, b):
    """Identical simulations: the same events at the same times, the same per-job results."""
    assert a.events == b.events
    assert np.array_equal(a.outcome, b.outcome)
    assert np.array_equal(a.end, b.end, equal_nan=True) and np.array_equal(a.start, b.start, equal_nan=True)
    assert a.counters == b.counters


@pytest.mark.parametrize("failure_rate", [0.0, 1.0])
def test_fixed_batch_ranges_make_elastic_and_baseline_identical(failure_rate):
    work = el.synthetic_workload(16, "8h", seed=3, batch_range_factor=(1, 1))
    _, (elastic, fixed) = run(work, ["elastic", "fixed-batch"], seed=3, failure_rate=failure_rate)
    same_run(elastic, fixed)
    assert any(e[1] == "rescale" for e in elastic.events)  # the DP did work
    assert failure_rate == 0 or elastic.counters["shrinks"] > 0
    # control: with batch ranges the two policies differ
    wide = el.synthetic_workload(16, "8h", seed=3)
    _, (elastic, fixed) = run(wide, ["elastic", "fixed-batch"], seed=3, failure_rate=failure_rate)
    assert elastic.events != fixed.events


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_light_load_completes_every_job_under_every_policy(seed):
    ds = el.simulate_cluster(el.synthetic_workload(1, "24h", seed=seed), n_gpus=64, seed=seed)
    assert (ds.submitted > 10).all()
    assert (ds.completed == ds.submitted).all() and (ds.dropped == 0).all() and (ds.unfinished == 0).all()
    assert (ds.outcome == "completed").all()


def test_overload_elastic_completes_at_least_as_many_jobs_as_the_baseline():
    completed = {"elastic": 0, "fixed-batch": 0}
    for seed in (0, 1, 2):
        ds = el.simulate_cluster(el.synthetic_workload(24, "12h", seed=seed), ["elastic", "fixed-batch"],
                                 n_gpus=64, seed=seed)
        assert (ds.dropped > 0.05 * ds.submitted).all()  # this is overload
        ratio = float(ds.completed.sel(policy="elastic") / ds.completed.sel(policy="fixed-batch"))
        assert ratio >= 1.0
        assert float(ds.jct_mean.sel(policy="elastic")) < float(ds.jct_mean.sel(policy="fixed-batch"))
        for policy in completed:
            completed[policy] += int(ds.completed.sel(policy=policy))
    assert completed["elastic"] > completed["fixed-batch"]


def test_queue_mode_completes_everything_and_elastic_jobs_finish_sooner():
    ds = el.simulate_cluster(el.synthetic_workload(24, "6h", seed=4), n_gpus=64, seed=4, unplaceable="queue")
    assert (ds.completed == ds.submitted).all() and (ds.dropped == 0).all()
    assert float(ds.wait_mean.sel(policy="fifo")) > 0
    assert float(ds.jct_mean.sel(policy="elastic")) < float(ds.jct_mean.sel(policy="fixed-batch"))
    assert float(ds.jct_mean.sel(policy="elastic")) < float(ds.jct_mean.sel(policy="fifo"))


# -- failures ----------------------------------------------------------------------
def one_job(policy, **config):
    job = el.Job("resnet50", RESNET_2H_ON_16, 256, 16, job_id="a")
    base = dict(n_gpus=16, failures=[(1.25, 0)], checkpoint_interval=1.0, checkpoint_cost=0.0, restart_cost=0.1,
                pause=0.05, repair_time=10.0)
    ds, (r,) = run([job], policy, **{**base, **config})
    return ds.sel(policy=policy), r


def test_a_struck_elastic_job_shrinks_and_loses_only_its_pause():
    ds, r = one_job("elastic")
    kinds = [e[1] for e in r.events]
    assert kinds == ["submit", "start", "node-fail", "shrink", "resume", "complete"]
    assert r.events[3][3] == 8  # onto the 8 surviving GPUs
    assert float(ds.gpu_hours_lost_failures) == pytest.approx(8 * 0.05)
    assert float(ds.gpu_hours_redone) == 0 and int(ds.shrinks) == 1 and int(ds.restarts) == 0
    # 1.25 h at 16 GPUs did 62.5 % of the work; the rest at the 8-GPU rate after a 0.05 h pause
    x8 = float(el.FITTED_MODELS["resnet50"].throughput(8, 256)) * 3600
    assert float(ds.jct_mean) == pytest.approx(1.25 + 0.05 + 0.375 * RESNET_2H_ON_16 / x8)


def test_a_struck_rigid_job_goes_back_to_its_checkpoint():
    ds, r = one_job("fifo")
    assert [e[1] for e in r.events] == ["submit", "start", "node-fail", "evict", "node-repair", "start", "complete"]
    assert float(ds.gpu_hours_redone) == pytest.approx(16 * 0.25)  # 15 min since the 1 h checkpoint
    assert float(ds.gpu_hours_lost_failures) == pytest.approx(16 * (0.25 + 0.1))  # plus the restart
    # waits for the node (10 h), restarts (0.1 h), redoes the last hour
    assert float(ds.jct_mean) == pytest.approx(11.25 + 0.1 + 1.0)


def test_checkpoint_writes_take_time_and_mark_the_restart_point():
    ds, _ = one_job("fifo", checkpoint_cost=0.1, failures=[(1.05, 0)])  # during the first checkpoint write
    assert float(ds.gpu_hours_redone) == pytest.approx(16 * 1.05)  # nothing saved yet
    ds, _ = one_job("fifo", checkpoint_cost=0.1, failures=[(1.15, 0)])  # just after it
    assert float(ds.gpu_hours_redone) == pytest.approx(16 * 0.05)
    free, _ = one_job("fifo", checkpoint_cost=0.1, failures=[])
    assert float(free.jct_mean) == pytest.approx(2.0 + 0.1)  # one checkpoint; none after the last interval


def test_a_job_whose_only_node_fails_restarts_even_when_elastic():
    job = el.Job("bert", 3600 * float(el.FITTED_MODELS["bert"].throughput(8, 128)), 128, 8, max_gpus=8, job_id="b")
    ds, (r,) = run([job], "elastic", n_gpus=16, failures=[(0.5, 0)], pause=0, restart_cost=0.1, repair_time=1.0)
    assert int(ds.restarts.item()) == 1 and int(ds.shrinks.item()) == 0
    assert [e[1] for e in r.events][2:5] == ["node-fail", "evict", "start"]  # restarts at once on node 1


@pytest.mark.parametrize("seed", [0, 1])
def test_under_failures_elastic_jobs_lose_less_gpu_time_than_rigid_ones(seed):
    ds = el.simulate_cluster(el.synthetic_workload(6, "24h", seed=seed), n_gpus=64, seed=seed, failure_rate=1.0)
    assert int(ds.node_failures.sel(policy="elastic")) > 5
    lost = ds.gpu_hours_lost_failures
    per_hit = lost / ds.job_interruptions
    for resizable in ("elastic", "fixed-batch"):
        assert float(lost.sel(policy=resizable)) < float(lost.sel(policy="fifo"))
        assert float(per_hit.sel(policy=resizable)) < 0.5 * float(per_hit.sel(policy="fifo"))
    assert int(ds.shrinks.sel(policy="elastic")) > 0 and int(ds.shrinks.sel(policy="fifo")) == 0


def test_every_policy_sees_the_same_node_failures():
    work = el.synthetic_workload(4, "12h", seed=5)
    _, runs = run(work, seed=5, failure_rate=2.0)
    fails = [[e[0] for e in r.events if e[1] == "node-fail"] for r in runs]
    shortest = min(len(f) for f in fails)
    assert shortest > 5 and all(f[:shortest] == fails[0][:shortest] for f in fails)


# -- invalid jobs ----------------------------------------------------------------
def test_invalid_jobs_are_rejected_at_submission_and_the_rest_goes_on():
    valid = el.synthetic_workload(8, "12h", seed=6)
    bad = [
        el.Job("resnet50", 1e6, 128, 2, min_batch=256, max_batch=128, submit_time=1.0, job_id="B_lo>B_hi"),
        el.Job("resnet50", 1e6, 128, 2, min_gpus=128, submit_time=2.0, job_id="too-big"),
        el.Job("bert", -1e6, 64, 1, submit_time=3.0, job_id="negative-work"),
    ]
    mixed = sorted(valid.jobs + tuple(bad), key=lambda j: j.submit_time)
    ds, runs = run(mixed, seed=6, failure_rate=0.5)
    ref, ref_runs = run(valid, seed=6, failure_rate=0.5)
    assert (ds.rejected == 3).all() and ds.sizes["rejected_job"] == 3
    reasons = dict(zip(ds.job_id.values[ds.rejected_job.values], ds.rejection_reason.values))
    assert "B_lo = 256 > B_hi = 128" in reasons["B_lo>B_hi"]
    assert "no feasible GPU count" in reasons["too-big"]
    assert "work" in reasons["negative-work"]
    assert ds.attrs["n_rejected"] == 3
    # the valid jobs fare exactly as they do without the invalid ones
    keep = ~np.isin(ds.job_id.values, [j.job_id for j in bad])
    for policy in ds.policy.values:
        assert np.array_equal(ds.jct.sel(policy=policy).values[keep], ref.jct.sel(policy=policy).values,
                              equal_nan=True)
    for r, r_ref in zip(runs, ref_runs):
        assert [e for e in r.events if e[1] != "reject"] == r_ref.events


# -- the Dataset -------------------------------------------------------------------
def test_dataset_labels_units_and_provenance(tmp_path):
    ds = el.simulate_cluster(el.synthetic_workload(6, "6h", seed=2), n_gpus=32, seed=2, failure_rate=1.0,
                             time_bins=24)
    assert ds.sizes["policy"] == 3 and ds.sizes["time"] == 24
    for name in ds.dims:
        assert name in ds.coords
    for name, var in ds.data_vars.items():
        assert "long_name" in var.attrs, name
    for key in ("relmodel_version", "seed", "rng", "created", "n_gpus", "failure_rate_per_node_day",
                "workload_arrival_rate_per_h", "workload_model_mix", "workload_seed"):
        assert key in ds.attrs, key
    path = tmp_path / "cluster.nc"
    ds.to_netcdf(path, engine="h5netcdf")
    back = xr.open_dataset(path, engine="h5netcdf")
    xr.testing.assert_allclose(back.jct, ds.jct)


def test_utilisation_stays_within_the_gpus_up():
    ds = el.simulate_cluster(el.synthetic_workload(12, "12h", seed=7), n_gpus=64, seed=7, failure_rate=3.0)
    assert float(ds.gpus_up.min()) < 64
    assert (ds.gpu_utilisation >= 0).all()
    assert (ds.gpu_utilisation * 64 <= ds.gpus_up + 1e-9).all()
    assert (ds.gpu_hours_busy <= 64 * ds.makespan + 1e-9).all()
    # the time series integrates to the busy GPU-hours
    width = float(ds.time[1] - ds.time[0])
    assert np.allclose((ds.gpu_utilisation * 64 * width).sum("time"), ds.gpu_hours_busy)


def test_no_job_finishes_faster_than_its_best_allocation_allows():
    work = el.synthetic_workload(3, "12h", seed=8)
    ds = el.simulate_cluster(work, n_gpus=64, seed=8)
    for i, job in enumerate(work.jobs):
        best = el.job_options(job, 64).throughput.max() * 3600
        for policy in ds.policy.values:
            jct = float(ds.jct.sel(policy=policy, job=i))
            assert math.isnan(jct) or jct >= job.work / best * (1 - 1e-12)


def test_same_seed_same_dataset_and_another_seed_other_failures():
    work = el.synthetic_workload(6, "8h", seed=9)
    a = el.simulate_cluster(work, seed=9, failure_rate=1.0)
    b = el.simulate_cluster(work, seed=9, failure_rate=1.0)
    c = el.simulate_cluster(work, seed=10, failure_rate=1.0)
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
    assert not a.gpus_up.equals(c.gpus_up)


def test_until_stops_the_run_and_says_so():
    work = el.synthetic_workload(6, "8h", seed=1)
    with pytest.warns(el.UnfinishedJobsWarning, match="unfinished"):
        ds = el.simulate_cluster(work, "elastic", until="4h").sel(policy="elastic")
    assert int(ds.unfinished) > 0 and float(ds.makespan) == 4.0
    assert int(ds.submitted) + int((ds.outcome == "not submitted").sum()) == len(work)


def test_bad_configuration_names_the_parameter():
    work = el.synthetic_workload(1, "1h")
    for kwargs, name in [({"n_gpus": 0}, "n_gpus"), ({"pause": "-1min"}, "pause"),
                         ({"failure_rate": -1}, "failure_rate"), ({"unplaceable": "wait"}, "unplaceable"),
                         ({"failures": [(1.0, 99)]}, "failures"), ({"checkpoint_interval": 0}, "checkpoint_interval")]:
        with pytest.raises(ValueError, match=f"^{name}: "):
            el.simulate_cluster(work, **kwargs)
    with pytest.raises(ValueError, match="^policy: "):
        el.simulate_cluster(work, ["elastic", "greedy"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        el.simulate_cluster(dataclasses.replace(work, jobs=()), n_gpus=8)  # an empty workload is fine


def test_common_jct_compares_like_with_like():
    ds = el.simulate_cluster(el.synthetic_workload(48, "4h", seed=2), n_gpus=32, seed=2)
    both = np.isfinite(ds.jct.sel(policy="elastic")) & np.isfinite(ds.jct.sel(policy="fifo"))
    assert 0 < int(both.sum()) < int(ds.completed.sel(policy="elastic"))  # fifo dropped some the other kept
    common = el.common_jct_mean(ds, ["elastic", "fifo"])
    assert list(common.policy.values) == ["elastic", "fifo"]
    assert float(common.sel(policy="fifo")) == pytest.approx(float(ds.jct.sel(policy="fifo")[both].mean()))


def test_timeline_parameters_come_from_a_scenario():
    import relmodel as rm

    sc = rm.Scenario(n_gpus=16384, failure_rate=0.5, checkpoint_interval="30min", checkpoint_cost="2min",
                     restart_cost="5min", work="14d")
    cfg = el.ClusterConfig.from_scenario(sc, n_gpus=32, pause="1min")
    assert (cfg.n_gpus, cfg.failure_rate, cfg.checkpoint_interval, cfg.restart_cost) == (32, 0.5, 0.5, 5 / 60)
    work = el.synthetic_workload(6, "4h", seed=1)
    a = el.simulate_cluster(work, config=cfg)
    b = el.simulate_cluster(work, n_gpus=32, failure_rate=0.5, checkpoint_interval=0.5, checkpoint_cost=2 / 60,
                            restart_cost=5 / 60, pause=1 / 60)
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
    with pytest.raises(ValueError, match="^config: "):
        el.simulate_cluster(work, config=cfg, n_gpus=8)
    with pytest.raises(ValueError, match="^scenario: "):
        el.ClusterConfig.from_scenario(sc.sweep(n_gpus=[8, 16]))


def test_work_completed_weighs_jobs_by_their_submitted_size():
    work = el.synthetic_workload(1, "24h", seed=0)
    size = sum(j.work / float(j.model.throughput(j.gpus, j.batch)) / 3600 * j.gpus for j in work.jobs)
    ds = el.simulate_cluster(work, n_gpus=64, seed=0)
    assert np.allclose(ds.work_completed, size) and ds.work_completed.attrs["units"] == "GPU h"
    # Overload with batches that grow with the GPUs asked for: the elastic policy admits the large
    # jobs that the fixed-batch one drops (its minimum GPU counts are lower), so it may complete fewer
    # jobs, but it completes more work.
    over = el.simulate_cluster(el.synthetic_workload(64, "24h", seed=1, batch_scaling="per-gpu"),
                               ["elastic", "fixed-batch"], n_gpus=64, seed=1)
    assert float(over.work_completed.sel(policy="elastic")) > float(over.work_completed.sel(policy="fixed-batch"))
    assert "work_completed_gpu_h" in el.summary(over)["elastic"]


def test_the_figure_caption_names_every_setting_that_shapes_the_run():
    """The `cluster --plot` footer left out the throughput curves, the admission rule and the queue's wait."""
    from relmodel.elastic._plot import cluster_caption

    workload = el.synthetic_workload(8, "4h", seed=1, curve="roofline")
    queued = el.simulate_cluster(workload, ["elastic"], n_gpus=16, unplaceable="queue", max_wait=2.0,
                                 admission="optimizer")
    caption = cluster_caption(queued.attrs)
    assert "admission optimizer" in caption and "throughput curves roofline" in caption
    assert "waiting at most 2h" in caption
    rejected = el.simulate_cluster(workload, ["elastic"], n_gpus=16)
    assert "waiting" not in cluster_caption(rejected.attrs)  # a rejected job never waits
