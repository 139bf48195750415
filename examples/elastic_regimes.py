"""Elastic scaling regimes: where dynamic batch sizes reach the paper's figures, and where not.
=============================================================================================

Saxena et al. (2020) report that elastic batch-size allocation completes up to
about 2x as many jobs as a strong fixed-batch baseline, with mean completion
times up to about 10x lower. This study runs the same comparison on a 64-GPU
cluster over six axes, 5 seeds each:

* offered load: GPU-hours per hour that the jobs would take as submitted
  (the FIFO policy's load), over the GPUs: 0.5, 1, 2, 4, 8;
* batch-range width B_hi / B_lo: 1 (no range: elastic is the baseline), 4, 16
  and 64 (B_lo half the submitted batch, B_hi 2x, 8x or 32x it);
* the throughput curves: "fitted" to the ElasticFlow traces, or "roofline"
  (small per-GPU batches under-use a GPU, communication linear in the GPUs:
  a fixed batch stops scaling after a few GPUs), with a GPU saturated from
  half its memory-bound local batch (the family's default) or only at it
  ("roofline-full", as on a large accelerator running a small model);
* what becomes of a job that finds no room: dropped on arrival, or queued and
  dropped after 2 h of waiting;
* admission: in arrival order while the jobs' minimums fit ("first-fit"), or
  by the allocator's dynamic program, in which a waiting job may get zero
  GPUs ("optimizer");
* statistical efficiency: whether a job needs more samples at a larger batch
  (McCandlish et al.'s gradient noise scale, each job's B_noise 4x its
  submitted batch: 2x the batch then costs 1.2x the samples, 32x costs 7.2x),
  the policies rating jobs by goodput as Pollux does; or not (the seed's
  assumption: the work in samples is the same at every batch).

The allocator maximises total speedup (each job's throughput over its
throughput on one GPU at its submitted batch); the elastic and fixed-batch
policies differ only in the batch. FIFO runs every job as submitted. Per
regime, elastic against fixed-batch: ``completed_ratio`` (jobs completed,
elastic / fixed-batch), ``jct_ratio`` (mean completion time, fixed-batch /
elastic), ``drop_ratio`` (jobs dropped, fixed-batch / elastic; null when
elastic dropped none), the completions within the arrival window (what a
study that stops when arrivals stop would count), the mean completion time
over the jobs both completed, the work completed (GPU-hours as submitted),
``capacity_ratio`` (GPU-hours the jobs need at their most efficient
fixed-batch allocation over those at their most efficient elastic one: what
bounds the gain in work completed under overload), and the ratios against
FIFO.

Writes elastic_regimes.json, elastic_regimes.nc and elastic_regimes.png into --out.

    python examples/elastic_regimes.py [--quick] [--out DIR] [--processes N]
"""

import argparse
import contextlib
import functools
import itertools
import json
import math
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import xarray as xr
from tqdm import tqdm

import relmodel
import relmodel.elastic as el

N_GPUS = 64
PAPER = {"completed_ratio": 2.0, "jct_ratio": 10.0}
REACHED = 0.9  # "about 2x" / "about 10x": within 10 %
WIDTHS = {1: (1.0, 1.0), 4: (0.5, 2.0), 16: (0.5, 8.0), 64: (0.5, 32.0)}  # B_hi/B_lo: the batch-range factors
# name: (family, its parameters); roofline-full: a GPU saturated only at its memory-bound local batch
CURVES = {"fitted": ("fitted", {}), "roofline": ("roofline", {}), "roofline-full": ("roofline", {"saturation": 1.0})}
QUEUES = {"drop": {"unplaceable": "drop"}, "wait-2h": {"unplaceable": "queue", "max_wait": "2h"}}
OBJECTIVE = "speedup"
NOISE_SCALE_FACTOR = 4.0  # each job's gradient noise scale, in submitted batches (statistical efficiency)
REGIME_AXES = ("curve", "width", "load", "queue", "admission", "statistical_efficiency")
PER_POLICY = ("completed", "completed_in_window", "dropped", "work_completed", "jct_sum", "jct_common_sum",
              "common")


@functools.cache
def models_of(curve: str) -> dict:
    """The model catalogue of one of `CURVES`."""
    family, params = CURVES[curve]
    return el.curve_models(family, **params)


