"""`ClusterConfig`: the cluster and its operating rules."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._display import readable
from .._errors import ParameterError
from .._checks import check_choice, check_number
from .._units import format_hours, to_hours
from ._allocate import MAX_GPUS, OBJECTIVES, check_gpus
from ._nodes import node_sizes

UNPLACEABLE = ("drop", "queue")
ADMISSIONS = ("first-fit", "optimizer")
MIN_CHECKPOINT_INTERVAL = 1 / 3600  # h: one second


@readable("repair_time", "checkpoint_interval", "checkpoint_cost", "restart_cost",
          "pause", "max_wait", "reoptimize_every", "until")
@dataclasses.dataclass(frozen=True)
class ClusterConfig:
    """The cluster and its operating rules (durations in hours or with units).

    Parameters
    ----------
    n_gpus : int, default 64
        GPUs in the cluster.
    gpus_per_node : int, default 8
        GPUs per node; nodes are the unit of failure.
    failure_rate : float, default 0.0
        Failures per node-day (0: none).
    repair_time : float or str, default 2.0
        A failed node is back after this long.
    checkpoint_interval : float or str, default 1.0
        The timeline model's checkpoint interval, for every job; at least
        one second (`MIN_CHECKPOINT_INTERVAL`): shorter, a job's count of
        checkpoints overflows.
    checkpoint_cost : float or str, default 1 min
        Checkpoint write cost.
    restart_cost : float or str, default 10 min
        Restart cost.
    pause : float or str, default 30 s
        The stop of a job whose GPUs or batch size change.
    unplaceable : {"drop", "queue"}, default "drop"
        What happens to a job that is not placed on arrival: dropped, or
        queued for at most `max_wait`.
    max_wait : float or str, optional
        With ``unplaceable="queue"``, the longest a job waits for its first
        start; one not started by its submission plus `max_wait` is dropped
        then. None: for ever (an unbounded queue). Jobs sent back to the
        queue by a failure are never dropped.
    admission : {"first-fit", "optimizer"}, default "first-fit"
        How the elastic and fixed-batch policies choose which waiting jobs
        start. "first-fit": in arrival order, each whose minimum still fits
        beside the running jobs' minimums. "optimizer": the allocation's
        dynamic program, in which a waiting job may get zero GPUs. The FIFO
        policy always starts jobs in arrival order.
    reoptimize_every : float or str, optional
        Also re-optimise every this long (the allocation is re-solved on every
        arrival, completion, failure and repair anyway). None: never. A run
        takes at most 100,000 of these (`cluster.MAX_TICKS`): an interval that
        needs more is refused, naming it.
    objective : {"throughput", "speedup"}, default "throughput"
        The allocator's objective.
    seed : int, default 0
        Seeds the failure process.
    failures : tuple, optional
        Explicit (time h, node index) failures instead of `failure_rate`.
    until : float, optional
        Stop here (h); when None, when every admitted job is done.
    """

    n_gpus: int = 64
    gpus_per_node: int = 8
    failure_rate: float = 0.0
    repair_time: float = 2.0
    checkpoint_interval: float = 1.0
    checkpoint_cost: float = 1 / 60
    restart_cost: float = 10 / 60
    pause: float = 0.5 / 60
    unplaceable: str = "drop"
    max_wait: float | None = None
    admission: str = "first-fit"
    reoptimize_every: float | None = None
    objective: str = "throughput"
    seed: int = 0
    failures: tuple | None = None
    until: float | None = None

    def __post_init__(self):
        for name in ("n_gpus", "gpus_per_node", "failure_rate", "checkpoint_interval", "checkpoint_cost",
                     "restart_cost"):
            kind = {"n_gpus": "count", "gpus_per_node": "count", "failure_rate": "rate"}.get(name, "duration")
            object.__setattr__(self, name, check_number(name, getattr(self, name), kind=kind))
        if self.n_gpus > MAX_GPUS:
            check_gpus(int(self.n_gpus))
        if self.checkpoint_interval < MIN_CHECKPOINT_INTERVAL:
            raise ParameterError("checkpoint_interval",
                                 f"must be at least 1s (got {format_hours(self.checkpoint_interval)})")
        for name in ("repair_time", "pause"):
            hours = to_hours(getattr(self, name), name)
            if not math.isfinite(hours) or hours < 0:
                raise ParameterError(name, f"must be a finite duration >= 0 (got {format_hours(hours)})")
            object.__setattr__(self, name, hours)
        check_choice("unplaceable", self.unplaceable, UNPLACEABLE, ParameterError)
        check_choice("admission", self.admission, ADMISSIONS, ParameterError)
        if self.max_wait is None:
            object.__setattr__(self, "max_wait", 0.0 if self.unplaceable == "drop" else math.inf)
        else:
            wait = to_hours(self.max_wait, "max_wait")
            if math.isnan(wait) or wait < 0:
                raise ParameterError("max_wait", f"must be a duration >= 0 (got {format_hours(wait)})")
            if self.unplaceable == "drop" and wait > 0:
                raise ParameterError("max_wait", f"{format_hours(wait)} needs unplaceable='queue' (with 'drop' a job "
                                                 "that finds no room is dropped on arrival)")
            object.__setattr__(self, "max_wait", wait)
        if self.reoptimize_every is not None:
            every = to_hours(self.reoptimize_every, "reoptimize_every")
            if not (math.isfinite(every) and every > 0):
                raise ParameterError("reoptimize_every", f"must be a finite duration > 0 (got {format_hours(every)})")
            object.__setattr__(self, "reoptimize_every", every)
        check_choice("objective", self.objective, OBJECTIVES, ParameterError)
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or not 0 <= self.seed < 2**32:
            raise ParameterError("seed", f"must be an integer in [0, 2**32) (got {self.seed!r})")
        if self.until is not None:
            until = to_hours(self.until, "until")
            if not until >= 0:
                raise ParameterError("until", f"must be a duration >= 0 (got {format_hours(until)})")
            object.__setattr__(self, "until", until)
        if self.failures is not None:
            n_nodes = node_sizes(self.n_gpus, self.gpus_per_node).size
            failures = tuple((float(t), int(n)) for t, n in self.failures)
            bad = [(t, n) for t, n in failures if not (0 <= n < n_nodes and math.isfinite(t) and t >= 0)]
            if bad:
                raise ParameterError("failures", f"{bad[0]} is not (time >= 0 h, node in [0, {n_nodes}))")
            object.__setattr__(self, "failures", failures)

    @property
    def n_nodes(self) -> int:
        """Nodes in the cluster."""
        return node_sizes(self.n_gpus, self.gpus_per_node).size

    @classmethod
    def from_scenario(cls, scenario, **fields) -> "ClusterConfig":
        """Build a config from a scalar `Scenario`'s timeline model.

        Its failure rate, GPUs per node, checkpoint interval and cost, and restart
        cost (its job size and work do not apply: the cluster's size is `n_gpus`).

        Parameters
        ----------
        scenario : Scenario or dict
            A scalar scenario.
        **fields
            Other `ClusterConfig` fields.

        Returns
        -------
        ClusterConfig
            The configuration.
        """
        from .._scenario import as_scenario

        sc = as_scenario(scenario)
        if sc.is_grid:
            raise ParameterError("scenario", f"need a scalar scenario, not a grid over {sc.dims}")
        shared = ("failure_rate", "gpus_per_node", "checkpoint_interval", "checkpoint_cost", "restart_cost")
        return cls(**{**{name: getattr(sc, name) for name in shared}, **fields})
