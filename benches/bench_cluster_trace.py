"""Benchmark of `relmodel cluster --trace` on large traces (a script, not a test: it asserts nothing).

    python benches/bench_cluster_trace.py [--rows 100000,1000000] [--policies all,elastic] [--folder DIR]

Writes an ElasticFlow trace of each size in `--rows` (jobs over 30 days, the
six models of the traces, 1-8 GPUs: far more than 64 GPUs hold, so most jobs
are dropped on arrival, as in a real cluster's busy month), then runs
``relmodel cluster --trace FILE --policy P --quiet`` on the default cluster
(64 GPUs) for each policy choice in `--policies`, each run in a fresh process.
It prints one JSON line a run: its seconds (wall clock, the command end to
end: imports, reading the trace, the simulation, the table) and its peak
resident memory, ``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss`` read by a
small process that ran that command alone.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = ("bert", "deepspeech2", "gpt2", "inception3", "resnet50", "vgg16")
BATCHES = (64, 32, 128, 64, 64, 64)  # each model's usual batch; a job's is this or twice it


def write_trace(path: Path, rows: int):
    """An ElasticFlow trace of `rows` jobs submitted over 30 days (drawn once, seed 0)."""
    import numpy as np
    import pandas as pd

    if path.exists():
        return
    rng = np.random.default_rng(0)
    model = rng.integers(0, len(MODELS), rows)
    batch = np.array(BATCHES)[model] * rng.choice([1, 2], rows)
    submit = np.sort(rng.integers(0, 30 * 86400, rows))
    iterations = rng.integers(100, 100_000, rows)
    gpus = rng.choice([1, 2, 4, 8], rows)
    columns = {"job_id": "j" + pd.RangeIndex(rows).astype(str), "submission_time": submit,
               "num_iteration": iterations, "model_name": np.array(MODELS)[model], "deadline": submit + 3600,
               "batch_size": batch, "num_gpu": gpus, "duration": np.full(rows, 600)}
    pd.DataFrame(columns).to_csv(path, index=False)


def run_alone(trace: Path, policy: str) -> dict:
    """Run the command as this process's only child: its seconds, peak memory and completed jobs."""
    command = [sys.executable, "-c", "from relmodel._cli import main; main()", "cluster", "--trace", str(trace),
               "--policy", policy, "--quiet", "--json"]
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1:]}
    rows = json.loads(out.stdout)["policies"]
    return {"seconds": round(seconds, 1), "peak_rss_mb": round(peak_kib / 1024),
            "completed": {name: row["completed"] for name, row in rows.items()}}


def in_child(*args: str) -> str:
    """This script with `args` in a process of its own (a parent that stays small: Linux
    carries a process's peak memory over into the programs it starts)."""
    return subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True).stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="100000,1000000", help="Trace sizes, comma-separated.")
    parser.add_argument("--policies", default="all,elastic", help="--policy values to time, comma-separated.")
    parser.add_argument("--folder", type=Path, default=None, help="Keep the traces here (reused).")
    parser.add_argument("--make", nargs=2, metavar=("PATH", "ROWS"), help=argparse.SUPPRESS)
    parser.add_argument("--run", nargs=2, metavar=("PATH", "POLICY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make:
        write_trace(Path(args.make[0]), int(args.make[1]))
        return
    if args.run:
        print(json.dumps(run_alone(Path(args.run[0]), args.run[1])))
        return
    with tempfile.TemporaryDirectory() as temp:
        folder = args.folder or Path(temp)
        folder.mkdir(parents=True, exist_ok=True)
        for rows in (int(r) for r in args.rows.split(",")):
            trace = folder / f"elasticflow_{rows}.csv"
            in_child("--make", str(trace), str(rows))
            for policy in args.policies.split(","):
                result = json.loads(in_child("--run", str(trace), policy).strip().splitlines()[-1])
                print(json.dumps({"rows": rows, "policy": policy, **result}), flush=True)


if __name__ == "__main__":
    main()
