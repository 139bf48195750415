"""Hugging Face Trainer's log, as transformers prints it with times, read into a run and measured.

The lines are laid out as huggingface/transformers prints them: src/transformers/trainer.py,
``Trainer._inner_training_loop`` (``"***** Running training *****"``, ``f"  Num examples = {num_examples:,}"``, ...,
``f"  Continuing training from global step {self.state.global_step}"``, ``"\\n\\nTraining completed. Do not forget to
share your model on huggingface.co/models =)\\n\\n"``) and ``Trainer._save`` (``f"Saving model checkpoint to
{output_dir}"`` into ``f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"``); ``ProgressCallback.on_log``
(trainer_callback.py) writes ``str(logs)`` through tqdm; the prefix is transformers' ``enable_explicit_format()``
(src/transformers/utils/logging.py): ``"[%(levelname)s|%(filename)s:%(lineno)s] %(asctime)s >> %(message)s"``.
"""

import pytest

from relmodel.record import RunRecordError, measure_run, read_run
from relmodel.record._trainers import TRAINER_FORMATS


def _info(where: str, at: str, message: str) -> str:
    return f"[INFO|{where}] 2024-05-01 {at} >> {message}"


def _banner(at: str, last: str, resumed_from: int | None = None) -> list:
    """The banner's lines at `at`, its last at `last`."""
    lines = [_info("trainer.py:2078", at, "***** Running training *****"),
             _info("trainer.py:2079", at, "  Num examples = 192,000"),
             _info("trainer.py:2080", at, "  Num Epochs = 1"),
             _info("trainer.py:2081", at, "  Instantaneous batch size per device = 8"),
             _info("trainer.py:2084", at, "  Total train batch size (w. parallel, distributed & accumulation) = 64"),
             _info("trainer.py:2085", at, "  Gradient Accumulation steps = 1"),
             _info("trainer.py:2086", at, "  Total optimization steps = 3,000")]
    parameters = "  Number of trainable parameters = 124,439,808"
    if resumed_from is None:
        return lines + [_info("trainer.py:2087", last, parameters)]
    return lines + [_info("trainer.py:2087", at, parameters),
                    _info("trainer.py:2103", at, "  Continuing training from checkpoint, will skip to saved "
                                                 "global_step"),
                    _info("trainer.py:2104", at, "  Continuing training from epoch 0"),
                    _info("trainer.py:2105", at, f"  Continuing training from global step {resumed_from}"),
                    _info("trainer.py:2107", last, f"  Will skip the first 0 epochs then the first {resumed_from} "
                                                   "batches in the first epoch.")]


def _save(at: str, step: int) -> list:
    return [f" 33%|███▎      | {step}/3000 [10:00<20:00,  1.67it/s]"
            + _info("trainer.py:3800", at, f"Saving model checkpoint to out/checkpoint-{step}"),
            _info("configuration_utils.py:472", at, f"Configuration saved in out/checkpoint-{step}/config.json")]


FIRST = ([_info("configuration_utils.py:733", "10:00:00,000", "loading configuration file config.json")]
         + _banner("10:05:00,000", "10:05:01,000")
         + ["  0%|          | 0/3000 [00:00<?, ?it/s]",
            "{'loss': 3.2101, 'grad_norm': 1.52, 'learning_rate': 4.9e-05, 'epoch': 0.17}"]
         + _save("10:15:01,000", 1000) + _save("10:25:01,000", 2000)
         + [_info("modeling_utils.py:3042", "10:25:05,000",
                  "Model weights saved in out/checkpoint-2000/model.safetensors"),
            " 70%|███████   | 2100/3000 [21:00<09:00,  1.67it/s]",
            "[rank0]: Traceback (most recent call last):",
            '[rank0]:   File "run_clm.py", line 600, in <module>',
            "[rank0]:     main()",
            "[rank0]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 0. Original reason for "
            "failure was: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) "
            "ran for 600000 milliseconds before timing out.",
            "Traceback (most recent call last):",
            "RuntimeError: the second rank's echo"])
SECOND = ([_info("configuration_utils.py:733", "10:40:00,000", "loading configuration file config.json")]
          + _banner("10:46:00,000", "10:46:02,000", resumed_from=2000)
          + ["{'loss': 2.9012, 'grad_norm': 1.1, 'learning_rate': 1e-05, 'epoch': 0.83}"]
          + _save("10:56:02,000", 3000)
          + [_info("trainer.py:2383", "10:56:10,000", ""), "",
             "Training completed. Do not forget to share your model on huggingface.co/models =)", "", "",
             "{'train_runtime': 610.0, 'train_samples_per_second': 104.9, 'train_steps_per_second': 1.639, "
             "'train_loss': 3.01, 'epoch': 1.0}"])
S = 10**9


def _write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _components(record) -> dict:
    measured = measure_run(record)
    return {str(c): int(v) for c, v in zip(measured.component.values, measured.time_ns.values)}


EXPECTED = {"productive": (1200 + 608) * S, "checkpoint": 0, "persist_wait": 0, "lost": 4 * S,
            "restart": 362 * S, "startup": 301 * S, "queue": 895 * S}


def test_two_attempts_read_and_measured(tmp_path):
    record = read_run([_write(tmp_path, "slurm-2.out", SECOND), _write(tmp_path, "slurm-1.out", FIRST)])
    ds = record.events
    assert list(ds.kind.values) == ["attempt_start", "first_step", "checkpoint_written", "checkpoint_written",
                                    "failure", "attempt_start", "checkpoint_restored", "first_step",
                                    "checkpoint_written", "run_end"]
    assert list(ds.step.values[[2, 3, 6, 7, 8]]) == [1000, 2000, 2000, 2000, 3000]
    assert ds.reason.values[4] == "NCCL timeout"
    assert _components(record) == EXPECTED


def test_restarts_in_one_file_read_the_same(tmp_path):
    assert _components(read_run(_write(tmp_path, "train.log", FIRST + SECOND), format="hf_trainer")) == EXPECTED


def test_detect_is_specific(tmp_path):
    detect = TRAINER_FORMATS["hf_trainer"].detect
    assert detect(FIRST) and detect(SECOND)
    assert not detect(["GPU available: True (cuda), used: True", "`Trainer.fit` stopped: `max_steps=10` reached."])
    assert not detect([",_step,_runtime,_timestamp,loss", "0,0,1,1714557600,3.2"])
    assert not detect(["garbage", "{'los': 1}", ""])


def test_a_log_without_times_is_refused_saying_how_to_get_them(tmp_path):
    bare = [line.split(" >> ", 1)[1] if " >> " in line else line for line in FIRST]
    with pytest.raises(RunRecordError, match="has no time: the Trainer's default logging writes none.*asctime") as info:
        read_run(_write(tmp_path, "slurm-1.out", bare))
    assert (info.value.line, info.value.field) == (2, "time")
