"""relmodel: reliability of large ML training runs.

Monte Carlo job timelines (compiled kernels) beside closed-form ETTR models,
as labelled xarray Datasets.
"""

__version__ = "0.1.0"

from .closed_form import ClosedFormWarning, ettr, mttf
from .scenario import Scenario, ScenarioError
from .simulate import CappedJobsWarning, simulate
from .units import to_hours

__all__ = [
    "CappedJobsWarning",
    "ClosedFormWarning",
    "Scenario",
    "ScenarioError",
    "ettr",
    "mttf",
    "simulate",
    "to_hours",
]
