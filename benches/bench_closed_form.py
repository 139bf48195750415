"""Benchmark of the closed forms on scenario grids (a script, not a test: it asserts nothing).

    python benches/bench_closed_form.py [--repeats 5]

`ettr` (renewal and linear), `optimal_interval` (Young, Daly, exact) and
`compare`'s flags on two grids: 10,000 points of exponential failures
(interval x GPUs) and 900 points with lemon nodes (interval x work, a table of
job rates per mixture). Best of `--repeats` calls, in milliseconds per grid
and microseconds per point. The closed forms are array expressions over the
grid's points (one table of rates per lemon mixture); the exact optimum is a
search over checkpoint counts, point by point.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import relmodel as rm
from relmodel._closed_form import grid_closed_forms

GRIDS = {
    "exponential, 100 x 100": dict(
        n_gpus=list(range(8, 808, 8)), failure_rate=6.5e-3, checkpoint_interval=list(np.geomspace(0.05, 10, 100)),
        work=500.0, checkpoint_cost=0.05, restart_cost=0.2, queue_wait=0.1),
    "lemon nodes, 30 x 30": dict(
        n_gpus=4096, failure_rate=6.5e-3, lemon_fraction=0.01, lemon_rate_factor=20.0,
        checkpoint_interval=list(np.geomspace(0.05, 10, 30)), work=list(np.geomspace(10, 1000, 30)),
        checkpoint_cost=0.05, restart_cost=0.2),
}


def best_of(repeats: int, call) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", rm.ClosedFormWarning)
    print(f"{'grid':24s} {'quantity':28s} {'points':>7s} {'ms':>9s} {'us/point':>9s}")
    for name, fields in GRIDS.items():
        sc = rm.Scenario(**fields)
        quantities = {
            "ettr renewal": lambda: rm.ettr(sc, "renewal"),
            "ettr linear": lambda: rm.ettr(sc, "linear"),
            "optimal_interval young": lambda: rm.optimal_interval(sc, "young"),
            "optimal_interval daly": lambda: rm.optimal_interval(sc, "daly"),
            "optimal_interval exact": lambda: rm.optimal_interval(sc, "exact"),
            "compare's closed forms": lambda: grid_closed_forms(sc),
        }
        for quantity, call in quantities.items():
            seconds = best_of(args.repeats, call)
            print(f"{name:24s} {quantity:28s} {sc.size:7d} {seconds * 1e3:9.2f} {seconds / sc.size * 1e6:9.2f}")


if __name__ == "__main__":
    main()
