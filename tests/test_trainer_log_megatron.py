"""Megatron-LM's own log read as a run's record, laid out as NVIDIA/Megatron-LM prints it:

- ``megatron/training/training.py`` ``print_datetime``: ``print_rank_0(f'[{string}] datetime: {time_str} ')``
  with ``'%Y-%m-%d %H:%M:%S.%f'``; ``pretrain``: ``'time to initialize megatron (seconds): {:.3f}'``, then
  ``print_datetime('after megatron is initialized')``, ``'after model, optimizer, and learning rate scheduler are
  built'``, ``'after dataloaders are built'``, ``'training ...'``, ``'after training is done'``; ``train``:
  ``print_datetime('before the start of training step')``;
- ``training_log``: ``f" [{datetime.now().strftime('%Y-%m-%d %H:%M:%S.%f')}]"`` ``' iteration {:8d}/{:8d} |'``
  ``' consumed samples: {:12d} |'`` ``' elapsed time per iteration (ms): {:.1f} |'`` ... via ``print_rank_last``;
- ``save_checkpoint_and_time``: ``timers.log(['save-checkpoint'])``, which ``megatron/core/timers.py`` prints as
  ``'(min, max) time across ranks (ms):'`` and ``'\\n    {}: ({:.2f}, {:.2f})'.format((name + ' ').ljust(48, '.'),
  ...)``;
- ``megatron/training/checkpointing.py`` ``save_checkpoint``: ``f"[{now}] saving checkpoint at iteration
  {iteration:7d} to {save_dir} in {ckpt_format} format"``, ``f"  [{now}] successfully saved checkpoint from
  iteration {int(iteration):7d} to {args.save} [ t {tp}/{tps}, p {pp}/{pps} ]"`` (earlier versions print both
  without the time); ``load_checkpoint``: ``f'  successfully loaded checkpoint from {load_dir} [ t {..}/{..}, p
  {..}/{..} ] at iteration {iteration}'``;
- the arguments banner of ``megatron/training/arguments.py`` ``_print_args``.
"""

import pytest

from relmodel.record import RunRecordError, measure_run, read_run
from relmodel.record._trainers import TRAINER_FORMATS

S = 10**9
MS = 10**6


def _stamp(label, time):
    return f"[{label}] datetime: 2025-03-01 {time} "


def _iteration(time, iteration, total=400):
    return (f" [2025-03-01 {time}] iteration {iteration:8d}/{total:8d} | consumed samples: {iteration * 256:12d} | "
            f"elapsed time per iteration (ms): 6000.0 | learning rate: 3.000000E-04 | global batch size:   256 | "
            f"lm loss: 7.123456E+00 | loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | "
            f"number of nan iterations:   0 |")


def _save(begin, end, iteration, timer_ms):
    return [f"[2025-03-01 {begin}] saving checkpoint at iteration {iteration:7d} to checkpoints in torch_dist format",
            f"  [2025-03-01 {end}] successfully saved checkpoint from iteration {iteration:7d} to checkpoints "
            f"[ t 1/2, p 1/2 ]",
            "(min, max) time across ranks (ms):",
            f"    {'save-checkpoint '.ljust(48, '.')}: ({timer_ms - 40:.2f}, {timer_ms:.2f})"]


def _startup(seconds):
    return ["using world size: 16, data-parallel size: 4, context-parallel size: 1, tensor-model-parallel size: 2, "
            "pipeline-model-parallel size: 2",
            "------------------------ arguments ------------------------",
            "  accumulate_allreduce_grads_in_fp32 .............. True",
            "-------------------- end of arguments ---------------------",
            "> initializing torch distributed ...",
            f"time to initialize megatron (seconds): {seconds:.3f}"]


