"""Fit the failure rate ``r_f`` (infrastructure failures per node-day) from a job log.

The estimator is the one of the Meta study: count the infrastructure failures
(NODE_FAIL, or FAILED with an infrastructure cause) of jobs with at least
``min_gpus`` GPUs and divide by their node-days of runtime. With a Poisson
count that is the maximum-likelihood estimate, and its exact (Garwood)
interval comes from the chi-square quantiles. Around it: where the jobs and
the GPU time end up by end state, the MTTF against job size with the fitted
``1/(N r_f)`` curve and a goodness-of-fit test, a right-censored Weibull fit of
the times to failure with a likelihood-ratio test against the exponential, and
lemon-node candidates when the log lists nodes.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime, timezone

import numpy as np
import xarray as xr

from .logs import JobLog, read_log
from .taxonomy import END_STATES

REPORT_SIZES = (1024, 4096, 16384, 131072)


class FitError(ValueError):
    """The log cannot support the fit; the message starts with the parameter to change."""


@dataclasses.dataclass(frozen=True)
class WeibullFit:
    """Maximum-likelihood Weibull fit of right-censored times (node-days of exposure).

    ``shape_ci`` is a Wald interval on log(shape) from the optimiser's inverse
    Hessian (approximate). ``lr_statistic`` and ``lr_pvalue`` test the
    exponential (shape 1) against it (chi-square, 1 degree of freedom).
    """

    shape: float
    scale: float
    shape_ci: tuple
    loglik: float
    exponential_scale: float
    exponential_loglik: float
    lr_statistic: float
    lr_pvalue: float
    n_events: int
    n_censored: int

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def weibull_fit(times, observed, *, ignore_censoring: bool = False, confidence: float = 0.95) -> WeibullFit:
    """Fit a Weibull law to times to failure, some right-censored, by maximum likelihood.

    Parameters
    ----------
    times : positive times (any unit; the scale comes out in it).
    observed : True where the time ends in a failure, False where it is censored
        (the job ended for another reason first).
    ignore_censoring : fit only the observed failure times, as a naive analysis
        would; kept to show how that biases the shape.
    """
    from scipy import optimize, stats  # here, not at import: `import relmodel` stays light
    t = np.asarray(times, dtype=float)
    event = np.asarray(observed, dtype=bool)
    keep = np.isfinite(t) & (t > 0)
    t, event = t[keep], event[keep]
    if ignore_censoring:
        t, event = t[event], event[event]
    n_events = int(event.sum())
    nan = float("nan")
    if n_events < 2:
        return WeibullFit(nan, nan, (nan, nan), nan, nan, nan, nan, nan, n_events, int((~event).sum()))
    t_event, t_cens = t[event], t[~event]

    def loglik(shape, scale):
        return (stats.weibull_min.logpdf(t_event, shape, scale=scale).sum()
                + stats.weibull_min.logsf(t_cens, shape, scale=scale).sum())

    exp_scale = float(t.sum()) / n_events  # exponential MLE with censoring: exposure / events
    exp_loglik = loglik(1.0, exp_scale)
    # Times in log units keep the optimiser well scaled whatever the time unit.
    result = optimize.minimize(lambda p: -loglik(math.exp(p[0]), math.exp(p[1])),
                               x0=[0.0, math.log(exp_scale)], method="BFGS")
    log_shape, log_scale = result.x
    shape, scale = math.exp(log_shape), math.exp(log_scale)
    ll = -float(result.fun)
    se = math.sqrt(max(result.hess_inv[0, 0], 0.0)) if np.all(np.isfinite(result.hess_inv)) else nan
    z = stats.norm.ppf(0.5 + confidence / 2)
    lr = max(2.0 * (ll - float(exp_loglik)), 0.0)
    return WeibullFit(shape=shape, scale=scale, shape_ci=(math.exp(log_shape - z * se), math.exp(log_shape + z * se)),
                      loglik=ll, exponential_scale=exp_scale, exponential_loglik=float(exp_loglik),
                      lr_statistic=lr, lr_pvalue=float(stats.chi2.sf(lr, 1)), n_events=n_events,
                      n_censored=int((~event).sum()))


def poisson_rate_interval(count: int, exposure: float, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Garwood) interval for a Poisson rate: ``count`` events in ``exposure``."""
    from scipy import stats  # here, not at import: `import relmodel` stays light
    alpha = 1.0 - confidence
    low = stats.chi2.ppf(alpha / 2, 2 * count) / 2 / exposure if count > 0 else 0.0
    high = stats.chi2.ppf(1 - alpha / 2, 2 * count + 2) / 2 / exposure
    return float(low), float(high)


