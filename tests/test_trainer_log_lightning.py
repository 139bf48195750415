"""PyTorch Lightning's log, with the times of the user's logging configuration, read into a run and measured.

The lines are laid out as Lightning-AI/pytorch-lightning prints them (src/lightning/pytorch): the accelerator
connector's ``f"GPU available: ..."``; ``callbacks/model_summary.py`` ``log.info("\\n" + summary_table)``;
``trainer/connectors/checkpoint_connector.py`` ``f"Restoring states from the checkpoint path at {checkpoint_path}"``
and ``f"Restored all states from the checkpoint at {self._ckpt_path}"``; ``callbacks/model_checkpoint.py``
(``verbose=True``) ``f"Epoch {epoch:d}, global step {step:d}: {self.monitor!r} reached {current:0.5f} (best
{self.best_model_score:0.5f}), saving model to {filepath!r} as top {k}"`` and ``f"Epoch {epoch:d}, global step
{step:d}: {self.monitor!r} was not in top {self.save_top_k}"``; ``loops/fit_loop.py`` ``f"`Trainer.fit` stopped:
`max_steps={self.max_steps!r}` reached."``. The root logger was configured before ``import lightning`` (so
Lightning's records propagate to it) with ``logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s:
%(message)s")``; tqdm's bars share the stream, so a record can begin behind a bar's fragment.
"""

import pytest

from relmodel.record import RunRecordError, measure_run, read_run
from relmodel.record._trainers import TRAINER_FORMATS

ZERO = "lightning.pytorch.utilities.rank_zero"


def _info(at: str, message: str, name: str = ZERO) -> str:
    return f"2024-05-01 {at} INFO {name}: {message}"


def _start(at: str) -> list:
    return [_info(at + ",000", "GPU available: True (cuda), used: True"),
            _info(at + ",001", "TPU available: False, using: 0 TPU cores"),
            _info(at + ",002", "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]",
                  "lightning.pytorch.accelerators.cuda")]


def _summary(at: str) -> list:
    return [_info(at, "", "lightning.pytorch.callbacks.model_summary"),
            "  | Name  | Type | Params | Mode ", "---------------------------------------",
            "0 | model | GPT  | 124 M  | train", "---------------------------------------",
            "124 M     Trainable params", "0         Non-trainable params", "124 M     Total params",
            "497.759   Total estimated model params size (MB)"]


def _saving(at: str, step: int, bar: str = "") -> str:
    return bar + _info(at, f"Epoch 0, global step {step}: 'train_loss' reached 3.00000 (best 3.00000), saving model "
                           f"to '/ckpt/epoch=0-step={step}.ckpt' as top 1")


FIRST = (_start("10:00:00") + _summary("10:04:00,000")
         + ["Epoch 0:   0%|          | 0/3000 [00:00<?, ?it/s]",
            _saving("10:14:00,000", 1000, "Epoch 0:  33%|███▎      | 1000/3000 [10:00<20:00,  1.67it/s, v_num=0]"),
            _saving("10:24:00,000", 2000),
            _info("10:24:30,000", "Epoch 0, global step 2050: 'train_loss' was not in top 1"),
            "[rank0]: Traceback (most recent call last):",
            '[rank0]:   File "train.py", line 80, in <module>',
            "[rank0]:     trainer.fit(model, datamodule=data)",
            "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered",
            "[rank0]: CUDA kernel errors might be asynchronously reported at some other API call."])
SECOND = (_start("10:40:00")
          + [_info("10:41:00,000", "Restoring states from the checkpoint path at /ckpt/epoch=0-step=2000.ckpt")]
          + _summary("10:44:00,000")
          + [_info("10:45:00,000", "Restored all states from the checkpoint at /ckpt/epoch=0-step=2000.ckpt"),
             "Epoch 0:  67%|██████▋   | 2000/3000 [00:00<?, ?it/s]",
             _saving("10:55:00,000", 3000),
             "Epoch 0: 100%|██████████| 3000/3000 [10:00<00:00,  1.67it/s, v_num=1]"
             + _info("10:55:05,000", "`Trainer.fit` stopped: `max_steps=3000` reached.")])
S = 10**9
EXPECTED = {"productive": (1200 + 605) * S, "checkpoint": 0, "persist_wait": 0, "lost": 30 * S,
            "restart": 300 * S, "startup": 240 * S, "queue": 930 * S}


def _write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _components(record) -> dict:
    measured = measure_run(record)
    return {str(c): int(v) for c, v in zip(measured.component.values, measured.time_ns.values)}


def test_two_attempts_read_and_measured(tmp_path):
    record = read_run([_write(tmp_path, "slurm-1.out", FIRST), _write(tmp_path, "slurm-2.out", SECOND)])
    ds = record.events
    assert list(ds.kind.values) == ["attempt_start", "first_step", "checkpoint_written", "checkpoint_written", "step",
                                    "failure", "attempt_start", "checkpoint_restored", "first_step",
                                    "checkpoint_written", "run_end"]
    assert list(ds.step.values[[2, 3, 4, 7, 8, 9]]) == [1000, 2000, 2050, 2000, 2000, 3000]
    assert ds.reason.values[5] == "CUDA error: an illegal memory access was encountered"
    assert _components(record) == EXPECTED


def test_restarts_in_one_file_read_the_same(tmp_path):
    assert _components(read_run(_write(tmp_path, "train.log", FIRST + SECOND), format="lightning")) == EXPECTED


def test_auto_picks_it_and_detect_is_specific(tmp_path):
    record = read_run(_write(tmp_path, "slurm-1.out", FIRST), format="auto")
    assert "lightning log lines" in " ".join(record.summary.skipped)
    detect = TRAINER_FORMATS["lightning"].detect
    assert detect(SECOND) and detect(["GPU available: False, used: False"])
    assert not detect(["[INFO|trainer.py:2078] 2024-05-01 10:00:00,000 >> ***** Running training *****",
                       "{'loss': 3.2, 'grad_norm': 1.5, 'learning_rate': 4.9e-05, 'epoch': 0.17}"])
    assert not detect([",_step,_runtime,_timestamp,loss", "0,0,1,1714557600,3.2"])
    assert not detect(["garbage", "Epoch 0: 10%", ""])


def test_a_log_without_times_is_refused_saying_how_to_get_them(tmp_path):
    bare = [line.split(": ", 1)[1] if line.startswith("2024-") else line for line in SECOND]
    with pytest.raises(RunRecordError, match="has no time: Lightning's own handler.*asctime") as info:
        read_run(_write(tmp_path, "slurm-2.out", bare))
    assert (info.value.line, info.value.field) == (4, "time")
