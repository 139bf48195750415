"""relmodel: reliability of large ML training runs.

Monte Carlo job timelines (compiled kernels) beside closed-form ETTR models,
as labelled xarray Datasets.
"""

__version__ = "0.1.0"

from .closed_form import ClosedFormWarning, ettr, mttf, optimal_interval
from .plan import Plan, plan
from .scenario import Scenario, ScenarioError
from .simulate import CappedJobsWarning, compare, simulate
from .sweep import open_study
from .units import to_hours

__all__ = [
    "CappedJobsWarning",
    "ClosedFormWarning",
    "Plan",
    "Scenario",
    "ScenarioError",
    "compare",
    "ettr",
    "mttf",
    "open_study",
    "optimal_interval",
    "plan",
    "simulate",
    "to_hours",
]