@dataclasses.dataclass(frozen=True)
class FitResult:
    """What `fit` found.

    Attributes
    ----------
    failure_rate : infrastructure failures per node-day (jobs >= min_gpus GPUs)
    failure_rate_ci : exact Poisson interval at ``confidence``
    n_failures, node_days : the count and the exposure behind it
    weibull : `WeibullFit` of the times to failure (node-days) of those jobs
    lemon_nodes : names of the lemon-node candidates (empty without node lists)
    dataset : the full report as an xarray Dataset (see `fit`)
    """

    failure_rate: float
    failure_rate_ci: tuple
    confidence: float
    n_failures: int
    node_days: float
    n_jobs: int
    min_gpus: int
    gpus_per_node: int
    weibull: WeibullFit
    lemon_nodes: tuple
    dataset: xr.Dataset
    log: JobLog = dataclasses.field(repr=False)

    def mttf_h_at(self, n_gpus):
        """Projected MTTF (hours) of a job on `n_gpus` GPUs: ``24 / (ceil(n_gpus / gpus_per_node) r_f)``."""
        nodes = np.ceil(np.asarray(n_gpus, dtype=float) / self.gpus_per_node)
        with np.errstate(divide="ignore"):
            out = 24.0 / (nodes * self.failure_rate)
        return float(out) if out.ndim == 0 else out

    def scenario(self, *, with_weibull_shape: bool = False, **fields):
        """A `relmodel.Scenario` at the fitted failure rate.

        `fields` are the other Scenario fields (``n_gpus`` needed;
        ``checkpoint_interval`` defaults to 1h and ``work`` to 7d, as in the CLI).
        With ``with_weibull_shape=True`` the fitted Weibull shape is used too.
        """
        from .scenario import Scenario

        fields.setdefault("checkpoint_interval", 1.0)
        fields.setdefault("work", "7d")
        fields.setdefault("gpus_per_node", self.gpus_per_node)
        if with_weibull_shape:
            if not math.isfinite(self.weibull.shape):
                raise FitError("weibull_shape: too few failures in the log to fit a Weibull shape")
            fields["weibull_shape"] = self.weibull.shape
        return Scenario(failure_rate=self.failure_rate, **fields)

    def to_dict(self) -> dict:
        ds = self.dataset
        return {
            "failure_rate_per_node_day": self.failure_rate,
            "failure_rate_ci": list(self.failure_rate_ci),
            "confidence": self.confidence,
            "infrastructure_failures": self.n_failures,
            "node_days": self.node_days,
            "jobs_used": self.n_jobs,
            "min_gpus": self.min_gpus,
            "gpus_per_node": self.gpus_per_node,
            "mttf_h_at": {str(n): self.mttf_h_at(n) for n in REPORT_SIZES},
            "goodness_of_fit": {"deviance": ds.attrs["gof_deviance"], "dof": int(ds.attrs["gof_dof"]),
                                "p_value": ds.attrs["gof_pvalue"]},
            "weibull": self.weibull.to_dict(),
            "lemon_nodes": list(self.lemon_nodes),
            "end_states": {str(s): {"jobs_share": float(ds.jobs_share.sel(state=s)),
                                    "gpu_time_share": float(ds.gpu_time_share.sel(state=s)),
                                    "jobs": int(ds.jobs.sel(state=s))} for s in ds.state.values},
            "log": self.log.summary.to_dict(),
            "taxonomy": {"name": self.log.taxonomy.name, "version": self.log.taxonomy.version},
        }

    def __str__(self) -> str:
        ds, low_high = self.dataset, self.failure_rate_ci
        pct = f"{self.confidence:.0%}"
        out = [
            f"log: {self.log.summary}",
            (f"jobs with >= {self.min_gpus} GPUs: {self.n_jobs}, {self.node_days:.6g} node-days, "
             f"{self.n_failures} infrastructure failures"),
            (f"failure rate: {1000 * self.failure_rate:.4g} per 1000 node-days "
             f"({pct} CI {1000 * low_high[0]:.4g} to {1000 * low_high[1]:.4g})"),
            "projected MTTF: " + ", ".join(f"{n} GPUs {_hours(self.mttf_h_at(n))}" for n in REPORT_SIZES),
            "",
            f"{'end state':<14} {'jobs':>8} {'share':>7} {'GPU-time':>9}  infrastructure",
        ]
        for s in ds.state.values:
            row = ds.sel(state=s)
            out.append(f"{s!s:<14} {int(row.jobs):>8} {float(row.jobs_share):>7.1%} "
                       f"{float(row.gpu_time_share):>9.1%}  {int(row.infrastructure_failures)}")
        out += ["", (f"{'GPUs':>13} {'jobs':>7} {'node-days':>10} {'failures':>8} {'MTTF (h)':>9} "
                     f"{'fitted (h)':>10}  in fit")]
        for i in range(ds.sizes["size_bin"]):
            b = ds.isel(size_bin=i)
            if int(b.bin_jobs) == 0:
                continue
            out.append(f"{int(b.gpus_low):>6}-{int(b.gpus_high) - 1:<6} {int(b.bin_jobs):>7} "
                       f"{float(b.bin_node_days):>10.4g} {int(b.bin_failures):>8} {float(b.mttf_h):>9.4g} "
                       f"{float(b.mttf_fitted_h):>10.4g}  {'yes' if bool(b.in_fit) else 'no'}")
        out.append(f"goodness of fit across sizes: deviance {ds.attrs['gof_deviance']:.3g} on "
                   f"{int(ds.attrs['gof_dof'])} dof, p = {ds.attrs['gof_pvalue']:.3g}")
        w = self.weibull
        out.append(f"Weibull times to failure (censored MLE): shape {w.shape:.3g} ({pct} CI {w.shape_ci[0]:.3g} to "
                   f"{w.shape_ci[1]:.3g}); vs exponential: LR {w.lr_statistic:.3g}, p = {w.lr_pvalue:.3g}")
        if "node" in ds.dims:
            out.append(f"lemon-node candidates ({ds.sizes['node']} nodes tested): "
                       + (", ".join(self.lemon_nodes) if self.lemon_nodes else "none"))
        else:
            out.append("lemon-node candidates: the log has no node lists")
        return "\n".join(out)

    def plot(self, path=None, ax=None):
        """MTTF against job size: binned points with their intervals, the fitted curve, log axes."""
        from matplotlib.figure import Figure

        if ax is None:
            ax = Figure(figsize=(6.5, 4.5), layout="constrained").subplots()
        ds = self.dataset
        seen = ds.bin_failures > 0
        b = ds.where(seen, drop=True)
        centre = b.bin_mean_gpus
        err = np.vstack([b.mttf_h - b.mttf_low_h, b.mttf_high_h - b.mttf_h])
        for flag, colour, label in ((True, "C0", f"jobs >= {self.min_gpus} GPUs (fitted)"),
                                    (False, "0.6", "smaller jobs (not fitted)")):
            sel = (b.in_fit == flag).values
            if sel.any():
                ax.errorbar(centre.values[sel], b.mttf_h.values[sel], yerr=err[:, sel], fmt="o", color=colour,
                            capsize=3, label=label)
        ax.plot(ds.curve_gpus, ds.mttf_curve_h, "C1-",
                label=f"1/(N r_f), r_f = {1000 * self.failure_rate:.3g}/1000 node-days")
        ax.set(xscale="log", yscale="log", xlabel="GPUs of the job", ylabel="MTTF (hours)",
               title="MTTF against job size")
        ax.legend(fontsize=8)
        if path is not None:
            ax.figure.savefig(path, dpi=120)
        return ax.figure


