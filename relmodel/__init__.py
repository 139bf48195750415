"""relmodel: reliability of large ML training runs.

Monte Carlo job timelines (compiled kernels) beside closed-form ETTR models,
as labelled xarray Datasets.
"""

from ._version import __version__
from .checkpoint_plan import CheckpointPlan, plan_checkpoints
from .closed_form import ClosedFormWarning, ettr, mttf, optimal_interval
from .failures import Exponential, FailureCategory, LemonMixture, TaxonomyMixture, Weibull
from .fit import FitResult, fit
from .plan import Plan, plan
from .record import RunRecord, RunRecordError, measure_run, predict_run, read_run, replay_run, simulate_run
from .errors import ParameterError, ScenarioError
from .scenario import CheckpointLevel, Scenario
from .simulate import CappedJobsWarning, OutOfRangeWarning, compare, simulate
from .sweep import open_study, verify_study
from .units import to_hours

_SUBPACKAGES = ("elastic", "pipeline")


def __getattr__(name):
    # `rm.pipeline` and `rm.elastic` load on first use, keeping `import relmodel` light.
    if name in _SUBPACKAGES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CappedJobsWarning",
    "CheckpointLevel",
    "CheckpointPlan",
    "ClosedFormWarning",
    "Exponential",
    "FailureCategory",
    "FitResult",
    "LemonMixture",
    "OutOfRangeWarning",
    "ParameterError",
    "Plan",
    "RunRecord",
    "RunRecordError",
    "Scenario",
    "ScenarioError",
    "TaxonomyMixture",
    "Weibull",
    "compare",
    "elastic",
    "ettr",
    "fit",
    "measure_run",
    "mttf",
    "open_study",
    "optimal_interval",
    "pipeline",
    "plan",
    "plan_checkpoints",
    "predict_run",
    "read_run",
    "replay_run",
    "simulate",
    "simulate_run",
    "to_hours",
    "verify_study",
]
