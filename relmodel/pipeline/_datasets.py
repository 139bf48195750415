"""Labelled results: the arrays of `strategies`, `schedule` and `runs` as xarray Datasets."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

import numpy as np
import xarray as xr

from .. import _labels as labels
from .._checks import check_choice, check_distinct
from ._config import PipelineConfig, PipelineError, check_count, empty_mask, show, spread_failures
from ._recycle import load_bound
from ._runs import RunModel, ideal_steps, monte_carlo_paths, recycle_periods, replay_paths, run_progress
from ._schedule import Schedule
from ._strategies import RECOVERY_STRATEGIES, StrategyOptions, check_grouping_memory, check_strategy, evaluate, ideal
from ._traces import Trace, read_node_trace

PIPELINE_RNG_SCHEME = ("Philox4x32-10; key = (seed, scenario key); counter = (draw lo, draw hi, run lo, run hi); "
              "two 53-bit uniforms on (0, 1] per call")
BOUNDS = ("low", "high")


def _provenance(title: str, cfg: PipelineConfig, options: StrategyOptions | None = None, **extra) -> dict:
    attrs = labels.provenance(
        title, stages=cfg.stages, replicas=cfg.replicas, microbatches=cfg.microbatches,
        fwd=list(cfg.fwd), bwd_input=list(cfg.bwd_input), bwd_weight=list(cfg.bwd_weight), order=cfg.order,
        backward=cfg.backward, optimizer=cfg.optimizer, p2p_delay=cfg.p2p_delay, reroute_delay=cfg.reroute_delay,
        optimizer_time=cfg.optimizer_time)
    if options is not None:
        for name, value in vars(options).items():
            attrs[name] = "simulated" if value is None else (int(value) if isinstance(value, bool) else value)
    for name, value in extra.items():
        attrs[name] = int(value) if isinstance(value, bool) else value
    return attrs


def _strategies(strategies) -> list[str]:
    strategies = [strategies] if isinstance(strategies, str) else list(strategies)
    if not strategies:
        raise PipelineError("strategies", "need at least one strategy")
    return check_distinct("strategies", [check_strategy(s) for s in strategies], PipelineError)


def throughput_table(cfg: PipelineConfig, n_failures=range(5), strategies=RECOVERY_STRATEGIES,
                     options: StrategyOptions | None = None, progress: bool | None = None) -> xr.Dataset:
    """Return the steady-state throughput of each strategy with n failed workers.

    The failed workers are placed by `spread_failures` (distinct replicas,
    stages spaced out). Dims (strategy, n_failures).

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline and its schedule.
    n_failures : iterable of int, default range(5)
        Failed worker counts (at most the d * p workers).
    strategies : str or sequence of str, default RECOVERY_STRATEGIES
        The fault-tolerance strategies to evaluate.
    options : StrategyOptions, optional
        Knobs of the strategies (default `StrategyOptions()`).
    progress : bool, optional
        A bar on stderr, a step per strategy and failure count (a ReCycle
        plan of a large pipeline takes seconds); None (the default): where
        stderr is a terminal. The numbers do not depend on it.

    Returns
    -------
    xarray.Dataset
        `period` (time units per iteration; inf: cannot run), `throughput`
        (micro-batches per time unit), `fraction_of_ideal`, `detail`,
        `work_bound`, `recycle_target` and `failed_stages`, with provenance attrs.

    Raises
    ------
    PipelineError
        If a strategy is unknown, none is given, or a failure count is negative
        or above the worker count.
    """
    options = options or StrategyOptions()
    strategies = _strategies(strategies)
    if isinstance(n_failures, range) and len(n_failures):  # checked before walking it (max() would walk it)
        top = max(n_failures[0], n_failures[-1])
        if top > cfg.n_workers:
            raise PipelineError("n_failures", f"{show(top)} failures but only {cfg.n_workers} workers")
    counts = sorted(check_distinct("n_failures", [check_count("n_failures", n, low=0) for n in n_failures],
                                   PipelineError))
    if counts and counts[-1] > cfg.n_workers:
        raise PipelineError("n_failures", f"{counts[-1]} failures but only {cfg.n_workers} workers")
    masks = [spread_failures(n, cfg.replicas, cfg.stages) for n in counts]
    if "oobleck" in strategies:  # before any strategy's work: its templates group up to every stage
        check_grouping_memory(cfg.stages, cfg.stages)
    with _progress_bar(progress, len(strategies) * len(masks), "strategies") as bar:
        results = []
        for s in strategies:
            row = []
            for n, mask in zip(counts, masks):
                bar.set_postfix_str(f"{s}, {n} down")
                row.append(evaluate(cfg, s, mask, options))
                bar.update(1)
            results.append(row)
    grab = lambda name: np.array([[getattr(r, name) for r in row] for row in results])  # noqa: E731
    t0 = ideal(cfg).period
    bound = np.array([load_bound(cfg, mask) for mask in masks])
    ds = xr.Dataset(
        {
            "period": (("strategy", "n_failures"), grab("period"),
                       {"long_name": "steady-state time per iteration (inf: cannot run)", "units": "time unit"}),
            "throughput": (("strategy", "n_failures"), grab("throughput"),
                           {"long_name": "micro-batches per time unit (global batch / period)",
                            "units": "1/time unit"}),
            "fraction_of_ideal": (("strategy", "n_failures"), grab("fraction_of_ideal"),
                                  {"long_name": "throughput / fault-free throughput", "units": "1"}),
            "detail": (("strategy", "n_failures"), grab("detail").astype(str),
                       {"long_name": "what the strategy runs"}),
            "lower_bound": (("strategy", "n_failures"), grab("load_bound"),
                            {"long_name": "a proven lower bound on the period of what the strategy runs "
                                          "(ReCycle: its planner's)", "units": "time unit"}),
            "optimal": (("strategy", "n_failures"), np.array([[bool(r.optimal) for r in row] for row in results]),
                        {"long_name": "ReCycle: period proven least"}),
            "planning_time": (("strategy", "n_failures"), grab("planning_time"),
                              {"long_name": "ReCycle: planner's wall time", "units": "s"}),
            "memory_limited": (("strategy", "n_failures"), grab("memory_limited"),
                               {"long_name": "the memory budget ruled the strategy out or limited it"}),
            "work_bound": ("n_failures", bound, {"long_name": "max_s ceil(m d / (d - f_s)) t_s: no schedule "
                                                              "bound to stages does better", "units": "time unit"}),
            "recycle_target": ("n_failures", np.maximum(t0, bound),
                               {"long_name": "ReCycle's aim max(T0, work bound)", "units": "time unit"}),
            "failed_stages": (("n_failures", "stage"), np.array([m.sum(axis=0) for m in masks]).reshape(len(masks), -1),
                              {"long_name": "failed workers per stage", "units": "1"}),
        },
        coords={"strategy": ("strategy", strategies), "n_failures": ("n_failures", counts, {"units": "1"}),
                "stage": ("stage", np.arange(cfg.stages))},
        attrs=_provenance("relmodel pipeline: steady-state throughput against failed workers", cfg, options,
                          ideal_period=t0, placement="failure i on replica i mod d, stages spaced out"),
    )
    return ds


def schedule_dataset(schedule: Schedule, cfg: PipelineConfig) -> xr.Dataset:
    """Return the period, busy time and bubble fraction per worker of a schedule.

    Dims (replica, stage).

    Parameters
    ----------
    schedule : Schedule
        The schedule run (`relmodel.pipeline._schedule`).
    cfg : PipelineConfig
        The pipeline it was run for (recorded in the attrs).

    Returns
    -------
    xarray.Dataset
        `busy` (work per iteration, time units), `bubble_fraction` and
        `period` (time units per iteration), with provenance attrs.
    """
    return xr.Dataset(
        {
            "busy": (("replica", "stage"), schedule.busy, {"long_name": "work per iteration", "units": "time unit"}),
            "bubble_fraction": (("replica", "stage"), schedule.bubble_fraction,
                                {"long_name": "idle share of the period (NaN: no tasks)", "units": "1"}),
            "period": ((), schedule.period, {"long_name": "steady-state time per iteration", "units": "time unit"}),
        },
        coords={"replica": ("replica", np.arange(schedule.busy.shape[0])),
                "stage": ("stage", np.arange(schedule.busy.shape[1]))},
        attrs=_provenance("relmodel pipeline schedule", cfg, n_iterations=schedule.graph.n_iterations),
    )


def _interval(values: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """(mean, low, high): a Student-t interval over runs (NaN bounds for one run)."""
    n = values.size
    mean = float(values.mean())
    if n < 2:
        return mean, math.nan, math.nan
    from scipy.special import stdtrit  # Student t's quantile (what stats.t.ppf calls), without scipy.stats' import

    half = float(stdtrit(n - 1, 0.5 + confidence / 2) * values.std(ddof=1) / math.sqrt(n))
    return mean, mean - half, mean + half


def _recycle_states(cfg, paths) -> np.ndarray:
    """The distinct failed-workers-per-stage states of the paths: one ReCycle schedule each."""
    return np.unique(paths.down.reshape(-1, cfg.replicas, cfg.stages).sum(axis=1), axis=0)


def _work_units(cfg, strategies, paths) -> int:
    """Progress units of `_run_variables`: a ReCycle state each (the bulk of the time), a strategy each else."""
    return sum(len(_recycle_states(cfg, paths)) if s == "recycle" else 1 for s in strategies)


def _shown(progress) -> bool:
    """Whether a bar shows: progress=True, or None on a terminal (`relmodel._feedback.enabled`)."""
    from .. import _feedback as feedback

    return feedback.enabled(progress)


def _progress_bar(progress, total: int, desc: str, unit: str = "step"):
    """A bar (`relmodel._feedback.progress_bar`) for progress=True, a silent one for False, and one on a
    terminal only for None; where it shows, a note first for the pipeline kernels about to compile."""
    from .. import _feedback as feedback

    if _shown(progress):
        feedback.announce_compile("relmodel.pipeline._schedule_kernel", what="pipeline kernels")
        feedback.announce_compile("relmodel.pipeline._plan_kernel", ("search_states",), what="ReCycle planner")
    return feedback.progress_bar(total, desc, unit=unit, enabled_=progress)


def _run_variables(cfg, strategies, options, model, paths, confidence, bar=None):
    """Per-strategy throughput and fraction of ideal, with intervals over runs."""
    ideal_count = ideal_steps(cfg, model, paths.horizon)
    batch = cfg.microbatches * cfg.replicas
    fraction = np.empty((len(strategies), 3))
    for i, s in enumerate(strategies):
        if s == "recycle" and bar is not None and not bar.disable:
            # Plan the ReCycle states here, the bar a step a state as each batch ends; run_progress
            # then finds them in recycle_periods' cache (the same numbers, computed once).
            recycle_periods(cfg, options, _recycle_states(cfg, paths), progress=bar.update)
        steps = run_progress(cfg, s, options, model, paths)
        fraction[i] = _interval(steps / ideal_count, confidence)
        if bar is not None and s != "recycle":
            bar.update(1)
    ideal_rate = batch / (ideal(cfg).period * model.time_unit)
    return fraction, ideal_rate


def simulate_runs(cfg: PipelineConfig, model: RunModel | None = None, *, strategies=RECOVERY_STRATEGIES,
                  options: StrategyOptions | None = None, n_runs: int = 1000, seed: int = 0,
                  scenario_key: int = 0, confidence: float = 0.95, progress: bool | None = None) -> xr.Dataset:
    """Simulate worker failures and repairs over `model.duration` (Monte Carlo).

    The time-average throughput per strategy with its confidence interval over
    runs, the share of time with n workers down, and each strategy's steady
    state with n down. Dims (strategy, n_failures, bound).

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline and its schedule.
    model : RunModel, optional
        Failures, repairs and costs (default `RunModel()`).
    strategies : str or sequence of str, default RECOVERY_STRATEGIES
        The fault-tolerance strategies to simulate.
    options : StrategyOptions, optional
        Knobs of the strategies (default `StrategyOptions()`).
    n_runs, seed, scenario_key : int
        Runs, and the keys of their random streams.
    confidence : float
        Of the intervals over runs.
    progress : bool, optional
        A progress bar on stderr: a step per ReCycle state (the bulk of the
        time), one per other strategy; None (the default): where stderr is a
        terminal. The numbers do not depend on it.

    Returns
    -------
    xarray.Dataset
        `fraction_of_ideal` and `throughput` (micro-batches per hour) with
        their intervals, `ideal_throughput`, `time_fraction`,
        `steady_fraction_of_ideal` and `failures_per_run`, with provenance attrs.

    Raises
    ------
    PipelineError
        If a strategy is unknown, none is given, or `n_runs`, `seed`,
        `scenario_key` or `confidence` is out of range.
    """
    model = model or RunModel()
    options = options or StrategyOptions()
    strategies = _strategies(strategies)
    _check_run_args(n_runs, seed, scenario_key, confidence)
    paths = monte_carlo_paths(cfg, model, options.spares, n_runs, seed, scenario_key)
    with _progress_bar(progress, _work_units(cfg, strategies, paths) if _shown(progress) else 0, "runs") as bar:
        fraction, ideal_rate = _run_variables(cfg, strategies, options, model, paths, confidence, bar)
    occupancy = paths.occupancy()
    counts = np.arange(occupancy.size)
    steady = throughput_table(cfg, counts, strategies, options)
    ds = xr.Dataset(
        {
            "fraction_of_ideal": ("strategy", fraction[:, 0],
                                  {"long_name": "time-average throughput / fault-free throughput", "units": "1"}),
            "fraction_of_ideal_ci": (("strategy", "bound"), fraction[:, 1:],
                                     {"long_name": f"{confidence:.0%} confidence interval over runs", "units": "1"}),
            "throughput": ("strategy", fraction[:, 0] * ideal_rate,
                           {"long_name": "time-average micro-batches per hour", "units": "1/h"}),
            "throughput_ci": (("strategy", "bound"), fraction[:, 1:] * ideal_rate,
                              {"long_name": f"{confidence:.0%} confidence interval over runs", "units": "1/h"}),
            "ideal_throughput": ((), ideal_rate, {"long_name": "fault-free micro-batches per hour", "units": "1/h"}),
            "time_fraction": ("n_failures", occupancy,
                              {"long_name": "share of run time with n workers down", "units": "1"}),
            "steady_fraction_of_ideal": (("strategy", "n_failures"), steady.fraction_of_ideal.values,
                                         {"long_name": "steady-state throughput / fault-free with n workers down "
                                                       "(failures spread over replicas)", "units": "1"}),
            "failures_per_run": ((), float(paths.failures_per_run.mean()),
                                 {"long_name": "mean worker failures per run", "units": "1"}),
        },
        coords={"strategy": ("strategy", strategies), "n_failures": ("n_failures", counts, {"units": "1"}),
                "bound": ("bound", list(BOUNDS))},
        attrs=_provenance("relmodel pipeline: throughput over runs with failures and repairs", cfg, options,
                          seed=seed, scenario_key=scenario_key, rng=PIPELINE_RNG_SCHEME, n_runs=n_runs,
                          confidence=confidence, **_model_attrs(model)),
    )
    return ds


def replay_traces(cfg: PipelineConfig, traces, model: RunModel | None = None, *, strategies=RECOVERY_STRATEGIES,
                  options: StrategyOptions | None = None, n_runs: int = 8, seed: int = 0,
                  confidence: float = 0.95, progress: bool | None = None) -> xr.Dataset:
    """Replay node traces onto the d * p workers, with random placements of nodes on slots.

    Each trace (a path, a `Trace`, or a mapping name -> either) is replayed
    `n_runs` times: time-average throughput per strategy and trace, with its
    interval over placements. Dims (strategy, trace, bound, n_failures).

    Parameters
    ----------
    cfg : PipelineConfig
        The pipeline and its schedule.
    traces : path, Trace, or a sequence or mapping name -> either
        The node traces (`read_node_trace` reads a path).
    model : RunModel, optional
        As in `simulate_runs`.
    strategies : str or sequence of str, default RECOVERY_STRATEGIES
        The fault-tolerance strategies to replay.
    options : StrategyOptions, optional
        As in `simulate_runs`.
    n_runs, seed : int
        Placements per trace, and their seed.
    confidence : float
        Of the intervals over placements.
    progress : bool
        As in `simulate_runs`.

    Returns
    -------
    xarray.Dataset
        `fraction_of_ideal` with its interval, `throughput` (micro-batches per
        hour), `ideal_throughput`, `time_fraction`, `duration` (hours) and
        `max_nodes`, with provenance attrs.

    Raises
    ------
    PipelineError
        If a strategy is unknown, a trace has no events, trace names repeat,
        or `n_runs`, `seed` or `confidence` is out of range.
    """
    model = model or RunModel()
    options = options or StrategyOptions()
    strategies = _strategies(strategies)
    _check_run_args(n_runs, seed, 0, confidence)
    loaded = _load_traces(traces)
    fractions, occupancies, durations, maxima = [], [], [], []
    all_paths = [replay_paths(cfg, trace, model, n_runs, seed, key) for key, trace in enumerate(loaded)]
    total = sum(_work_units(cfg, strategies, paths) for paths in all_paths) if _shown(progress) else 0
    with _progress_bar(progress, total, "trace replay") as bar:
        for trace, paths in zip(loaded, all_paths):
            fraction, ideal_rate = _run_variables(cfg, strategies, options, model, paths, confidence, bar)
            fractions.append(fraction)
            occupancies.append(paths.occupancy())
            durations.append(trace.duration)
            maxima.append(int(trace.nodes_present().max()))
    width = max(o.size for o in occupancies)
    occupancy = np.array([np.pad(o, (0, width - o.size)) for o in occupancies])
    fraction = np.stack(fractions, axis=1)  # (strategy, trace, 3)
    names = [t.name for t in loaded]
    return xr.Dataset(
        {
            "fraction_of_ideal": (("strategy", "trace"), fraction[..., 0],
                                  {"long_name": "time-average throughput / fault-free throughput", "units": "1"}),
            "fraction_of_ideal_ci": (("strategy", "trace", "bound"), fraction[..., 1:],
                                     {"long_name": f"{confidence:.0%} interval over node placements", "units": "1"}),
            "throughput": (("strategy", "trace"), fraction[..., 0] * ideal_rate,
                           {"long_name": "time-average micro-batches per hour", "units": "1/h"}),
            "ideal_throughput": ((), ideal_rate, {"long_name": "fault-free micro-batches per hour", "units": "1/h"}),
            "time_fraction": (("trace", "n_failures"), occupancy,
                              {"long_name": "share of the trace with n workers down", "units": "1"}),
            "duration": ("trace", np.array(durations), {"long_name": "trace length", "units": "h"}),
            "max_nodes": ("trace", np.array(maxima), {"long_name": "most nodes present at once", "units": "1"}),
        },
        coords={"strategy": ("strategy", strategies), "trace": ("trace", names),
                "bound": ("bound", list(BOUNDS)), "n_failures": ("n_failures", np.arange(width), {"units": "1"})},
        attrs=_provenance("relmodel pipeline: throughput replaying node traces", cfg, options, seed=seed,
                          rng=PIPELINE_RNG_SCHEME, n_runs=n_runs, confidence=confidence, **_model_attrs(model)),
    )


def _load_traces(traces) -> list[Trace]:
    if isinstance(traces, Mapping):
        items = [(name, t) for name, t in traces.items()]
    elif isinstance(traces, (str, Trace)) or hasattr(traces, "__fspath__"):
        items = [(None, traces)]
    else:
        items = [(None, t) for t in traces]
    out = []
    for name, t in items:
        trace = t if isinstance(t, Trace) else read_node_trace(t, name)
        if trace.time.size == 0:
            raise PipelineError("traces", f"trace {trace.name!r} has no events")
        out.append(trace)
    if len({t.name for t in out}) != len(out):
        raise PipelineError("traces", "trace names must be distinct (pass a mapping name -> trace)")
    return out


def _model_attrs(model: RunModel) -> dict:
    hours = {"duration", "repair_time", "swap_time", "detection_time", "reconfig_time", "restart_cost",
             "checkpoint_interval", "time_unit"}
    return {f"{k}_h" if k in hours else k: v for k, v in vars(model).items()}


PLACEMENTS = ("spread", "stacked")


def failure_set(placement: str, n: int, replicas: int, stages: int, stage: int = 0) -> np.ndarray | None:
    """Return a set of n failed workers: "spread" or "stacked".

    "spread" places them as `spread_failures` does; "stacked" puts them all at
    `stage`, on replicas 0..n-1.

    Parameters
    ----------
    placement : {"spread", "stacked"}
        How the failures are placed.
    n, replicas, stages : int
        As in `spread_failures`.
    stage : int, default 0
        The stage of "stacked" failures, in 0..p-1.

    Returns
    -------
    numpy.ndarray or None
        The (d, p) boolean mask; None where the placement cannot hold n.

    Raises
    ------
    PipelineError
        If the placement is unknown or a count or `stage` is out of range.
    """
    placement = check_choice("placement", placement, PLACEMENTS, PipelineError)
    n = check_count("n_failures", n, low=0)
    mask = empty_mask(replicas, stages)
    replicas, stages = mask.shape
    if isinstance(stage, bool) or not isinstance(stage, numbers.Integral) or not 0 <= stage < stages:
        raise PipelineError("stage", f"unknown stage {show(stage)} (stages are 0..{stages - 1})")
    if placement == "spread":
        return spread_failures(n, replicas, stages) if n <= replicas * stages else None
    if n > replicas:
        return None
    mask[:n, stage] = True
    return mask


def recycle_check(stages=(2, 4, 8), replicas=(2, 4, 8), microbatches=(4, 8, 16), n_failures=(1, 2, 3, 4), *,
                  placements=PLACEMENTS, tolerance: float = 0.02, options: StrategyOptions | None = None,
                  **config) -> xr.Dataset:
    """Compare ReCycle's period against its aim max(T0, max_s L_s t_s) and its planner's lower bound over a grid.

    T0 is the fault-free period of the configuration (`config`: stage times and
    schedule options of `PipelineConfig`). `fits` marks failure sets whose extra
    load fits the bubble (L_s <= m + p - 1 at every stage); `within` marks
    periods no more than `tolerance` above the aim (a plan may beat the aim: its
    decoupled backward shrinks the bubble T0 has). `lower_bound` is the
    planner's proven bound, `optimal` whether the period is proven least, and
    `planning_time` what the planner took (`options.method` says how it
    plans). Points where a placement cannot hold n failures, or a stage loses
    every replica, are NaN. Dims (stages, replicas, microbatches, n_failures,
    placement).

    Parameters
    ----------
    stages : sequence of int, default (2, 4, 8)
        Pipeline stages p of the grid.
    replicas : sequence of int, default (2, 4, 8)
        Data-parallel replicas d of the grid.
    microbatches : sequence of int, default (4, 8, 16)
        Micro-batches m per replica per iteration of the grid.
    n_failures : sequence of int, default (1, 2, 3, 4)
        Failed worker counts of the grid.
    placements : sequence of str, default ("spread", "stacked")
        Failure placements (see `failure_set`).
    tolerance : float, default 0.02
        How far above the aim a period may be and count as `within` (a ratio).
    options : StrategyOptions, optional
        Knobs of the strategies (default `StrategyOptions()`).
    **config
        Further `PipelineConfig` fields: stage times and schedule options.

    Returns
    -------
    xarray.Dataset
        `period`, `aim` and `lower_bound` (time units per iteration), `ratio`
        (period / aim), `gap` (period / lower_bound - 1), `optimal`,
        `planning_time` (s), `max_load` (micro-batches), `fits` and `within`,
        with provenance attrs.

    Raises
    ------
    PipelineError
        If a configuration, placement or failure count is invalid.
    """
    options = options or StrategyOptions()
    shape = (len(stages), len(replicas), len(microbatches), len(n_failures), len(placements))
    period, aim, fits = np.full(shape, np.nan), np.full(shape, np.nan), np.zeros(shape, dtype=bool)
    bound, seconds, optimal = np.full(shape, np.nan), np.full(shape, np.nan), np.zeros(shape, dtype=bool)
    max_load = np.zeros(shape, dtype=np.int64)
    # A bar on a terminal (the grid plans for tens of seconds), nothing in a pipe or under --quiet.
    with _progress_bar(None, int(np.prod(shape)), "ReCycle check", unit="point") as bar:
        for index in np.ndindex(*shape[:3]):
            p, d, m = stages[index[0]], replicas[index[1]], microbatches[index[2]]
            cfg = PipelineConfig(p, d, m, **config)
            t0 = ideal(cfg).period
            for i, n in enumerate(n_failures):
                for k, placement in enumerate(placements):
                    bar.set_postfix_str(f"p={p} d={d} m={m}, {n} down, {placement}", refresh=False)
                    bar.update(1)
                    mask = failure_set(placement, n, d, p)
                    if mask is None or np.any(mask.all(axis=0)):
                        continue
                    at = index + (i, k)
                    result = evaluate(cfg, "recycle", mask, options)
                    period[at], bound[at] = result.period, result.load_bound
                    seconds[at], optimal[at] = result.planning_time, bool(result.optimal)
                    aim[at] = max(t0, load_bound(cfg, mask))
                    max_load[at] = int(np.max(-(-(m * d) // (d - mask.sum(axis=0)))))
                    fits[at] = max_load[at] <= m + p - 1
    with np.errstate(invalid="ignore"):
        ratio, gap = period / aim, period / bound - 1.0
    dims = ("stages", "replicas", "microbatches", "n_failures", "placement")
    cfg = PipelineConfig(stages[0], replicas[0], microbatches[0], **config)
    return xr.Dataset(
        {
            "period": (dims, period, {"long_name": "ReCycle steady-state period", "units": "time unit"}),
            "aim": (dims, aim, {"long_name": "max(T0, max_s ceil(m d / (d - f_s)) t_s)", "units": "time unit"}),
            "ratio": (dims, ratio, {"long_name": "period / aim", "units": "1"}),
            "lower_bound": (dims, bound, {"long_name": "the planner's proven lower bound on the period",
                                          "units": "time unit"}),
            "gap": (dims, gap, {"long_name": "period / lower_bound - 1", "units": "1"}),
            "optimal": (dims, optimal, {"long_name": "period proven least"}),
            "planning_time": (dims, seconds, {"long_name": "planner's wall time", "units": "s"}),
            "max_load": (dims, max_load, {"long_name": "max_s L_s = ceil(m d / (d - f_s)) (0: not run)",
                                          "units": "micro-batches"}),
            "fits": (dims, fits, {"long_name": "extra load fits the bubble: L_s <= m + p - 1 at every stage"}),
            "within": (dims, ratio <= 1.0 + tolerance, {"long_name": f"period within {tolerance:.0%} of the aim"}),
        },
        coords={"stages": ("stages", list(stages)), "replicas": ("replicas", list(replicas)),
                "microbatches": ("microbatches", list(microbatches)),
                "n_failures": ("n_failures", list(n_failures)), "placement": ("placement", list(placements))},
        attrs={k: v for k, v in _provenance("relmodel pipeline: ReCycle against its aim", cfg, options,
                                            tolerance=tolerance).items()
               if k not in ("stages", "replicas", "microbatches")},
    )


def recycle_summary(ds: xr.Dataset) -> dict:
    """Count the points of a `recycle_check` grid by outcome.

    The points run, those whose extra load fits the bubble (split into
    L_s < m + p - 1 and the edge L_s = m + p - 1), how many of each keep the
    aim within the tolerance, the largest ratio, and every point that fits but
    misses.

    Parameters
    ----------
    ds : xarray.Dataset
        A `recycle_check` Dataset.

    Returns
    -------
    dict
        Counts by key (``points``, ``fits``, ``fits_within``, ...), the
        ``tolerance``, the extreme ratios, and ``misses`` (a list of dicts).
    """
    ran = ds.ratio.notnull()
    fits = ds.fits & ran
    edge = fits & (ds.max_load == ds.microbatches + ds.stages - 1)
    strict = fits & ~edge
    beyond = ran & ~ds.fits
    count = lambda mask: int(mask.sum())  # noqa: E731
    misses = ds[["ratio", "period", "aim", "max_load"]].where(fits & ~ds.within).to_dataframe().dropna()
    return {
        "tolerance": float(ds.attrs["tolerance"]),
        "points": count(ran),
        "fits": count(fits), "fits_within": count(fits & ds.within),
        "below_edge": count(strict), "below_edge_within": count(strict & ds.within),
        "at_edge": count(edge), "at_edge_within": count(edge & ds.within),
        "beyond": count(beyond), "beyond_within": count(beyond & ds.within),
        "max_ratio_fits": float(ds.ratio.where(fits).max()) if count(fits) else math.nan,
        "max_ratio": float(ds.ratio.max()) if count(ran) else math.nan,
        "min_ratio": float(ds.ratio.min()) if count(ran) else math.nan,
        "misses": [{**dict(zip(misses.index.names, (v.item() if hasattr(v, "item") else v for v in index))),
                    "ratio": float(row.ratio), "period": float(row.period), "aim": float(row.aim),
                    "max_load": int(row.max_load)}
                   for index, row in misses.iterrows()],
    }


def _check_run_args(n_runs, seed, scenario_key, confidence):
    check_count("n_runs", n_runs)
    for name, value in (("seed", seed), ("scenario_key", scenario_key)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < 2**32:
            raise PipelineError(name, f"must be an integer in [0, 2**32) (got {value!r})")
    if not isinstance(confidence, float) or not 0 < confidence < 1:
        raise PipelineError("confidence", f"must be a number in (0, 1) (got {confidence!r})")