@functools.cache
def mean_job_size(curve: str) -> float:
    """Mean GPU-hours of a job at its submitted allocation, from one long probe
    (job i is the same job whatever the arrival rate)."""
    probe = el.synthetic_workload(100, "24h", seed=2**31, models=models_of(curve))
    return float(np.mean([j.work / (float(j.model.throughput(j.gpus, j.batch)) * 3600) * j.gpus for j in probe]))


def run_regime(curve, width, load, queue, admission, statistical_efficiency, seed, window_h) -> dict:
    rate = load * N_GPUS / mean_job_size(curve)  # jobs per hour
    work = el.synthetic_workload(rate, f"{window_h}h", seed, models=models_of(curve),
                                 batch_range_factor=WIDTHS[width],
                                 noise_scale_factor=NOISE_SCALE_FACTOR if statistical_efficiency else None)
    ds = el.simulate_cluster(work, n_gpus=N_GPUS, seed=seed, admission=admission, objective=OBJECTIVE,
                             **QUEUES[queue])
    jct = ds.jct.values  # policy x job, NaN where not completed
    end = ds.submit_time.values + jct
    pair = [list(ds.policy.values).index(p) for p in ("elastic", "fixed-batch")]
    common = np.isfinite(jct[pair]).all(axis=0)  # jobs both elastic and fixed-batch completed
    return {"completed": ds.completed.values, "completed_in_window": np.sum(end <= window_h, axis=1),
            "dropped": ds.dropped.values, "work_completed": ds.work_completed.values, "jct_sum": np.nansum(jct, axis=1),
            "jct_common_sum": np.where(common, jct, 0.0).sum(axis=1), "common": np.full(3, common.sum()),
            "submitted": int(ds.submitted.values[0])}


def capacity_ratio(curve: str, width: int, statistical_efficiency: bool) -> float:
    """GPU-hours the jobs need at their most efficient fixed-batch allocation over
    those at their most efficient elastic one (600 jobs of the probe). Under
    overload every policy is bounded by its capacity, so elastic can complete
    at most about this much more work than fixed-batch, whatever the load."""
    work = el.synthetic_workload(100, "6h", seed=2**31, models=models_of(curve), batch_range_factor=WIDTHS[width],
                                 noise_scale_factor=NOISE_SCALE_FACTOR if statistical_efficiency else None)
    need = []
    for fixed in (True, False):
        options = [el.job_options(job, N_GPUS, fixed) for job in work]
        need.append(sum(job.work / float(np.max(o.throughput / o.gpus)) for job, o in zip(work, options)))
    return need[0] / need[1]


def study(axes: dict, seeds, window_h, processes: int = 1) -> xr.Dataset:
    """Every regime of `axes` (REGIME_AXES to values) under every seed; the runs are
    independent, so `processes` only changes how long it takes."""
    dims = (*REGIME_AXES, "seed")
    values = [list(axes[name]) for name in REGIME_AXES] + [list(seeds)]
    shape = tuple(map(len, values))
    data = {name: np.zeros(shape + (3,)) for name in PER_POLICY}
    submitted = np.zeros(shape, dtype=np.int64)
    cells = list(np.ndindex(shape))
    args = [[*(axis[k] for axis, k in zip(values, index)), window_h] for index in cells]
    with ProcessPoolExecutor(processes) if processes > 1 else contextlib.nullcontext() as pool:
        runs = pool.map(run_regime, *zip(*args)) if pool else (run_regime(*a) for a in args)
        for index, out in zip(cells, tqdm(runs, total=len(cells), desc="regimes x seeds", unit="run")):
            for name in PER_POLICY:
                data[name][index] = out[name]
            submitted[index] = out["submitted"]
    coords = dict(zip(dims, values))
    coords["width"] = ("width", coords["width"], {"long_name": "B_hi / B_lo"})
    coords["load"] = ("load", coords["load"], {"long_name": "offered load (GPU-hours as submitted / GPU-hours)"})
    coords["policy"] = list(el.CLUSTER_POLICIES)
    ds = xr.Dataset({name: (dims + ("policy",), v) for name, v in data.items()}, coords=coords)
    ds["submitted"] = (dims, submitted)
    ds["capacity_ratio"] = (("curve", "width", "statistical_efficiency"),
                            [[[capacity_ratio(c, w, e) for e in axes["statistical_efficiency"]] for w in axes["width"]]
                             for c in axes["curve"]],
                            {"long_name": "GPU-hours at the most efficient allocations, fixed-batch / elastic"})
    ds.attrs = {"title": "elastic scaling regimes", "relmodel_version": relmodel.__version__, "n_gpus": N_GPUS,
                "arrival_window_h": window_h, "objective": OBJECTIVE, "queue_max_wait": "2h",
                "seeds": [int(s) for s in seeds], "noise_scale_factor": NOISE_SCALE_FACTOR,
                "batch_range_factors": json.dumps({str(w): WIDTHS[w] for w in axes["width"]})}
    return ds


