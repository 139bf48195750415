"""Write the sample files of `relmodel.data`, byte for byte as shipped (a test holds them to it).

    python -m relmodel.data._make [--out FOLDER]

writes them into the package's ``samples`` folder, or into FOLDER.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .._scenario import Scenario
from .._synthetic_log import synthetic_log
from ..record._model import simulate_run
from ..record._read import read_run
from . import _RUN_GPUS
from ._trainer_lines import attempts, hf_trainer_lines, lightning_lines, megatron_lines, torchtitan_lines

SAMPLES_FOLDER = Path(__file__).resolve().parent / "samples"
JOB_LOG_SEED, RUN_SEED = 0, 3
# Interruptions by root cause, in the shares of Llama 3's pre-training (its paper's Table 5), and a planned one.
RUN_REASONS = {"faulty GPU": 148, "GPU HBM3 memory": 72, "software bug": 54, "network switch/cable": 35,
               "host maintenance": 32, "GPU SRAM memory": 19, "NCCL watchdog timeout": 7,
               "planned maintenance": 20}
PLANNED_REASON = "planned maintenance"
# Every 3 hours where the job's MTTF (7.2 h) makes about 1 hour best: what replaying it at 1 hour saves is the point.
RUN_SCENARIO = Scenario(n_gpus=_RUN_GPUS, failure_rate=6.5e-3, checkpoint_interval="3h", checkpoint_cost="5min",
                        restart_cost="10min", queue_wait="5min", work="10d")


def write_job_log(folder: Path) -> Path:
    """A 128-node cluster's sacct log: enough large jobs (a few hundred) to fit the rate to within about 25 %."""
    path = folder / "cluster-jobs.sacct"
    synthetic_log(500, failure_rate=6.5e-3, n_nodes=128, size_decay=0.15, median_length="1d",
                  seed=JOB_LOG_SEED).to_sacct(path)
    return path


def write_run_events(folder: Path) -> Path:
    """The trainer's events of one run of `RUN_SCENARIO`, with a 15-minute first startup."""
    record, _ = simulate_run(RUN_SCENARIO, seed=RUN_SEED, reasons=RUN_REASONS, planned=[PLANNED_REASON],
                             startup="15min")
    return record.to_csv(folder / "run-events.csv")


def write_trainer_logs(folder: Path, events: Path) -> list[Path]:
    """The run of `events` as each framework's trainer would have logged it, one file with every restart."""
    record = read_run(events)
    paths = []
    for name, lines in (("hf_trainer", hf_trainer_lines), ("lightning", lightning_lines),
                        ("megatron", megatron_lines), ("torchtitan", torchtitan_lines)):
        path = folder / f"run-{name}.log"
        path.write_text("".join(f"{line}\n" for line in lines(attempts(record))), encoding="utf-8")
        paths.append(path)
    return paths


def write_samples(folder: Path = SAMPLES_FOLDER) -> list[Path]:
    """Write every sample file into `folder`; return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    events = write_run_events(folder)
    return [write_job_log(folder), events, *write_trainer_logs(folder, events)]


def _main(argv=None):
    parser = argparse.ArgumentParser(description="Write relmodel's sample files.")
    parser.add_argument("--out", type=Path, default=SAMPLES_FOLDER, help="the folder [default: the package's]")
    for path in write_samples(parser.parse_args(argv).out):
        print(f"wrote {path}")


if __name__ == "__main__":
    _main()
