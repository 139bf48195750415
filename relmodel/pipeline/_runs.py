"""Throughput over a run, as arrays: failure paths (Monte Carlo, or a replayed
trace), each strategy's rate in every state the path visits and its cost at
every event, and the training steps each run completes.

The workers are d * p slots (slot = replica * p + stage). A failed node is
replaced from a pool of idle nodes after `swap_time` (the strategy's spares
at the start, and repaired nodes later); every strategy sees the same path.
What a strategy does in a state comes from `strategies.evaluate`; what an
event costs it (a failure; a slot back):

- recycle: detection, and the step in flight is lost; nothing.
- drop-pipeline: detection + reconfiguration and the step in flight, when a
  replica leaves; reconfiguration when one rejoins.
- oobleck: detection + reconfiguration and the step in flight;
  reconfiguration.
- bamboo: detection (a neighbour takes over); when two neighbours are down,
  detection + restart back to the checkpoint, without that pipeline;
  reconfiguration when a pipeline rejoins.
- spare: stalled until the slot is back (at least `detection_time`), and the
  step in flight is lost.
- restart: back to the checkpoint (the rework), stalled until every slot is
  back (at least `detection_time`), then `restart_cost`: zero throughput for
  detection + replacement + restart + rework, then full throughput. Its
  parameters are the timeline model's (`RunModel.from_scenario`).

A strategy that cannot run (e.g. every replica of a stage lost) falls back to
its last checkpoint and pays `restart_cost` once it can run again.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import math

import numpy as np

from .._display import readable
from .._units import format_hours, to_hours
from .._checks import check_real
from ._config import PipelineConfig, PipelineError, failure_mask, show
from ._schedule import kernels
from ._strategies import RECOVERY_STRATEGIES, StrategyOptions, evaluate, ideal, memory_fits, recycle_adapted
from ._traces import Trace

LOSS_NONE, LOSS_STEP, LOSS_CHECKPOINT = 0, 1, 2
FAIL, RESTORE = 0, 1  # event kinds, as in relmodel.pipeline._schedule_kernel
REPAIR_DISTRIBUTIONS = ("fixed", "exponential")
MAX_PATH_ENTRIES = 2e8
"""Most array entries a Monte Carlo may hold: n_runs x event-buffer width x
(3 event arrays + one down flag per worker). Above it (e.g. 1000 failures per
node-day over 1000 h) `monte_carlo_paths` refuses instead of running out of memory."""


def duration_hours(value, name: str) -> float:
    """`relmodel._units.to_hours`, plus milliseconds ("70ms"): task times are often in ms."""
    if isinstance(value, str) and value.strip().lower().endswith("ms"):
        number = value.strip()[:-2]
        try:
            return float(number) / 3.6e6
        except ValueError:
            raise PipelineError(name, f"cannot read {value!r} as a duration") from None
    try:
        return to_hours(value, name)
    except OverflowError:  # an int beyond float64: refused as not finite
        return math.inf


@readable("duration", "repair_time", "swap_time", "detection_time",
          "reconfig_time", "restart_cost", "checkpoint_interval", "time_unit")
@dataclasses.dataclass(frozen=True)
class RunModel:
    """Failures, repairs and event costs of a run (durations in hours or with units).

    Parameters
    ----------
    duration : float or str, default "14d"
        Length of a Monte Carlo run.
    failure_rate : float, default 6.5e-3
        Failures per node-day of runtime (the Meta study's larger cluster).
    nodes_per_worker : float, default 1.0
        Nodes one worker (one stage of one replica) spans.
    lemon_fraction : float, default 0.0
        A fraction of nodes that fail `lemon_rate_factor` times as often (the
        average rate stays `failure_rate`).
    lemon_rate_factor : float, default 1.0
        How many times as often a lemon fails.
    repair_time : float or str, default "4h"
        Until a failed node is back as an idle node.
    repair_distribution : {"fixed", "exponential"}, default "fixed"
        The law of the repair time.
    swap_time : float or str, default "5min"
        An idle node taking a failed worker's place.
    detection_time : float or str, default "30s"
        Noticing a failure.
    reconfig_time : float or str, default "1min"
        Re-forming pipelines (Oobleck, drop-pipeline, Bamboo re-joins).
    restart_cost : float or str, default "10min"
        A checkpoint-restart.
    checkpoint_interval : float or str, default "1h"
        Wall time between checkpoints.
    time_unit : float or str, default "1s"
        The unit of the schedule's task times ("1ms" works too).
    """

    duration: float = "14d"
    failure_rate: float = 6.5e-3
    nodes_per_worker: float = 1.0
    lemon_fraction: float = 0.0
    lemon_rate_factor: float = 1.0
    repair_time: float = "4h"
    repair_distribution: str = "fixed"
    swap_time: float = "5min"
    detection_time: float = "30s"
    reconfig_time: float = "1min"
    restart_cost: float = "10min"
    checkpoint_interval: float = "1h"
    time_unit: float = "1s"

    def __post_init__(self):
        for name in ("duration", "repair_time", "swap_time", "detection_time", "reconfig_time", "restart_cost",
                     "checkpoint_interval", "time_unit"):
            try:
                hours = duration_hours(getattr(self, name), name)
            except ValueError as err:
                raise PipelineError(name, str(err).split(": ", 1)[1]) from None
            positive = name in ("duration", "checkpoint_interval", "time_unit")
            if not math.isfinite(hours) or hours < 0 or (positive and hours == 0):
                raise PipelineError(name, f"must be finite and {'> 0' if positive else '>= 0'} "
                                          f"(got {format_hours(hours)})")
            object.__setattr__(self, name, hours)
        for name, low, high in (("failure_rate", 0.0, math.inf), ("nodes_per_worker", 0.0, math.inf),
                                ("lemon_fraction", 0.0, 1.0), ("lemon_rate_factor", 1.0, math.inf)):
            value = getattr(self, name)
            try:
                number = check_real(name, value, error=PipelineError)
            except PipelineError:
                number = math.nan
            if not low <= number <= high:
                raise PipelineError(name, f"must be a number in [{low:g}, {high:g}] (got {show(value)})")
            object.__setattr__(self, name, number)
        if self.lemon_fraction == 1.0 and self.lemon_rate_factor != 1.0:
            raise PipelineError("lemon_fraction", "must be < 1 when lemons fail faster (else there is no healthy node)")
        if self.repair_distribution not in REPAIR_DISTRIBUTIONS:
            raise PipelineError("repair_distribution", f"must be one of {', '.join(REPAIR_DISTRIBUTIONS)} "
                                                       f"(got {self.repair_distribution!r})")

    @classmethod
    def from_scenario(cls, scenario, nodes_per_worker: float | None = None, **changes) -> "RunModel":
        """Build the run model of a timeline `relmodel.Scenario` (one point, not a grid).

        Its failure rate, lemon mixture, checkpoint interval and restart cost
        (queue wait included: a restart waits for it). Only exponential failures
        carry over (a Weibull shape is refused).

        Parameters
        ----------
        scenario : Scenario or dict
            A scalar scenario.
        nodes_per_worker : float, optional
            Nodes per worker; 1 when None.
        **changes
            Override any field (e.g. duration, repair_time).

        Returns
        -------
        RunModel
            The run model.

        Raises
        ------
        PipelineError
            For a grid or a Weibull scenario.
        """
        if scenario.dims:
            raise PipelineError("scenario", f"pass one scenario, not a grid over {', '.join(scenario.dims)}")
        if scenario.weibull_shape != 1.0:
            raise PipelineError("scenario", "runs of pipelines draw exponential failures (weibull_shape must be 1)")
        fields = dict(failure_rate=scenario.failure_rate, lemon_fraction=scenario.lemon_fraction,
                      lemon_rate_factor=scenario.lemon_rate_factor, checkpoint_interval=scenario.checkpoint_interval,
                      restart_cost=scenario.restart_cost + scenario.queue_wait,
                      nodes_per_worker=1.0 if nodes_per_worker is None else nodes_per_worker)
        return cls(**(fields | changes))

    @property
    def worker_rate(self) -> float:
        """Failures per hour of one worker."""
        return self.failure_rate * self.nodes_per_worker / 24.0


@dataclasses.dataclass(frozen=True)
class Paths:
    """Event paths of n runs, and the down slots at the start and after each event.

    Row layout (as `down`): run i owns rows row_offset[i] (its start) to
    row_offset[i] + count[i].
    """

    time: np.ndarray  # (n_runs, width) hours
    slot: np.ndarray
    kind: np.ndarray  # 0 fail, 1 slot back
    count: np.ndarray  # (n_runs,)
    horizon: float
    down: np.ndarray  # (n_rows, d * p) bool
    row_offset: np.ndarray

    @property
    def row_kind(self) -> np.ndarray:
        """-1 for a run's start row, else the kind of the event that led to the row."""
        return self._by_row(self.kind)

    @property
    def row_slot(self) -> np.ndarray:
        """-1 for a run's start row, else the slot of the event that led to the row."""
        return self._by_row(self.slot)

    def _by_row(self, per_event: np.ndarray) -> np.ndarray:
        """A field of the events (n_runs, width) on the rows each event led to; -1 on a run's start row."""
        out = np.full(self.down.shape[0], -1, dtype=np.int64)
        valid = np.arange(self.time.shape[1])[None, :] < self.count[:, None]
        rows = self.row_offset[:, None] + 1 + np.arange(self.time.shape[1])[None, :]
        out[rows[valid]] = per_event[valid]
        return out

    def row_durations(self) -> np.ndarray:
        """Hours each row's state lasts."""
        n_runs, width = self.time.shape
        valid = np.arange(width)[None, :] < self.count[:, None]
        begin = np.zeros(self.down.shape[0])
        rows = self.row_offset[:, None] + 1 + np.arange(width)[None, :]
        begin[rows[valid]] = self.time[valid]
        end = np.empty_like(begin)
        end[:-1] = begin[1:]
        last = self.row_offset + self.count
        end[last] = self.horizon
        return end - begin

    def occupancy(self) -> np.ndarray:
        """Share of run time with n workers down, n = 0 .. max."""
        n_down = self.down.sum(axis=1)
        time = np.bincount(n_down, weights=self.row_durations())
        return time / (self.count.size * self.horizon)

    @property
    def failures_per_run(self) -> np.ndarray:
        valid = np.arange(self.time.shape[1])[None, :] < self.count[:, None]
        return np.sum(valid & (self.kind == FAIL), axis=1)


def _finish(time, slot, kind, count, horizon, initial_down) -> Paths:
    row_offset = (np.arange(count.size) + np.concatenate([[0], np.cumsum(count)[:-1]])).astype(np.int64)
    down = np.zeros((count.size + int(count.sum()), initial_down.shape[1]), dtype=np.bool_)
    kernels().down_masks(initial_down, slot, kind, count, row_offset, down)
    return Paths(time=time, slot=slot, kind=kind, count=count, horizon=horizon, down=down, row_offset=row_offset)


def _buffers(n_runs, width):
    return (np.zeros((n_runs, width)), np.zeros((n_runs, width), dtype=np.int64),
            np.zeros((n_runs, width), dtype=np.int64), np.zeros(n_runs, dtype=np.int64))


def monte_carlo_paths(cfg: PipelineConfig, model: RunModel, spares: int, n_runs: int, seed: int,
                      scenario_key: int = 0) -> Paths:
    """Failure and repair paths of n_runs runs of model.duration hours."""
    n_slots = cfg.n_workers
    expected = 2.0 * n_slots * model.worker_rate * max(model.lemon_rate_factor, 1.0) * model.duration
    width = expected + 10.0 * math.sqrt(expected) + 32  # a float until checked: int(inf) raises
    entries = float(n_runs) * width * (3 + n_slots)
    if not entries <= MAX_PATH_ENTRIES:
        raise PipelineError("duration", f"about {expected:.3g} failure and repair events per run x {n_runs} runs on "
                                        f"{n_slots} workers need ~{entries:.2g} array entries (limit "
                                        f"{MAX_PATH_ENTRIES:.0e}); shorten the run duration (--run-duration), "
                                        f"lower the failure rate (--failure-rate) or the runs (--runs)")
    width = int(width)
    if n_slots + spares > MAX_PATH_ENTRIES:  # the kernel keeps a repair clock per node (slots + spares)
        raise PipelineError("spares", f"{show(spares)} spare nodes need one repair clock each, over the limit of "
                                      f"{MAX_PATH_ENTRIES:.0e} array entries; no run needs more spares than "
                                      "failures it sees")
    rates = np.full(n_slots, model.worker_rate)
    while True:
        time, slot, kind, count = _buffers(n_runs, width)
        kernels().failure_paths(np.uint64(seed), np.uint64(scenario_key), model.duration, rates, model.lemon_fraction,
                             model.lemon_rate_factor, spares, model.repair_time,
                             model.repair_distribution == "exponential", model.swap_time, time, slot, kind, count)
        if np.all(count >= 0):
            break
        width *= 2  # a run had more events than the buffer held: redo with room (same draws)
    return _finish(time, slot, kind, count, model.duration, np.zeros((n_runs, n_slots), dtype=np.bool_))


def replay_paths(cfg: PipelineConfig, trace: Trace, model: RunModel, n_runs: int, seed: int,
                 scenario_key: int = 0) -> Paths:
    """The trace replayed n_runs times, each with its own random placement of nodes on slots."""
    if not isinstance(trace, Trace):  # its checks keep the kernel's node indices in range
        raise PipelineError("traces", f"expected a Trace (got {type(trace).__name__})")
    if trace.time.size == 0:
        raise PipelineError("traces", f"trace {trace.name!r} has no events")
    n_slots = cfg.n_workers
    width = 2 * trace.time.size + 8
    time, slot, kind, count = _buffers(n_runs, width)
    initial = np.zeros((n_runs, n_slots), dtype=np.bool_)
    kernels().trace_paths(np.uint64(seed), np.uint64(scenario_key), n_slots, trace.time, trace.add, trace.node,
                       trace.n_nodes, model.swap_time, initial, time, slot, kind, count)
    if np.any(count < 0):  # cannot happen: each trace event makes at most two path events
        raise RuntimeError("trace replay overflowed its event buffer")
    return _finish(time, slot, kind, count, trace.duration, initial)


# -- strategies along a path ---------------------------------------------------------


def _periods_by_key(cfg, strategy, options, down3, keys, representative):
    """Period of every row: evaluate one representative mask per distinct key."""
    unique, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    periods = np.array([evaluate(cfg, strategy, representative(down3[i]), options).period for i in first])
    return periods[inverse.ravel()]


def row_periods(cfg: PipelineConfig, strategy: str, options: StrategyOptions, down: np.ndarray) -> np.ndarray:
    """Steady-state period (schedule time units; inf: cannot run) in each row's state."""
    d, p = cfg.replicas, cfg.stages
    down3 = down.reshape(-1, d, p)
    n_down = down.sum(axis=1)
    if strategy in ("restart", "spare"):  # they need every slot filled
        return np.where(n_down == 0, ideal(cfg).period, math.inf)
    if strategy == "recycle":  # normalised to failures per stage
        counts, inverse = np.unique(down3.sum(axis=1), axis=0, return_inverse=True)
        return recycle_periods(cfg, options, counts)[inverse.ravel()]
    if strategy == "drop-pipeline":
        keys = (~down3.any(axis=2)).sum(axis=1)[:, None]
    elif strategy == "oobleck":
        keys = np.stack([n_down, down3.all(axis=1).any(axis=1)], axis=1)
    else:  # bamboo
        dropped = bamboo_dropped(down3)
        keys = np.stack([(~dropped).sum(axis=1), (down3 & ~dropped[:, :, None]).any(axis=(1, 2))], axis=1)
    return _periods_by_key(cfg, strategy, options, down3, keys, lambda mask: mask)


def recycle_period(cfg: PipelineConfig, options: StrategyOptions, counts: tuple) -> float:
    """ReCycle's period with counts[s] failed workers at stage s (placed as `failure_mask` does); not
    kept (`recycle_periods` keeps each state's)."""
    if max(counts) >= cfg.replicas or not memory_fits(cfg):  # (as `evaluate`: nothing runs to adapt)
        return math.inf
    mask = failure_mask(dict(enumerate(counts)), cfg.replicas, cfg.stages)
    if not mask.any():
        return evaluate(cfg, "recycle", mask, options).period
    adapted = recycle_adapted(cfg, mask, options)  # the plan alone: its period, without evaluate's schedule
    if adapted is not None and adapted.interrupted:  # its period would depend on when Ctrl-C came: stop the run
        raise KeyboardInterrupt
    return math.inf if adapted is None else adapted.period


_PERIODS: dict = {}
"""`recycle_periods`' results by (cfg, options, counts); emptied when it reaches `_PERIODS_HELD`."""
_PERIODS_HELD = 65536
CHUNK_STATES = 32
"""States per compiled batch in `recycle_periods` (and per progress update)."""


def recycle_periods(cfg: PipelineConfig, options: StrategyOptions, counts: np.ndarray, progress=None) -> np.ndarray:
    """Return ReCycle's period in each state: `counts[k, s]` failed workers at stage s.

    Each is `recycle_period`'s number, bit for bit. A trace replay visits
    thousands of states of one pipeline, so they are planned in compiled
    batches of `CHUNK_STATES` (`planner._Rules.periods`: the heuristic's fixed
    rules, which reach the lower bound in nearly every state) on
    `numba.get_num_threads()` threads; a state they leave short of the bound
    goes through the whole planner (`recycle_period`), from the fixed rules'
    result the batch found. A state's plan does not depend on the batch, the
    thread or the order; each period is kept per process (`_PERIODS`). Ctrl-C
    during a state's exact search ends the call with KeyboardInterrupt, as
    anywhere else (a plan stopped early would depend on when).

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline.
    options : StrategyOptions
        The strategies' knobs (ReCycle's kind and planning method).
    counts : numpy.ndarray
        (k, p) failed workers per stage, one state a row.
    progress : callable, optional
        Called with a number of states as they are done (those already
        known first), k in all.

    Returns
    -------
    numpy.ndarray
        (k,) periods; inf where nothing runs.
    """
    counts = np.asarray(counts, dtype=np.int64).reshape(-1, cfg.stages)
    keys = [(cfg, options, tuple(row)) for row in counts.tolist()]
    periods = np.array([_PERIODS.get(key, math.nan) for key in keys])
    todo = np.flatnonzero(np.isnan(periods))
    batch = [k for k in todo if _plannable(cfg, counts[k])]
    easy = np.setdiff1d(todo, batch)
    for k in easy:  # no failure, or nothing runs: no plan to search
        periods[k] = recycle_period(cfg, options, keys[k][2])
    if progress is not None and len(keys) - len(batch):  # the states known already count as done
        progress(len(keys) - len(batch))
    if batch:
        from .._engine import kernel_threads
        from ._planner import _rules
        from ._recycle import recycle_kind

        rules = _rules(recycle_kind(cfg, options.recycle_decoupled, options.recycle_staggered))
        masks = np.stack([failure_mask(dict(enumerate(keys[k][2])), cfg.replicas, cfg.stages) for k in batch])
        chunks = [np.array(batch[i:i + CHUNK_STATES]) for i in range(0, len(batch), CHUNK_STATES)]
        offsets = np.cumsum([0] + [c.size for c in chunks])

        def plan_chunk(c):
            return c, rules.periods(masks[offsets[c]:offsets[c + 1]])

        with concurrent.futures.ThreadPoolExecutor(min(kernel_threads("numba"), len(chunks))) as pool:
            for c, found in pool.map(plan_chunk, range(len(chunks))):
                periods[chunks[c]] = found
                short = chunks[c][np.isnan(found)]
                for k in short:  # the fixed rules left it short of the bound: seeds, restarts, an exact search
                    periods[k] = recycle_period(cfg, options, keys[k][2])
                if progress is not None:
                    progress(int(chunks[c].size))
    if len(_PERIODS) + todo.size > _PERIODS_HELD:
        _PERIODS.clear()
    _PERIODS.update((keys[k], float(periods[k])) for k in todo)
    return periods


def clear_period_cache() -> None:
    """Forget the periods `recycle_periods` has computed (they are kept per process), and the fixed rules'
    results a batch kept for the states it left short."""
    from ._planner import _SHORT

    _PERIODS.clear()
    _SHORT.clear()


def _plannable(cfg: PipelineConfig, counts: np.ndarray) -> bool:
    """Whether `recycle_period` would search a plan for `counts` (a failure, and something runs)."""
    return bool(counts.any() and counts.max() < cfg.replicas and memory_fits(cfg))


def bamboo_dropped(down3: np.ndarray) -> np.ndarray:
    """(rows, d) pipelines with two adjacent workers down (a worker backs up the next, cyclically)."""
    if down3.shape[2] == 1:
        return down3[:, :, 0]
    return (down3 & np.roll(down3, -1, axis=2)).any(axis=2)


def row_costs(cfg: PipelineConfig, strategy: str, model: RunModel, paths: Paths, periods: np.ndarray):
    """(loss, dead, resume) per row: what the event leading to the row costs (see the module table)."""
    kind = paths.row_kind
    fail, back = kind == FAIL, kind == RESTORE
    runs = np.isfinite(periods)
    prev = np.maximum(np.arange(kind.size) - 1, 0)
    prev_runs = runs[prev]
    loss = np.full(kind.size, LOSS_NONE, dtype=np.int64)
    dead = np.zeros(kind.size)
    resume = np.full(kind.size, model.restart_cost)
    fatal = fail & ~runs
    if strategy == "recycle":
        loss[fail & runs] = LOSS_STEP
        dead[fail & runs] = model.detection_time
    elif strategy in ("drop-pipeline", "bamboo"):
        d, p = cfg.replicas, cfg.stages
        down3 = paths.down.reshape(-1, d, p)
        out = down3.any(axis=2) if strategy == "drop-pipeline" else bamboo_dropped(down3)
        kept = (~out).sum(axis=1)
        fewer, more = fail & (kept < kept[prev]) & runs, back & (kept > kept[prev]) & prev_runs & runs
        dead[more] = model.reconfig_time
        if strategy == "drop-pipeline":
            loss[fewer] = LOSS_STEP
            dead[fewer] = model.detection_time + model.reconfig_time
        else:
            loss[fewer] = LOSS_CHECKPOINT  # restart without the broken pipeline
            dead[fewer] = model.detection_time + model.restart_cost
            replica = np.maximum(paths.row_slot, 0) // p
            takeover = fail & runs & ~fewer & ~out[np.arange(kind.size), replica]
            dead[takeover] = model.detection_time
    elif strategy == "oobleck":
        loss[fail & runs] = LOSS_STEP
        dead[fail & runs] = model.detection_time + model.reconfig_time
        dead[back & prev_runs & runs] = model.reconfig_time
    elif strategy == "spare":
        loss[fail] = LOSS_STEP
        dead[fail] = model.detection_time  # the swap starts at the failure: the longer of the two stalls
        resume[:] = 0.0  # the swap time already holds the stall
        fatal = np.zeros_like(fail)
    elif strategy == "restart":
        loss[fail] = LOSS_CHECKPOINT
        dead[fail] = model.detection_time
        fatal = np.zeros_like(fail)
    loss[fatal] = LOSS_CHECKPOINT
    return loss, dead, resume


def step_hours(cfg: PipelineConfig, model: RunModel) -> float:
    """Hours of one fault-free step; a named error where the time unit makes it 0 or
    overflow (a rate of inf or 0 steps per hour would turn the run averages into NaN)."""
    hours = ideal(cfg).period * model.time_unit
    if not (0 < hours < math.inf and 0 < 1.0 / hours < math.inf and model.duration / hours < math.inf):
        raise PipelineError("time_unit", f"{model.time_unit!r} h per time unit makes a {ideal(cfg).period:.3g}-unit "
                                         f"step last {hours!r} h, which float64 cannot count steps of")
    return hours


def run_progress(cfg: PipelineConfig, strategy: str, options: StrategyOptions, model: RunModel,
                 paths: Paths) -> np.ndarray:
    """Training steps (iterations) each run completes under `strategy`."""
    step_hours(cfg, model)
    periods = row_periods(cfg, strategy, options, paths.down)
    with np.errstate(divide="ignore"):
        rate = np.where(np.isfinite(periods), 1.0 / (periods * model.time_unit), 0.0)
    loss, dead, resume = row_costs(cfg, strategy, model, paths, periods)
    progress = np.empty(paths.count.size)
    kernels().integrate_runs(paths.time, paths.count, paths.row_offset, paths.horizon, rate, loss, dead, resume,
                          model.checkpoint_interval, progress)
    return progress


def ideal_steps(cfg: PipelineConfig, model: RunModel, horizon: float) -> float:
    """Steps the fault-free schedule completes in `horizon` hours."""
    return horizon / step_hours(cfg, model)


__all__ = ["LOSS_CHECKPOINT", "LOSS_NONE", "LOSS_STEP", "MAX_PATH_ENTRIES", "Paths", "RunModel", "RECOVERY_STRATEGIES",
           "bamboo_dropped", "ideal_steps", "monte_carlo_paths", "replay_paths", "row_costs", "row_periods",
           "run_progress", "step_hours"]
