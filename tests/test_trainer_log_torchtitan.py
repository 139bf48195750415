"""torchtitan's own log read as a run's record, laid out as pytorch/torchtitan prints it:

- ``torchtitan/tools/logging.py`` ``init_logger``: ``"[titan] %(asctime)s - %(name)s - %(levelname)s -
  %(message)s"`` on the root logger; ``torchrun --tee`` puts ``[rank0]:`` before each line;
- ``torchtitan/train.py`` ``Trainer.__init__``: ``f"Starting job: {job_config.job.description}"``;
  ``Trainer.train``: ``f"Training starts at step {self.step + 1}."``, ``"Training completed"``;
- ``torchtitan/components/metrics.py`` ``MetricsProcessor.log``: ``f"{color.red}step: {step:2}  "
  f"{color.green}loss: {global_avg_loss:7.4f}  ..."`` (ANSI colours of ``torchtitan/tools/utils.py`` ``Color``
  unless disabled);
- ``torchtitan/components/checkpoint.py`` ``CheckpointManager.save``: ``"Finished saving the checkpoint (or
  staging if async is enabled)" f"in {time.monotonic() - begin:.2f} seconds."``, ``_save_last_step``:
  ``f"Saving a full checkpoint at last step, step {curr_step}."``; ``load``: ``f"Loading the checkpoint from
  {checkpoint_id}."`` (``step-N``), ``f"Finished loading the checkpoint in {...:.2f} seconds."``.
"""


from relmodel.record import measure_run, read_run
from relmodel.record._trainers import TRAINER_FORMATS

S = 10**9
RED, GREEN, ORANGE, TURQUOISE, BLUE, CYAN, MAGENTA, RESET = (
    "\033[31m", "\033[32m", "\033[38;2;180;60;0m", "\033[38;2;54;234;195m", "\033[34m", "\033[36m", "\033[35m",
    "\033[39m")


def _line(time, message):
    return f"[rank0]:[titan] 2025-03-01 {time} - root - INFO - {message}"


def _step(time, step):
    return _line(time, f"{RED}step: {step:2}  {GREEN}loss: {7.5:7.4f}  {ORANGE}grad_norm: {1.25:7.4f}  "
                       f"{TURQUOISE}memory: {60.12:5.2f}GiB(75.95%)  {BLUE}tps: 1,024  {CYAN}tflops: 50.12  "
                       f"{MAGENTA}mfu: 5.07%{RESET}")


def _saved(time, seconds):
    return _line(time, f"Finished saving the checkpoint (or staging if async is enabled)in {seconds:.2f} seconds.")


FIRST = [
    _line("10:00:00,000", "Starting job: Llama 3 8B training"),
    _line("10:00:05,120", "Building llama3 8B with TransformerModelArgs(dim=4096, n_layers=32)"),
    _line("10:02:00,000", "Checkpointing active. Checkpoints will be loaded from and saved to ./outputs/checkpoint"),
    _line("10:05:00,000", "Training starts at step 1."),
    _step("10:05:40,000", 1),
    _step("10:10:00,000", 10),
    _saved("10:10:30,000", 30),
    _step("10:20:00,000", 20),
    _saved("10:20:30,000", 30),
    _step("10:30:00,000", 30),
    "[rank0]:[E301 10:41:00.123456 1234 torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog "
    "caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=600000) ran for 600022 milliseconds before timing out.",
    "[rank0]: Traceback (most recent call last):",
    '[rank0]:   File "/torchtitan/torchtitan/train.py", line 520, in <module>',
    "[rank0]:     trainer.train()",
    "[rank0]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 0.",
    # torchrun's own summary (torch/distributed/elastic/multiprocessing/errors: ChildFailedError.format_msg).
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 8, in <module>',
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    "============================================================",
    "torchtitan/train.py FAILED",
    "------------------------------------------------------------",
    "Failures:",
    "  <NO_OTHER_FAILURES>",
    "------------------------------------------------------------",
    "Root Cause (first observed failure):",
    "[0]:",
    "  time      : 2025-03-01_10:41:05",
    "  host      : node-001",
    "  rank      : 0 (local_rank: 0)",
    "  exitcode  : 1 (pid: 4242)",
    "  error_file: <N/A>",
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    "============================================================",
]
SECOND = [
    _line("11:00:00,000", "Starting job: Llama 3 8B training"),
    _line("11:03:00,000", "Loading the checkpoint from ./outputs/checkpoint/step-20."),
    _line("11:04:00,000", "Finished loading the checkpoint in 60.00 seconds."),
    _line("11:04:10,000", "Training starts at step 21."),
    _step("11:14:10,000", 30),
    _saved("11:14:40,000", 30),
    _step("11:24:40,000", 40),
    _line("11:24:40,500", "Saving a full checkpoint at last step, step 40."),
    _saved("11:25:10,000", 29.5),
    _line("11:25:10,000", "Sleeping 2 seconds for other ranks to complete"),
    _line("11:25:12,000", "Training completed"),
]
# By hand: startup 10:00:00-10:05:00; compute to each write's start (its end less its printed seconds); the
# compute after the write of step 20 is lost at the NCCL timeout, at torchrun's root-cause time 10:41:05; queue
# to 11:00; restart to 11:04:10; the end 2 s after the last write.
EXPECTED = {"productive": 300 * S + 570 * S + 600 * S + 600_500_000_000 + 2 * S,
            "checkpoint": 119_500_000_000, "lost": 1235 * S, "restart": 250 * S, "startup": 300 * S,
            "queue": 1135 * S, "persist_wait": 0}


def _logs(tmp_path, *attempts):
    """One Slurm output file for each attempt's lines."""
    for number, lines in enumerate(attempts, start=1):
        (tmp_path / f"slurm-{number}.out").write_text("".join(f"{line}\n" for line in lines))
    return [tmp_path / f"slurm-{number}.out" for number in range(1, len(attempts) + 1)]


def _components(record):
    return measure_run(record).time_ns.to_series().loc[list(EXPECTED)].to_dict()


def test_two_attempts_in_two_files_measure_as_by_hand(tmp_path):
    record = read_run(_logs(tmp_path, FIRST, SECOND), format="torchtitan")
    assert _components(record) == EXPECTED
    kinds = list(record.events.kind.values)
    assert kinds.count("checkpoint_written") == 4 and kinds.count("attempt_start") == 2
    failure = record.events.where(record.events.kind == "failure", drop=True)
    assert list(failure.reason.values) == ["NCCL timeout"]
    restored = record.events.where(record.events.kind == "checkpoint_restored", drop=True)
    assert list(restored.step.values) == [20]


def test_torchrun_restarts_in_one_file_read_the_same_and_auto_picks_torchtitan(tmp_path):
    assert _components(read_run(_logs(tmp_path, FIRST + SECOND), format="auto")) == EXPECTED


def test_detect_is_specific():
    detect = TRAINER_FORMATS["torchtitan"].detect
    assert detect(FIRST) and detect(SECOND[:2])
    megatron = [" [2025-03-01 10:12:07.500000] iteration      100/    1000 | consumed samples:        25600 | "
                "elapsed time per iteration (ms): 6000.0 | lm loss: 7.123456E+00 |",
                "time to initialize megatron (seconds): 42.500"]
    garbage = ["2025-03-01 10:00:00,000 - root - INFO - hello", "step: 1 loss: 2", "\x00\xff binary", ""]
    assert not detect(megatron) and not detect(garbage)
