"""Benchmark of the core timeline kernel (a script, not a test: it asserts nothing).

    python benches/bench_core.py [--quick] [--json PATH]

What it measures, for three reference scenarios (6.5e-3 failures per node-day,
8 GPUs per node, checkpoints every 1 h costing 5 min, 10 min restarts, no queue):
small = 8 GPUs x 7 days, medium = 1024 GPUs x 7 days, large = 16384 GPUs x 14 days.

* Throughput of `engine.run` (the hot path of `simulate` minus the xarray
  labelling) for numba on 1 thread, numba on all threads and cython (serial):
  jobs/s and failure events/s, best of 3 timed runs after a warm-up call (so
  JIT compilation is excluded).
* The bare-generator limit: `exponential_draw_limit` draws the kernel's own
  Philox exponentials (one per failure plus the first) in a bare loop on all
  threads; the ratio of kernel events/s to limit draws/s shows how close the
  kernel comes to that limit.
* Time from `import relmodel` to the first `simulate` result in a fresh
  process, with a cold and then a warm Numba cache (and the same for cython).

Goals are printed beside the figures as PASS/MISS; they never set the exit
code. `--quick` runs a tenth of the jobs; `--json PATH` also writes every
figure with machine information.
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

import numba
import numpy as np

import relmodel
from relmodel import Scenario, engine
from relmodel._kernels.layout import BLOCK_SIZE, S_FAILURES
from relmodel._kernels.rng_numba import exponential_draw_limit

COMMON = dict(failure_rate=6.5e-3, gpus_per_node=8, checkpoint_interval="1h",
              checkpoint_cost="5min", restart_cost="10min", queue_wait=0)
SCENARIOS = {  # name: (fields, n_jobs for a timed run of roughly 1-3 s)
    "small": (dict(COMMON, n_gpus=8, work="7d"), 25_000_000),
    "medium": (dict(COMMON, n_gpus=1024, work="7d"), 10_000_000),
    "large": (dict(COMMON, n_gpus=16384, work="14d"), 300_000),
}
ALL = numba.config.NUMBA_NUM_THREADS
CONFIGS = (("numba", 1), ("numba", ALL), ("cython", None))  # (backend, threads)
SEED, REPEATS, WARMUP_JOBS = 0, 3, 10 * BLOCK_SIZE


def best_time(fn, repeats=REPEATS):
    """fn() after one warm-up call: (best wall time of `repeats` calls, last result)."""
    fn(warmup=True)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def bench_kernel(packed, n_jobs, backend, threads):
    def call(warmup=False):
        return engine.run(packed, WARMUP_JOBS if warmup else n_jobs, SEED, backend, n_threads=threads)
    seconds, totals = best_time(call)
    events = float(totals.stats[:, S_FAILURES].sum())
    return dict(seconds=seconds, jobs_per_s=n_jobs / seconds, events=events,
                events_per_s=events / seconds, failures_per_job=events / n_jobs)


def bench_limit(n_jobs, draws_per_job):
    def call(warmup=False):
        n = WARMUP_JOBS if warmup else n_jobs
        return exponential_draw_limit(np.uint64(SEED), np.uint64(0), n, draws_per_job, BLOCK_SIZE)
    with engine.numba_threads(ALL):
        seconds, _ = best_time(call)
    return dict(draws_per_job=draws_per_job, seconds=seconds, draws_per_s=n_jobs * draws_per_job / seconds)


CHILD = """import time
t0 = time.perf_counter()
import relmodel
relmodel.simulate(relmodel.Scenario(**{fields!r}), n_jobs=1000, seed=0, backend={backend!r})
print(time.perf_counter() - t0)
"""


def first_result_times(backend):
    """Import-to-first-result seconds in fresh processes: cold, then warm Numba cache."""
    code = CHILD.format(fields=SCENARIOS["small"][0], backend=backend)
    with tempfile.TemporaryDirectory(prefix="relmodel-bench-cache-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        out = [subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                              text=True).stdout.split()[-1] for _ in ("cold", "warm")]
    return dict(cold_s=float(out[0]), warm_s=float(out[1]))


def machine():
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                  if line.startswith("model name")), "") if os.path.exists("/proc/cpuinfo") else ""
    return dict(platform=platform.platform(), cpu=model or platform.processor(),
                python=platform.python_version(), numba=numba.__version__, numpy=np.__version__,
                relmodel=relmodel.__version__, cpu_count=os.cpu_count(), numba_num_threads=ALL,
                load_avg_1min_start=os.getloadavg()[0])


def verdict(ok):
    return "PASS" if ok else "MISS"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the jobs")
    parser.add_argument("--json", metavar="PATH", help="also write all figures as JSON")
    args = parser.parse_args(argv)
    info = machine()
    print(f"{info['cpu']} | {info['platform']} | python {info['python']} | numba {info['numba']} "
          f"| numpy {info['numpy']} | cpus {info['cpu_count']} | NUMBA_NUM_THREADS {ALL} "
          f"| load {info['load_avg_1min_start']:.2f}\n")

    runs, limits = [], {}
    print(f"{'scenario':8} {'backend':8} {'threads':>7} {'n_jobs':>11} {'best s':>7} "
          f"{'jobs/s':>10} {'events/s':>10} {'fail/job':>9}")
    for name, (fields, n_jobs) in SCENARIOS.items():
        n_jobs //= 10 if args.quick else 1
        packed = engine.pack(Scenario(**fields))
        for backend, threads in CONFIGS:
            r = dict(scenario=name, backend=backend, threads=threads or 1, n_jobs=n_jobs,
                     **bench_kernel(packed, n_jobs, backend, threads))
            runs.append(r)
            print(f"{name:8} {backend:8} {r['threads']:>7} {n_jobs:>11,} {r['seconds']:>7.3f} "
                  f"{r['jobs_per_s']:>10.3g} {r['events_per_s']:>10.3g} {r['failures_per_job']:>9.4g}")
        limits[name] = dict(n_jobs=n_jobs, **bench_limit(n_jobs, round(r["failures_per_job"]) + 1))

    numba_all = {r["scenario"]: r for r in runs if r["backend"] == "numba" and r["threads"] == ALL}
    print(f"\nbare-generator limit ({ALL} threads)  "
          f"{'draws/job':>9} {'best s':>7} {'draws/s':>10} {'kernel events/s / draws/s':>26}")
    for name, lim in limits.items():
        lim["ratio"] = numba_all[name]["events_per_s"] / lim["draws_per_s"]
        print(f"{name:34} {lim['draws_per_job']:>9} {lim['seconds']:>7.3f} "
              f"{lim['draws_per_s']:>10.3g} {lim['ratio']:>26.3f}")

    goals = [  # (goal, measured, met)
        ("numba all-threads medium jobs/s >= 6e6", numba_all["medium"]["jobs_per_s"], 6e6),
        ("numba all-threads small jobs/s >= 60e6", numba_all["small"]["jobs_per_s"], 60e6),
        ("numba all-threads large events/s >= 50e6", numba_all["large"]["events_per_s"], 50e6),
        ("large events/s / limit draws/s >= 0.6", limits["large"]["ratio"], 0.6),
    ]
    goals = [(label, value, value >= target) for label, value, target in goals]

    print("\nfirst result in a fresh process (import relmodel -> simulate(small, 1000 jobs))")
    first = {b: first_result_times(b) for b in ("numba", "cython")}
    for b, t in first.items():
        print(f"  {b:7} cold cache {t['cold_s']:7.2f} s   warm cache {t['warm_s']:6.2f} s")
        goals.append((f"{b} warm-cache first result < 1 s", t["warm_s"], t["warm_s"] < 1.0))

    print("\ngoals (informational)")
    goal_rows = []
    for label, value, ok in goals:
        goal_rows.append(dict(goal=label, value=value, passed=ok))
        print(f"  {verdict(ok)}  {label:44} measured {value:.3g}")

    info["load_avg_1min_end"] = os.getloadavg()[0]
    print(f"\n1-min load average at the end: {info['load_avg_1min_end']:.2f} (this run adds up to "
          f"{ALL}; more than that means other work shared the CPUs and skewed the figures)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(machine=info, quick=args.quick, seed=SEED, repeats=REPEATS,
                           scenarios={k: v[0] for k, v in SCENARIOS.items()}, runs=runs,
                           limit=limits, first_result=first, goals=goal_rows), f, indent=2)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
