"""`simulate_cluster`: one workload under several policies, as a labelled Dataset."""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from .. import _labels as labels
from .._feedback import progress_bar
from .._errors import ParameterError
from ._cluster import CLUSTER_POLICIES, COMPLETED, DROPPED, OUTCOMES, REJECTED, UNFINISHED, run_policy
from ._config import ClusterConfig
from ._nodes import FailureProcess, capacity_timeline, node_sizes
from ._throughput import as_model

_PER_POLICY = {  # name: (long_name, units)
    "submitted": ("jobs that arrived", "1"),
    "rejected": ("jobs rejected at submission as invalid", "1"),
    "completed": ("jobs completed", "1"),
    "dropped": ("jobs dropped: no room when they arrived, or none within max_wait", "1"),
    "timeouts": ("jobs dropped from the queue when max_wait ran out", "1"),
    "unfinished": ("jobs still running or queued when the run stopped", "1"),
    "work_completed": ("work of the completed jobs, in GPU-hours at their submitted GPUs and batch", "GPU h"),
    "jct_mean": ("mean job completion time (completion - submission) of completed jobs", "h"),
    "wait_mean": ("mean time from submission to first start, of started jobs", "h"),
    "makespan": ("time of the run's last event", "h"),
    "utilisation_mean": ("GPU-hours held by jobs / (GPUs x makespan)", "1"),
    "gpu_hours_busy": ("GPU-hours held by jobs (computing, checkpointing, pausing, restarting)", "GPU h"),
    "gpu_hours_lost_failures": ("GPU-hours lost to failures: redone work, restarts, pauses of struck jobs", "GPU h"),
    "gpu_hours_redone": ("GPU-hours of work lost since the last checkpoint (redone)", "GPU h"),
    "gpu_hours_restart": ("GPU-hours of restarts and failure pauses", "GPU h"),
    "gpu_hours_paused": ("GPU-hours of rescaling pauses (not failure-driven)", "GPU h"),
    "node_failures": ("node failures during the run", "1"),
    "job_interruptions": ("jobs struck by a node failure (counted per failure)", "1"),
    "shrinks": ("struck jobs that shrank onto their surviving GPUs and went on", "1"),
    "restarts": ("struck jobs that went back to their last checkpoint", "1"),
    "rescales": ("reconfigurations of running jobs by the allocator (not failure-driven)", "1"),
}
RNG = ("Philox4x32-10; key (seed, stream); counter (draw, row): workload arrivals stream 1, "
       "job attributes stream 2 (row = job), node failures stream 3 (row = node)")


