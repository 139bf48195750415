"""Readers of the trainers' own logs, each turning a log into a run's events (docs:
user-guide/trainer-logs.md).

Each module describes one format as a `TrainerFormat`; `TRAINER_FORMATS` lists
them in the order a file is tried against them.
"""

from __future__ import annotations

from . import _hf_trainer, _history, _lightning, _megatron, _torchtitan
from ._format import DETECT_LINES, TrainerFormat
from ._step_lines import LogLines

TRAINER_FORMATS: dict[str, TrainerFormat] = {fmt.name: fmt for fmt in (
    _torchtitan.TORCHTITAN_FORMAT,
    _megatron.MEGATRON_FORMAT,
    _hf_trainer.HF_TRAINER_FORMAT,
    _lightning.LIGHTNING_FORMAT,
    _history.HISTORY_FORMAT,
)}

__all__ = ["DETECT_LINES", "TRAINER_FORMATS", "LogLines", "TrainerFormat"]
