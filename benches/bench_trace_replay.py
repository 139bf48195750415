"""The trace replay of the docs' pipeline pages, timed warm as a user runs it, against a git revision's (a script, not a test).

    python benches/bench_trace_replay.py [--against REV] [--rounds 3] [--trace PATH]

Runs `relmodel pipeline --stages 8 --replicas 8 --microbatches 16 --trace PATH`
in a process of its own, once to fill Numba's cache and then `--rounds` times
(best and median wall seconds), and checks that its output is the same text
each time; each round also runs the command without `--trace` (imports and
the table), and the replay's own time is the difference of the medians. With
`--against REV`, REV's package (a `git worktree` of it, on PYTHONPATH, with a
Numba cache of its own) runs the same commands in the same rounds,
interleaved, and the two outputs must be the same. Then, in this process,
where the replay spends its time: the ReCycle states planned, the share the
compiled fixed rules settle, and the seconds per state.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "data" / "spot-traces" / "p3-trace.csv"
COMMAND = ["pipeline", "--stages", "8", "--replicas", "8", "--microbatches", "16"]


def run(package: Path, cache: Path, trace: Path | None) -> tuple[float, str]:
    """(wall seconds, stdout) of the command with `package` first on the path (without `--trace`: None)."""
    env = dict(os.environ, PYTHONPATH=str(package), NUMBA_CACHE_DIR=str(cache))
    code = ("import sys, relmodel; from relmodel._cli import main; "
            f"assert relmodel.__file__.startswith({str(package)!r}), relmodel.__file__; main(sys.argv[1:])")
    began = time.perf_counter()
    replay = ["--trace", str(trace)] if trace is not None else []
    done = subprocess.run([sys.executable, "-c", code, *COMMAND, *replay], env=env,
                          cwd=cache.parent, capture_output=True, text=True)  # not the checkout: it would come first
    if done.returncode:
        sys.exit(f"{package}: exit {done.returncode}\n{done.stderr}")
    return time.perf_counter() - began, done.stdout


def breakdown(trace: Path) -> None:
    """States planned by the replay and how the compiled batches settle them."""
    import numpy as np

    import relmodel.pipeline as pl
    from relmodel._engine import kernel_threads
    from relmodel.pipeline import _datasets as datasets, _planner as planner, _runs as runs
    from relmodel.pipeline._recycle import recycle_kind

    cfg = pl.PipelineConfig(stages=8, replicas=8, microbatches=16)
    paths = runs.replay_paths(cfg, pl.read_node_trace(trace), runs.RunModel(), 8, 0)
    states = datasets._recycle_states(cfg, paths)
    plannable = states[states.any(axis=1) & (states.max(axis=1) < cfg.replicas)]
    masks = np.stack([pl.failure_mask(dict(enumerate(c)), cfg.replicas, cfg.stages) for c in plannable.tolist()])
    rules = planner._rules(recycle_kind(cfg))
    rules.periods(masks[:1])  # compiled, and the structure made
    began = time.perf_counter()
    found = rules.periods(masks)
    batch = time.perf_counter() - began
    short = plannable[np.isnan(found)]
    began = time.perf_counter()
    for counts in short.tolist():
        runs.recycle_period(cfg, pl.StrategyOptions(), tuple(counts))
    rest = time.perf_counter() - began
    print(f"\nReCycle states in the replay: {len(states)}, {len(plannable)} with a plan to search")
    print(f"  fixed rules, compiled, one thread: {len(plannable) - len(short)} settled, "
          f"{1e3 * batch / len(plannable):.2f} ms a state ({batch:.2f} s)")
    print(f"  left to the seeds and restarts: {len(short)}, {1e3 * rest / max(len(short), 1):.1f} ms a state "
          f"({rest:.2f} s)")
    print(f"  (a replay runs {runs.CHUNK_STATES} states a batch on {kernel_threads('numba')} threads, the short "
          "ones beside them)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--against", metavar="REV", help="a git revision to time beside the working tree")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trace", type=Path, default=TRACE)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        packages = {"working tree": ROOT}
        if args.against:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(scratch / "rev"),
                            args.against], check=True)
            packages[args.against] = scratch / "rev"
        try:
            outputs, times, table = {}, {name: [] for name in packages}, {name: [] for name in packages}
            for name, package in packages.items():  # a first run each fills its Numba cache
                outputs[name] = run(package, scratch / f"cache-{len(outputs)}", args.trace)[1]
            for _ in range(args.rounds):  # interleaved, so that a busy spell falls on every revision
                for k, (name, package) in enumerate(packages.items()):
                    seconds, out = run(package, scratch / f"cache-{k}", args.trace)
                    if out != outputs[name]:
                        sys.exit(f"{name}: the output changed between runs")
                    times[name].append(seconds)
                    table[name].append(run(package, scratch / f"cache-{k}", None)[0])
            if len(set(outputs.values())) > 1:
                sys.exit("the revisions print different results")
        finally:
            if args.against:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(scratch / "rev")],
                               check=True)
    print(f"relmodel {' '.join(COMMAND)} --trace {args.trace.name}, warm, {args.rounds} rounds "
          f"({os.cpu_count()} cores):")
    for name, seconds in times.items():
        print(f"  {name}: best {min(seconds):.2f} s, median {statistics.median(seconds):.2f} s; without --trace "
              f"median {statistics.median(table[name]):.2f} s; the replay "
              f"{statistics.median(seconds) - statistics.median(table[name]):.2f} s")
    if args.against:
        print("  the same output")
    breakdown(args.trace)


if __name__ == "__main__":
    main()