def simulate_cluster(workload, policies="all", *, config: ClusterConfig | None = None, time_bins: int = 96,
                     quantiles=(0.5, 0.9, 0.99), return_runs: bool = False, progress: bool | None = None,
                     **fields) -> xr.Dataset:
    """Run a workload under each policy on the same cluster and failures.

    Parameters
    ----------
    workload : Workload or sequence of Job
        A `Workload` (synthetic or a trace) or a sequence of `Job`.
    policies : "all" or sequence of str, default "all"
        "all" or a sequence of "elastic", "fixed-batch", "fifo".
    config : ClusterConfig, optional
        E.g. ``ClusterConfig.from_scenario(sc, n_gpus=64)``, or instead `fields`.
    time_bins : int, default 96
        Bins of the utilisation time series.
    quantiles : sequence of float, default (0.5, 0.9, 0.99)
        Job completion time quantiles.
    return_runs : bool, default False
        Also return the per-policy `PolicyRun` objects (event logs).
    progress : bool, optional
        A progress bar on stderr over the jobs' arrivals, all policies
        together. None (the default): on a terminal, unless the command line
        was given ``--quiet``.
    **fields
        `ClusterConfig` fields: n_gpus (64), gpus_per_node (8),
        failure_rate (per node-day, 0), repair_time ("2h"), checkpoint_interval
        ("1h"), checkpoint_cost ("1min"), restart_cost ("10min"), pause
        ("30s"), unplaceable ("drop" or "queue"), max_wait (with "queue"; None:
        for ever), admission ("first-fit" or "optimizer"), reoptimize_every
        (None), objective ("throughput" or "speedup"), seed (failures),
        failures (explicit), until.

    Returns
    -------
    xarray.Dataset
        Over ``policy`` (counts, completion times, GPU-hours lost to
        failures), ``policy`` x ``time`` (utilisation), ``policy`` x ``job``
        (per-job outcome and completion time) and ``rejected`` (invalid jobs and
        why), with the configuration and the workload's parameters in attrs.
        With ``return_runs=True``, a tuple of it and a dict of `PolicyRun`.
    """
    if config is not None and fields:
        raise ParameterError("config", f"give a ClusterConfig or its fields, not both (got {sorted(fields)})")
    cfg = config if config is not None else ClusterConfig(**fields)
    names = list(CLUSTER_POLICIES) if policies == "all" else [policies] if isinstance(policies, str) else list(policies)
    for name in names:
        if name not in CLUSTER_POLICIES:
            raise ParameterError("policy", f"must be 'all' or among {', '.join(CLUSTER_POLICIES)} (got {name!r})")
    if len(set(names)) != len(names) or not names:
        raise ParameterError("policy", f"need distinct policies (got {names})")
    if isinstance(time_bins, bool) or not isinstance(time_bins, int) or time_bins < 1:
        raise ParameterError("time_bins", f"must be a positive integer (got {time_bins!r})")
    q = np.asarray(quantiles, dtype=float)
    if q.ndim != 1 or np.any((q < 0) | (q > 1)):
        raise ParameterError("quantiles", f"must be in [0, 1] (got {quantiles!r})")
    jobs = tuple(workload)
    with progress_bar(len(jobs) * len(names), f"simulating {', '.join(names)}", enabled_=progress) as bar:
        # Without return_runs nobody reads the event logs: a large trace's would take gigabytes.
        runs = [run_policy(jobs, name, cfg, keep_events=return_runs, on_arrivals=bar.update) for name in names]
    ds = _dataset(jobs, runs, cfg, q, time_bins, getattr(workload, "attrs", {}))
    return (ds, runs) if return_runs else ds


def _dataset(jobs, runs, cfg, q, time_bins, workload_attrs) -> xr.Dataset:
    t_max = max([r.end_time for r in runs] + [1e-9])
    edges = np.linspace(0.0, t_max, time_bins + 1)
    data = {name: [] for name in _PER_POLICY}
    jct_q, util, jct = [], [], []
    size = _submitted_gpu_hours(jobs)
    for r in runs:
        done = r.outcome == COMPLETED
        times = r.jct[done]
        busy = _integral(r.alloc_times, r.alloc_gpus, r.end_time)
        data["submitted"].append(int(np.sum(np.isin(r.outcome, (COMPLETED, DROPPED, REJECTED, UNFINISHED)))))
        data["rejected"].append(int(np.sum(r.outcome == REJECTED)))
        data["completed"].append(int(done.sum()))
        data["dropped"].append(int(np.sum(r.outcome == DROPPED)))
        data["unfinished"].append(int(np.sum(r.outcome == UNFINISHED)))
        data["work_completed"].append(float(np.nansum(size[done])))
        data["jct_mean"].append(float(times.mean()) if times.size else np.nan)
        started = np.isfinite(r.start)
        data["wait_mean"].append(float((r.start - r.submit)[started].mean()) if started.any() else np.nan)
        data["makespan"].append(r.end_time)
        data["gpu_hours_busy"].append(busy)
        data["utilisation_mean"].append(busy / (cfg.n_gpus * r.end_time) if r.end_time > 0 else 0.0)
        for key in ("gpu_hours_lost_failures", "gpu_hours_redone", "gpu_hours_restart", "gpu_hours_paused",
                    "node_failures", "job_interruptions", "shrinks", "restarts", "rescales", "timeouts"):
            data[key].append(r.counters[key])
        jct_q.append(np.quantile(times, q) if times.size else np.full(q.size, np.nan))
        util.append(_bin_means(r.alloc_times, r.alloc_gpus, r.end_time, edges) / cfg.n_gpus)
        jct.append(np.where(done, r.jct, np.nan))

    data_vars = {name: ("policy", values, _attrs(*_PER_POLICY[name])) for name, values in data.items()}
    data_vars["jct_quantile"] = (("policy", "quantile"), np.array(jct_q),
                                 _attrs("job completion time quantiles of completed jobs", "h"))
    data_vars["gpu_utilisation"] = (("policy", "time"), np.array(util),
                                    _attrs("GPUs held by jobs / GPUs, averaged over each time bin", "1"))
    sizes = node_sizes(cfg.n_gpus, cfg.gpus_per_node)
    up_t, up_g = capacity_timeline(sizes, FailureProcess(sizes.size, cfg.failure_rate, cfg.seed, cfg.failures),
                                   cfg.repair_time, t_max)
    data_vars["gpus_up"] = ("time", _bin_means(up_t, up_g, t_max, edges),
                            _attrs("GPUs on nodes that are up, averaged over each time bin", "GPU"))
    data_vars["outcome"] = (("policy", "job"), _outcome_names(np.array([r.outcome for r in runs])),
                            {"long_name": "what became of each job: " + ", ".join(OUTCOMES)})
    data_vars["jct"] = (("policy", "job"), np.array(jct).reshape(len(runs), len(jobs)),
                        _attrs("job completion time (NaN: not completed)", "h"))
    rejected = runs[0].rejected
    data_vars["rejection_reason"] = ("rejected_job", np.array([m for _, m in rejected], dtype=str),
                                     {"long_name": "why the job was rejected at submission"})
    coords = {
        "policy": ("policy", [r.policy for r in runs]),
        "quantile": ("quantile", q, {"units": "1"}),
        "time": ("time", (edges[:-1] + edges[1:]) / 2, _attrs("centre of the time bin", "h")),
        "job": ("job", np.arange(len(jobs))),
        "job_id": ("job", np.array([str(j.job_id) for j in jobs], dtype=str)),
        "submit_time": ("job", runs[0].submit, _attrs("submission time", "h")),
        "model": ("job", _model_names(jobs)),
        "rejected_job": ("rejected_job", np.array([i for i, _ in rejected], dtype=np.int64),
                     {"long_name": "index (job) of each rejected job"}),
    }
    return xr.Dataset(data_vars, coords=coords, attrs=_provenance(cfg, runs, workload_attrs, t_max))


