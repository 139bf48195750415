"""The optimal checkpoint interval against job MTTF.
=================================================

Young, Daly and the exact renewal optimum, checked against simulation.

Checkpoint write 5 min, restart 10 min, 14 days of work; the MTTF spans 0.5 h
to 100 h by job size. For each MTTF, the simulation runs a grid of intervals
around the exact optimum and locates its own best interval (a parabola through
ETTR against log interval). Writes optimal_interval.nc and .png.

    python examples/optimal_interval.py [--quick] [--out DIR]
"""

import argparse
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

import relmodel as rm
from relmodel.plot import plain_log_axis

BASE = dict(failure_rate=6.5e-3, checkpoint_cost="5min", restart_cost="10min", work="14d", checkpoint_interval=1)
METHODS = ("young", "daly", "exact")


def study(n_mttf: int, n_jobs: int) -> xr.Dataset:
    mttf_h = np.geomspace(0.5, 100, n_mttf)
    nodes = np.unique(np.round(24 / (mttf_h * BASE["failure_rate"])).astype(int))
    grid = rm.Scenario(**BASE, n_gpus=list(nodes * 8))
    ds = xr.Dataset(coords={"n_gpus": ("n_gpus", list(grid.n_gpus))})
    ds["mttf_h"] = ("n_gpus", rm.mttf(np.asarray(grid.n_gpus), BASE["failure_rate"]), {"units": "h"})
    for m in METHODS:
        ds[f"interval_{m}_h"] = rm.optimal_interval(grid, m).variable
        ds[f"ettr_{m}"] = rm.ettr(grid, "renewal", at=m).variable
    best_sim, best_sim_ettr = [], []
    for point in grid.points():
        exact = rm.optimal_interval(point, "exact")
        intervals = exact * np.geomspace(0.4, 2.5, 11)
        sim = rm.simulate(point.sweep(checkpoint_interval=list(intervals)), n_jobs=n_jobs, seed=1)
        # Vertex of a parabola through ETTR against log interval, weighted by 1/SE.
        x = np.log(intervals)
        a, b, c = np.polyfit(x, sim.ettr.values, 2, w=1 / sim.ettr_se.values)
        best_sim.append(float(np.exp(-b / (2 * a))) if a < 0 else np.nan)
        best_sim_ettr.append(float(sim.ettr.max()))
    ds["interval_sim_h"] = ("n_gpus", best_sim, {"units": "h", "long_name": "best interval of the simulation"})
    ds["ettr_sim_best"] = ("n_gpus", best_sim_ettr)
    ds.attrs = {"title": "optimal checkpoint interval against MTTF", "n_jobs": n_jobs,
                "relmodel_version": rm.__version__}
    return ds


def figure(ds: xr.Dataset, path: Path):
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    # Daly's interval lies on the exact one: exact wide underneath, the others thin with markers on top.
    styles = {"exact": dict(ls="-", lw=4, alpha=0.5, color="C2"),
              "young": dict(ls="--", lw=1.3, marker="v", mfc="none", color="C0"),
              "daly": dict(ls=":", lw=1.5, marker="s", mfc="none", ms=5, color="C1")}
    for m in ("exact", "young", "daly"):
        left.loglog(ds.mttf_h, ds[f"interval_{m}_h"] * 60, label=m, **styles[m])
    left.loglog(ds.mttf_h, ds.interval_sim_h * 60, "ko", ms=4, label="simulation (best of a grid)")
    left.set(xlabel="job MTTF (h)", ylabel="optimal checkpoint interval (min)", title="optimal interval")
    left.legend(fontsize=8)
    for m in ("young", "daly"):
        right.semilogx(ds.mttf_h, (ds.ettr_exact - ds[f"ettr_{m}"]) * 100, ms=4, label=f"exact - {m}",
                       **{k: v for k, v in styles[m].items() if k != "ms"})
    right.set(xlabel="job MTTF (h)", ylabel="ETTR lost to the approximation (percentage points)",
              title="cost of the approximation")
    for axis in (left.xaxis, left.yaxis, right.xaxis):
        plain_log_axis(axis)
    right.legend(fontsize=8)
    fig.supxlabel(f"fixed: work {BASE['work']}, failure rate {BASE['failure_rate']:g} per node-day, checkpoint "
                  f"write {BASE['checkpoint_cost']}, restart {BASE['restart_cost']}, 8 GPUs/node (MTTF set by "
                  f"the GPU count); {ds.attrs['n_jobs']} simulated jobs an interval", fontsize=8, color="0.2")
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])  # the gallery runs it with no __doc__
    parser.add_argument("--quick", action="store_true", help="few points and jobs (for CI)")
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ds = study(n_mttf=4 if args.quick else 12, n_jobs=2_000 if args.quick else 100_000)
    ds.to_netcdf(args.out / "optimal_interval.nc", engine="h5netcdf")
    figure(ds, args.out / "optimal_interval.png")
    table = ds[["mttf_h", "interval_young_h", "interval_daly_h", "interval_exact_h", "interval_sim_h",
                "ettr_young", "ettr_exact"]].to_dataframe()
    print((table * [1, 60, 60, 60, 60, 1, 1]).round(4).rename(columns=lambda c: c.replace("_h", "_min") if
                                                              c.startswith("interval") else c).to_string())
    print(f"wrote {args.out / 'optimal_interval.nc'} and {args.out / 'optimal_interval.png'}")


if __name__ == "__main__":
    main()
