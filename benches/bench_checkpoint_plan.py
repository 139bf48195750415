"""Benchmark of the exact form with checkpoint levels and of the planner on it (a script, not a test:
it asserts nothing).

    python benches/bench_checkpoint_plan.py [--repeats 3] [--survey N]

First the exact E[wall] by its two engines on jobs of growing length (the
default one a cycle of level-L positions at a time, with its jump over
periods and without it; the reference a position at a time), in ms per call
and ns per position. Then `best_intervals` on the hard cases that
tests/test_checkpoint_plan.py pins (`MISSED`) and the run of
docs/user-guide/checkpoint-strategies.md: the intervals chosen, their exact ETTR and the planning time.
Best of `--repeats`; the first call of each compiles or loads the kernels.
`--survey N` then plans N scenarios drawn by `relmodel.testing.strategies`
(`level_scenarios` on `scenarios(extreme=True)`, durable multiples up to 64)
and prints the planning times' quantiles and the slowest cases (hypothesis, of
the test extra, draws them).
"""

from __future__ import annotations

import argparse
import time

import relmodel as rm
from relmodel import _levels_closed_form as lcf
from relmodel._checkpoint_plan import _value, best_intervals

FAST = rm.CheckpointLevel
CLUSTER = dict(n_gpus=16384, failure_rate=6.5e-3, restart_cost="10min")
PLANS = {
    "a nearly durable cheap fast level": rm.Scenario(
        **CLUSTER, work="14d", checkpoint_interval="2h", checkpoint_cost="10min",
        fast_checkpoints=(FAST(interval="2min", cost="1s", restart="3min", survives=0.995),)),
    "a free fast level that always survives": rm.Scenario(
        **CLUSTER, work="2d", checkpoint_interval="2h", checkpoint_cost="1min",
        fast_checkpoints=(FAST(interval="2min", cost=0, restart="10min", survives=1.0),)),
    "a durable write persisting past the MTTF": rm.Scenario(
        **CLUSTER, work="2d", checkpoint_interval="3h", checkpoint_cost="1min", checkpoint_persist="3h"),
    "a free 1 s level beside a 6 h persist, 24 h": rm.Scenario(
        n_gpus=16384, failure_rate=1e-3, work=24.0, restart_cost=0.1, checkpoint_cost=0.1, checkpoint_persist=6.0,
        checkpoint_interval=4.68 / 3600, fast_checkpoints=(FAST(interval=1.17 / 3600, cost=0, restart=0.1,
                                                                 survives=0.9),)),
    "docs: 54 days, two levels": rm.Scenario(
        **CLUSTER, work="54d", checkpoint_interval="1h", checkpoint_cost="5min", checkpoint_persist="5min",
        fast_checkpoints=(FAST(interval="10min", cost="5s", restart="3min", persist="30s", survives=0.85),)),
}
# (lam, n_full, rem, d0, mult, cost, restart, persist, survives, categories): two levels, 12 positions a cycle.
WALL = (0.5, None, 0.0, 1 / 60, [1, 12], [1e-4, 1e-3], [0.05, 0.0], [1e-3, 0.05], [0.9, 1.0], [(1.0, 0.2, 0.1)])


def best_of(repeats: int, call) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = call()
        best = min(best, time.perf_counter() - start)
    return best, out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--survey", type=int, default=0, metavar="N", help="then plan N drawn scenarios")
    args = parser.parse_args(argv)
    lcf._expected_wall(*WALL[:1], 24, *WALL[2:])  # compile or load the kernel
    print(f"{'exact E[wall], positions':<26} {'engine':<24} {'ms a call':>10} {'ns a position':>14}")
    for n in (10**3, 10**4, 10**5):
        case = WALL[:1] + (n,) + WALL[2:]
        for label, kwargs in (("cycles (default)", {}), ("cycles, no jump", dict(periodic=False)),
                              ("positions (reference)", dict(engine="positions"))):
            seconds, _ = best_of(args.repeats, lambda: lcf._expected_wall(*case, **kwargs))
            print(f"{n:<26} {label:<24} {seconds * 1e3:10.2f} {seconds / n * 1e9:14.0f}")
    print(f"\n{'best_intervals':<50} {'fastest':>10} {'durable':>10} {'ETTR':>8} {'seconds':>8}")
    for name, sc in PLANS.items():
        seconds, plan = best_of(args.repeats, lambda: best_intervals(sc))
        fastest = plan.fast_checkpoints[0].interval if plan.fast_checkpoints else plan.checkpoint_interval
        durable = "never" if plan.checkpoint_interval > sc.work else f"{plan.checkpoint_interval:.3f} h"
        print(f"{name:<50} {fastest * 3600:8.1f} s {durable:>10} {_value(plan):8.5f} {seconds:8.2f}")
    if args.survey:
        survey(args.survey)


def survey(n: int) -> None:
    """`best_intervals` over n drawn scenarios, extremes included: its time's quantiles and the slowest."""
    import warnings

    import numpy as np
    from hypothesis import HealthCheck, given, settings

    from relmodel.testing.strategies import level_scenarios, scenarios

    times = []

    @settings(max_examples=n, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(level_scenarios(base=scenarios(laws=("exponential",), extreme=True), max_fast_levels=2, max_multiple=64))
    def plan(sc):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            best_intervals(sc)
            times.append((time.perf_counter() - start, repr(sc)))

    plan()
    seconds = np.array([t for t, _ in times])
    print(f"\nsurvey: {seconds.size} drawn scenarios, {seconds.sum():.0f} s; planning time median "
          f"{np.median(seconds):.2f} s, 90% {np.quantile(seconds, 0.9):.2f} s, 99% {np.quantile(seconds, 0.99):.2f} s")
    for t, text in sorted(times, reverse=True)[:3]:
        print(f"  {t:7.1f} s  {text}")


if __name__ == "__main__":
    main()