def _submitted_gpu_hours(jobs) -> np.ndarray:
    """Each job's size: GPU-hours on its submitted GPUs at its submitted batch
    (work / X(gpus, batch) x gpus); NaN for a job that is invalid. Completed
    jobs counted this way weigh a large job above a small one, which the
    number completed does not."""
    out = np.full(len(jobs), np.nan)
    rates: dict = {}  # X of each (model, GPUs, batch) met: a trace repeats a few
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # an invalid job's size is NaN
        for k, job in enumerate(jobs):
            try:
                out[k] = float(job.work) / (_submitted_rate(job, rates) * 3600.0) * float(job.gpus)
            except (ValueError, TypeError, ZeroDivisionError):
                continue
    return np.where(np.isfinite(out) & (out >= 0), out, np.nan)


def _submitted_rate(job, rates: dict) -> float:
    """X(gpus, batch) of the job's model, looked up in `rates` where its GPUs and batch are
    integers (a float's sign of zero would be lost in the key)."""
    gpus, batch = job.gpus, job.batch
    keyed = type(gpus) in _INTEGERS and type(batch) in _INTEGERS
    key = (id(job.model), gpus, batch, type(gpus), type(batch))  # the jobs hold their models
    if keyed and key in rates:
        return rates[key]
    x = float(as_model(job.model).throughput(gpus, batch))
    if keyed:
        rates[key] = x
    return x


_INTEGERS = frozenset((int, np.int64, np.int32))


def _model_names(jobs) -> np.ndarray:
    """Each job's model name (the model's str where it has none), once per model object."""
    names: dict = {}
    for job in jobs:
        if id(job.model) not in names:
            names[id(job.model)] = getattr(job.model, "name", str(job.model))
    return np.array([names[id(job.model)] for job in jobs], dtype=str)


def _outcome_names(codes: np.ndarray) -> np.ndarray:
    """`OUTCOMES` names of the codes, as wide as the longest one present (as an array of them
    built from a list would be)."""
    width = max((len(OUTCOMES[c]) for c in np.unique(codes).tolist()), default=1)
    return np.array(OUTCOMES)[codes].astype(f"<U{width}")


def _attrs(long_name: str, units: str) -> dict:
    return {"long_name": long_name, "units": units}


