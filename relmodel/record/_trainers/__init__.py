"""Readers of the trainers' own logs, each turning a log into a run's events.

Each module describes one format as a `TrainerFormat`; `FORMATS` lists them
in the order `detect_format` tries them.
"""

from __future__ import annotations

from ._format import DETECT_LINES, TrainerFormat

FORMATS: dict[str, TrainerFormat] = {fmt.name: fmt for fmt in ()}

__all__ = ["DETECT_LINES", "FORMATS", "TrainerFormat"]
