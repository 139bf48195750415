"""ReCycle's planner over a grid: period / lower bound of the exact search and of the
heuristic, with their planning times (the grid: stages 4-16, replicas 2-8, micro-batches
p to 4p, 1-4 failed workers spread as `spread_failures` places them; unit F, B, W).

    python benches/bench_recycle_planner.py [--exact-limit SECONDS] [--most TASKS] [--stages P ...] > table.md

The exact search runs where d m p <= --most (default 1024), in CP-SAT's deterministic
time (--exact-limit, default 20); "proven" marks a period proven least.
"""

import argparse
import time

import relmodel.pipeline as pl
from relmodel.pipeline import _planner as planner
from relmodel.pipeline._recycle import recycle_kind


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--exact-limit", type=float, default=20.0)
    parser.add_argument("--most", type=int, default=1024)
    parser.add_argument("--stages", type=int, nargs="+", default=[4, 8, 16])
    args = parser.parse_args()
    print("| p | d | m | failed | lower bound | heuristic (ratio, s) | exact (ratio, s) |")
    print("|---|---|---|---|---|---|---|")
    for p in args.stages:
        for d in (2, 4, 8):
            for m in (p, 2 * p, 4 * p):
                cfg = recycle_kind(pl.PipelineConfig(p, d, m))
                for n in (1, 2, 3, 4):
                    mask = pl.spread_failures(n, d, p)
                    began = time.perf_counter()
                    h = planner.adapted_plan(cfg, mask, method="heuristic")
                    h_time = time.perf_counter() - began
                    cells = [f"{h.lower_bound:g}", f"{h.period / h.lower_bound:.3f} ({h_time:.2f})"]
                    if d * m * p <= args.most:
                        began = time.perf_counter()
                        e = planner.adapted_plan(cfg, mask, method="exact", time_limit=args.exact_limit)
                        e_time = time.perf_counter() - began
                        cells.append(f"{e.period / e.lower_bound:.3f}{' proven' if e.optimal else ''} ({e_time:.2f})")
                    else:
                        cells.append("-")
                    print(f"| {p} | {d} | {m} | {n} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