def _provenance(cfg, runs, workload_attrs, t_max) -> dict:
    attrs = labels.provenance("relmodel elastic cluster simulation", **{
        "rng": RNG,
        "policies": [r.policy for r in runs],
        "seed": cfg.seed,
        "n_gpus": cfg.n_gpus,
        "gpus_per_node": cfg.gpus_per_node,
        "failure_rate_per_node_day": cfg.failure_rate,
        "repair_time_h": cfg.repair_time,
        "checkpoint_interval_h": cfg.checkpoint_interval,
        "checkpoint_cost_h": cfg.checkpoint_cost,
        "restart_cost_h": cfg.restart_cost,
        "pause_h": cfg.pause,
        "unplaceable": cfg.unplaceable,
        "max_wait_h": cfg.max_wait,
        "admission": cfg.admission,
        "objective": cfg.objective,
        "n_rejected": len(runs[0].rejected),
        "time_span_h": t_max,
    })
    if cfg.until is not None:
        attrs["until_h"] = cfg.until
    if cfg.reoptimize_every is not None:
        attrs["reoptimize_every_h"] = cfg.reoptimize_every
    if cfg.failures is not None:
        attrs["failures_explicit"] = ";".join(f"{t:g}h@node{n}" for t, n in cfg.failures)
    for key, value in workload_attrs.items():
        if value is not None and not isinstance(value, bool):
            attrs[f"workload_{key}"] = value
    return attrs


def _integral(times, values, end) -> float:
    """Integral over [0, end] of the step function values[k] on [times[k], times[k+1])."""
    widths = np.diff(np.append(times, max(end, times[-1])))
    return float(np.sum(values * widths))


def _bin_means(times, values, end, edges) -> np.ndarray:
    """Mean of the step function over each bin (0 after `end`)."""
    times = np.append(times, end)
    values = np.append(values, 0)
    cum = np.concatenate([[0.0], np.cumsum(values[:-1] * np.diff(times))])
    k = np.clip(np.searchsorted(times, edges, side="right") - 1, 0, times.size - 1)
    area = cum[k] + values[k] * (edges - times[k])
    return np.diff(area) / np.diff(edges)


def common_jct_mean(ds: xr.Dataset, policies=None) -> xr.DataArray:
    """Return each policy's mean completion time over the jobs every one of `policies` completed.

    The like-for-like comparison, free of the bias of a policy that drops the
    long jobs.

    Parameters
    ----------
    ds : xarray.Dataset
        A result of `simulate_cluster`.
    policies : sequence of str, optional
        The policies compared; all when None.

    Returns
    -------
    xarray.DataArray
        Mean completion time (h) by policy.
    """
    sub = ds.jct if policies is None else ds.jct.sel(policy=list(policies))
    common = np.isfinite(sub).all("policy")
    out = sub.where(common).mean("job")
    out.attrs = _attrs(f"mean job completion time over the {int(common.sum())} jobs every policy completed", "h")
    return out.rename("jct_mean_common")


def summary(ds: xr.Dataset) -> dict:
    """Return, per policy, the figures ``relmodel cluster`` prints (and its ``--json``).

    Parameters
    ----------
    ds : xarray.Dataset
        A result of `simulate_cluster`.

    Returns
    -------
    dict
        Policy name to a dict of figures.
    """
    out = {}
    for policy in ds.policy.values.tolist():
        p = ds.sel(policy=policy)
        row = {key: int(p[key]) for key in ("submitted", "completed", "dropped", "rejected", "unfinished")}
        row["work_completed_gpu_h"] = float(p.work_completed)
        row["mean_jct_h"] = float(p.jct_mean)
        for qv in ds["quantile"].values:
            row[f"p{_percent(qv)}_jct_h"] = float(p.jct_quantile.sel(quantile=qv))
        row["mean_wait_h"] = float(p.wait_mean)
        row["utilisation"] = float(p.utilisation_mean)
        row["gpu_hours_lost_failures"] = float(p.gpu_hours_lost_failures)
        for key in ("node_failures", "shrinks", "restarts", "rescales", "timeouts"):
            row[key] = int(p[key])
        out[policy] = row
    return out


def _percent(q: float) -> str:
    pct = 100 * float(q)
    return str(int(round(pct))) if math.isclose(pct, round(pct)) else f"{pct:g}"
