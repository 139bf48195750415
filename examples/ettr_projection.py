"""MTTF and ETTR against job size, as in the Meta cluster study's projection.
==========================================================================

For both published failure rates (6.50 and 2.34 failures per 1000 node-days),
from 8 to 131,072 GPUs, a 14-day job checkpointing at its exact optimal
interval: the renewal ETTR, checked by simulation at every size, and the same
curve with one mitigation at a time (restarts 5x faster, checkpoint writes 10x
faster, half the failure rate). Writes ettr_projection.nc and .png.

    python examples/ettr_projection.py [--quick] [--out DIR]
"""

import argparse
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

import relmodel as rm
from relmodel.plot import plain_log_axis

BASE = dict(checkpoint_cost="5min", restart_cost="10min", work="14d", checkpoint_interval="1h")
RATES = [6.50e-3, 2.34e-3]  # failures per node-day: the 16k- and 8k-GPU clusters
GPUS = 2 ** np.arange(3, 18)  # 8 ... 131,072
MITIGATIONS = {  # name: (field changes, failure-rate factor)
    "baseline": ({}, 1.0),
    "restart 2 min": ({"restart_cost": "2min"}, 1.0),
    "checkpoint 30 s": ({"checkpoint_cost": "30s"}, 1.0),
    "failure rate / 2": ({}, 0.5),
}


def projection(n_jobs: int) -> xr.Dataset:
    parts = []
    for name, (changes, rate_factor) in MITIGATIONS.items():
        grid = rm.Scenario(**{**BASE, **changes}, n_gpus=GPUS, failure_rate=[r * rate_factor for r in RATES])
        best = rm.optimal_interval(grid, "exact")
        # Simulate each point at its own optimal interval (one point per call: intervals differ).
        sims = [rm.simulate(p.sweep(checkpoint_interval=rm.feasible_interval(
                    float(best.sel(n_gpus=p.n_gpus, failure_rate=p.failure_rate)), p.work)),
                    n_jobs=n_jobs, seed=0) for p in grid.points()]
        part = xr.Dataset({
            "optimal_interval_h": best,
            "ettr_renewal": rm.ettr(grid, "renewal", at="exact"),
            "ettr_sim": (best.dims, np.reshape([float(s.ettr) for s in sims], best.shape)),
            "ettr_sim_se": (best.dims, np.reshape([float(s.ettr_se) for s in sims], best.shape)),
        })
        # The rate axis is labelled by the cluster's measured rate, not the mitigated one.
        parts.append(part.assign_coords(failure_rate=RATES).drop_vars(
            [c for c in part.coords if c not in ("n_gpus", "failure_rate")]))
    ds = xr.concat(parts, dim=xr.DataArray(list(MITIGATIONS), dims="mitigation", name="mitigation"))
    ds["mttf_h"] = (("failure_rate", "n_gpus"), rm.mttf(GPUS[None, :], np.asarray(RATES)[:, None]))
    ds.mttf_h.attrs = {"units": "h", "long_name": "job MTTF at the cluster's measured rate"}
    ds.ettr_sim.attrs = {"units": "1", "long_name": f"simulated ETTR ({n_jobs} jobs per point)"}
    ds.attrs = {"title": "ETTR and MTTF against job size (Kokolis et al. 2024 failure rates)",
                "work": BASE["work"], "relmodel_version": rm.__version__, "n_jobs": n_jobs}
    return ds


def figure(ds: xr.Dataset, path: Path):
    fig = Figure(figsize=(12, 4.5), layout="constrained")
    left, right = fig.subplots(1, 2)
    for rate, color in zip(RATES, ("C0", "C1")):
        left.plot(GPUS, ds.mttf_h.sel(failure_rate=rate), "o-", ms=3, color=color,
                  label=f"{rate * 1000:.2f} per 1000 node-days")
        for name, style in zip(MITIGATIONS, ("-", "--", ":", "-.")):
            right.plot(GPUS, ds.ettr_renewal.sel(failure_rate=rate, mitigation=name), style, color=color,
                       label=f"{rate * 1000:.2f}, {name}")
        base = ds.sel(failure_rate=rate, mitigation="baseline")
        right.errorbar(GPUS, base.ettr_sim, yerr=1.96 * base.ettr_sim_se, fmt="o", ms=3, color=color)
    left.set(xscale="log", yscale="log", xlabel="job size (GPUs)", ylabel="job MTTF (h)", title="job MTTF")
    right.set(xscale="log", xlabel="job size (GPUs)", ylabel="ETTR at the optimal interval (productive / wall-clock)",
              ylim=(0, 1.02), title=f"ETTR, {ds.attrs['work']} of work (dots: simulation, 95%)")
    for axis in (left.xaxis, right.xaxis):
        plain_log_axis(axis, base=2)
    plain_log_axis(left.yaxis)
    left.legend(fontsize=8, title="failure rate", title_fontsize=8)
    right.legend(fontsize=7, ncol=2, loc="lower left", title="failures per 1000 node-days, mitigation",
                 title_fontsize=7)
    fig.supxlabel(f"fixed: {ds.attrs['work']} of work, checkpoint write {BASE['checkpoint_cost']}, restart "
                  f"{BASE['restart_cost']}, 8 GPUs/node, interval re-optimised at each point; "
                  f"{ds.attrs['n_jobs']} simulated jobs a point", fontsize=8, color="0.2")
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])  # the gallery runs it with no __doc__
    parser.add_argument("--quick", action="store_true", help="few simulated jobs (for CI)")
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for the .nc and .png")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ds = projection(n_jobs=200 if args.quick else 5000)
    ds.to_netcdf(args.out / "ettr_projection.nc", engine="h5netcdf")
    figure(ds, args.out / "ettr_projection.png")
    table = ds.ettr_renewal.sel(mitigation="baseline").transpose("n_gpus", "failure_rate").to_pandas()
    print("ETTR at the optimal interval, baseline (rows: GPUs, columns: failures per node-day)")
    print(table.round(4).to_string())
    print(f"wrote {args.out / 'ettr_projection.nc'} and {args.out / 'ettr_projection.png'}")


if __name__ == "__main__":
    main()
