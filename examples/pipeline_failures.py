"""Throughput of a GPT-3-like pipeline-parallel run with workers down, per fault-tolerance strategy.
=================================================================================================

The configuration: GPT-3 175B (the `gpt3-175b` preset: 96 layers, hidden size
12288, sequences of 2048 tokens) on 1024 A100-80GB GPUs (`a100-80gb`, 40% MFU)
as 16 data-parallel replicas of an 8-stage pipeline (12 layers a stage), each
stage on one 8-GPU node with tensor parallelism, so a worker is a node. A
micro-batch is one sequence; each replica takes 32 per iteration (global batch
512 sequences, 1M tokens), so the 1F1B bubble is (p-1)/(m+p-1) = 18%.
`stage_profile` gives each stage's F, B and W times (about 92, 97 and 89 ms)
and memory (41 GiB of parameters and optimizer state, 1.2 GiB of activations
per micro-batch in flight, in 80 GiB). Activations (2048 x 12288 x 2 bytes =
50 MB) cross a 200 Gb/s link in 2 ms, 4 ms between replicas (re-routed
micro-batches); the gradient all-reduce and optimizer step add 300 ms an
iteration.

It prints the steady-state throughput against failed workers (spread over
replicas), simulates 14-day runs at the Meta study's failure rate (6.5 per
1000 node-days) with 4-hour repairs and two hot spares, and replays the real
preemption traces of ../shared/data/spot-traces (if present: the AWS p3 and
g4dn spot traces of the Bamboo artifact) on a 16-node slice of the same model:
4 replicas of a 4-stage pipeline (24 layers, 140 ms a task), about what the p3
trace keeps up (24 nodes on average, while g4dn averages 13). (The two Google
Cloud instance-count series, 57 and 76 instances on average, never fall below
16 for long: replay them on a wider job with `pl.replay_traces`; a fall removes
idle instances first, so a job loses a worker only when fewer than it needs
remain.) Writes
pipeline_failures.nc (the steady-state table at the root, groups "runs" and
"traces") and pipeline_failures.png.

What it shows: with workers down, ReCycle's planned schedule keeps (here even
beats, its decoupled backward filling 1F1B's bubbles) the fault-free period
while each survivor's extra micro-batches fit its pipeline bubble (max L <=
m + p - 1 in the table), where dropping a pipeline loses 1/d of the throughput
per broken replica and Bamboo cannot run at all: its copy of the next stage's
parameters does not fit beside the stage's own in 80 GiB. Restart and spare are 1.0 in the steady state
(they run on replacement nodes); their cost shows over a run, where every
failure stops them (restart also redoes the work since the last checkpoint).

    python examples/pipeline_failures.py [--quick] [--out DIR]
"""

import argparse
from pathlib import Path

import relmodel.pipeline as pl

PROFILE = pl.stage_profile("gpt3-175b", "a100-80gb", stages=8, tensor_parallel=8)  # times in s
LINKS = dict(p2p_delay=0.002, reroute_delay=0.004, optimizer_time=0.3)
# The docs gallery runs examples from this folder, and without __file__.
HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
TRACES = HERE.parents[1] / "shared" / "data" / "spot-traces"


def main():
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])  # the gallery runs it with no __doc__
    parser.add_argument("--quick", action="store_true", help="few runs and placements (for CI)")
    parser.add_argument("--out", type=Path, default=Path("."), help="output folder")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    cfg = PROFILE.config(replicas=16, microbatches=32, **LINKS)
    model = pl.RunModel(duration="14d", failure_rate=6.5e-3, repair_time="4h", time_unit="1s")
    table = pl.throughput_table(cfg, range(5 if args.quick else 9))  # a ReCycle plan of 12,288 tasks a row
    print(pl.format_steady_state(table, model))

    runs = pl.simulate_runs(cfg, model, n_runs=20 if args.quick else 400, seed=0)
    print()
    print(pl.format_runs(runs, "14-day runs"))

    replayed = None
    names = ("p3-trace.csv",) if args.quick else ("p3-trace.csv", "g4dn-trace.csv")
    found = [TRACES / name for name in names if (TRACES / name).exists()]
    if found:
        small = pl.PipelineConfig(4, 4, 32, fwd=0.14, bwd_input=0.14, bwd_weight=0.14, **LINKS)  # no memory limit
        replayed = pl.replay_traces(small, found, model, n_runs=2 if args.quick else 16, seed=0)
        print()
        print(pl.format_runs(replayed, "AWS spot traces (Bamboo artifact, MIT), 4 replicas x 4 stages"))
    if not found:
        print(f"\n(no spot traces under {TRACES}: trace replay skipped)")

    path = args.out / "pipeline_failures.nc"
    table.to_netcdf(path, engine="h5netcdf", mode="w")  # the steady-state table at the root
    runs.to_netcdf(path, engine="h5netcdf", group="runs", mode="a")
    if replayed is not None:
        replayed.to_netcdf(path, engine="h5netcdf", group="traces", mode="a")
    panels = [runs] + ([replayed] if replayed is not None else [])
    pl.throughput_figure(table, panels, args.out / "pipeline_failures.png",
                         title="GPT-3-like: 16 replicas x 8 stages, 32 micro-batches")
    print(f"\nwrote {path} and {args.out / 'pipeline_failures.png'}")


if __name__ == "__main__":
    main()
