"""From a scheduler log to a capacity plan: what a planner does with `relmodel fit`.
=================================================================================

1. Draw a synthetic cluster log (Slurm `sacct --parsable2` output) with a known
   failure rate of 6.5 per 1000 node-days and two lemon nodes, as a stand-in
   for your own `sacct -a --duplicates --parsable2 -o JobID,State,Start,End,...`
   (a 128-node cluster, so that each node sees enough jobs for lemons to show).
2. Fit it: the rate with its exact Poisson interval, MTTF against job size, a
   censored Weibull fit, lemon-node candidates.
3. Plan a two-week run on 16,384 GPUs at the fitted rate, and at the ends of
   its interval.

Writes fit_job_log.sacct, fit_job_log.nc and fit_job_log.png.

    python examples/fit_job_log.py [--quick] [--out DIR]
"""

import argparse
from pathlib import Path

from matplotlib.figure import Figure

import relmodel as rm

TRUE_RATE, GPUS = 6.5e-3, 16384


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])  # the gallery runs it with no __doc__
    parser.add_argument("--quick", action="store_true", help="a smaller log and a short simulation (for CI)")
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    log_path = args.out / "fit_job_log.sacct"
    n_jobs = 20_000 if args.quick else 60_000
    cluster = rm.synthetic_log(n_jobs, failure_rate=TRUE_RATE, seed=2024, n_nodes=128, lemon_nodes=2,
                            lemon_rate_factor=30)
    cluster.to_sacct(log_path)

    fitted = rm.fit(log_path, min_gpus=128)
    print(fitted)
    low, high = fitted.failure_rate_ci
    print(f"\ntruth: {TRUE_RATE * 1000:.2f} per 1000 node-days on ordinary nodes (the lemons add to what the "
          f"log shows); lemon nodes {', '.join(cluster.truth['lemon_nodes'])}")

    plans = {}
    for label, rate in (("fitted", fitted.failure_rate), ("ci_low", low), ("ci_high", high)):
        plans[label] = rm.plan(n_gpus=GPUS, failure_rate=rate, work="14d", checkpoint_cost="5min",
                               restart_cost="10min", n_jobs=1_000 if args.quick else 20_000)
    print(f"\nplan for {GPUS} GPUs, 14 days, at the fitted rate:\n")
    print(plans["fitted"])
    for label, p in plans.items():
        print(f"{label:>8}: rate {p.scenario.failure_rate * 1000:.3f}/1000 node-days -> interval "
              f"{p.optimal_interval_h * 60:.1f} min, ETTR {p.ettr:.4f}")

    ds = fitted.dataset
    for label, p in plans.items():
        ds.attrs[f"plan_{label}_ettr"] = p.ettr
        ds.attrs[f"plan_{label}_interval_h"] = p.optimal_interval_h
    ds.attrs["plan"] = f"{GPUS} GPUs, 14d of work, 5min checkpoints, 10min restarts"
    ds.attrs["true_failure_rate"] = TRUE_RATE
    ds.attrs["true_lemon_nodes"] = ",".join(cluster.truth["lemon_nodes"])
    ds.to_netcdf(args.out / "fit_job_log.nc", engine="h5netcdf")

    fig = Figure(figsize=(11, 4.5), layout="constrained")
    left, right = fig.subplots(1, 2)
    fitted.plot(ax=left)
    shares = ds[["jobs_share", "gpu_time_share"]]
    x = range(ds.sizes["state"])
    right.bar([i - 0.2 for i in x], shares.jobs_share, width=0.4, label="share of jobs")
    right.bar([i + 0.2 for i in x], shares.gpu_time_share, width=0.4, label="share of GPU time")
    right.set_xticks(list(x), [str(s) for s in ds.state.values], rotation=40, ha="right", fontsize=8)
    right.set(xlabel="scheduler end state", ylabel="share of all jobs / of all GPU-hours (fraction)",
              title="where jobs and GPU time end")
    right.legend(fontsize=8)
    fig.supxlabel(f"synthetic log {log_path.name}: 128 nodes, 2 of them lemons, true rate {TRUE_RATE * 1000:.2f} "
                  f"per 1000 node-days on the others; rate fitted on jobs >= {fitted.min_gpus} GPUs, "
                  f"{fitted.confidence:.0%} intervals", fontsize=8, color="0.2")
    fig.savefig(args.out / "fit_job_log.png", dpi=120)
    print(f"\nwrote {log_path}, {args.out / 'fit_job_log.nc'} and {args.out / 'fit_job_log.png'}")


if __name__ == "__main__":
    main()
