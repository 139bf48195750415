"""Steady-state throughput of each fault-tolerance strategy, as a function of
the set of failed workers.

Every strategy keeps the global batch (m d micro-batches per iteration), so
throughput is m d / period. "Ideal" is the fault-free schedule of `cfg`.

- recycle: re-route to same-stage peers (see `recycle`), planned by
  `options.method`; zero when every replica of a stage is lost.
- restart: checkpoint-restart onto replacement nodes; the steady state is the
  fault-free schedule (the downtime is a cost of the run, see `runs`).
- spare: hot spares take the failed workers' places; fault-free while
  failures <= spares, zero (stalled, waiting for a repair) beyond.
- drop-pipeline: replicas with a failed worker leave; the d' others run
  ceil(m d / d') micro-batches each; zero when no replica is whole.
- oobleck: pipelines re-instantiated from templates of `oobleck_min_stages`
  to p stages on the surviving nodes (layers copied from a surviving copy of
  each stage), the global batch split so they finish together; zero when every
  copy of some stage is lost.
- bamboo: every worker also runs the next stage's forward (redundant
  computation, in its bubbles where it fits: a steady overhead); a failed
  worker's predecessor takes over at `bamboo_slowdown`; two adjacent failed
  workers of one pipeline force a restart without that pipeline.

With a memory budget (`PipelineConfig.memory`) a strategy whose schedule
needs more memory than a worker has is not offered (period inf, `detail` and
`memory_limited` say so): the fault-free schedule's micro-batches in flight
(restart, spare, drop-pipeline), ReCycle's plan (planned within the budget;
none where the fault-free schedule does not fit, since ReCycle adapts a job
that runs: throughput never rises from zero when a worker fails),
Oobleck's templates (a k-stage template holds p / k stages' parameters and
activations per worker; smaller ones are left out), Bamboo's redundant copy of
the next stage's parameters.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import math

import numpy as np

from .._checks import check_memory, check_real
from .._display import readable
from ._config import PipelineConfig, PipelineError, StageMemory, check_count, failure_mask, show
from ._graph import R_KIND, build_graph, stage_order, task_index
from ._planner import check_method
from ._recycle import frozen, load_bound, plan_schedule, recycle_kind, recycle_plan
from ._schedule import (N_ITERATIONS, N_MEASURED, Schedule, after_all, check_iterations, fault_free, greedy, measure,
                        resweep)

RECOVERY_STRATEGIES = ("recycle", "restart", "spare", "drop-pipeline", "oobleck", "bamboo")


@readable()
@dataclasses.dataclass(frozen=True)
class StrategyOptions:
    """Knobs of the fault-tolerance strategies.

    Parameters
    ----------
    spares : int, default 2
        Hot spare workers.
    bamboo_slowdown : float, default 1.5
        Step time factor while a Bamboo neighbour covers a failed worker.
    bamboo_overhead : float, optional
        Fixed fractional slowdown of Bamboo's redundant computation; None
        simulates the redundant forwards in the schedule's bubbles.
    oobleck_min_stages : int, optional
        Fewest stages a pipeline template may have (memory); None for p.
    recycle_decoupled : bool, default True
        ReCycle's decoupled backward.
    recycle_staggered : bool, default True
        ReCycle's staggered optimizer step.
    method : {"auto", "exact", "heuristic"}, default "auto"
        How ReCycle plans its adapted schedule (`relmodel.pipeline._planner`).
    """

    spares: int = 2
    bamboo_slowdown: float = 1.5
    bamboo_overhead: float | None = None
    oobleck_min_stages: int | None = None
    recycle_decoupled: bool = True
    recycle_staggered: bool = True
    method: str = "auto"

    def __post_init__(self):
        check_method(self.method)
        object.__setattr__(self, "spares", check_count("spares", self.spares, low=0))
        _check_at_least("bamboo_slowdown", self.bamboo_slowdown, 1, "a number >= 1")
        if self.bamboo_overhead is not None:
            _check_at_least("bamboo_overhead", self.bamboo_overhead, 0, "None or a number >= 0")
        if self.oobleck_min_stages is not None:
            object.__setattr__(self, "oobleck_min_stages", check_count("oobleck_min_stages", self.oobleck_min_stages))


def _check_at_least(name: str, value, low: float, expected: str) -> None:
    """A finite real number >= low (bools and ints beyond float64 refused), else a named error."""
    try:
        ok = check_real(name, value, error=PipelineError) >= low
    except PipelineError:
        ok = False
    if not ok:
        raise PipelineError(name, f"must be {expected} (got {show(value)})")


@readable()
@dataclasses.dataclass(frozen=True)
class StrategyResult:
    """One strategy's steady state with a set of failed workers.

    Parameters
    ----------
    strategy : str
        The strategy.
    period : float
        Steady-state time per iteration (inf when it cannot run).
    ideal_period : float
        The fault-free period.
    work_bound : float
        The busiest survivor's work per iteration (`work_bound`).
    global_batch : int
        Micro-batches per iteration it trains.
    n_failed : int
        Failed workers.
    detail : str, default ""
        How the strategy coped (e.g. which plan).
    schedule : Schedule, optional
        The schedule, where one was simulated.
    load_bound : float, default nan
        A proven lower bound on the period of what the strategy runs: the
        busiest worker's load, or ReCycle's planner's bound.
    optimal : bool, optional
        For ReCycle: whether its period is proven least.
    planning_time : float, default 0.0
        For ReCycle: seconds its planner took.
    memory_limited : bool, default False
        Whether the memory budget ruled the strategy out (period inf) or
        limited its choices (Oobleck's templates).
    """

    strategy: str
    period: float  # time per iteration; inf: zero throughput
    ideal_period: float  # the fault-free schedule's period
    work_bound: float  # max_s ceil(m d / (d - f_s)) t_s: nothing bound to stages can do better
    global_batch: int  # micro-batches per iteration (m d), kept by every strategy
    n_failed: int
    detail: str = ""
    schedule: Schedule | None = None
    load_bound: float = math.nan  # a proven lower bound on the period of what the strategy runs
    optimal: bool | None = None
    planning_time: float = 0.0
    memory_limited: bool = False

    def __post_init__(self):
        if math.isnan(self.load_bound):
            object.__setattr__(self, "load_bound", self.work_bound if self.survives else math.inf)

    @property
    def throughput(self) -> float:
        """Micro-batches per time unit (0 when the strategy cannot run)."""
        return self.global_batch / self.period if math.isfinite(self.period) else 0.0

    @property
    def fraction_of_ideal(self) -> float:
        """Throughput as a fraction of the fault-free one (0 when it cannot run)."""
        return self.ideal_period / self.period if math.isfinite(self.period) else 0.0

    @property
    def survives(self) -> bool:
        """Whether the strategy keeps training (a finite period)."""
        return math.isfinite(self.period)


def check_strategy(strategy: str) -> str:
    if strategy not in RECOVERY_STRATEGIES:
        raise PipelineError("strategy", f"unknown strategy {strategy!r}; use one of {', '.join(RECOVERY_STRATEGIES)}")
    return strategy


def in_flight(order: str, stages: int, microbatches: int, backward: str) -> np.ndarray:
    """Most micro-batches each stage holds at once in the fault-free `order` (1F1B: min(p - s, m))."""
    peak = np.zeros(stages, dtype=np.int64)
    final = 2 if backward == "decoupled" else 1
    for s in range(stages):
        types, _ = stage_order(order, stages, microbatches, s)
        if final == 1:
            types = types[types != 2]
        peak[s] = np.max(np.cumsum(np.where(types == 0, 1, np.where(types == final, -1, 0))))
    return peak


def memory_fits(cfg: PipelineConfig, microbatches: int | None = None, extra_static=0.0) -> bool:
    """Whether cfg's fault-free schedule (with `microbatches` per pipeline) fits each worker's memory."""
    if cfg.memory is None:
        return True
    m = cfg.microbatches if microbatches is None else microbatches
    return bool(np.all(in_flight(cfg.order, cfg.stages, m, cfg.backward) <= cfg.memory.capacity(extra_static)))


def _no_memory(result, what: str):
    return result(period=math.inf, detail=f"limited by memory: {what}", memory_limited=True)


def work_bound(cfg: PipelineConfig, mask: np.ndarray) -> float:
    """Return the work bound of the busiest stage, max_s ceil(m d / (d - f_s)) t_s.

    Each survivor of stage s runs ceil(m d / (d - f_s)) micro-batches, so no
    schedule's period is below it (docs: explanations/recycle.md, 'What is
    reproduced').

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline.
    mask : numpy.ndarray
        (d, p) boolean mask of failed workers.

    Returns
    -------
    float
        The bound on the period; inf when a stage has no survivor.
    """
    return load_bound(cfg, mask)


@functools.lru_cache(maxsize=16)
def ideal(cfg: PipelineConfig) -> Schedule:
    """The fault-free schedule of cfg (cached; its arrays are read-only)."""
    return frozen(fault_free(cfg))


@functools.lru_cache(maxsize=1024)
def _single_pipeline_period(cfg: PipelineConfig, stages: tuple, microbatches: int, memory=None) -> float:
    """Period of one pipeline with these per-stage (F, B, W) times, m micro-batches and
    per-stage memory (`group_memory`; None without a budget), cfg's schedule kind."""
    f, b, w = (list(x) for x in zip(*stages))
    one = cfg.replace(stages=len(stages), replicas=1, microbatches=microbatches, fwd=f, bwd_input=b, bwd_weight=w,
                      memory=memory)
    return fault_free(one).period


def evaluate(cfg: PipelineConfig, strategy: str, failed=None, options: StrategyOptions | None = None) -> StrategyResult:
    """Return the steady state of `strategy` with the failed workers `failed`.

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline.
    strategy : str
        One of `RECOVERY_STRATEGIES`.
    failed : dict, iterable of tuple or numpy.ndarray, optional
        {stage: count}, (replica, stage) pairs, or a boolean (d, p) mask;
        None for no failure.
    options : StrategyOptions, optional
        The strategies' knobs; defaults when None.

    Returns
    -------
    StrategyResult
        The steady state.

    Raises
    ------
    PipelineError
        On an unknown strategy or invalid failures.
    """
    check_strategy(strategy)
    options = options or StrategyOptions()
    mask = failed if isinstance(failed, np.ndarray) and failed.dtype == bool else \
        failure_mask(failed, cfg.replicas, cfg.stages)
    if mask.shape != (cfg.replicas, cfg.stages):
        raise PipelineError("failed", f"a mask must have shape {(cfg.replicas, cfg.stages)} (got {mask.shape})")
    base = ideal(cfg)
    result = functools.partial(StrategyResult, strategy=strategy, ideal_period=base.period,
                               work_bound=work_bound(cfg, mask), global_batch=cfg.microbatches * cfg.replicas,
                               n_failed=int(mask.sum()))
    return _RULES[strategy](cfg, mask, options, base, result)


def recycle_adapted(cfg: PipelineConfig, mask: np.ndarray, options: StrategyOptions):
    """Return ReCycle's adapted plan (`recycle_plan`) under `options`, for a mask with failures.

    Its ``period`` is ReCycle's steady state (`evaluate` adds the schedule,
    which a run's replay does not need); None when a stage has no room for a
    micro-batch (period inf).

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline.
    mask : numpy.ndarray
        (d, p) boolean mask of failed workers: at least one, and a survivor at every stage.
    options : StrategyOptions
        The strategies' knobs.

    Returns
    -------
    AdaptedPlan or None
        The plan.
    """
    return recycle_plan(cfg, mask, decoupled=options.recycle_decoupled, staggered=options.recycle_staggered,
                        method=options.method)


def _recycle(cfg, mask, options, base, result):
    if not memory_fits(cfg):  # no job runs to adapt: a failure must not make one appear
        return _no_memory(result, "the fault-free schedule does not fit")
    if not mask.any():
        return result(period=base.period, schedule=base, detail="fault-free schedule")
    if np.any(mask.all(axis=0)):
        return result(period=math.inf, detail="every replica of a stage lost")
    adapted = recycle_adapted(cfg, mask, options)
    if adapted is None:
        return result(period=math.inf, detail="limited by memory: a stage holds no micro-batch", memory_limited=True)
    kind = recycle_kind(cfg, options.recycle_decoupled, options.recycle_staggered)
    load = -(-(cfg.microbatches * cfg.replicas) // (cfg.replicas - mask.sum(axis=0)))
    return result(period=adapted.period, schedule=plan_schedule(kind, adapted), load_bound=adapted.lower_bound,
                  optimal=adapted.optimal, planning_time=adapted.planning_time,
                  detail=f"up to {int(load.max())} micro-batches a worker; {adapted.method}, "
                         f"{'optimal' if adapted.optimal else f'within {adapted.gap:.1%} of the bound'}")


def _restart(cfg, mask, options, base, result):
    if not memory_fits(cfg):
        return _no_memory(result, "the fault-free schedule does not fit")
    full = cfg.microbatches * float(cfg.stage_time.max())
    return result(period=base.period, schedule=base, detail="restarted on replacements", load_bound=full)


def _spare(cfg, mask, options, base, result):
    if not memory_fits(cfg):
        return _no_memory(result, "the fault-free schedule does not fit")
    n = int(mask.sum())
    if n > options.spares:
        return result(period=math.inf, detail=f"{n} failed > {options.spares} spares: stalled")
    return result(period=base.period, schedule=base, detail=f"{n} of {options.spares} spares in use",
                  load_bound=cfg.microbatches * float(cfg.stage_time.max()))


def _drop(cfg, mask, options, base, result):
    whole = int(np.sum(~mask.any(axis=1)))
    if whole == 0:
        return result(period=math.inf, detail="no replica left whole")
    m_each = -(-(cfg.microbatches * cfg.replicas) // whole)
    if not memory_fits(cfg, m_each):
        return _no_memory(result, f"{m_each} micro-batches a pipeline do not fit")
    schedule = fault_free(cfg.replace(replicas=1, microbatches=m_each))
    return result(period=schedule.period, schedule=schedule, detail=f"{whole} replicas x {m_each} micro-batches",
                  load_bound=m_each * float(cfg.stage_time.max()))


def _oobleck(cfg, mask, options, base, result):
    if np.any(mask.all(axis=0)):
        return result(period=math.inf, detail="every copy of a stage lost")
    min_stages = cfg.stages if options.oobleck_min_stages is None else options.oobleck_min_stages
    fitting = smallest_fitting_template(cfg, min_stages)
    if fitting is None:
        return _no_memory(result, "no pipeline template fits")
    plan = oobleck_plan(cfg, int(mask.size - mask.sum()), fitting)
    if plan is None:
        what = f"too few nodes for one pipeline of {fitting} stages (fewer do not fit in memory)" \
            if fitting > min(min_stages, cfg.stages) else "too few nodes for one pipeline"
        return result(period=math.inf, detail=what, memory_limited=fitting > min(min_stages, cfg.stages))
    period, sizes, batches = plan
    busiest = max(mb * float(group_stages(cfg.times, k).sum(axis=0).max()) for k, mb in zip(sizes, batches))
    return result(period=period, detail=" + ".join(f"{k}-stage x {mb}" for k, mb in zip(sizes, batches)),
                  load_bound=busiest, memory_limited=fitting > min(min_stages, cfg.stages))


def _bamboo(cfg, mask, options, base, result):
    d, p = mask.shape
    broken = mask & np.roll(mask, -1, axis=1)  # worker and its successor (which it backs up) both down
    dropped = broken.any(axis=1) if p > 1 else mask.any(axis=1)
    kept = int(np.sum(~dropped))
    if kept == 0:
        return result(period=math.inf, detail="every pipeline lost two adjacent workers")
    m_each = -(-(cfg.microbatches * d) // kept)
    if cfg.memory is not None and not memory_fits(cfg, m_each, extra_static=np.roll(cfg.memory.static, -1)):
        return _no_memory(result, "the redundant copy of the next stage does not fit")
    period = bamboo_period(cfg, m_each, options.bamboo_overhead)
    # A worker whose successor is down runs both stages (it holds the copy).
    t = cfg.stage_time
    load = np.where(mask, 0.0, t + np.where(np.roll(mask, -1, axis=1), np.roll(t, -1), 0.0))[~dropped]
    busiest = m_each * float(load.max())
    takeover = bool(mask[~dropped].any())
    if takeover:
        slowed = period * options.bamboo_slowdown
        if not math.isfinite(slowed):  # inf would read as "cannot run"
            raise PipelineError("bamboo_slowdown", f"{options.bamboo_slowdown!r} times the period {period:.3g} "
                                                   "overflows float64")
        period = max(slowed, busiest)
    detail = f"{kept} pipelines" + (", takeover" if takeover else "") + (
        f", {d - kept} restarted without" if kept < d else "")
    return result(period=period, detail=detail, load_bound=busiest)


_RULES = {"recycle": _recycle, "restart": _restart, "spare": _spare, "drop-pipeline": _drop, "oobleck": _oobleck,
          "bamboo": _bamboo}


# -- Oobleck: templates on the surviving nodes ---------------------------------


def check_grouping_memory(p: int, k: int):
    """Refuse a `stage_groups` of `p` stages into `k` whose tables would pass the memory budget."""
    check_memory("stages", 16 * (k + 1) * (p + 1), f"grouping {p} stages into {k} (Oobleck's templates) would")


def stage_groups(times: np.ndarray, k: int) -> list[tuple[int, int]]:
    """Contiguous groups [a, b) of the p stages into k, minimising the slowest
    group's F + B + W (DP)."""
    p = times.shape[1]
    check_grouping_memory(p, k)
    total = times.sum(axis=0)
    prefix = np.concatenate([[0.0], np.cumsum(total)])
    best = np.full((k + 1, p + 1), math.inf)
    cut = np.zeros((k + 1, p + 1), dtype=int)
    best[0, 0] = 0.0
    for g in range(1, k + 1):
        for end in range(g, p - (k - g) + 1):
            for begin in range(g - 1, end):
                cost = max(best[g - 1, begin], prefix[end] - prefix[begin])
                if cost < best[g, end]:
                    best[g, end], cut[g, end] = cost, begin
    bounds = [p]
    for g in range(k, 0, -1):
        bounds.append(cut[g, bounds[-1]])
    bounds = bounds[::-1]
    return list(zip(bounds[:-1], bounds[1:]))


def group_stages(times: np.ndarray, k: int) -> np.ndarray:
    """The (3, k) F, B and W times of `stage_groups`' k groups."""
    return np.stack([times[:, a:b].sum(axis=1) for a, b in stage_groups(times, k)], axis=1)


def group_memory(cfg: PipelineConfig, k: int) -> StageMemory | None:
    """The memory of `stage_groups`' k groups: a group's worker holds all its stages'
    static bytes and their activations per micro-batch; None without a budget."""
    if cfg.memory is None:
        return None
    static, act = np.asarray(cfg.memory.static), np.asarray(cfg.memory.activation)
    groups = stage_groups(cfg.times, k)
    return StageMemory(cfg.memory.budget, tuple(float(static[a:b].sum()) for a, b in groups),
                       tuple(float(act[a:b].sum()) for a, b in groups))


def smallest_fitting_template(cfg: PipelineConfig, min_stages: int) -> int | None:
    """The fewest stages (>= min_stages) an Oobleck template may have so that each
    worker holds its group's parameters and 1F1B's micro-batches in flight; None
    when not even p stages fit."""
    if cfg.memory is None:
        return min(min_stages, cfg.stages)
    for k in range(min(min_stages, cfg.stages), cfg.stages + 1):
        memory = group_memory(cfg, k)
        held = in_flight("1f1b", k, cfg.microbatches, cfg.backward)
        if np.all(np.asarray(memory.static) + held * np.asarray(memory.activation) <= cfg.memory.budget):
            return k
    return None


def oobleck_plan(cfg: PipelineConfig, nodes: int, min_stages: int):
    """(period, template sizes, micro-batches each) of the best re-instantiation on
    `nodes` nodes, or None when not even one pipeline fits."""
    p, total_mb = cfg.stages, cfg.microbatches * cfg.replicas
    min_stages = min(min_stages, p)
    best = None
    for n in range(max(1, nodes // p), nodes // min_stages + 1):
        base, extra = divmod(nodes, n)
        if base > p:
            sizes = [p] * n
        elif base < min_stages:
            continue
        else:
            sizes = [min(base + 1, p)] * extra + [base] * (n - extra)
        templates = {k: (tuple(map(tuple, group_stages(cfg.times, k).T)), group_memory(cfg, k)) for k in set(sizes)}
        period, batches = _split_batch(cfg, [templates[k] for k in sizes], total_mb)
        if best is None or period < best[0]:
            best = (period, sizes, batches)
    return best


def _split_batch(cfg, pipelines, total_mb):
    """Deal micro-batches one at a time to the pipeline whose period grows least, the first such on a tie
    (`pipelines`: each one's per-stage times and memory). A heap of each pipeline's period with one more
    (16,384 pipelines dealt 16,384 micro-batches in over 300 CPU s by a scan a deal)."""
    batches = [0] * len(pipelines)
    periods = [0.0] * len(pipelines)
    trial = [(_single_pipeline_period(cfg, times, 1, memory), i) for i, (times, memory) in enumerate(pipelines)]
    heapq.heapify(trial)
    for _ in range(total_mb):
        period, i = heapq.heappop(trial)
        batches[i] += 1
        periods[i] = period
        times, memory = pipelines[i]
        heapq.heappush(trial, (_single_pipeline_period(cfg, times, batches[i] + 1, memory), i))
    return max(periods), batches


# -- Bamboo: redundant forwards in the bubbles --------------------------------------


@functools.lru_cache(maxsize=256)
def bamboo_period(cfg: PipelineConfig, microbatches: int, overhead: float | None = None) -> float:
    """Fault-free period of one Bamboo pipeline with m micro-batches: each worker
    also runs the next stage's forward (cyclically) after its own, deferred into
    idle time; or the fault-free period times (1 + overhead) when given."""
    one = cfg.replace(replicas=1, microbatches=microbatches)
    if overhead is not None:
        period = fault_free(one).period * (1.0 + overhead)
        if not math.isfinite(period):  # inf would read as "cannot run"
            raise PipelineError("bamboo_overhead", f"{overhead!r} makes the period overflow float64")
        return period
    return bamboo_schedule(one).period


def bamboo_schedule(cfg: PipelineConfig, n_iterations: int = N_ITERATIONS, n_measured: int = N_MEASURED) -> Schedule:
    """Return Bamboo's schedule: each stage also runs the next stage's forward, in its bubbles.

    The redundant forwards are list-scheduled into idle time only (their
    priority is after every fault-free task), so the fault-free tasks keep
    their order.

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline.
    n_iterations, n_measured : int
        As in `fault_free`.

    Returns
    -------
    Schedule
        The schedule with the redundant computation.
    """
    n_iterations, n_measured = check_iterations(cfg, n_iterations, n_measured)
    d, m, p = cfg.replicas, cfg.microbatches, cfg.stages
    redundant = np.roll(np.asarray(cfg.fwd, dtype=float), -1)  # stage s also runs stage s+1's forward
    graph = build_graph(cfg, n_iterations, redundant=redundant)
    reference = fault_free(cfg, n_iterations, n_measured)
    n_compute = graph.redundant_base
    priority = np.zeros(graph.size)
    priority[:n_compute] = reference.start[:n_compute]  # same indices below the redundant block
    priority[graph.kind == R_KIND] = after_all(reference.start)  # only into idle time
    its = np.arange(n_iterations)[:, None]
    chains = []
    for r in range(d):
        for s in range(p):
            types, micro = stage_order(cfg.order, p, m, s)
            tasks = task_index(graph.shape, its, r, micro[None, :], s, types[None, :]).ravel()
            chains.append(tasks[graph.worker[tasks] >= 0])
            chains.append(graph.redundant_base + ((its * d + r) * m + np.arange(m)[None, :]) * p + s)
    chains = [np.ascontiguousarray(c.ravel()) for c in chains]
    _, _, sequence = greedy(graph, chains, priority)
    start, end = resweep(graph, sequence)
    return measure(graph, start, end, n_measured)


def iteration_time(stages: int, replicas: int, microbatches: int, fwd=1.0, bwd_input=1.0, bwd_weight=1.0, *,
                   strategy: str = "recycle", failed=None, **options) -> float:
    """Return the steady-state time per iteration of `strategy` with `failed` workers down.

    Parameters
    ----------
    stages : int
        Pipeline stages p.
    replicas : int
        Replicas d.
    microbatches : int
        Micro-batches m per replica.
    fwd : float or sequence of float, default 1.0
        Forward time per stage.
    bwd_input : float or sequence of float, default 1.0
        Input-gradient time per stage.
    bwd_weight : float or sequence of float, default 1.0
        Weight-gradient time per stage.
    strategy : str, default "recycle"
        One of `RECOVERY_STRATEGIES`.
    failed : dict or iterable of tuple, optional
        {stage: count} or (replica, stage) pairs.
    **options
        PipelineConfig's (order, backward, optimizer, p2p_delay,
        reroute_delay, optimizer_time, memory) and StrategyOptions' (spares,
        bamboo_slowdown, ..., method: how ReCycle plans, "auto" by default).

    Returns
    -------
    float
        The period; inf when the strategy cannot run.

    Raises
    ------
    PipelineError
        On an invalid parameter.
    """
    config_fields = {f.name for f in dataclasses.fields(PipelineConfig)}
    option_fields = {f.name for f in dataclasses.fields(StrategyOptions)}
    unknown = set(options) - config_fields - option_fields
    if unknown:
        known = sorted((config_fields | option_fields) - {"stages", "replicas", "microbatches", "fwd", "bwd_input",
                                                            "bwd_weight"})
        raise PipelineError(sorted(unknown)[0], f"unknown option; options are {', '.join(known)}")
    cfg = PipelineConfig(stages=stages, replicas=replicas, microbatches=microbatches, fwd=fwd, bwd_input=bwd_input,
                         bwd_weight=bwd_weight, **{k: v for k, v in options.items() if k in config_fields})
    opts = StrategyOptions(**{k: v for k, v in options.items() if k in option_fields})
    return evaluate(cfg, strategy, failed, opts).period
