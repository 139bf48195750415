"""Benchmark of the log and trace readers (a script, not a test: it asserts nothing).

    python benches/bench_readers.py [--rows 1000000] [--folder DIR] [--baseline] [--cluster] [--repeat 1]

Writes, in `--folder` (kept) or a temporary one (removed), four files of
`--rows` data lines each: a ``sacct --parsable2`` log and a job CSV log drawn
by `relmodel._synthetic_log` (its defaults: steps, array tasks, cancelled jobs
that never started, scattered multi-node lists, about 18 nodes a job), an
ElasticFlow trace and a job CSV trace. Each case then runs in a
child process of its own, which prints its seconds (wall and CPU: on a shared
machine the CPU time moves less) and its peak resident memory (``ru_maxrss``),
in all and above what importing relmodel took:

* ``read_log`` of each log, and ``relmodel fit`` end to end (`relmodel._cli.fit_log`,
  what the command runs: read, fit, the text report);
* ``read_job_trace`` of each trace;
* with ``--cluster``, ``relmodel cluster --trace`` on the trace (a one-hour
  window of it: the simulator, not the reader, sets the time of a longer one);
* with ``--baseline``, the per-line readers (the path a log or trace takes when
  the vectorised one finds a row it cannot vouch for) on the same files;
* with ``--only record``: a run's record of `--rows` lines, as the trainer-events
  CSV and as a Megatron-LM log: ``read_run`` of the CSV, and with ``measure_run``
  after it; ``read_run`` of the log (``read_run_megatron``); beside ``pandas.read_csv`` of each file (the
  log's lines as fields between its iteration lines' ``|``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

MODELS = ("bert", "deepspeech2", "gpt2", "inception3", "resnet50", "vgg16")
BATCHES = (64, 32, 128, 64, 64, 64)


def write_logs(folder: Path, rows: int) -> dict:
    """The sacct and CSV logs of `rows` data lines each (drawn once, kept in `folder`)."""
    from relmodel._synthetic_log import synthetic_log

    paths = {"sacct": folder / f"sacct_{rows}.txt", "csv": folder / f"jobs_{rows}.csv"}
    # About 3.4 sacct lines per attempt (the job and its steps), 1.06 attempts per run.
    for fmt, runs in (("sacct", rows // 3 + 10), ("csv", rows + 10)):
        path = paths[fmt]
        if path.exists():
            continue
        lines = synthetic_log(runs, failure_rate=5e-3, seed=1).text(fmt).split("\n")
        path.write_text("\n".join(lines[:rows + 1]) + "\n")
    return paths


def write_trace(path: Path, rows: int):
    """An ElasticFlow trace of `rows` jobs over 30 days (drawn once)."""
    if path.exists():
        return
    rng = np.random.default_rng(0)
    model = rng.integers(0, len(MODELS), rows)
    batch = np.array(BATCHES)[model] * rng.choice([1, 2], rows)
    submit = np.sort(rng.integers(0, 30 * 86400, rows))
    iterations = rng.integers(100, 100_000, rows)
    gpus = rng.choice([1, 2, 4, 8], rows)
    with path.open("w") as file:
        file.write("job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n")
        file.writelines(f"job{i},{submit[i]},{iterations[i]},{MODELS[model[i]]},{submit[i] + 7200},{batch[i]},"
                        f"{gpus[i]},3600\n" for i in range(rows))


def write_job_csv(path: Path, rows: int):
    """A job CSV trace (the job model's fields) of `rows` jobs over 30 days (drawn once)."""
    if path.exists():
        return
    rng = np.random.default_rng(1)
    model = rng.integers(0, len(MODELS), rows)
    submit = np.sort(rng.random(rows) * 720).round(4)
    gpus = rng.choice([1, 2, 4, 8], rows)
    with path.open("w") as file:
        file.write("job_id,submit_time,model,work,batch,gpus\n")
        file.writelines(f"j{i},{submit[i]},{MODELS[model[i]]},{rng.integers(1, 1000) * 1e5:g},{BATCHES[model[i]]},"
                        f"{gpus[i]}\n" for i in range(rows))


def write_record(folder: Path, rows: int) -> dict:
    """A run of `rows` events as the trainer-events CSV, and of about `rows` lines as a Megatron-LM log:
    a step line every 10 s of compute, a 20 s write every 100 steps, a failure every 50,000 events."""
    from datetime import datetime, timedelta

    paths = {"events": folder / f"record_{rows}.csv", "megatron": folder / f"megatron_{rows}.log"}
    start = datetime(2024, 1, 1)
    stamp = [lambda s: (start + timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ"),
             lambda s: (start + timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S.%f")]
    events, log, t, step, saved = ["time,event,step,duration_s,wait_s,reason"], [], 0, 0, 0

    def attempt(restored):
        nonlocal t
        events.extend([f"{stamp[0](t)},attempt_start,,,,", f"{stamp[0](t + 60)},checkpoint_restored,{restored},,,",
                       f"{stamp[0](t + 120)},first_step,{restored + 1},,,"])
        log.extend(["------------------------ arguments ------------------------",
                    f"[after megatron is initialized] datetime: {stamp[1](t + 30)} ",
                    "time to initialize megatron (seconds): 30.000",
                    f"[before the start of training step] datetime: {stamp[1](t + 120)} "])
        t += 120

    attempt(0)
    while len(events) < rows:
        t, step = t + 10, step + 1
        if step % 100 == 0:
            events.append(f"{stamp[0](t + 20)},checkpoint_written,{step},20,,")
            log.extend([f" [{stamp[1](t)}] iteration {step:8d}/{10**9:8d} | elapsed time per iteration (ms): "
                        "10000.0 |", f"[{stamp[1](t)}] saving checkpoint at iteration {step:7d} to ckpt",
                        f"  [{stamp[1](t + 20)}] successfully saved checkpoint from iteration {step:7d} to ckpt"])
            t, saved = t + 20, step
        elif len(events) % 50_000 == 0:
            events.append(f"{stamp[0](t + 5)},failure,,,,NCCL timeout")
            log.extend([f" [{stamp[1](t)}] iteration {step:8d}/{10**9:8d} | elapsed time per iteration (ms): "
                        "10000.0 |", "[rank3]: Traceback (most recent call last):",
                        "[rank3]: RuntimeError: NCCL timeout"])
            t, step = t + 600, saved
            attempt(saved)
        else:
            events.append(f"{stamp[0](t)},step,{step},,,")
            log.append(f" [{stamp[1](t)}] iteration {step:8d}/{10**9:8d} | elapsed time per iteration (ms): "
                       "10000.0 |")
    events.append(f"{stamp[0](t + 1)},run_end,,,,")
    log.append(f"[after training is done] datetime: {stamp[1](t + 1)} ")
    paths["events"].write_text("\n".join(events) + "\n")
    paths["megatron"].write_text("\n".join(log) + "\n")
    return paths


def run_case(case: str, path: Path) -> dict:
    """Run one case in this process: seconds, and peak memory above the imports (MB)."""
    import resource

    import relmodel  # noqa: F401  the imports are not the reader's memory
    import relmodel._cli
    import relmodel.elastic
    import relmodel.elastic._traces as traces
    import relmodel._job_logs as logs

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start, cpu = time.perf_counter(), time.process_time()
    if case == "read_log":
        size = len(logs.read_log(path))
    elif case in ("read_run", "read_and_measure_run", "read_run_megatron"):
        from relmodel.record import measure_run, read_run

        record = read_run(path, format="megatron" if case == "read_run_megatron" else "events")
        size = len(record)
        if case == "read_and_measure_run":
            measure_run(record)
    elif case == "pandas_read_csv":
        import pandas

        size = len(pandas.read_csv(path))
    elif case == "pandas_read_csv_log":
        import csv

        import pandas

        # The generated log's iteration lines are three fields between "|"; every other line, one.
        size = len(pandas.read_csv(path, sep="|", header=None, names=range(3), quoting=csv.QUOTE_NONE))
    elif case == "read_log_per_line":
        size = len(logs._read_lines(path, "auto", logs.load_taxonomy("meta-2024"), "raise"))
    elif case == "fit":
        result = relmodel._cli.fit_log(path, flag="LOG_FILE", format="auto", min_gpus=128, gpus_per_node=8,
                                      taxonomy="meta-2024", confidence=0.95, errors="raise")
        str(result)
        size = result.n_jobs
    elif case == "read_job_trace":
        size = len(traces.read_job_trace(path))
    elif case == "read_job_trace_per_row":
        from unittest import mock

        with mock.patch.object(traces, "_columns", return_value=None):
            size = len(traces.read_job_trace(path))
    elif case == "cluster":
        from click.testing import CliRunner

        out = CliRunner().invoke(relmodel._cli.main, ["cluster", "--trace", str(path), "--duration", "1h",
                                                     "--gpus", "256", "--quiet"])
        if out.exit_code:
            raise SystemExit(out.output)
        size = 0
    else:
        raise SystemExit(f"unknown case {case!r}")
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {"case": case, "file": path.name, "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
            "rows_out": size,
            "peak_mb_above_imports": round((peak - before) / 1024), "peak_mb": round(peak / 1024)}


def fastest(case: str, path: Path, repeat: int) -> dict:
    """The case run `repeat` times, each in a fresh process: the least wall and CPU seconds and memory."""
    runs = [child(case, path) for _ in range(repeat)]
    if any("error" in run for run in runs):
        return next(run for run in runs if "error" in run)
    return {**runs[0], **{key: min(run[key] for run in runs) for key in ("seconds", "cpu_seconds",
                                                                          "peak_mb_above_imports", "peak_mb")},
            "repeats": repeat}


def child(case: str, path: Path) -> dict:
    # A child of a small parent: Linux keeps a process's peak memory across exec, so the
    # files are drawn in a child of their own, and each case starts from this small one.
    out = subprocess.run([sys.executable, __file__, "--child", case, str(path)], capture_output=True, text=True)
    if out.returncode:
        return {"case": case, "file": path.name, "error": out.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--folder", type=Path, default=None, help="Keep the generated files here (reused).")
    parser.add_argument("--baseline", action="store_true", help="Also time the per-line readers.")
    parser.add_argument("--repeat", type=int, default=1, help="Run each case this many times (fresh processes) "
                                                              "and give the least.")
    parser.add_argument("--cluster", action="store_true", help="Also time `relmodel cluster --trace` (1 h window).")
    parser.add_argument("--only", default="sacct,csv,trace,jobcsv",
                        help="Comma-separated: sacct, csv, trace (ElasticFlow), jobcsv (a job CSV trace), record (a "
                             "run's record: events CSV and Megatron-LM log).")
    parser.add_argument("--child", nargs=2, metavar=("CASE", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--make", nargs=1, metavar="FOLDER", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat: at least 1 (got {args.repeat})")
    if args.child:
        print(json.dumps(run_case(args.child[0], Path(args.child[1]))))
        return
    if args.make:
        folder, kinds = Path(args.make[0]), args.only.split(",")
        if {"sacct", "csv"} & set(kinds):
            write_logs(folder, args.rows)
        if "trace" in kinds:
            write_trace(folder / f"trace_{args.rows}.csv", args.rows)
        if "jobcsv" in kinds:
            write_job_csv(folder / f"jobcsv_{args.rows}.csv", args.rows)
        if "record" in kinds:
            write_record(folder, args.rows)
        return
    with tempfile.TemporaryDirectory() as temp:
        folder = args.folder or Path(temp)
        folder.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        kinds = args.only.split(",")
        subprocess.run([sys.executable, __file__, "--make", str(folder), "--rows", str(args.rows), "--only",
                        args.only], check=True)
        logs = {"sacct": folder / f"sacct_{args.rows}.txt", "csv": folder / f"jobs_{args.rows}.csv"}
        trace = folder / f"trace_{args.rows}.csv"
        print(f"files ready in {time.perf_counter() - start:.1f} s ({folder})", flush=True)
        cases = []
        for kind in ("sacct", "csv"):
            if kind in kinds:
                cases += [("read_log", logs[kind]), ("fit", logs[kind])]
                cases += [("read_log_per_line", logs[kind])] if args.baseline else []
        if "trace" in kinds:
            cases += [("read_job_trace", trace)] + ([("read_job_trace_per_row", trace)] if args.baseline else [])
            cases += [("cluster", trace)] if args.cluster else []
        if "jobcsv" in kinds:
            jobcsv = folder / f"jobcsv_{args.rows}.csv"
            cases += [("read_job_trace", jobcsv)] + ([("read_job_trace_per_row", jobcsv)] if args.baseline else [])
        if "record" in kinds:
            events, megatron = folder / f"record_{args.rows}.csv", folder / f"megatron_{args.rows}.log"
            cases += [("pandas_read_csv", events), ("read_run", events), ("read_and_measure_run", events),
                      ("pandas_read_csv_log", megatron), ("read_run_megatron", megatron)]
        for case, path in cases:
            size = path.stat().st_size / 1e6
            print(json.dumps({**fastest(case, path, args.repeat), "file_mb": round(size, 1)}), flush=True)


if __name__ == "__main__":
    main()