FIRST = _startup(42.5) + [
    _stamp("after megatron is initialized", "10:00:50.000000"),
    "building GPT model ...",
    "WARNING: could not find the metadata file checkpoints/latest_checkpointed_iteration.txt",
    "    will not load any checkpoints and will start from random",
    _stamp("after model, optimizer, and learning rate scheduler are built", "10:01:30.000000"),
    _stamp("after dataloaders are built", "10:02:00.000000"),
    "done with setup ...",
    "training ...",
    _stamp("before the start of training step", "10:02:07.500000"),
    _iteration("10:12:07.500000", 100),
    "[Rank 0] (after 100 iterations) memory (MB) | allocated: 9334.37 | max allocated: 10606.50 | reserved: 10998.0",
    *_save("10:12:07.600000", "10:12:37.600000", 100, 30050),
    _iteration("10:22:37.600000", 200),
    *_save("10:22:37.700000", "10:23:07.700000", 200, 30050),
    _iteration("10:33:07.700000", 300),
    "[rank5]: Traceback (most recent call last):",
    '[rank5]:   File "/workspace/megatron/pretrain_gpt.py", line 250, in <module>',
    "[rank5]:     pretrain(",
    "[rank5]: RuntimeError: CUDA error: an illegal memory access was encountered",
    "[rank5]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
    "might be incorrect.",
]
SECOND = _startup(40) + [
    _stamp("after megatron is initialized", "11:00:40.000000"),
    "  successfully loaded checkpoint from checkpoints [ t 1/2, p 1/2 ] at iteration 200",
    "(min, max) time across ranks (ms):",
    f"    {'load-checkpoint '.ljust(48, '.')}: (20000.00, 20100.00)",
    _stamp("after model, optimizer, and learning rate scheduler are built", "11:01:30.000000"),
    _stamp("after dataloaders are built", "11:02:00.000000"),
    "training ...",
    _stamp("before the start of training step", "11:02:10.000000"),
    _iteration("11:12:10.000000", 300),
    *_save("11:12:10.100000", "11:12:40.100000", 300, 30050),
    _iteration("11:22:40.100000", 400),
    *_save("11:22:40.200000", "11:23:10.200000", 400, 30050),
    _stamp("after training is done", "11:23:10.300000"),
]
# By hand: each attempt starts 'time to initialize megatron' seconds before 'after megatron is initialized'
# (10:00:07.5, 11:00:00) and trains from 'before the start of training step'; each write spans its saving and
# saved lines (30 s); the failure is placed at the last line with a time (iteration 300), losing the compute
# since the write of iteration 200.
EXPECTED = {"productive": 4 * 600_100 * MS + 100 * MS, "checkpoint": 120 * S, "lost": 600 * S,
            "restart": 130 * S, "startup": 120 * S, "queue": 1612_300 * MS, "persist_wait": 0}


def _write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _components(record):
    measured = measure_run(record)
    return {c: int(measured.time_ns.sel(component=c)) for c in EXPECTED}


def test_two_attempts_measure_as_by_hand_and_auto_picks_megatron(tmp_path):
    files = [_write(tmp_path, "slurm-1.out", FIRST), _write(tmp_path, "slurm-2.out", SECOND)]
    record = read_run(files, format="auto")
    assert _components(record) == EXPECTED
    events = record.events
    assert list(events.reason.values[events.kind.values == "failure"]) == [
        "CUDA error: an illegal memory access was encountered"]
    assert list(events.step.values[events.kind.values == "checkpoint_restored"]) == [200]
    assert list(events.step.values[events.kind.values == "first_step"]) == [1, 201]
    # A requeued job appending to one file: the arguments banner begins the second attempt.
    assert _components(read_run(_write(tmp_path, "slurm-3.out", FIRST + SECOND))) == EXPECTED


def test_saves_printed_without_a_time_take_it_from_their_iteration_and_the_timer(tmp_path):
    # Earlier checkpointing.py: 'saving checkpoint at iteration {:7d} to {} in {} format' and
    # '  successfully saved checkpoint from iteration {:7d} to {} [ t {}/{}, p {}/{} ]', iteration lines
    # stamped to the second.
    def save(iteration):
        return [f"saving checkpoint at iteration {iteration:7d} to checkpoints in torch_dist format",
                f"  successfully saved checkpoint from iteration {iteration:7d} to checkpoints [ t 1/1, p 1/1 ]",
                "(min, max) time across ranks (ms):",
                f"    {'save-checkpoint '.ljust(48, '.')}: (29950.00, 30000.00)"]

    def iteration(time, number):
        return _iteration(time, number, 200).replace(".000000]", "]")

    lines = ["time to initialize megatron (seconds): 10.000",
             "[after megatron is initialized] datetime: 2025-03-01 10:00:10 ",
             "[before the start of training step] datetime: 2025-03-01 10:01:00 ",
             iteration("10:11:00.000000", 100), *save(100),
             iteration("10:21:30.000000", 200), *save(200),
             "[after training is done] datetime: 2025-03-01 10:22:00 "]
    record = read_run(_write(tmp_path, "slurm-1.out", lines), format="megatron")
    assert _components(record) == {"productive": 1200 * S, "checkpoint": 60 * S, "lost": 0, "restart": 0,
                                   "startup": 60 * S, "queue": 0, "persist_wait": 0}
    del lines[3]  # a save at an iteration that printed no line (save-interval not a multiple of log-interval)
    with pytest.raises(RunRecordError, match="this save prints no time") as info:
        read_run(_write(tmp_path, "slurm-2.out", lines), format="megatron")
    assert info.value.line == 4


def test_detect_is_specific():
    detect = TRAINER_FORMATS["megatron"].detect
    assert detect(FIRST) and detect(SECOND[-6:])
    titan = ["[rank0]:[titan] 2025-03-01 10:00:00,000 - root - INFO - Starting job: Llama 3 8B training",
             "[titan] 2025-03-01 10:05:40,000 - root - INFO - step:  1  loss:  7.5000  tps: 1,024  mfu: 5.07%"]
    garbage = ["iteration 5 of 10", "[x] datetime: tomorrow", "\x00\xff binary", ""]
    assert not detect(titan) and not detect(garbage)
