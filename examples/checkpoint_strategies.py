"""Blocking, asynchronous or two-level checkpoints for a 54-day run on 16,384 GPUs.
================================================================================

The 54-day, 16,384-GPU run of the published large-run report (419 unexpected
interruptions), planned three ways with the same storage:

* **blocking**: the job stops while the checkpoint is written to remote
  storage (30 s to snapshot plus 5 min to persist: 5.5 min blocking);
* **asynchronous**: the job stops for the 30 s snapshot only; the copy to
  remote storage persists over the next 5 min while it computes (a failure
  before then loses it);
* **two-level**: asynchronous durable checkpoints as above, plus an in-memory
  level on peer nodes (as in Gemini): 5 s to write, durable on the peers
  30 s later, a 3 min restart from memory instead of 10 min from storage,
  restorable after 85% of failures (an assumption to vary: a failure that
  takes a node and its peer loses it).

Each strategy is planned at its best intervals (`relmodel.plan_checkpoints`,
exact expected ETTR for exponential failures, checked by a simulation), and a
figure shows the ETTR against the fastest interval of each (the two-level
strategy at its best durable multiple). Below 5 min the asynchronous writes
wait for the one before them to persist (the exact form solves that: the job
stalls at every write, and the curve falls steeply); the exact form has no
answer (NaN) only where a fast level's writes would wait, here below 30 s.

Writes checkpoint_strategies.nc and checkpoint_strategies.png.

    python examples/checkpoint_strategies.py [--quick] [--out DIR]
"""

import argparse
import dataclasses
import warnings
from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

import relmodel as rm
from relmodel.plot import plain_log_axis

GPUS, DAYS, INTERRUPTIONS = 16384, 54, 419
RATE = INTERRUPTIONS / (GPUS // 8 * DAYS)  # interruptions per node-day
IN_MEMORY = rm.CheckpointLevel(interval="10min", cost="5s", restart="3min", persist="30s", survives=0.85)
RUN = rm.Scenario(n_gpus=GPUS, failure_rate=RATE, work=f"{DAYS}d", checkpoint_interval="1h",
                  checkpoint_cost="30s", checkpoint_persist="5min", restart_cost="10min",
                  fast_checkpoints=(IN_MEMORY,))
LABELS = {"blocking": "blocking (5.5 min writes)", "asynchronous": "asynchronous (30 s + 5 min to persist)",
          "multilevel": "two-level (in memory + asynchronous durable)"}


def with_intervals(sc: rm.Scenario, fastest: float, multiple: int) -> rm.Scenario:
    """`sc` with its fastest interval moved, the other levels keeping their multiples of it."""
    fast = sc.fast_checkpoints
    if not fast:
        return sc.sweep(checkpoint_interval=fastest)
    levels = tuple(dataclasses.replace(lv, interval=round(lv.interval / fast[0].interval) * fastest) for lv in fast)
    return sc.sweep(fast_checkpoints=levels, checkpoint_interval=multiple * fastest)


def curve(plan: rm.CheckpointPlan, name: str, fastest: np.ndarray) -> np.ndarray:
    """Exact ETTR of the planned strategy with its fastest interval moved (durable multiple kept);
    NaN where a fast level's write would wait for the one before it to persist."""
    best = next(s for s in plan.strategies if s.name == name).scenario
    multiple = int(best.level_table()["mult"][-1]) if best.has_levels else 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rm.ClosedFormWarning)  # those NaN, which the docstring above explains
        return np.array([rm.ettr(with_intervals(best, x, multiple), "renewal") for x in fastest])


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer points and a short check simulation (for CI)")
    parser.add_argument("--out", type=Path, default=Path("."))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    print(f"{GPUS} GPUs, {DAYS} days, {RATE * 1000:.3f} interruptions per 1000 node-days: "
          f"job MTTF {RUN.sweep(fast_checkpoints=None).mttf:.2f} h")
    plan = rm.plan_checkpoints(RUN, n_jobs=2_000 if args.quick else 50_000, seed=1)
    print(plan)

    fastest = np.geomspace(1 / 60, 3.0, 12 if args.quick else 60)
    names = [s.name for s in plan.strategies]
    ds = xr.Dataset(
        {"ettr": (("strategy", "fastest_interval"), np.stack([curve(plan, n, fastest) for n in names]),
                  {"long_name": "exact expected ETTR at this fastest interval (durable multiple as planned)",
                   "units": "1"}),
         "best_ettr": ("strategy", [s.ettr for s in plan.strategies], {"long_name": "exact ETTR, best intervals"}),
         "simulated_ettr": ("strategy", [s.simulated for s in plan.strategies],
                            {"long_name": "simulated ETTR at the best intervals"}),
         "simulated_ettr_se": ("strategy", [s.simulated_se for s in plan.strategies]),
         "best_fastest_interval": ("strategy", [min(s.intervals_h.values()) for s in plan.strategies],
                                   {"units": "h"}),
         "best_durable_interval": ("strategy", [s.intervals_h["durable"] for s in plan.strategies],
                                   {"units": "h"})},
        coords={"strategy": names, "fastest_interval": ("fastest_interval", fastest, {"units": "h"})},
        attrs={"title": "Checkpoint strategies for a 54-day, 16,384-GPU run", "failure_rate_per_node_day": RATE,
               "relmodel_version": rm.__version__, "recommended": plan.recommended.name,
               "scenario": str(RUN)})
    ds.to_netcdf(args.out / "checkpoint_strategies.nc", engine="h5netcdf")
    figure(ds, args.out / "checkpoint_strategies.png")
    best, blocking = plan.recommended, next(s for s in plan.strategies if s.name == "blocking")
    print(f"\nrecommended: {best.name}, ETTR {best.ettr:.4f} against {blocking.ettr:.4f} blocking "
          f"({(best.ettr - blocking.ettr) * DAYS * 24 * GPUS / 1e6:.2f} M GPU-hours of the "
          f"{DAYS}-day budget gained); intervals "
          + ", ".join(f"{k} {v * 60:.3g} min" for k, v in best.intervals_h.items()))


def figure(ds: xr.Dataset, path: Path):
    fig = Figure(figsize=(7, 4.2), layout="constrained")
    ax = fig.subplots()
    x = ds.fastest_interval.values * 60
    for name in ds.strategy.values:
        line, = ax.plot(x, ds.ettr.sel(strategy=name), label=LABELS[str(name)])
        ax.plot(ds.best_fastest_interval.sel(strategy=name) * 60, ds.best_ettr.sel(strategy=name), "o",
                color=line.get_color())
    ax.set_xscale("log")
    plain_log_axis(ax.xaxis)
    ax.set_xlabel("fastest checkpoint interval (min)")
    ax.set_ylabel("expected ETTR")
    ax.set_ylim(max(0.0, float(np.nanmin(ds.ettr)) - 0.02), 1.0)
    ax.set_title(f"{GPUS} GPUs, {DAYS} days: each strategy at its best (dots)")
    ax.legend(loc="lower center", fontsize=8)
    ax.grid(alpha=0.3)
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
