"""A hybrid-parallel training configuration, and sets of failed workers.

`PipelineConfig` holds `d` replicas of a `p`-stage pipeline, `m` micro-batches
per replica per iteration, per-stage task times and the schedule kind. Times
are in any one unit (the results are in the same unit). Failed workers are
(replica, stage) pairs; `failed_workers` accepts either such pairs or a
mapping {stage: count}, placed on distinct replicas where it can.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable, Mapping

import numpy as np

ORDERS = ("1f1b", "zb-h1")
SIMULATED_ITERATIONS = 6  # iterations in one schedule (the period is measured over the last ones)
MAX_TASKS = 2e7
"""Most tasks (3 per micro-batch, stage, replica and iteration) in one schedule:
64 stages x 64 replicas x 128 micro-batches (9.4e6 tasks) takes about 20 s on one
core per schedule. Larger configurations are refused rather than left running."""
BACKWARDS = ("fused", "decoupled")
OPTIMIZERS = ("barrier", "staggered")


class PipelineError(ValueError):
    """An invalid pipeline parameter; `.parameter` names it."""

    def __init__(self, parameter: str, message: str):
        super().__init__(f"{parameter}: {message}")
        self.parameter = parameter


def check_count(name: str, value, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or value != int(value) or value < low:
        raise PipelineError(name, f"must be an integer >= {low} (got {value!r})")
    return int(value)


def check_time(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise PipelineError(name, f"must be a number (got {value!r})")
    x = float(value)
    if not math.isfinite(x) or x < 0:
        raise PipelineError(name, f"must be finite and >= 0 (got {value!r})")
    return x


def check_choice(name: str, value, choices) -> str:
    if value not in choices:
        raise PipelineError(name, f"must be one of {', '.join(choices)} (got {value!r})")
    return value


def stage_times(name: str, value, p: int) -> tuple[float, ...]:
    """A time per stage: one number for every stage, or a sequence of p numbers."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        if len(value) != p:
            raise PipelineError(name, f"needs one time per stage ({p}), got {len(value)}")
        return tuple(check_time(name, v) for v in value)
    return (check_time(name, value),) * p


@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    """d replicas x p stages, m micro-batches per replica per iteration, and the schedule.

    fwd, bwd_input, bwd_weight : per-stage times of F, B (input gradient) and
        W (weight gradient) of one micro-batch; a number applies to every stage.
    order : "1f1b" or "zb-h1" (defers W passes; needs a decoupled backward).
    backward : "fused" (B and W as one task) or "decoupled".
    optimizer : "barrier" (every stage steps together) or "staggered" (each
        stage steps once its own weight gradients are all-reduced).
    p2p_delay : activation/gradient transfer between adjacent stages.
    reroute_delay : the same between different replicas (re-routed
        micro-batches); default p2p_delay.
    optimizer_time : all-reduce plus optimizer step per iteration.
    """

    stages: int
    replicas: int
    microbatches: int
    fwd: tuple = 1.0
    bwd_input: tuple = 1.0
    bwd_weight: tuple = 1.0
    order: str = "1f1b"
    backward: str = "fused"
    optimizer: str = "barrier"
    p2p_delay: float = 0.0
    reroute_delay: float | None = None
    optimizer_time: float = 0.0

    def __post_init__(self):
        put = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        p = check_count("stages", self.stages)
        put("stages", p)
        put("replicas", check_count("replicas", self.replicas))
        put("microbatches", check_count("microbatches", self.microbatches))
        for name in ("fwd", "bwd_input", "bwd_weight"):
            put(name, stage_times(name, getattr(self, name), p))
        total = np.add(np.add(self.fwd, self.bwd_input), self.bwd_weight)
        if np.any(total <= 0):
            s = int(np.argmin(total))
            raise PipelineError("fwd", f"stage {s} has no work (fwd + bwd_input + bwd_weight = 0)")
        put("order", check_choice("order", self.order, ORDERS))
        put("backward", check_choice("backward", self.backward, BACKWARDS))
        put("optimizer", check_choice("optimizer", self.optimizer, OPTIMIZERS))
        if self.order == "zb-h1" and self.backward != "decoupled":
            raise PipelineError("backward", "zb-h1 defers weight gradients, so it needs backward='decoupled'")
        put("p2p_delay", check_time("p2p_delay", self.p2p_delay))
        put("reroute_delay", self.p2p_delay if self.reroute_delay is None
            else check_time("reroute_delay", self.reroute_delay))
        put("optimizer_time", check_time("optimizer_time", self.optimizer_time))
        tasks = 3 * SIMULATED_ITERATIONS * p * self.replicas * self.microbatches
        if tasks > MAX_TASKS:
            raise PipelineError("stages", f"{p} stages x {self.replicas} replicas x {self.microbatches} micro-batches "
                                          f"make {tasks:.3g} tasks per schedule, over the limit of {MAX_TASKS:.0e}; "
                                          "use fewer stages, replicas or micro-batches")

    @property
    def times(self) -> np.ndarray:
        """(3, p): F, B and W time of each stage."""
        return np.array([self.fwd, self.bwd_input, self.bwd_weight], dtype=float)

    @property
    def stage_time(self) -> np.ndarray:
        """t_s = F_s + B_s + W_s: one micro-batch's work at each stage."""
        return self.times.sum(axis=0)

    @property
    def uniform(self) -> bool:
        return bool(np.all(self.times == self.times[:, :1]))

    @property
    def n_workers(self) -> int:
        return self.replicas * self.stages

    def replace(self, **changes) -> "PipelineConfig":
        return dataclasses.replace(self, **changes)


