"""Elastic scaling on a 64-GPU cluster: a load sweep, node failures, real traces.
==============================================================================

1. Load sweep: synthetic workloads (Poisson arrivals, the six ElasticFlow
   models) from light load to overload, under the elastic, fixed-batch and
   FIFO policies (jobs that find no room are dropped): jobs completed and mean
   completion time against arrival rate, with the elastic / fixed-batch ratios
   (mean completion times also over the jobs both policies completed), and
   the work completed (GPU-hours at the submitted allocations), which weighs
   a large job above a small one where the count of jobs does not.
   Two kinds of workload: submitted batches as in the traces (a global batch
   whatever the GPUs), and batches that grow with the GPUs asked for.
2. Failures: the same kind of workload with node failures; GPU-hours lost to
   failures by policy (elastic jobs shrink, rigid ones restart).
3. Trace replay: ElasticFlow's 195job.csv (and in full mode cluster01.csv)
   from ../shared/data/elasticflow (microsoft/elasticflow-traces, MIT),
   read in place; skipped with a message when the folder is absent. Jobs that
   find no room are dropped, or queued (the traces' jobs all ran); the figure
   shows the queued run.

Writes elastic_load_sweep.nc/.png, elastic_failures.nc and
elastic_trace_<name>.nc/.png into --out.

    python examples/elastic_load_sweep.py [--quick] [--out DIR]
"""

import argparse
from pathlib import Path

import xarray as xr

import relmodel
import relmodel.elastic as el

# The docs gallery runs examples from this folder, and without __file__.
HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
DATA = HERE.parents[1] / "shared" / "data" / "elasticflow"
N_GPUS = 64
SCALAR_VARS = ("submitted", "completed", "work_completed", "dropped", "jct_mean", "utilisation_mean", "gpu_hours_lost_failures",
               "job_interruptions", "shrinks", "restarts", "node_failures")


def load_sweep(rates, window, seeds, scalings) -> xr.Dataset:
    parts = []
    for scaling in scalings:
        for rate in rates:
            for seed in seeds:
                work = el.synthetic_workload(rate, window, seed, batch_scaling=scaling)
                ds = el.simulate_cluster(work, n_gpus=N_GPUS, seed=seed)
                ds["jct_mean_common"] = el.common_jct_mean(ds, ["elastic", "fixed-batch"]).reindex(policy=ds.policy)
                parts.append(ds[[*SCALAR_VARS, "jct_mean_common"]].expand_dims(batch_scaling=[scaling], arrival_rate=[float(rate)],
                                                                seed=[seed]))
    sweep = xr.combine_by_coords(parts, combine_attrs="drop")
    sweep.arrival_rate.attrs = {"units": "1/h", "long_name": "job arrival rate"}
    totals = sweep.sum("seed")
    sweep["completed_ratio"] = (totals.completed.sel(policy="elastic") / totals.completed.sel(policy="fixed-batch"))
    sweep.completed_ratio.attrs = {"units": "1", "long_name": "jobs completed, elastic / fixed-batch (all seeds)"}
    sweep["work_ratio"] = (totals.work_completed.sel(policy="elastic")
                           / totals.work_completed.sel(policy="fixed-batch"))
    sweep.work_ratio.attrs = {"units": "1", "long_name": "work completed (GPU-hours at the submitted allocations), "
                                                         "elastic / fixed-batch (all seeds)"}
    means = sweep.jct_mean.mean("seed")
    sweep["jct_ratio"] = means.sel(policy="elastic") / means.sel(policy="fixed-batch")
    sweep.jct_ratio.attrs = {"units": "1", "long_name": "mean completion time, elastic / fixed-batch (seed means)"}
    common = sweep.jct_mean_common.mean("seed")
    sweep["jct_ratio_common"] = common.sel(policy="elastic") / common.sel(policy="fixed-batch")
    sweep.jct_ratio_common.attrs = {"units": "1", "long_name": "mean completion time over the jobs both completed, "
                                                               "elastic / fixed-batch (seed means)"}
    sweep.attrs = {"title": "elastic scaling: load sweep", "relmodel_version": relmodel.__version__,
                   "n_gpus": N_GPUS, "arrival_window": window, "seeds": list(seeds),
                   "unplaceable": "drop", "objective": "throughput"}
    return sweep


