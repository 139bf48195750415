"""Benchmark of the elastic allocator (a script, not a test: it asserts nothing).

    python benches/bench_allocate.py [--jobs 64] [--gpus 512] [--waiting 256] [--repeats 20]

64 jobs (the six catalogue models in turn, submitted batches among each
model's usual sizes on 1-16 GPUs, batch ranges 1/2 to 8 times the submitted
batch, local batch 1 up to the memory bound) on 512 GPUs. Times, best of
`--repeats` after a warm-up call (so JIT compilation is excluded):

* the dynamic-programming kernel alone, on prepared option arrays;
* `allocate()` end to end (checking the jobs, building each job's options
  by the throughput model, the kernel, reading back), elastic and fixed-batch;
* admission by the optimizer: the same running jobs and `--waiting` more that
  may get zero GPUs (``may_wait``), the speedup objective: what the cluster
  simulator solves on each event while a queue is that long.

The goal printed beside it (milliseconds) never sets the exit code.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import relmodel.elastic as el
from relmodel.elastic._allocation_kernel import solve_allocation
from relmodel.elastic._allocate import choose_options


def make_jobs(n_jobs: int) -> list[el.Job]:
    models = list(el.FITTED_MODELS.values())
    jobs = []
    for i in range(n_jobs):
        model = models[i % len(models)]
        batch = model.batch_sizes[i % len(model.batch_sizes)]
        gpus = [1, 2, 4, 8, 16][i % 5]
        while batch % gpus:
            gpus //= 2
        jobs.append(el.Job(model, 1e7, batch, gpus, min_batch=batch // 2, max_batch=8 * batch, job_id=f"j{i}"))
    return jobs


def best_time(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=64)
    parser.add_argument("--gpus", type=int, default=512)
    parser.add_argument("--waiting", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    jobs = make_jobs(args.jobs)
    print(f"{args.jobs} jobs x {args.gpus} GPUs (best of {args.repeats})")
    for policy in ("elastic", "fixed-batch"):
        opts = [el.job_options(j, args.gpus, policy == "fixed-batch") for j in jobs]
        n_options = sum(o.gpus.size for o in opts)
        offsets = np.concatenate([[0], np.cumsum([o.gpus.size for o in opts])]).astype(np.int64)
        gpus = np.concatenate([o.gpus for o in opts])
        values = np.concatenate([o.value("throughput") for o in opts])
        kernel = best_time(lambda: solve_allocation(offsets, gpus, values, args.gpus), args.repeats)
        total = best_time(lambda: el.allocate(jobs, args.gpus, policy), args.repeats)
        alloc = el.allocate(jobs, args.gpus, policy)
        chosen, value = choose_options(opts, args.gpus, "throughput")
        assert value == alloc.value  # the two paths agree (a sanity check, not a test)
        goal = "PASS" if kernel < 0.05 else "MISS"
        print(f"{policy:>11}: {n_options:6d} options; DP kernel {kernel * 1e3:8.3f} ms ({goal}: goal < 50 ms); "
              f"allocate() {total * 1e3:8.3f} ms; {int(alloc.gpus.sum())} GPUs used, "
              f"{alloc.value:.0f} samples/s")
    queue = make_jobs(args.jobs + args.waiting)
    may_wait = [False] * args.jobs + [True] * args.waiting
    for policy in ("elastic", "fixed-batch"):
        total = best_time(lambda: el.allocate(queue, args.gpus, policy, "speedup", may_wait=may_wait), args.repeats)
        alloc = el.allocate(queue, args.gpus, policy, "speedup", may_wait=may_wait)
        print(f"{policy:>11}: admission among {args.waiting} waiting jobs: allocate() {total * 1e3:8.3f} ms; "
              f"{int(alloc.admitted[args.jobs:].sum())} admitted, {int(alloc.gpus.sum())} GPUs used")


if __name__ == "__main__":
    main()
