"""A hybrid-parallel training configuration, and sets of failed workers.

`PipelineConfig` holds `d` replicas of a `p`-stage pipeline, `m` micro-batches
per replica per iteration, per-stage task times and the schedule kind. Times
are in any one unit (the results are in the same unit). Failed workers are
(replica, stage) pairs; `failure_mask` accepts either such pairs or a
mapping {stage: count}, placed on distinct replicas where it can.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable, Mapping

import numpy as np

from .._checks import check_choice, check_memory
from .._display import readable
from .._errors import ParameterError

ORDERS = ("1f1b", "zb-h1")
SIMULATED_ITERATIONS = 6  # iterations in one schedule (the period is measured over the last ones)
MAX_TASKS = 2e7
"""Most tasks (3 per micro-batch, stage, replica and iteration) in one schedule:
64 stages x 64 replicas x 128 micro-batches (9.4e6 tasks) takes about 20 s on one
core per schedule. Larger configurations are refused rather than left running."""
MAX_STAGES = 1024
"""Most stages in a pipeline: ReCycle's planner and Oobleck's templates weigh stages
pairwise, in work that grows as the cube of their number (1024 stages take tens of
seconds; docs: user guide, pipelines, "Sizes"). Deeper ones are refused, not left running."""
CLOCK_RESOLUTION = 2.0 ** -48
"""Every positive time (task or delay) must be at least this fraction of `clock_bound`,
the latest time any schedule of the configuration can reach. Adding it to any clock
reading then moves the clock by at least 16 units in the last place: no task or delay
vanishes (s + x == s in float64), which would silently schedule it as if it took no
time (a zero-length task is placed by other rules than a short one). Between the
smallest and the largest stage time, ratios up to about 1e7 pass on the largest
configurations (64 x 64 x 128), 1e10 and more on small ones (4 x 4 x 8)."""
CLOCK_LIMIT = 2.0 ** 1000
"""The most `clock_bound` may be: headroom below float64's largest number (~2**1024) for
the priorities and sums computed from schedule times."""
BACKWARDS = ("fused", "decoupled")
OPTIMIZERS = ("barrier", "staggered")


class PipelineError(ParameterError):
    """An invalid pipeline parameter; ``.parameter`` names it."""


def show(value) -> str:
    """repr(value), except for integers too long to print whole (Python refuses past 4300 digits)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and abs(int(value)) >= 10**15:
        digits = int(int(value).bit_length() * math.log10(2))
        return f"~1e{digits}" if value > 0 else f"~-1e{digits}"
    return repr(value)


def check_count(name: str, value, low: int = 1) -> int:
    # Integers are compared as integers: math.isfinite(10**400) would raise OverflowError.
    integral = isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real) and math.isfinite(value) and value == int(value))
    if isinstance(value, bool) or not integral or value < low:
        raise PipelineError(name, f"must be an integer >= {low} (got {show(value)})")
    return int(value)