def failures(failure_rates, seeds, window) -> xr.Dataset:
    parts = []
    for rate in failure_rates:
        for seed in seeds:
            ds = el.simulate_cluster(el.synthetic_workload(6, window, seed), n_gpus=N_GPUS, seed=seed,
                                     failure_rate=rate)
            parts.append(ds[list(SCALAR_VARS)].expand_dims(failure_rate=[rate], seed=[seed]))
    out = xr.combine_by_coords(parts, combine_attrs="drop")
    out["lost_per_interruption"] = out.gpu_hours_lost_failures.sum("seed") / out.job_interruptions.sum("seed")
    out.lost_per_interruption.attrs = {"units": "GPU h", "long_name": "GPU-hours lost per job struck"}
    out.attrs = {"title": "elastic scaling: GPU time lost to node failures", "relmodel_version": relmodel.__version__,
                 "n_gpus": N_GPUS, "arrival_rate_per_h": 6, "arrival_window": window, "seeds": list(seeds)}
    return out


def replay(name: str, out: Path) -> xr.Dataset:
    work = el.read_elasticflow(DATA / f"{name}.csv")
    runs = [el.simulate_cluster(work, n_gpus=N_GPUS, unplaceable=mode) for mode in ("drop", "queue")]
    el.cluster_figure(runs[1], out / f"elastic_trace_{name}.png")
    # The time bins follow each run's length: keep the per-policy and per-job variables.
    ds = xr.concat([r.drop_dims("time").drop_attrs() for r in runs],
                   dim=xr.DataArray(["drop", "queue"], dims="unplaceable"))
    ds.attrs = {k: v for k, v in runs[0].attrs.items() if k != "unplaceable"}
    ds.to_netcdf(out / f"elastic_trace_{name}.nc", engine="h5netcdf")
    return ds


def print_sweep(sweep: xr.Dataset):
    for scaling in sweep.batch_scaling.values:
        s = sweep.sel(batch_scaling=scaling)
        print(f"\nload sweep, batch scaling {scaling!r}: jobs completed (sum over seeds), mean JCT (h)")
        print("rate/h " + "".join(f"{p:>22}" for p in s.policy.values)
              + "   elastic/fixed: completed  work   JCT  JCT on common jobs")
        for rate in s.arrival_rate.values:
            r = s.sel(arrival_rate=rate)
            cells = "".join(f"{int(r.completed.sel(policy=p).sum()):>10d} "
                            f"{float(r.jct_mean.sel(policy=p).mean()):>10.3f} " for p in s.policy.values)
            print(f"{rate:>6g} {cells}   {float(r.completed_ratio):>20.3f} {float(r.work_ratio):>5.3f} "
                  f"{float(r.jct_ratio):>5.3f} {float(r.jct_ratio_common):>6.3f}")


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])  # the gallery runs it with no __doc__
    parser.add_argument("--quick", action="store_true", help="fewer rates, seeds and hours (for CI)")
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for the .nc and .png files")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.quick:
        sweep = load_sweep([1, 4, 16, 64], "6h", [0], ["global"])
        fails = failures([2.0], [0], "6h")
    else:
        sweep = load_sweep([1, 2, 4, 8, 16, 32, 64], "24h", range(5), ["global", "per-gpu"])
        fails = failures([0.5, 2.0], range(5), "24h")
    sweep.to_netcdf(args.out / "elastic_load_sweep.nc", engine="h5netcdf")
    el.load_sweep_figure(sweep.sum("seed").assign(jct_mean=sweep.jct_mean.mean("seed")).sel(batch_scaling="global"),
                         args.out / "elastic_load_sweep.png")
    fails.to_netcdf(args.out / "elastic_failures.nc", engine="h5netcdf")
    print_sweep(sweep)
    print("\nGPU-hours lost to node failures (sum over seeds), and per job struck")
    print(fails.gpu_hours_lost_failures.sum("seed").to_pandas().round(2).to_string())
    print(fails.lost_per_interruption.to_pandas().round(3).to_string())
    written = ["elastic_load_sweep.nc", "elastic_load_sweep.png", "elastic_failures.nc"]
    if not (DATA / "195job.csv").is_file():
        print(f"\ntrace replay skipped: ElasticFlow traces not found at {DATA}")
    else:
        for name in ["195job"] + ([] if args.quick else ["cluster01"]):
            ds = replay(name, args.out)
            print(f"\n{name}.csv on {N_GPUS} GPUs: jobs completed, mean JCT (h)")
            table = xr.Dataset({"completed": ds.completed, "jct_mean_h": ds.jct_mean.round(3)}).to_dataframe()
            print(table.unstack("unplaceable").to_string())
            written += [f"elastic_trace_{name}.nc", f"elastic_trace_{name}.png"]
    print("\nwrote " + ", ".join(str(args.out / w) for w in written))


if __name__ == "__main__":
    main()