def fit(log, *, min_gpus: int = 128, gpus_per_node: int = 8, taxonomy="meta-2024", confidence: float = 0.95,
        format: str = "auto", errors: str = "raise") -> FitResult:
    """Fit the infrastructure failure rate per node-day from a scheduler job log.

    Parameters
    ----------
    log : a `JobLog`, a path to a log file, or the log's text (see `read_log`).
    min_gpus : only jobs with at least this many GPUs enter the rate (small
        jobs are dominated by user failures and have little exposure).
    gpus_per_node : turns GPU counts into nodes where the log gives no node count.
    taxonomy : classifies end states (preset name, path or `Taxonomy`).
    confidence : of the Poisson interval on the rate (and the other intervals).
    format, errors : passed to `read_log` when `log` is not a `JobLog`.

    Returns
    -------
    FitResult
        Its ``dataset`` holds: by ``state``, ``jobs``, ``jobs_share``,
        ``gpu_hours``, ``gpu_time_share`` (all jobs) and the same for the fitted
        jobs, and ``infrastructure_failures``; by ``size_bin`` (log-spaced GPU
        counts), ``bin_jobs``, ``bin_mean_gpus``, ``bin_node_days``, ``bin_failures``, ``mttf_h``
        with ``mttf_low_h``/``mttf_high_h``, ``mttf_fitted_h``,
        ``expected_failures``, ``in_fit``; ``mttf_curve_h`` along
        ``curve_gpus``; by ``node`` (with node lists) ``node_failures``,
        ``node_days_on_node``, ``expected_node_failures`` (``r_f`` times
        node-days), ``node_rate_factor``, ``node_lr_statistic``, ``tail_p``,
        ``lemon_candidate``; and provenance and the Weibull fit in ``attrs``.
    """
    if isinstance(min_gpus, bool) or not isinstance(min_gpus, (int, np.integer)) or min_gpus < 1:
        raise FitError(f"min_gpus: must be a positive integer (got {min_gpus!r})")
    if isinstance(gpus_per_node, bool) or not isinstance(gpus_per_node, (int, np.integer)) or gpus_per_node < 1:
        raise FitError(f"gpus_per_node: must be a positive integer (got {gpus_per_node!r})")
    if not (isinstance(confidence, float) and 0 < confidence < 1):
        raise FitError(f"confidence: must be in (0, 1) (got {confidence!r})")
    if not isinstance(log, JobLog):
        log = read_log(log, format=format, taxonomy=taxonomy, errors=errors)
    ds = log.dataset
    n_gpus, n_nodes = _sizes(ds, gpus_per_node)
    runtime_d = np.where(np.isfinite(ds.runtime_h.values), ds.runtime_h.values, 0.0) / 24.0
    node_days = n_nodes * runtime_d
    infra = ds.infrastructure.values
    large = n_gpus >= min_gpus
    exposure = float(node_days[large].sum())
    if exposure <= 0:
        raise FitError(f"min_gpus: the log has no runtime of jobs with at least {min_gpus} GPUs "
                       f"({len(log)} jobs read, largest {int(n_gpus.max(initial=0))} GPUs)")
    count = int(infra[large].sum())
    rate = count / exposure
    ci = poisson_rate_interval(count, exposure, confidence)

    weibull = weibull_fit(node_days[large], infra[large], confidence=confidence)
    naive = weibull_fit(node_days[large], infra[large], ignore_censoring=True)
    parts = [_end_states(ds, n_gpus, runtime_d, large), _size_bins(n_gpus, n_nodes, runtime_d, infra, rate,
                                                                   min_gpus, confidence, gpus_per_node)]
    lemons: tuple = ()
    if log.has_node_lists:
        node_ds = _lemon_nodes(log.node_lists, n_nodes, runtime_d, infra, rate)
        lemons = tuple(str(n) for n in node_ds.node.values[node_ds.lemon_candidate.values])
        parts.append(node_ds)
    out = xr.merge(parts, combine_attrs="drop_conflicts")
    gof = parts[1].attrs
    out.attrs = {
        "title": "failure rate fitted from a job log", "relmodel_version": _version(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "source": log.summary.source, "format": log.summary.format,
        "taxonomy": log.taxonomy.name, "taxonomy_version": log.taxonomy.version,
        "rows_read": log.summary.rows_read, "rows_used": log.summary.rows_used,
        "rows_skipped": log.summary.rows_skipped,
        "min_gpus": int(min_gpus), "gpus_per_node": int(gpus_per_node), "confidence": confidence,
        "failure_rate_per_node_day": rate, "failure_rate_ci": list(ci),
        "infrastructure_failures": count, "node_days": exposure, "jobs_used": int(large.sum()),
        "estimator": "infrastructure failures of jobs >= min_gpus / their node-days; Garwood interval",
        **gof,
        "weibull_shape": weibull.shape, "weibull_scale_node_days": weibull.scale,
        "weibull_shape_ci": list(weibull.shape_ci), "weibull_lr_statistic": weibull.lr_statistic,
        "weibull_lr_pvalue": weibull.lr_pvalue, "weibull_shape_ignoring_censoring": naive.shape,
        "lemon_nodes": ",".join(lemons),
    }
    return FitResult(failure_rate=rate, failure_rate_ci=ci, confidence=confidence, n_failures=count,
                     node_days=exposure, n_jobs=int(large.sum()), min_gpus=int(min_gpus),
                     gpus_per_node=int(gpus_per_node), weibull=weibull, lemon_nodes=lemons, dataset=out, log=log)


def _sizes(ds: xr.Dataset, gpus_per_node: int) -> tuple[np.ndarray, np.ndarray]:
    """GPUs and nodes of each job, each filled from the other where the log gives one only."""
    gpus, nodes = ds.n_gpus.values.astype(np.int64), ds.n_nodes.values.astype(np.int64)
    gpus = np.where(gpus >= 0, gpus, np.where(nodes >= 0, nodes * gpus_per_node, 0))
    nodes = np.where(nodes >= 0, nodes, -(-gpus // gpus_per_node))
    return gpus, nodes


def _end_states(ds, n_gpus, runtime_d, large) -> xr.Dataset:
    state = ds.state.values
    gpu_hours = n_gpus * runtime_d * 24.0
    infra = ds.infrastructure.values
    cols = {}
    for label, mask in (("", np.ones_like(large)), ("_fitted", large)):
        jobs = np.array([np.sum(mask & (state == s)) for s in END_STATES])
        hours = np.array([gpu_hours[mask & (state == s)].sum() for s in END_STATES])
        cols[f"jobs{label}"] = ("state", jobs)
        cols[f"jobs_share{label}"] = ("state", jobs / max(jobs.sum(), 1))
        cols[f"gpu_hours{label}"] = ("state", hours)
        cols[f"gpu_time_share{label}"] = ("state", hours / hours.sum() if hours.sum() > 0 else hours * 0)
    cols["infrastructure_failures"] = ("state", np.array([np.sum(infra & (state == s)) for s in END_STATES]))
    return xr.Dataset(cols, coords={"state": list(END_STATES)})


def _size_bins(n_gpus, n_nodes, runtime_d, infra, rate, min_gpus, confidence, gpus_per_node) -> xr.Dataset:
    """Jobs binned by GPU count at powers of two (and at min_gpus): observed against fitted MTTF."""
    from scipy import special, stats  # here, not at import: `import relmodel` stays light
    known = n_gpus >= 1
    top = max(int(n_gpus.max(initial=1)), min_gpus)
    edges = np.unique(np.concatenate([2 ** np.arange(int(math.log2(top)) + 2), [min_gpus]]))
    index = np.searchsorted(edges, n_gpus[known], side="right") - 1
    n_bins = edges.size - 1
    jobs = np.bincount(index, minlength=n_bins)[:n_bins]
    job_days = np.bincount(index, weights=runtime_d[known], minlength=n_bins)[:n_bins]
    node_days = np.bincount(index, weights=(n_nodes * runtime_d)[known], minlength=n_bins)[:n_bins]
    gpu_days = np.bincount(index, weights=(n_gpus * runtime_d)[known], minlength=n_bins)[:n_bins]
    failures = np.bincount(index, weights=infra[known], minlength=n_bins)[:n_bins].astype(np.int64)
    alpha = 1 - confidence
    with np.errstate(divide="ignore", invalid="ignore"):
        job_hours = job_days * 24
        mttf = np.where(failures > 0, job_hours / failures, np.inf)
        rate_low = np.where(failures > 0, stats.chi2.ppf(alpha / 2, 2 * failures) / 2, 0.0) / job_hours
        rate_high = stats.chi2.ppf(1 - alpha / 2, 2 * failures + 2) / 2 / job_hours
        mean_nodes = np.where(job_days > 0, node_days / job_days, np.nan)
        mean_gpus = np.where(job_days > 0, gpu_days / job_days, np.nan)  # runtime-weighted, where MTTF is measured
        fitted = 24.0 / (mean_nodes * rate)
        mttf_low, mttf_high = 1 / rate_high, 1 / rate_low
    expected = rate * node_days
    in_fit = (edges[:-1] >= min_gpus) & (node_days > 0)
    k, mu = failures[in_fit], expected[in_fit]
    deviance = float(2 * np.sum(special.rel_entr(k, mu) - k + mu))  # Poisson deviance; 0 log 0 = 0
    dof = int(in_fit.sum()) - 1
    curve = np.geomspace(max(min(edges[0], min_gpus), 1), max(top, 131072), 60)
    ds = xr.Dataset(
        {"bin_jobs": ("size_bin", jobs), "bin_node_days": ("size_bin", node_days),
         "bin_failures": ("size_bin", failures), "mttf_h": ("size_bin", mttf),
         "mttf_low_h": ("size_bin", mttf_low), "mttf_high_h": ("size_bin", mttf_high),
         "mttf_fitted_h": ("size_bin", fitted), "expected_failures": ("size_bin", expected),
         "in_fit": ("size_bin", in_fit), "bin_mean_gpus": ("size_bin", mean_gpus),
         "mttf_curve_h": ("curve_gpus", 24.0 / (np.ceil(curve / gpus_per_node) * rate) if rate > 0
                          else np.full(curve.size, np.inf))},
        coords={"size_bin": np.arange(n_bins), "gpus_low": ("size_bin", edges[:-1]),
                "gpus_high": ("size_bin", edges[1:]), "curve_gpus": curve},
        attrs={"gof_statistic": "Poisson deviance over the fitted size bins",
               "gof_deviance": deviance, "gof_dof": dof,
               "gof_pvalue": float(stats.chi2.sf(deviance, dof)) if dof > 0 else float("nan")},
    )
    ds.mttf_h.attrs["units"] = "h"
    return ds


def _lemon_nodes(node_lists, n_nodes, runtime_d, infra, rate, alpha: float = 0.01,
                 iterations: int = 80) -> xr.Dataset:
    """Per node: does it fail more often than the fitted rate says?

    A scheduler log names the job that failed, not which of its nodes did. So
    each node is tested by the likelihood ratio of its jobs' failure times with
    its own rate ``theta * r_f`` (the other nodes at ``r_f``; a job on ``N``
    nodes then fails at ``(N - 1 + theta) r_f``) against ``theta = 1``. A
    failure of a one-node job counts fully, one of an ``N``-node job about
    ``1/N``. A lemon candidate has a one-sided p-value (half a chi-square with
    one degree of freedom) below ``alpha`` / number of nodes (Bonferroni).
    """
    from scipy import stats  # here, not at import: `import relmodel` stays light
    lengths = np.fromiter((len(n) for n in node_lists), dtype=np.int64, count=len(node_lists))
    flat = [name for names in node_lists for name in names]
    names, where = np.unique(np.array(flat, dtype=str), return_inverse=True)
    job = np.repeat(np.arange(len(node_lists)), lengths)
    exposure = np.bincount(where, weights=runtime_d[job], minlength=names.size)  # node-days on the node
    failed = infra[job]
    fnode, others = where[failed], lengths[job[failed]] - 1.0
    failures = np.bincount(fnode, minlength=names.size)
    expected = rate * exposure
    theta = np.ones(names.size)
    # Newton on the score, which is convex and decreasing in theta: from theta = 1 it climbs
    # monotonically to the root (or stays at 1 where the node fails no more than expected).
    for _ in range(iterations if rate > 0 else 0):
        inv = 1.0 / (others + theta[fnode])
        score = np.bincount(fnode, weights=inv, minlength=names.size) - expected
        slope = np.bincount(fnode, weights=inv**2, minlength=names.size)
        step = np.where((score > 0) & (slope > 0), score / np.where(slope > 0, slope, 1.0), 0.0)
        theta = theta + step
    gain = np.bincount(fnode, weights=np.log((others + theta[fnode]) / (others + 1.0)), minlength=names.size)
    lr = np.maximum(2.0 * (gain - expected * (theta - 1.0)), 0.0)
    p_value = np.where(theta > 1.0, 0.5 * stats.chi2.sf(lr, 1), 1.0)
    candidate = p_value < alpha / max(names.size, 1)
    return xr.Dataset({"node_failures": ("node", failures), "node_days_on_node": ("node", exposure),
                       "expected_node_failures": ("node", expected), "node_rate_factor": ("node", theta),
                       "node_lr_statistic": ("node", lr), "tail_p": ("node", p_value),
                       "lemon_candidate": ("node", candidate)}, coords={"node": names})


def _hours(h: float) -> str:
    from .units import format_hours

    return format_hours(h)


def _version() -> str:
    from . import __version__

    return __version__