def failed_workers(failed, replicas: int, stages: int) -> np.ndarray:
    """A boolean (replicas, stages) mask of failed workers.

    `failed` is a mapping {stage: number of failed workers at that stage},
    placed on distinct replicas as far as possible (stages in order, replicas
    taken round-robin: independent failures rarely share a replica), or an
    iterable of (replica, stage) pairs; None or {} for none.
    """
    mask = np.zeros((replicas, stages), dtype=bool)
    if failed is None:
        return mask
    if isinstance(failed, Mapping):
        nxt = 0
        for stage in sorted(failed, key=_stage_key):
            s = _check_stage(stage, stages)
            count = failed[stage]
            if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
                raise PipelineError("failed", f"stage {s}: the number of failed workers must be an integer >= 0 "
                                              f"(got {count!r})")
            if count > replicas:
                raise PipelineError("failed", f"stage {s}: {count} failed workers but only {replicas} replicas")
            for i in range(int(count)):
                mask[(nxt + i) % replicas, s] = True
            nxt += int(count)
        return mask
    if isinstance(failed, (str, bytes)) or not isinstance(failed, Iterable):
        raise PipelineError("failed", f"expected {{stage: count}} or (replica, stage) pairs (got {failed!r})")
    for item in failed:
        try:
            r, s = item
        except (TypeError, ValueError):
            raise PipelineError("failed", f"expected (replica, stage) pairs (got {item!r})") from None
        if isinstance(r, bool) or not isinstance(r, numbers.Integral) or not 0 <= r < replicas:
            raise PipelineError("failed", f"unknown replica {r!r} (replicas are 0..{replicas - 1})")
        s = _check_stage(s, stages)
        if mask[r, s]:
            raise PipelineError("failed", f"worker (replica {r}, stage {s}) is listed twice")
        mask[r, s] = True
    return mask


def _stage_key(stage):
    return stage if isinstance(stage, numbers.Integral) and not isinstance(stage, bool) else -1


def _check_stage(stage, stages: int) -> int:
    if isinstance(stage, bool) or not isinstance(stage, numbers.Integral) or not 0 <= stage < stages:
        raise PipelineError("failed", f"unknown stage {stage!r} (stages are 0..{stages - 1})")
    return int(stage)


def spread_failures(n: int, replicas: int, stages: int) -> np.ndarray:
    """A canonical set of n failed workers, spread over replicas and stages.

    Failure i sits on replica i mod d and stage (r * g + i // d) mod p with
    g = max(1, p // min(n, d)): distinct workers, distinct replicas while
    n <= d, and stages spaced out (so no two at one stage while n <= p and d).
    """
    n = check_count("n_failures", n, low=0)
    if n > replicas * stages:
        raise PipelineError("n_failures", f"{n} failures but only {replicas * stages} workers")
    mask = np.zeros((replicas, stages), dtype=bool)
    if n == 0:
        return mask
    gap = max(1, stages // min(n, replicas))
    for i in range(n):
        r = i % replicas
        mask[r, (r * gap + i // replicas) % stages] = True
    return mask