def check_time(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise PipelineError(name, f"must be a number (got {value!r})")
    try:
        x = float(value)
    except OverflowError:  # an int beyond float64
        x = math.inf
    if not math.isfinite(x) or x < 0:
        raise PipelineError(name, f"must be finite and >= 0 (got {show(value)})")
    return x




def stage_times(name: str, value, p: int) -> tuple[float, ...]:
    """A time per stage: one number for every stage, or a sequence of p numbers."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        if len(value) != p:
            raise PipelineError(name, f"needs one time per stage ({p}), got {len(value)}")
        return tuple(check_time(name, v) for v in value)
    return (check_time(name, value),) * p


@readable()
@dataclasses.dataclass(frozen=True)
class PipelineConfig:
    """A pipeline: d replicas x p stages, m micro-batches per replica per iteration, and the schedule.

    Parameters
    ----------
    stages : int
        Pipeline stages p.
    replicas : int
        Data-parallel replicas d.
    microbatches : int
        Micro-batches m per replica per iteration.
    fwd : float or sequence of float, default 1.0
        Per-stage time of F (forward) of one micro-batch; a number applies to
        every stage.
    bwd_input : float or sequence of float, default 1.0
        Per-stage time of B (input gradient).
    bwd_weight : float or sequence of float, default 1.0
        Per-stage time of W (weight gradient).
    order : {"1f1b", "zb-h1"}, default "1f1b"
        The schedule order ("zb-h1" defers W passes; needs a decoupled backward).
    backward : {"fused", "decoupled"}, default "fused"
        "fused": B and W as one task.
    optimizer : {"barrier", "staggered"}, default "barrier"
        "barrier": every stage steps together; "staggered": each stage steps
        once its own weight gradients are all-reduced.
    p2p_delay : float, default 0.0
        Activation/gradient transfer between adjacent stages.
    reroute_delay : float, optional
        The same between different replicas (re-routed micro-batches);
        `p2p_delay` when None.
    optimizer_time : float, default 0.0
        All-reduce plus optimizer step per iteration.
    memory : StageMemory, optional
        Each worker's memory budget and what a stage keeps in it; None for
        no limit. Schedules that need more are not offered.

    Raises
    ------
    PipelineError
        If a parameter is invalid (the error names it).
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
    memory: "StageMemory | None" = None

    def __post_init__(self):
        put = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        p = check_count("stages", self.stages)
        if p > MAX_STAGES:
            raise PipelineError("stages", f"must be at most {MAX_STAGES} (got {show(p)}): ReCycle's planner and "
                                          "Oobleck's templates weigh the stages pairwise, in work that grows as "
                                          "the cube of their number")
        put("stages", p)
        put("replicas", check_count("replicas", self.replicas))
        put("microbatches", check_count("microbatches", self.microbatches))
        check_tasks(p, self.replicas, self.microbatches, SIMULATED_ITERATIONS)  # before a tuple per stage is built
        for name in ("fwd", "bwd_input", "bwd_weight"):
            put(name, stage_times(name, getattr(self, name), p))
        total = [f + b + w for f, b, w in zip(self.fwd, self.bwd_input, self.bwd_weight)]  # floats: inf, no warning
        if min(total) <= 0:
            s = total.index(min(total))
            raise PipelineError("fwd", f"stage {s} has no work (fwd + bwd_input + bwd_weight = 0)")
        put("order", check_choice("order", self.order, ORDERS, PipelineError))
        put("backward", check_choice("backward", self.backward, BACKWARDS, PipelineError))
        put("optimizer", check_choice("optimizer", self.optimizer, OPTIMIZERS, PipelineError))
        if self.order == "zb-h1" and self.backward != "decoupled":
            raise PipelineError("backward", "zb-h1 defers weight gradients, so it needs backward='decoupled'")
        put("p2p_delay", check_time("p2p_delay", self.p2p_delay))
        put("reroute_delay", self.p2p_delay if self.reroute_delay is None
            else check_time("reroute_delay", self.reroute_delay))
        put("optimizer_time", check_time("optimizer_time", self.optimizer_time))
        if self.memory is not None:
            if not isinstance(self.memory, StageMemory):
                raise PipelineError("memory", f"must be a StageMemory or None (got {type(self.memory).__name__})")
            if len(self.memory.static) != p:
                raise PipelineError("memory", f"needs one entry per stage ({p}), got {len(self.memory.static)}")
        check_clock(self, SIMULATED_ITERATIONS)

    @property
    def times(self) -> np.ndarray:
        """(3, p): F, B and W time of each stage."""
        return np.array([self.fwd, self.bwd_input, self.bwd_weight], dtype=float)

    @property
    def stage_time(self) -> np.ndarray:
        """One micro-batch's work at each stage, t_s = F_s + B_s + W_s."""
        return self.times.sum(axis=0)

    @property
    def uniform(self) -> bool:
        """Whether every stage has the same F, B and W times."""
        return bool(np.all(self.times == self.times[:, :1]))

    @property
    def n_workers(self) -> int:
        """Workers in all, d p."""
        return self.replicas * self.stages

    def replace(self, **changes) -> "PipelineConfig":
        """Return a copy with some fields changed.

        Parameters
        ----------
        **changes
            Fields and their new values.

        Returns
        -------
        PipelineConfig
            The new configuration (validated).
        """
        return dataclasses.replace(self, **changes)


def _stage_bytes(name: str, value) -> tuple[float, ...]:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    values = value if isinstance(value, (list, tuple)) else (value,)
    if not values:
        raise PipelineError(name, "needs one value per stage (got none)")
    return tuple(check_time(name, v) for v in values)


@readable()
@dataclasses.dataclass(frozen=True)
class StageMemory:
    """What each worker of a stage keeps in memory, against a budget per worker (bytes).

    A worker holds its stage's `static` bytes (parameters, gradients,
    optimizer state) all the time, and `activation` bytes for every
    micro-batch from the start of its forward until its backward ends (the W
    pass with a decoupled backward): the micro-batches "in flight". So stage s
    holds at most `capacity()[s]` micro-batches at once.

    Parameters
    ----------
    budget : float
        Memory of one worker (GPU), bytes.
    static : sequence of float
        Per stage, bytes held all the time.
    activation : sequence of float
        Per stage, bytes held per micro-batch in flight (one number or one
        per stage).

    Raises
    ------
    PipelineError
        If a value is negative or not finite, or the lengths differ.
    """

    budget: float
    static: tuple
    activation: tuple

    def __post_init__(self):
        put = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        put("budget", check_time("memory.budget", self.budget))
        put("static", _stage_bytes("memory.static", self.static))
        activation = _stage_bytes("memory.activation", self.activation)
        if len(activation) == 1:
            activation = activation * len(self.static)
        if len(activation) != len(self.static):
            raise PipelineError("memory.activation", f"needs one value per stage ({len(self.static)}), "
                                                     f"got {len(activation)}")
        put("activation", activation)

    def capacity(self, extra_static=0.0) -> np.ndarray:
        """Return the micro-batches in flight each stage can hold.

        Parameters
        ----------
        extra_static : float or sequence of float, default 0.0
            More bytes held per stage (Bamboo's redundant layers).

        Returns
        -------
        numpy.ndarray
            int64 per stage; 0 where even the static part does not fit.
        """
        free = self.budget - np.asarray(self.static) - np.asarray(extra_static, dtype=float)
        act = np.asarray(self.activation)
        with np.errstate(divide="ignore", invalid="ignore"):
            held = np.where(act > 0, np.floor(free / np.where(act > 0, act, 1.0)), np.inf)
        held = np.where(free < 0, 0, held)
        return np.minimum(held, 2**62).astype(np.int64)


# Bytes a schedule holds per task: its graph (times, workers, kinds, edges both ways)
# and the simulation's clocks and queues.
TASK_BYTES = 256


def check_tasks(stages: int, replicas: int, microbatches: int, n_iterations: int) -> None:
    """Refuse schedules of more than MAX_TASKS tasks (3 per micro-batch, stage, replica and iteration),
    or whose tasks would pass the memory budget (`relmodel._checks.check_memory`), naming the
    largest of the three sizes: the one to lower."""
    tasks = 3 * n_iterations * stages * replicas * microbatches
    largest = max(("stages", stages), ("replicas", replicas), ("microbatches", microbatches), key=lambda s: s[1])[0]
    if tasks > MAX_TASKS:
        raise PipelineError(largest, f"{show(stages)} stages x {show(replicas)} replicas x {show(microbatches)} "
                                     f"micro-batches x {show(n_iterations)} iterations make {show(tasks)} tasks "
                                     f"per schedule, over the limit of {MAX_TASKS:.0e}; use fewer stages, "
                                     "replicas or micro-batches")
    check_memory(largest, tasks * TASK_BYTES, f"the {show(tasks)} tasks of a schedule would")


def _named_times(cfg: "PipelineConfig") -> list[tuple[str, float]]:
    return [(name, x) for name in ("fwd", "bwd_input", "bwd_weight") for x in getattr(cfg, name)] + [
        (name, getattr(cfg, name)) for name in ("p2p_delay", "reroute_delay", "optimizer_time")]


def clock_bound(cfg: "PipelineConfig", n_iterations: int = SIMULATED_ITERATIONS) -> float:
    """An upper bound on every time in any schedule built from `cfg` over `n_iterations`.

    A task starts at its release time, or when a predecessor's end plus a
    delay, or its worker's previous task, allows; following that back gives a
    chain of distinct tasks, each adding its duration and at most one delay,
    that starts at 0 or at a release time (a fault-free start, bounded the
    same way). So no time exceeds 2 (S + n delta) with S the summed duration
    of all tasks, n their number and delta the largest delay. The sum counts
    each micro-batch's redundant forward (Bamboo) too, and 2 d micro-batches
    more than m d: the configurations derived from cfg (m d micro-batches
    dealt to fewer, whole pipelines) never run more, so they pass whenever
    cfg does.
    """
    d, m, p, K = cfg.replicas, cfg.microbatches, cfg.stages, n_iterations
    per_microbatch = sum(cfg.fwd) * 2 + sum(cfg.bwd_input) + sum(cfg.bwd_weight)  # inf on overflow (fsum raises)
    work = K * ((m + 2) * d * per_microbatch + p * cfg.optimizer_time)
    n_tasks = K * (4 * (m + 2) * d * p + p + 1)
    return 2.0 * (work + n_tasks * max(cfg.p2p_delay, cfg.reroute_delay))


def check_clock(cfg: "PipelineConfig", n_iterations: int = SIMULATED_ITERATIONS) -> None:
    """Refuse times that float64 cannot schedule faithfully: a positive time
    below CLOCK_RESOLUTION of `clock_bound` (it would vanish from the sums), or
    a bound beyond CLOCK_LIMIT (the sums would overflow). Names the parameter."""
    check_tasks(cfg.stages, cfg.replicas, cfg.microbatches, n_iterations)
    bound = clock_bound(cfg, n_iterations)
    times = _named_times(cfg)
    if not bound <= CLOCK_LIMIT:
        name, largest = max(times, key=lambda item: item[1])
        raise PipelineError(name, f"{largest!r} makes times in the schedule reach ~{bound:.3g}, beyond what float64 "
                                  f"sums without overflow ({CLOCK_LIMIT:.3g}); use a larger time unit")
    positive = [(name, x) for name, x in times if x > 0]
    name, smallest = min(positive, key=lambda item: item[1])
    if smallest < CLOCK_RESOLUTION * bound:
        raise PipelineError(name, f"{smallest!r} is too small next to the schedule's span (times up to ~{bound:.3g}):"
                                  f" float64 cannot resolve a time below {CLOCK_RESOLUTION * bound:.3g} there "
                                  f"(2**-48 of the span); use 0 if it is negligible, or bring the times closer")


def failure_mask(failed, replicas: int, stages: int) -> np.ndarray:
    """Return a boolean (replicas, stages) mask of failed workers.

    Parameters
    ----------
    failed : dict, iterable of tuple or None
        A mapping {stage: number of failed workers at that stage}, placed on
        distinct replicas as far as possible (stages in order, replicas taken
        round-robin: independent failures rarely share a replica), or an
        iterable of (replica, stage) pairs; None or {} for none.
    replicas : int
        Replicas d.
    stages : int
        Stages p.

    Returns
    -------
    numpy.ndarray
        The (d, p) mask, True where a worker failed.

    Raises
    ------
    PipelineError
        If a stage or replica is out of range, or a stage has more failures
        than replicas.
    """
    mask = empty_mask(replicas, stages)
    replicas, stages = mask.shape
    if failed is None:
        return mask
    if isinstance(failed, Mapping):
        nxt = 0
        for stage in sorted(failed, key=_stage_key):
            s = _check_stage(stage, stages)
            count = failed[stage]
            if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
                raise PipelineError("failed", f"stage {s}: the number of failed workers must be an integer >= 0 "
                                              f"(got {show(count)})")
            if count > replicas:
                raise PipelineError("failed", f"stage {s}: {show(count)} failed workers but only {replicas} replicas")
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
            raise PipelineError("failed", f"unknown replica {show(r)} (replicas are 0..{replicas - 1})")
        s = _check_stage(s, stages)
        if mask[r, s]:
            raise PipelineError("failed", f"worker (replica {r}, stage {s}) is listed twice")
        mask[r, s] = True
    return mask


def empty_mask(replicas, stages) -> np.ndarray:
    """An all-False (replicas, stages) mask of workers, its counts checked: whole, >= 1, and no more
    workers than a schedule's task limit (a mask beyond it would only fill memory)."""
    d, p = check_count("replicas", replicas), check_count("stages", stages)
    if d * p > MAX_TASKS:
        raise PipelineError("replicas", f"{d} replicas x {p} stages is {d * p:.3g} workers, over the limit of "
                                        f"{MAX_TASKS:.0e}")
    return np.zeros((d, p), dtype=bool)


def _stage_key(stage):
    return stage if isinstance(stage, numbers.Integral) and not isinstance(stage, bool) else -1


def _check_stage(stage, stages: int) -> int:
    if isinstance(stage, bool) or not isinstance(stage, numbers.Integral) or not 0 <= stage < stages:
        raise PipelineError("failed", f"unknown stage {show(stage)} (stages are 0..{stages - 1})")
    return int(stage)


def spread_failures(n: int, replicas: int, stages: int) -> np.ndarray:
    """Return a canonical set of n failed workers, spread over replicas and stages.

    Failure i sits on replica i mod d and stage (r * g + i // d) mod p with
    g = max(1, p // min(n, d)): distinct workers, distinct replicas while
    n <= d, and stages spaced out (so no two at one stage while n <= p and d).

    Parameters
    ----------
    n : int
        Failed workers.
    replicas, stages : int
        Replicas d and stages p.

    Returns
    -------
    numpy.ndarray
        The (d, p) boolean mask.
    """
    n = check_count("n_failures", n, low=0)
    mask = empty_mask(replicas, stages)
    replicas, stages = mask.shape
    if n > replicas * stages:
        raise PipelineError("n_failures", f"{show(n)} failures but only {replicas * stages} workers")
    if n == 0:
        return mask
    gap = max(1, stages // min(n, replicas))
    for i in range(n):
        r = i % replicas
        mask[r, (r * gap + i // replicas) % stages] = True
    return mask