def ratios(ds: xr.Dataset) -> xr.Dataset:
    """Elastic against fixed-batch (and FIFO) per regime, jobs pooled over the seeds."""
    total = ds.sum("seed")
    el_, fb, fifo = (total.sel(policy=p) for p in ("elastic", "fixed-batch", "fifo"))
    jct = total.jct_sum / total.completed
    out = xr.Dataset({
        "completed_ratio": el_.completed / fb.completed,
        "completed_in_window_ratio": el_.completed_in_window / fb.completed_in_window,
        "jct_ratio": jct.sel(policy="fixed-batch") / jct.sel(policy="elastic"),
        "jct_ratio_common": fb.jct_common_sum / el_.jct_common_sum,
        "drop_ratio": (fb.dropped / el_.dropped).where(el_.dropped > 0),
        "work_ratio": el_.work_completed / fb.work_completed,
        "capacity_ratio": ds.capacity_ratio,
        "completed_ratio_fifo": el_.completed / fifo.completed,
        "jct_ratio_fifo": jct.sel(policy="fifo") / jct.sel(policy="elastic"),
        "jct_mean": jct, "completed": total.completed, "dropped": total.dropped,
        "completed_in_window": total.completed_in_window, "submitted": total.submitted,
    })
    out.attrs = ds.attrs
    return out


RATIOS = ("completed_ratio", "jct_ratio", "drop_ratio", "completed_in_window_ratio", "jct_ratio_common",
          "work_ratio", "capacity_ratio", "completed_ratio_fifo", "jct_ratio_fifo")


def regimes_json(r: xr.Dataset) -> dict:
    rows = []
    for keys in itertools.product(*(r[name].values.tolist() for name in REGIME_AXES)):
        c = r.sel(dict(zip(REGIME_AXES, keys)))
        row = dict(zip(REGIME_AXES, keys))
        row["batch_range_factor"] = WIDTHS[row["width"]]
        row["submitted"] = int(c.submitted)
        for key in RATIOS:
            value = float(c[key])
            row[key] = round(value, 4) if math.isfinite(value) else None
        for key in ("completed", "dropped", "completed_in_window"):
            row[key] = {str(p): int(c[key].sel(policy=p)) for p in c.policy.values}
        row["jct_mean_h"] = {str(p): round(float(c.jct_mean.sel(policy=p)), 4) for p in c.policy.values}
        row["reaches_paper"] = {key: bool(row[key] is not None and row[key] >= REACHED * aim)
                                for key, aim in PAPER.items()}
        rows.append(row)
    return {"paper": PAPER, "reached_if_at_least": REACHED, "attrs": dict(r.attrs), "regimes": rows}


