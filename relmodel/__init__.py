"""relmodel: reliability of large ML training runs.

Monte Carlo job timelines (compiled kernels) beside closed-form ETTR models,
as labelled xarray Datasets.
"""

from ._checkpoint_plan import CHECKPOINT_STRATEGIES, CheckpointPlan, plan_checkpoints
from . import data
from ._closed_form import ClosedFormWarning, ettr, feasible_interval, linear_deviation, mttf, optimal_interval
from ._deprecation import keep_public_names, serve_old_module_paths
from ._errors import ParameterError, ScenarioError
from ._failures import FAILURE_MODELS, Exponential, FailureCategory, LemonMixture, TaxonomyMixture, Weibull
from ._fit import FitResult, fit
from ._job_logs import JobLog, read_log
from ._plan import Plan, plan
from ._plan_parts import CategoryTime, IntervalETTR, Sensitivity, TargetReach, TimePerJob
from ._scenario import CheckpointLevel, Scenario
from ._simulate import CappedJobsWarning, OutOfRangeWarning, compare, simulate
from ._study_reader import open_study, verify_study
from ._synthetic_log import synthetic_log
from ._taxonomy import Taxonomy
from ._taxonomy import load as load_taxonomy
from ._units import to_hours
from ._version import __version__
from .record import RunRecord, RunRecordError, measure_run, predict_run, read_run, replay_run, simulate_run

_SUBPACKAGES = ("elastic", "pipeline")

# Modules private from 0.3.0 stay importable at their old paths for a release,
# without their import ever rebinding `rm.fit`, `rm.plan` or `rm.simulate`.
serve_old_module_paths()
keep_public_names(__name__)


def __getattr__(name):
    # `rm.pipeline` and `rm.elastic` load on first use, keeping `import relmodel` light.
    if name in _SUBPACKAGES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CHECKPOINT_STRATEGIES",
    "FAILURE_MODELS",
    "CappedJobsWarning",
    "CategoryTime",
    "CheckpointLevel",
    "CheckpointPlan",
    "ClosedFormWarning",
    "Exponential",
    "FailureCategory",
    "FitResult",
    "IntervalETTR",
    "JobLog",
    "LemonMixture",
    "OutOfRangeWarning",
    "ParameterError",
    "Plan",
    "RunRecord",
    "RunRecordError",
    "Scenario",
    "ScenarioError",
    "Sensitivity",
    "TargetReach",
    "Taxonomy",
    "TaxonomyMixture",
    "TimePerJob",
    "Weibull",
    "compare",
    "data",
    "elastic",
    "ettr",
    "feasible_interval",
    "fit",
    "linear_deviation",
    "load_taxonomy",
    "measure_run",
    "mttf",
    "open_study",
    "optimal_interval",
    "pipeline",
    "plan",
    "plan_checkpoints",
    "predict_run",
    "read_log",
    "read_run",
    "replay_run",
    "simulate",
    "simulate_run",
    "synthetic_log",
    "to_hours",
    "verify_study",
]
