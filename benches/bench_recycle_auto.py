"""What ReCycle's `auto` planner returns over a scan of small pipelines: its gap to the lower bound and
whether it proved its period, the cases it left short listed (a script, not a test).

    python benches/bench_recycle_auto.py > gaps.md
    PYTHONPATH=<a worktree of REV> python benches/bench_recycle_auto.py > gaps-REV.md

Stages 2-4, replicas 2-4, 4, 8 or 16 micro-batches, (F, B, W) in (1, 1, 1), (1, 2, 1), (2, 3, 1), 1-3 failed
workers as `spread_failures` places them: 243 cases, 225 with a plan (in the others a stage has no
survivor), every one with d m p <= 256, where the docs promise the exact search. Uses only the public API,
so an older revision runs it too.
"""

import itertools
import time

import relmodel
import relmodel.pipeline as pl

TIMES = ((1.0, 1.0, 1.0), (1.0, 2.0, 1.0), (2.0, 3.0, 1.0))


def main():
    print(f"relmodel from {relmodel.__file__}\n")
    print("| p | d | m | F, B, W | failed | lower bound | auto | gap | proven | method | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    cases = short = unproven = 0
    for p, d, m, (f, b, w), n in itertools.product((2, 3, 4), (2, 3, 4), (4, 8, 16), TIMES, (1, 2, 3)):
        cfg = pl.PipelineConfig(p, d, m, fwd=f, bwd_input=b, bwd_weight=w)
        began = time.perf_counter()
        plan = pl.recycle_plan(cfg, pl.spread_failures(n, d, p), method="auto")
        seconds = time.perf_counter() - began
        if plan is None:  # a stage with no survivor: nothing runs
            continue
        cases += 1
        gap = plan.period / plan.lower_bound - 1
        if gap > 1e-9:
            short += 1
            unproven += not plan.optimal
            print(f"| {p} | {d} | {m} | {f:g}, {b:g}, {w:g} | {n} | {plan.lower_bound:g} | {plan.period:g} | "
                  f"{100 * gap:.1f}% | {'yes' if plan.optimal else 'no'} | {plan.method} | {seconds:.1f} |",
                  flush=True)
    print(f"\n{cases} cases with a plan; {short} above the lower bound, {unproven} of them not proven least.")


if __name__ == "__main__":
    main()
