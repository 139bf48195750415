"""The newcomer's first hour: each headline command as a user sees it (a benchmark: it asserts nothing).

    python benches/bench_first_hour.py [--cwd DIR] [--warm] [--only NAME,...] [--json FILE]

Each command runs with stdout and stderr on one pseudo-terminal of 100x30, from
`--cwd` (default: a temporary folder; the clone's root is the other case that
matters), on an empty Numba cache of its own (``--warm``: one cache for all,
filled by a first unmeasured run of each command). The job log and the run's
record are the samples that ship (``--example``), as the README runs them;
files the commands write go to a temporary folder. Per command it records the
time to the first byte on the terminal, the time to the end, the exit code and
the longest still interval: the longest time the terminal showed nothing new,
before the first byte or between two writes or from the last write to the end,
with the text last shown before it. The feedback rule is no still interval
over 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLUMNS, ROWS = 100, 30
RELMODEL = [str(Path(sys.executable).with_name("relmodel"))] if Path(sys.executable).with_name("relmodel").exists() \
    else [sys.executable, "-m", "relmodel._cli"]
SCENARIO = ('rm.Scenario(n_gpus=16384, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min", '
            'restart_cost="10min", work="14d")')
PLAN = ["plan", "--gpus", "16384", "--work", "14d", "--checkpoint-cost", "5min", "--restart-cost", "10min"]
FAST_LEVEL = "interval=10min, cost=5s, restart=3min, persist=1min, survives=0.85"


def commands(data: Path) -> dict[str, list[str]]:
    """Each headline command by name, with its inputs and outputs in `data`."""
    return {
        "plan": [*RELMODEL, *PLAN, "--target-ettr", "0.8", "--plot", str(data / "plan.png")],
        "simulate": [*RELMODEL, "simulate", "--gpus", "1024,4096,16384", "--checkpoint-interval", "30min,1h,2h",
                     "--n-jobs", "20000"],
        "compare": [*RELMODEL, "compare", "--gpus", "1024,4096,16384", "--checkpoint-interval", "30min,1h,2h",
                    "--n-jobs", "20000"],
        "fit": [*RELMODEL, "fit", "--example"],
        "cluster": [*RELMODEL, "cluster", "--gpus", "64", "--arrival-rate", "6", "--duration", "24h", "--seed", "1",
                    "--policy", "all", "--failure-rate", "2"],
        "run show": [*RELMODEL, "run", "show", "--example"],
        "run replay": [*RELMODEL, "run", "replay", "--example", "--checkpoint-interval", "1h"],
        "sweep": [*RELMODEL, "sweep", str(ROOT / "docs" / "user-guide" / "study.toml"), "--out",
                  str(data / "study.zarr")],
        "pipeline": [*RELMODEL, "pipeline", "--failures", "0,1,2,3,4"],
        "plan persist": [*RELMODEL, *PLAN, "--checkpoint-persist", "5min"],
        "plan fast": [*RELMODEL, *PLAN, "--fast-checkpoint", FAST_LEVEL],
        "bench --quick": [*RELMODEL, "bench", "--quick"],
        "python plan": [sys.executable, "-c", f"import relmodel as rm; print(rm.plan({SCENARIO}, target_ettr=0.8))"],
        "python recycle_check": [sys.executable, "-c", "import relmodel as rm; print(rm.pipeline.recycle_check())"],
    }


def run_on_a_terminal(argv: list[str], cwd: Path, env: dict) -> dict:
    """Run `argv` with stdout and stderr on a fresh pseudo-terminal; time what appears on it."""
    import fcntl
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, cwd=cwd, env=env,
                             close_fds=True, start_new_session=True)
    os.close(slave)
    writes, text = [], b""  # (seconds, bytes) of each read
    while True:
        if select.select([master], [], [], 0.05)[0]:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                data = b""
            if not data:
                break
            writes.append((time.perf_counter() - start, len(text)))
            text += data
        elif child.poll() is not None and not select.select([master], [], [], 0.2)[0]:
            break
    code = child.wait()
    end = time.perf_counter() - start
    os.close(master)
    return {"code": code, **stills(writes, end, text)}


def stills(writes: list[tuple[float, int]], end: float, text: bytes) -> dict:
    """The first byte, the end, and the longest still interval with the line last shown before it."""
    times = [0.0] + [at for at, _ in writes] + [end]
    gaps = [(times[i + 1] - times[i], i) for i in range(len(times) - 1)]
    longest, index = max(gaps)
    # What the terminal showed during it: every write before the gap.
    shown = text[:writes[index][1]] if index < len(writes) else text
    last = re.split(r"[\r\n]", shown.decode("utf-8", "replace").rstrip("\r\n"))[-1] if shown else ""
    last = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", last).strip()
    return {"first_byte_s": writes[0][0] if writes else None, "end_s": end, "longest_still_s": longest,
            "still_after": last[:60]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cwd", type=Path, help="working folder of every command (default: a temporary one)")
    parser.add_argument("--warm", action="store_true", help="one Numba cache for all, warmed by a first run")
    parser.add_argument("--only", help="the commands to run, by name, comma-separated")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="first-hour-") as scratch:
        scratch = Path(scratch)
        data, cwd = scratch / "data", (args.cwd or scratch / "cwd").resolve()
        data.mkdir()
        cwd.mkdir(exist_ok=True)
        chosen = commands(data)
        if args.only:
            names = [name.strip() for name in args.only.split(",")]
            unknown = set(names) - set(chosen)
            if unknown:
                parser.error(f"--only: unknown {', '.join(sorted(unknown))}; choose from {', '.join(chosen)}")
            chosen = {name: chosen[name] for name in names}
        results = {}
        for number, (name, command) in enumerate(chosen.items()):
            cache = scratch / ("cache" if args.warm else f"cache-{number}")
            env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "COLUMNS": str(COLUMNS), "LINES": str(ROWS)}
            if args.warm:
                subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=False)
            results[name] = run_on_a_terminal(command, cwd, env)
            shutil.rmtree(data / "study.zarr", ignore_errors=True)
            row = results[name]
            print(f"{name}: exit {row['code']}, still {row['longest_still_s']:.1f} s", file=sys.stderr)
    print(table(results, cwd if args.cwd else "a temporary folder", args.warm))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


def table(results: dict, cwd, warm: bool) -> str:
    """The Markdown table of `results`."""
    lines = [f"From {cwd}, {'a warm' if warm else 'an empty'} Numba cache, a {COLUMNS}x{ROWS} pseudo-terminal.", "",
             "| command | first byte (s) | end (s) | exit | longest still (s) | still after |",
             "|---|---:|---:|---:|---:|---|"]
    for name, row in results.items():
        first = "-" if row["first_byte_s"] is None else f"{row['first_byte_s']:.1f}"
        after = row["still_after"].replace("|", "/") or "(start)"
        lines.append(f"| {name} | {first} | {row['end_s']:.1f} | {row['code']} | {row['longest_still_s']:.1f} "
                     f"| {after} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
