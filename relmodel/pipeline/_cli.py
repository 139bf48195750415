"""`relmodel pipeline`: throughput against failed workers per fault-tolerance strategy."""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

import click
import numpy as np
import xarray as xr

from .._cli_shared import (ONLY_WITH_OUT, DatasetPath, Duration, FigurePath, draw_figure, overwrite_option,
                           quiet_option, refuse_unused, to_json, usage_error, write_dataset)
from ._config import BACKWARDS, MAX_TASKS, OPTIMIZERS, ORDERS, SIMULATED_ITERATIONS, show

MAX_WORKERS = int(MAX_TASKS // (3 * SIMULATED_ITERATIONS))  # d p of the largest configuration allowed

# With --model a GPU preset's peak FLOP rate is fixed: --mfu is what scales it.
_FLAG_OF = {"failed": "--failures", "n_failures": "--failures", "strategy": "--strategies",
            "strategies": "--strategies", "n_runs": "--runs", "duration": "--run-duration", "traces": "--trace",
            "peak_flops": "--mfu"}
# The options that only one strategy reads.
_STRATEGY_FLAGS = {"recycle": ("method", "reroute_delay"), "oobleck": ("oobleck_min_stages",),
                   "bamboo": ("bamboo_slowdown",)}
_EPILOG = ("Task times are in any one unit (--time-unit says which, for run-level results); give one number for "
           "every stage or a comma-separated list, one per stage. --failures takes 'A..B', a list '0,2,4' or N "
           "(meaning 0..N). Durations are a number with its unit (90s, 5min, 2h, 1.5d); a bare number other than 0 is "
           "refused, so that 300 is never read as 300 hours.")


def _flag_error(err: ValueError) -> click.UsageError:
    from ._traces import NodeTraceError

    if isinstance(err, NodeTraceError):
        return usage_error(ValueError(f"--trace: {err}"))
    return usage_error(err, _FLAG_OF)


def _times(text: str | None, flag: str):
    """A task-time option: one number, or one per stage; 1 where the option is not given
    (an empty text is given, and refused)."""
    if text is None:
        return 1.0
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        raise click.UsageError(f"{flag}: {text!r} is not a number or a comma-separated list of numbers") from None
    return values if len(values) > 1 else values[0]


def parse_failures(text: str, most: int | None = None) -> list[int]:
    """'A..B' -> A..B, 'a,b,c' -> those, 'N' -> 0..N; none above `most` failed
    workers (default: the most workers any configuration may have), checked
    before the list is built (0..10**12 would fill the memory)."""
    most = MAX_WORKERS if most is None else most
    text = text.strip()
    match = re.fullmatch(r"(\d+)\s*\.\.\s*(\d+)", text)
    single = re.fullmatch(r"\d+", text)
    if match or single:
        low, high = (int(match[1]), int(match[2])) if match else (0, int(text))
        if high < low:
            raise click.UsageError(f"--failures: {text!r} is an empty range")
        if high > most:
            raise click.UsageError(f"--failures: {show(high)} failed workers but only {most} workers")
        return list(range(low, high + 1))
    if re.fullmatch(r"\d+(\s*,\s*\d+)+", text):
        counts = [int(v) for v in text.split(",")]
        if len(set(counts)) < len(counts):
            twice = next(n for n in counts if counts.count(n) > 1)
            raise click.UsageError(f"--failures: {twice} is given twice (got {text!r})")
        counts.sort()
        if counts[-1] > most:
            raise click.UsageError(f"--failures: {show(counts[-1])} failed workers but only {most} workers")
        return counts
    raise click.UsageError(f"--failures: expected 'A..B', 'a,b,c' or N (got {text!r})")


@click.command("pipeline", epilog=_EPILOG)
@click.option("--stages", type=int, default=8, show_default=True, help="Pipeline stages p.")
@click.option("--replicas", type=int, default=8, show_default=True, help="Data-parallel replicas d.")
@click.option("--microbatches", type=int, default=16, show_default=True,
              help="Micro-batches m per replica and iteration.")
@click.option("--fwd", default=None, metavar="T[,T...]", help="Forward time F per micro-batch (per stage: a list) [1].")
@click.option("--bwd-input", default=None, metavar="T[,T...]", help="Input-gradient time B [1].")
@click.option("--bwd-weight", default=None, metavar="T[,T...]", help="Weight-gradient time W [1].")
@click.option("--model", "model_name", default=None, metavar="NAME",
              help="Task times (s) and memory from a model preset (gpt3-175b, llama2-70b, ...) instead of --fwd etc.")
@click.option("--gpu", default="a100-80gb", show_default=True, metavar="NAME", help="GPU preset with --model.")
@click.option("--tensor-parallel", type=int, default=8, show_default=True, help="GPUs per worker with --model.")
@click.option("--microbatch-size", type=int, default=1, show_default=True,
              help="Sequences per micro-batch with --model.")
@click.option("--mfu", type=float, default=None, help="Model FLOPs utilisation with --model (default: the GPU's).")
@click.option("--method", type=click.Choice(("auto", "exact", "heuristic")), default="auto", show_default=True,
              help="How ReCycle plans its adapted schedule (auto: the exact search after a heuristic gap up to "
                   "d m p = 256 tasks, seconds a state; heuristic: milliseconds).")
@click.option("--failures", default="0..4", show_default=True, metavar="A..B|a,b|N", help="Failed workers to tabulate.")
@click.option("--strategies", metavar="NAMES",
              default=",".join(("recycle", "restart", "spare", "drop-pipeline", "oobleck", "bamboo")),
              show_default=True, help="Comma-separated strategies.")
@click.option("--order", type=click.Choice(ORDERS), default="1f1b", show_default=True, help="Fault-free schedule.")
@click.option("--backward", type=click.Choice(BACKWARDS), default="fused", show_default=True,
              help="B and W as one task, or decoupled.")
@click.option("--optimizer", type=click.Choice(OPTIMIZERS), default="barrier", show_default=True,
              help="Global barrier, or a staggered step per stage.")
@click.option("--p2p-delay", type=float, default=0.0, show_default=True, help="Transfer between adjacent stages.")
@click.option("--reroute-delay", type=float, default=None, help="Transfer between replicas (default: --p2p-delay).")
@click.option("--optimizer-time", type=float, default=0.0, show_default=True, help="All-reduce plus optimizer step.")
@click.option("--spares", type=int, default=2, show_default=True,
              help="Hot spare workers (the spare strategy stalls with more workers down; the pool of "
                   "replacement nodes in runs).")
@click.option("--bamboo-slowdown", type=float, default=1.5, show_default=True,
              help="Step time factor of a Bamboo takeover.")
@click.option("--oobleck-min-stages", type=int, default=None,
              help="Fewest stages of an Oobleck template (default: --stages).")
@click.option("--trace", "traces", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Replay a node trace (ms,add|remove,node CSV or date, time, count); repeatable.")
@click.option("--run-duration", type=Duration(), metavar="DURATION", default=None,
              help="Also simulate runs this long with failures and repairs (e.g. 14d).")
@click.option("--failure-rate", type=float, default=6.5e-3, show_default=True, help="Failures per node-day (runs).")
@click.option("--repair-time", type=Duration(), metavar="DURATION", default="4h", show_default=True,
              help="Until a failed node is back (runs).")
@click.option("--swap-time", type=Duration(), metavar="DURATION", default="5min", show_default=True,
              help="A spare node taking a failed worker's place.")
@click.option("--restart-cost", type=Duration(), metavar="DURATION", default="10min", show_default=True,
              help="A checkpoint-restart.")
@click.option("--checkpoint-interval", type=Duration(), metavar="DURATION", default="1h", show_default=True,
              help="Time between checkpoints.")
@click.option("--time-unit", type=Duration(), metavar="DURATION", default="1s", show_default=True,
              help="The unit of the task times, for runs and traces.")
@click.option("--runs", "n_runs", type=click.IntRange(1, 2**31 - 1), default=None,
              help="Monte Carlo runs [1000], or placements per trace [8].")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True)
@click.option("--out", type=DatasetPath(suffixes=(".nc",)), default=None,
              help="Write the table as netCDF (.nc); runs and traces go to groups 'runs' and 'traces'.")
@overwrite_option()
@click.option("--plot", type=FigurePath(), default=None,
              help="Draw throughput against failed workers to this image file.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead of the table.")
@quiet_option()
def pipeline(stages, replicas, microbatches, fwd, bwd_input, bwd_weight, model_name, gpu, tensor_parallel,
             microbatch_size, mfu, method, failures, strategies, order, backward,
             optimizer, p2p_delay, reroute_delay, optimizer_time, spares, bamboo_slowdown, oobleck_min_stages,
             traces, run_duration, failure_rate, repair_time, swap_time, restart_cost, checkpoint_interval,
             time_unit, n_runs, seed, out, overwrite, plot, as_json, quiet):
    """Throughput of d replicas of a p-stage pipeline with 1, 2, ... workers down, per fault-tolerance
    strategy (ReCycle, checkpoint-restart, spares, dropping pipelines, Oobleck, Bamboo)."""
    from .. import _feedback as feedback
    from ._datasets import replay_traces, simulate_runs
    from ._runs import RunModel
    from ._strategies import StrategyOptions

    names = [s.strip() for s in strategies.split(",") if s.strip()]
    refuse_unused(model_name is None, "only acts with --model; give --model or leave it out",
                  "gpu", "tensor_parallel", "microbatch_size", "mfu")
    refuse_unused(run_duration is None and not traces,
                  "only acts with --run-duration or --trace; give one of them or leave it out", "failure_rate",
                  "repair_time", "swap_time", "restart_cost", "checkpoint_interval", "time_unit", "n_runs", "seed")
    for strategy, names_of_its_flags in _STRATEGY_FLAGS.items():
        refuse_unused(strategy not in names, f"only acts with the {strategy} strategy; add it to --strategies or "
                                             "leave it out", *names_of_its_flags)
    # The spares are also the pool of replacement nodes of the simulated runs.
    refuse_unused("spare" not in names and run_duration is None,
                  "only acts with the spare strategy or --run-duration; give one of them or leave it out", "spares")
    refuse_unused(out is None, ONLY_WITH_OUT, "overwrite")
    try:
        kind = dict(order=order, backward=backward, optimizer=optimizer, p2p_delay=p2p_delay,
                    reroute_delay=reroute_delay, optimizer_time=optimizer_time)
        sizing = None if model_name is None else dict(model=model_name, gpu=gpu, tensor_parallel=tensor_parallel,
                                                      microbatch_size=microbatch_size, mfu=mfu)
        cfg = _pipeline_config(stages, replicas, microbatches, (fwd, bwd_input, bwd_weight), kind, sizing, time_unit)
        counts = parse_failures(failures, cfg.n_workers)
        options = StrategyOptions(spares=spares, bamboo_slowdown=bamboo_slowdown,
                                  oobleck_min_stages=oobleck_min_stages, method=method)
        model = RunModel(duration="14d" if run_duration is None else run_duration, failure_rate=failure_rate,
                         repair_time=repair_time, swap_time=swap_time, restart_cost=restart_cost,
                         checkpoint_interval=checkpoint_interval, time_unit=time_unit)
        # The table a row (failure count) at a time: a text table prints each row as it comes (on an
        # empty cache the fault-free row is ready before the planner compiles, the rest after it);
        # not with traces, whose files are read after it (an error there stays the output's one line).
        stream = not as_json and not quiet and not traces
        table = _steady_table(cfg, counts, names, options, sized=model_name is not None, stream=stream)
        runs = None
        if run_duration is not None:
            runs = simulate_runs(cfg, model, strategies=names, options=options,
                                 n_runs=1000 if n_runs is None else n_runs, seed=seed, progress=feedback.enabled())
        replayed = None
        if traces:
            replayed = replay_traces(cfg, list(traces), model, strategies=names, options=options,
                                     n_runs=8 if n_runs is None else n_runs, seed=seed, progress=feedback.enabled())
    except ValueError as err:
        raise _flag_error(err) from None
    if out is not None:
        # The table at the root, runs and traces in groups.
        write_dataset(table, out, overwrite=overwrite, writer="relmodel pipeline",
                      groups={"runs": runs, "traces": replayed})
    # The results first, then the figure (which takes a while).
    _print_results(table, runs, replayed, model, as_json=as_json, rows=not stream)
    if plot is not None:
        named = None  # with --model, the model and GPU above the pipeline's shape
        if model_name is not None:
            named = f"{model_name} on {gpu} (TP {tensor_parallel})"
        _draw(table, replayed if replayed is not None else runs, plot, named)
    if not as_json:
        for path in (out, plot):
            if path is not None:
                click.echo(f"wrote {path}")


def _pipeline_config(stages, replicas, microbatches, task_times, kind, sizing, time_unit):
    """The pipeline the options describe: its task times given (`task_times`, the options' texts), or a
    model preset's seconds and memory (`sizing`: `stage_profile`'s arguments but the stages; None: none)."""
    from ._config import PipelineConfig

    fwd, bwd_input, bwd_weight = task_times
    if sizing is None:
        return PipelineConfig(stages, replicas, microbatches, fwd=_times(fwd, "--fwd"),
                              bwd_input=_times(bwd_input, "--bwd-input"),
                              bwd_weight=_times(bwd_weight, "--bwd-weight"), **kind)
    if any(x is not None for x in task_times):
        raise click.UsageError("--model: gives the task times; leave out --fwd, --bwd-input and --bwd-weight")
    from ._runs import RunModel
    from ._sizing import stage_profile

    cfg = stage_profile(**sizing, stages=stages).config(replicas, microbatches, **kind)
    if not math.isclose(RunModel(time_unit=time_unit).time_unit, 1 / 3600, rel_tol=1e-12):
        raise click.UsageError("--time-unit: --model gives the task times in seconds; leave it out")
    return cfg


def _steady_table(cfg, counts, names, options, *, sized: bool, stream: bool) -> xr.Dataset:
    """The steady-state table over the failure `counts`, a row at a time (`stream`: each printed as it comes;
    `sized`: the task times are a model's seconds)."""
    from .. import _feedback as feedback
    from ._datasets import throughput_table

    parts = []
    for n in counts:
        parts.append(throughput_table(cfg, [n], names, options, progress=feedback.enabled()))
        if sized:
            parts[-1].attrs["task_time_unit"] = "s"
        if stream:
            if len(parts) == 1:
                click.echo(_table_head(parts[0]))
            click.echo(_table_row(parts[-1], int(n)))
    return xr.concat(parts, dim="n_failures", data_vars="minimal", coords="minimal", compat="override",
                     combine_attrs="override")


def _print_results(table, runs, replayed, model, *, as_json: bool, rows: bool) -> None:
    """The results on stdout: a JSON object, or the text table (its `rows` unless streamed) and the runs."""
    if as_json:
        click.echo(to_json(_as_dict(table, runs, replayed)))
        return
    click.echo(format_steady_state(table, model, rows=rows))
    for ds, label in ((runs, "Monte Carlo runs"), (replayed, "trace replays")):
        if ds is not None:
            click.echo("")
            click.echo(format_runs(ds, label))


def _draw(table, series, plot, named) -> None:
    """The throughput figure to `plot`: above it `named` (the model and GPU, if any) and the pipeline's shape."""
    from ._plot import config_title, throughput_figure

    title = None if named is None else f"{named}\n{config_title(table.attrs)}"
    draw_figure(plot, throughput_figure, table, series, plot, title=title)


def _as_dict(table, runs, replayed) -> dict:
    attrs = table.attrs
    result = {
        "config": {k: attrs[k] for k in ("stages", "replicas", "microbatches", "fwd", "bwd_input", "bwd_weight",
                                         "order", "backward", "optimizer", "p2p_delay", "reroute_delay",
                                         "optimizer_time")},
        "ideal_period": attrs["ideal_period"],
        "rows": [
            {
                "n_failures": int(n),
                "work_bound": float(table.work_bound.sel(n_failures=n)),
                "recycle_target": float(table.recycle_target.sel(n_failures=n)),
                "recycle_aim_fraction": attrs["ideal_period"] / float(table.recycle_target.sel(n_failures=n)),
                **{name: {str(s): float(table[name].sel(strategy=s, n_failures=n)) for s in table.strategy.values}
                   for name in ("period", "throughput", "fraction_of_ideal")},
            }
            for n in table.n_failures.values
        ],
    }
    for ds, key in ((runs, "runs"), (replayed, "traces")):
        if ds is not None:
            result[key] = _runs_dict(ds)
    return result


def _runs_dict(ds) -> dict:
    def per_strategy(sel):
        return {str(s): {"fraction_of_ideal": float(sel.fraction_of_ideal.sel(strategy=s)),
                         "ci": [float(v) for v in sel.fraction_of_ideal_ci.sel(strategy=s).values]}
                for s in sel.strategy.values}
    if "trace" in ds.dims:
        return {str(t): per_strategy(ds.sel(trace=t)) for t in ds.trace.values}
    return {"failures_per_run": float(ds.failures_per_run), **per_strategy(ds)}


def _unit_text(attrs) -> str:
    """The task times' unit: seconds where a model sized them, else the unit the user chose."""
    return "s" if attrs.get("task_time_unit") == "s" else "(time units)"


_MARK = {"restart": "*", "spare": "*"}  # strategies whose steady state is after a recovery


def _table_columns(table) -> list:
    """The table's column titles, each as wide as its widest cell can be (so rows print as they come)."""
    a = table.attrs
    titles = ["failed"] + [str(s) + _MARK.get(str(s), "") for s in table.strategy.values] + ["aim", "max L"]
    cells = ([len(str(int(a["stages"]) * int(a["replicas"])))] + [6] * (len(titles) - 2)
             + [len(str(int(a["microbatches"]) * int(a["replicas"])))])
    return [t.rjust(max(len(t), c)) for t, c in zip(titles, cells)]


def _table_head(table) -> str:
    """The lines above the table's rows (from a table of any of its failure counts)."""
    a = table.attrs
    return (f"{int(a['stages'])} stages x {int(a['replicas'])} replicas, {int(a['microbatches'])} micro-batches "
            f"({a['order']}, {a['backward']} backward, {a['optimizer']} optimizer); fault-free period "
            f"T0 = {float(a['ideal_period']):.6g} {_unit_text(a)}\n"
            f"Steady-state throughput as a fraction of fault-free, n workers down (failure i on replica i mod d):\n"
            + "  ".join(_table_columns(table)))


def _table_row(table, n: int) -> str:
    """One failure count's row of the table, aligned with `_table_head`'s titles."""
    a = table.attrs
    d, m = int(a["replicas"]), int(a["microbatches"])
    t0 = float(a["ideal_period"])
    cells = [str(n)]
    for s in table.strategy.values:
        cells.append(f"{float(table.fraction_of_ideal.sel(strategy=s, n_failures=n)):.4f}")
    target = float(table.recycle_target.sel(n_failures=n))
    cells.append(f"{t0 / target:.4f}" if math.isfinite(target) else "0.0000")
    f = table.failed_stages.sel(n_failures=n).values
    cells.append(str(int(max(-(-(m * d) // (d - int(x))) for x in f))) if (f < d).all() else "-")
    return "  ".join(c.rjust(len(t)) for c, t in zip(cells, _table_columns(table)))


def format_steady_state(table, model=None, rows: bool = True) -> str:
    """Format the steady-state table as text, with its footnotes.

    Every column is a fraction of fault-free throughput, beside ReCycle's aim
    and the busiest survivor's load; the footnotes say what "steady state"
    means for each strategy.

    Parameters
    ----------
    table : xarray.Dataset
        A table from `throughput_table`.
    model : RunModel, optional
        Prices a checkpoint-restart in the footnotes.
    rows : bool, default True
        False: the footnotes alone (the rows printed as they came).

    Returns
    -------
    str
        The table's text.
    """
    a = table.attrs
    strategies = [str(s) for s in table.strategy.values]
    p, m = int(a["stages"]), int(a["microbatches"])
    notes = [
        f"aim: ReCycle's target T0 / max(T0, max_s L_s t_s); max L: micro-batches on the busiest survivor, "
        f"L_s = ceil(m d / (d - f_s)) (the extra load fits the bubble while L_s <= m + p - 1 = {m + p - 1}).",
    ]
    if any(s in _MARK for s in strategies):
        spares = a.get("spares")
        note = "* steady state once recovered on replacement nodes, not the run-level effect:"
        if "restart" in strategies:
            note += " restart stops for detection + replacement + restart + rework after every failure"
            if model is not None:
                lost = 60 * (model.detection_time + model.swap_time + model.restart_cost
                             + model.checkpoint_interval / 2)
                note += (f" (about {lost:.3g} min each at the run defaults: {60 * model.detection_time:.3g} + "
                         f"{60 * model.swap_time:.3g} + {60 * model.restart_cost:.3g} + half the "
                         f"{60 * model.checkpoint_interval:.3g} min checkpoint interval)")
            note += ";"
        if "spare" in strategies:
            note += (f" spare swaps in one of its {spares} hot spares (--spares) per failure and stalls (0) while "
                     f"more workers are down than it has spares;")
        note += " --run-duration 14d or --trace gives the time-average over a run with failures and repairs."
        notes.append(note)
    if "memory_limited" in table:
        limited = [str(s) for s in strategies if bool(table.memory_limited.sel(strategy=s).any())]
        if limited:
            reasons = {s: sorted({str(x) for x in table.detail.sel(strategy=s).values if "memory" in str(x)})
                       for s in limited}
            notes.append("limited by memory: " + "; ".join(f"{s} ({', '.join(reasons[s])})" for s in limited))
    if "recycle" in strategies and "lower_bound" in table:
        bound = table.lower_bound.sel(strategy="recycle")
        period = table.period.sel(strategy="recycle")
        gaps = [f"{int(n)}: {float(period.sel(n_failures=n)) / float(bound.sel(n_failures=n)) - 1:.1%}"
                for n in table.n_failures.values if np.isfinite(float(bound.sel(n_failures=n)))
                and int(n) > 0]
        if gaps:
            notes.append("recycle: gap of its plan to the planner's proven lower bound, by failed workers (0.0%: "
                         "optimal): " + ", ".join(gaps) + ". Above 1.0000: its plans (decoupled backward, staggered "
                         "optimizer, any order) fill bubbles the configured fault-free schedule leaves.")
    wrapped = [textwrap.fill(n, 110, subsequent_indent="  ") for n in notes]
    lines = [_table_head(table)] + [_table_row(table, int(n)) for n in table.n_failures.values] if rows else []
    return "\n".join(lines + wrapped)


def format_runs(ds, label: str) -> str:
    """Format runs' time-average throughput as text, with confidence intervals.

    Parameters
    ----------
    ds : xarray.Dataset
        Runs from `simulate_runs` or `replay_traces` (one column per trace
        when it has a trace dim).
    label : str
        The table's heading.

    Returns
    -------
    str
        The table's text: one row per strategy.
    """
    groups = [str(t) for t in ds.trace.values] if "trace" in ds.dims else [None]
    rows = [["strategy"] + [g or "fraction" for g in groups]]
    for s in ds.strategy.values:
        cells = [str(s)]
        for g in groups:
            sel = ds.sel(strategy=s, trace=g) if g else ds.sel(strategy=s)
            low, high = sel.fraction_of_ideal_ci.values
            interval = "" if math.isnan(low) else f" [{low:.4f}, {high:.4f}]"
            cells.append(f"{float(sel.fraction_of_ideal):.4f}{interval}")
        rows.append(cells)
    head = f"{label}: time-average throughput as a fraction of fault-free ({int(ds.attrs['n_runs'])} runs"
    head += f", {float(ds.failures_per_run):.3g} failures per run)" if "failures_per_run" in ds else " per trace)"
    return head + "\n" + _align(rows)


def _align(rows) -> str:
    widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows)
