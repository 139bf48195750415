"""A run's own record: read a training run's events and attempts, measure its ETTR and
badput, hold the model to it, and replay its failures under another plan."""

from .._deprecation import keep_public_names
from ._events import EVENT_KINDS, RecordSummary, RunRecord, RunRecordError
from ._read import read_run
from ._trainers import TRAINER_FORMATS, TrainerFormat
from ._measure import measure_run
from ._model import implied_scenario, predict_run, replay_run, simulate_run
from ._plot import run_figure

__all__ = [
    "EVENT_KINDS",
    "RecordSummary",
    "RunRecord",
    "RunRecordError",
    "TRAINER_FORMATS",
    "TrainerFormat",
    "implied_scenario",
    "measure_run",
    "predict_run",
    "read_run",
    "replay_run",
    "run_figure",
    "simulate_run",
]

keep_public_names(__name__)
