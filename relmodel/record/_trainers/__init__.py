"""Readers of the trainers' own logs, each turning a log into a run's events.

Each module describes one format as a `TrainerFormat`; `FORMATS` lists them
in the order `detect_format` tries them.
"""

from __future__ import annotations

from . import _hf_trainer
from . import _history
from . import _lightning
from ._format import DETECT_LINES, TrainerFormat

FORMATS: dict[str, TrainerFormat] = {fmt.name: fmt for fmt in (
    _hf_trainer.FORMAT,
    _lightning.FORMAT,
    _history.FORMAT,
)}

__all__ = ["DETECT_LINES", "FORMATS", "TrainerFormat"]