def figure(r: xr.Dataset, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    plain = FuncFormatter(lambda v, _: f"{v:g}")
    curves = list(itertools.product(r.curve.values.tolist(), r.statistical_efficiency.values.tolist()))
    admissions = r.admission.values.tolist()
    metrics = (("completed_ratio", "jobs completed,\nelastic / fixed-batch"),
               ("jct_ratio", "mean completion time,\nfixed-batch / elastic"))
    rows = list(itertools.product(metrics, admissions))
    fig, axes = plt.subplots(len(rows), len(curves), figsize=(4.3 * len(curves), 3.2 * len(rows)), sharex=True,
                             sharey="row", squeeze=False)
    styles = {"drop": "-", "wait-2h": "--"}
    colours = dict(zip(r.width.values.tolist(), plt.cm.viridis(np.linspace(0, 0.85, r.sizes["width"]))))
    for (row, ((key, label), admission)), (col, (curve, efficiency)) in itertools.product(enumerate(rows),
                                                                                         enumerate(curves)):
        ax = axes[row, col]
        for width in r.width.values.tolist():
            for queue in r.queue.values.tolist():
                y = r[key].sel(curve=curve, admission=admission, width=width, queue=queue,
                               statistical_efficiency=efficiency)
                ax.plot(r["load"], y, styles.get(queue, ":"), marker="o", ms=4, color=colours[width],
                        label=f"B_hi/B_lo = {width}, {queue}")
        ax.axhline(PAPER[key], color="crimson", lw=1, ls=":", label=f"paper: about {PAPER[key]:g}x")
        ax.axhline(1, color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.xaxis.set_major_formatter(plain)
        ax.yaxis.set_major_formatter(plain)
        ax.set_xticks(r["load"].values)
        if col == 0:
            ax.set_ylabel(f"{label}\n({admission} admission)", fontsize=9)
        if row == 0:
            ax.set_title(f"{curve} curves, " + ("statistical efficiency" if efficiency else "samples fixed"),
                         fontsize=10)
        if row == len(rows) - 1:
            ax.set_xlabel("offered load (as submitted)")
    axes[0, 0].legend(fontsize=7)
    seeds = len(r.attrs["seeds"])
    fig.suptitle(f"Elastic against fixed-batch on {N_GPUS} GPUs ({seeds} seed{'s' * (seeds > 1)} pooled, "
                 f"{OBJECTIVE} objective): above 1, elastic is ahead")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown(r: xr.Dataset, queue: str, admission: str) -> str:
    """Per curve, width and statistical efficiency, per load: "completed ratio / JCT ratio"."""
    loads = r["load"].values.tolist()
    lines = ["| curve | B_hi/B_lo | stat. eff. | capacity | " + " | ".join(f"load {load:g}" for load in loads)
             + " |", "|---|---|---|---|" + "---|" * len(loads)]
    for curve, width, efficiency in itertools.product(r.curve.values.tolist(), r.width.values.tolist(),
                                                      r.statistical_efficiency.values.tolist()):
        c = r.sel(curve=curve, width=width, queue=queue, admission=admission, statistical_efficiency=efficiency)
        cells = [f"{float(c.completed_ratio.sel(load=x)):.2f}x / {float(c.jct_ratio.sel(load=x)):.1f}x"
                 for x in loads]
        capacity = float(c.capacity_ratio)
        lines.append(f"| {curve} | {width} | {'yes' if efficiency else 'no'} | {capacity:.2f}x | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])  # the gallery runs it with no __doc__
    parser.add_argument("--quick", action="store_true", help="two loads, two widths, one seed, 6 h (for CI)")
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for the .json, .nc and .png files")
    parser.add_argument("--processes", type=int, default=1, help="runs at once (the results do not depend on it)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.quick:
        axes = {"curve": ["fitted", "roofline"], "width": [1, 64], "load": [0.5, 4.0], "queue": ["drop"],
                "admission": ["optimizer"], "statistical_efficiency": [False, True]}
        ds = study(axes, [0], 6.0, args.processes)
    else:
        axes = {"curve": list(CURVES), "width": list(WIDTHS), "load": [0.5, 1.0, 2.0, 4.0, 8.0],
                "queue": list(QUEUES), "admission": ["first-fit", "optimizer"], "statistical_efficiency": [False, True]}
        ds = study(axes, range(5), 24.0, args.processes)
    r = ratios(ds)
    ds.to_netcdf(args.out / "elastic_regimes.nc", engine="h5netcdf")
    (args.out / "elastic_regimes.json").write_text(json.dumps(regimes_json(r), indent=1) + "\n")
    figure(r, args.out / "elastic_regimes.png")
    for queue, admission in itertools.product(r.queue.values.tolist(), r.admission.values.tolist()):
        print(f"\njobs completed (elastic / fixed-batch) / mean JCT (fixed-batch / elastic); {queue}, "
              f"{admission} admission:")
        print(markdown(r, queue, admission))
    print("\nwrote " + ", ".join(str(args.out / f) for f in ("elastic_regimes.json", "elastic_regimes.nc",
                                                               "elastic_regimes.png")))


if __name__ == "__main__":
    main()
