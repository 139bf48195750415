"""Benchmark of studies (a script, not a test: it asserts nothing).

    python benches/bench_sweep.py [--quick] [--memory-points N] [--memory-jobs N] [--json PATH]

Speed: one study (16 grid points around the medium reference scenario, sized
to take about a minute on 2 cores) run four ways, each timed end to end:
the bare kernel in this process (`engine.run` over the same points, no store),
`relmodel sweep` with the local scheduler, and with a Dask LocalCluster of 1
and of 2 single-threaded workers (started and warmed before the timing, as an
existing cluster would be; its start-up is printed apart). Prints jobs/s, the Dask speed-up from 1 to 2
workers, and per-core throughput against the in-process kernel on as many
cores (the cost of going through Dask, chunking and the store).

Memory: peak resident memory of a local-scheduler study with `--memory-points`
grid points and `--memory-jobs` jobs each, in a fresh process, beside the
same study with a tenth of the jobs (flat in jobs, by streamed aggregation).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from distributed import Client, LocalCluster

from relmodel import _engine as engine
from relmodel._study import parse_study
from relmodel._sweep import _warm_up, run_study

SPEED_STUDY = """
[fixed]
failure_rate = 6.5e-3
checkpoint_cost = "5min"
restart_cost = "10min"
work = "7d"
[sweep]
n_gpus = [256, 512, 1024, 2048]
checkpoint_interval = ["30min", "1h", "2h", "4h"]
[run]
n_jobs = {n_jobs}
seed = 0
chunk_points = 1
"""

MEMORY_SCRIPT = """
import resource, sys, tempfile
from pathlib import Path
from relmodel._study import parse_study
from relmodel._sweep import run_study
points, n_jobs = int(sys.argv[1]), int(sys.argv[2])
rates = [round(1e-3 + 1e-2 * i / points, 12) for i in range(points)]
text = f'''[fixed]
n_gpus = 8
checkpoint_interval = "1h"
checkpoint_cost = "5min"
restart_cost = "10min"
work = "7d"
[sweep]
failure_rate = {rates}
[run]
n_jobs = {n_jobs}
seed = 0
'''
with tempfile.TemporaryDirectory() as tmp:
    run_study(parse_study(text), Path(tmp) / "m.zarr", progress=False)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def speed(n_jobs: int) -> dict:
    study = parse_study(SPEED_STUDY.format(n_jobs=n_jobs))
    total = study.scenario.size * n_jobs
    packed = engine.pack(study.scenario)
    engine.run(packed, 2048, 0)  # load the kernels before timing
    out = {"grid_points": study.scenario.size, "n_jobs": n_jobs, "total_jobs": total}
    import numba  # here: spawned Dask workers re-import this script, and must not load Numba first

    for threads in (1, numba.config.NUMBA_NUM_THREADS):
        out[f"kernel_{threads}_threads_s"] = timed(lambda: engine.run(packed, n_jobs, 0, n_threads=threads))
    with tempfile.TemporaryDirectory() as tmp:
        out["local_s"] = timed(lambda: run_study(study, Path(tmp) / "local.zarr", progress=False))
        for workers in (1, 2):
            # Started (and warmed) outside the timing, as an existing cluster would be.
            start = time.perf_counter()
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                              env={"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}) as cluster, \
                    Client(cluster) as client:
                client.run(_warm_up, study.backend)
                out[f"dask_{workers}_workers_startup_s"] = time.perf_counter() - start
                out[f"dask_{workers}_workers_s"] = timed(lambda: run_study(
                    study, Path(tmp) / f"dask{workers}.zarr", scheduler=cluster.scheduler_address, progress=False))
    return out


def peak_memory_mb(points: int, n_jobs: int) -> float:
    result = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT, str(points), str(n_jobs)], check=True,
                            capture_output=True, text=True)
    return float(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the jobs")
    parser.add_argument("--memory-points", type=int, default=10_000)
    parser.add_argument("--memory-jobs", type=int, default=1_000_000)
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    n_jobs = 2_500_000 if args.quick else 25_000_000
    s = speed(n_jobs)
    rate = {k: s["total_jobs"] / v for k, v in s.items() if k.endswith("_s") and "startup" not in k}
    import numba

    threads = numba.config.NUMBA_NUM_THREADS
    print(f"{platform.processor() or platform.machine()} | cpus {os.cpu_count()} | Numba threads {threads}")
    print(f"study: {s['grid_points']} points x {s['n_jobs']:,} jobs = {s['total_jobs']:.3g} jobs\n")
    print(f"{'run':<28} {'seconds':>8} {'jobs/s':>10}")
    for key, label in (("kernel_1_threads_s", "kernel in-process, 1 thread"),
                       (f"kernel_{threads}_threads_s", f"kernel in-process, {threads} threads"),
                       ("local_s", "sweep, local scheduler"), ("dask_1_workers_s", "sweep, Dask 1 worker"),
                       ("dask_2_workers_s", "sweep, Dask 2 workers")):
        print(f"{label:<28} {s[key]:8.2f} {rate[key]:10.3g}")
    figures = {
        "dask_speedup_1_to_2_workers": s["dask_1_workers_s"] / s["dask_2_workers_s"],
        "dask_1_worker_overhead": s["dask_1_workers_s"] / s["kernel_1_threads_s"] - 1,
        "dask_2_workers_overhead_vs_kernel_2_threads": s["dask_2_workers_s"] / s[f"kernel_{threads}_threads_s"] - 1,
        "local_overhead_vs_kernel": s["local_s"] / s[f"kernel_{threads}_threads_s"] - 1,
    }
    print(f"(Dask cluster start-up and warm-up, not timed above: {s['dask_1_workers_startup_s']:.1f} s with 1 "
          f"worker, {s['dask_2_workers_startup_s']:.1f} s with 2)\n")
    for key, value in figures.items():
        print(f"{key:<45} {value:+.3f}" if "overhead" in key else f"{key:<45} {value:.3f}")
    print("goal: Dask overhead per core under 10% of the in-process kernel")
    report = {"speed": s, "figures": figures, "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                                                        "numba_threads": threads}}
    if not args.skip_memory:
        small = peak_memory_mb(args.memory_points, max(1, args.memory_jobs // 10))
        big = peak_memory_mb(args.memory_points, args.memory_jobs)
        print(f"\npeak memory, {args.memory_points} points: {args.memory_jobs // 10:,} jobs each {small:.0f} MB, "
              f"{args.memory_jobs:,} jobs each {big:.0f} MB")
        report["memory_mb"] = {"points": args.memory_points, "jobs_small": args.memory_jobs // 10,
                               "peak_small": small, "jobs_big": args.memory_jobs, "peak_big": big}
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
