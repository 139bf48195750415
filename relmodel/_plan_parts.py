"""The parts of a `Plan`, each a typed record read by attribute.

A plan's tables are keyed by data (interval labels, parameter names, kinds of
failure); what each entry holds is one of these records. Plans of relmodel
0.2 held plain dicts, so a part may still be read by key
(``plan.target["max_gpus"]``), with a `DeprecationWarning`.
"""

from __future__ import annotations

import dataclasses
import warnings

from ._deprecation import REMOVED_IN
from ._engine import COMPONENTS


class _Part:
    """A plan part's shared behaviour: JSON-ready `to_dict()`, and the key reading of earlier releases."""

    def __getitem__(self, key: str):
        if key not in self.__dataclass_fields__:
            raise KeyError(key)
        warnings.warn(f"{type(self).__name__}[{key!r}] is deprecated and goes in relmodel {REMOVED_IN}: "
                      f"read .{key} instead", DeprecationWarning, stacklevel=2)
        return getattr(self, key)

    def to_dict(self) -> dict:
        """Return the part as JSON-ready data, its fields in order.

        Returns
        -------
        dict
            By field name: numbers, None, lists (a pair as a list) and dicts.
        """
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}


def plain(value):
    """A value as JSON-ready data: a tuple as a list, a dataclass in it (a taxonomy's category) as a dict."""
    if isinstance(value, tuple):
        return [dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v for v in value]
    return value


@dataclasses.dataclass(frozen=True)
class IntervalETTR(_Part):
    """The ETTR of a plan at one checkpoint interval, by each method.

    Parameters
    ----------
    linear : float
        The linear (first-order) ETTR; with checkpoint levels, the
        first-order form.
    linear_valid : bool
        Whether `linear` is within its range of use (off the exact form by
        less than the package's tolerance).
    renewal : float
        The renewal (exact) ETTR.
    expected_failures : float
        Failures expected per job, over the job rates the simulation samples.
    simulated_jobs : int
        Jobs of the check simulation; 0 where the interval was not simulated
        (too many failures a job for the budget).
    simulated : float
        The simulated ETTR (NaN where not simulated).
    simulated_se : float
        Its standard error (NaN where not simulated).
    simulated_ci95 : tuple of float
        The 95% interval ``simulated -+ 1.96 simulated_se``.
    """

    linear: float
    linear_valid: bool
    renewal: float
    expected_failures: float
    simulated_jobs: int
    simulated: float
    simulated_se: float
    simulated_ci95: tuple[float, float]


@dataclasses.dataclass(frozen=True)
class CheckSimulation:
    """A plan's check simulation at one interval: the numbers an `IntervalETTR` takes from it.

    Parameters
    ----------
    expected_failures : float
        Failures expected per job (the simulation's budget is drawn from it).
    simulated_jobs : int
        Jobs simulated; 0 where none were.
    simulated : float
        The simulated ETTR (NaN where not simulated).
    simulated_se : float
        Its standard error (NaN where not simulated).
    dataset : xarray.Dataset or None
        What `simulate` returned; None where nothing was simulated.
    """

    expected_failures: float
    simulated_jobs: int = 0
    simulated: float = float("nan")
    simulated_se: float = float("nan")
    dataset: object = None

    def interval_ettr(self, linear: float, linear_valid: bool, renewal: float) -> IntervalETTR:
        """Return the row of the interval: the closed forms given, with this simulation."""
        half = 1.96 * self.simulated_se
        return IntervalETTR(linear, linear_valid, renewal, self.expected_failures, self.simulated_jobs,
                            self.simulated, self.simulated_se, (self.simulated - half, self.simulated + half))


@dataclasses.dataclass(frozen=True)
class TimePerJob(_Part):
    """Simulated mean hours per job, by component of the wall time (which they add up to).

    Parameters
    ----------
    productive, checkpoint, lost, restart, queue, persist_wait : float
        Hours per job: work, blocking checkpoint writes, re-done work,
        restarts, queue waits and waits for a write to persist.
    wall : float
        The mean wall time per job, in hours.
    """

    productive: float
    checkpoint: float
    lost: float
    restart: float
    queue: float
    persist_wait: float
    wall: float

    @classmethod
    def from_dataset(cls, ds) -> TimePerJob:
        """Return the means of a simulation of one point.

        Parameters
        ----------
        ds : xarray.Dataset
            What `simulate` returned for one scenario point.

        Returns
        -------
        TimePerJob
            Its ``time_mean`` by component, and ``wall_mean``.
        """
        return cls(**{c: float(ds.time_mean.sel(component=c)) for c in COMPONENTS}, wall=float(ds.wall_mean))


@dataclasses.dataclass(frozen=True)
class Sensitivity(_Part):
    """How a plan's ETTR answers one parameter.

    Parameters
    ----------
    value : float
        The parameter's value in the plan (hours for durations).
    elasticity : float
        d ln ETTR / d ln value (NaN where the ETTR is 0; one-sided at the top
        of the parameter's valid range).
    ettr_if_halved : float
        The best ETTR with the parameter halved, intervals re-optimised.
    """

    value: float
    elasticity: float
    ettr_if_halved: float


@dataclasses.dataclass(frozen=True)
class TargetReach(_Part):
    """What it takes to reach a target ETTR.

    Parameters
    ----------
    ettr : float
        The target.
    needed : dict
        By parameter: the value it would need, alone, with the intervals
        re-optimised (its value today where it is reached already; None where
        no value of it reaches the target).
    best_possible : dict
        By parameter: the best ETTR that parameter alone can give.
    max_gpus : int or None
        The largest job (whole nodes) reaching the target today; None if no
        size does.
    """

    ettr: float
    needed: dict
    best_possible: dict
    max_gpus: int | None


@dataclasses.dataclass(frozen=True)
class CategoryTime(_Part):
    """The time one kind of failure costs a job (simulated means at the plan's interval).

    Parameters
    ----------
    share : float
        The kind's share of failures.
    failures : float
        Failures of this kind per job.
    lost_h, restart_h, queue_h : float
        Hours per job of re-done work, restarts and queue waits after failures
        of this kind.
    """

    share: float
    failures: float
    lost_h: float
    restart_h: float
    queue_h: float

    @property
    def total_h(self) -> float:
        """Hours per job this kind costs: re-done work, restarts and queue waits."""
        return self.lost_h + self.restart_h + self.queue_h
