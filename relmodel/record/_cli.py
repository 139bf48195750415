"""`relmodel run`: a training run's own record: show what it measured, predict it, replay it."""

from __future__ import annotations

from pathlib import Path

import click
import numpy as np

from .._cli_shared import (FAST_CHECKPOINT_EXAMPLE, Duration, FigurePath, LevelSpec, OneLineErrors, draw_figure,
                           format_table, refuse_unused, to_json, usage_error)
from .. import _feedback as feedback, data
from .._units import format_hours
from ._timeline import MAX_EVENTS
from ._trainers import TRAINER_FORMATS

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
_EPILOG = ("A record is the trainer's events (CSV or JSON Lines: time, event, step, duration_s, wait_s, reason; "
           "events attempt_start, first_step, checkpoint_written, checkpoint_restored, failure, interruption, step, "
           "run_end), or the trainer's own logs (--format), and/or an sacct export of the run's attempts (--sacct). "
           "--example reads the sample run that ships with relmodel. "
           "Durations are a number with its unit (90s, 5min, 2h, 1.5d).")


def _record_options(func):
    for option in reversed((
        click.argument("events", type=_FILE, nargs=-1),
        click.option("--example", is_flag=True, help="Read the sample run that ships with relmodel (13 days on 4096 "
                                                     "GPUs: the trainer's events, or with --format its framework's "
                                                     "log) instead of EVENTS."),
        click.option("--format", "fmt", type=click.Choice(["auto", "events", *TRAINER_FORMATS]), default="auto",
                     show_default=True, help="What the EVENTS files are: the trainer-events CSV or JSON Lines, or a "
                                             "trainer's own log (one file an attempt, or with restarts)."),
        click.option("--sacct", type=_FILE, default=None, help="An sacct --parsable2 export of the run's attempts."),
        click.option("--run", "run_ids", default=None, help="The run's JobIDs in the sacct file, comma-separated "
                                                          "[default: every attempt in it]."),
        click.option("--gpus", "n_gpus", type=click.IntRange(1, 10**9), default=None,
                     help="GPUs of the run [default: from sacct]."),
        click.option("--tz", default="UTC", show_default=True, help="IANA zone of times written without an offset."),
        click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (hours, ns where exact)."),
    )):
        func = option(func)
    return func


def _read(events, example, fmt, sacct, run_ids, n_gpus, tz):
    """The record the options name, and its GPUs (the sample's when --example and no --gpus)."""
    if example and (events or sacct is not None):
        raise click.UsageError("EVENTS or --example: give one of the two (--example is the whole record, no --sacct)")
    if not events and sacct is None and not example:
        raise click.UsageError("EVENTS, --sacct or --example: give the trainer's events or logs, an sacct export "
                               "of the run's attempts, or both; or --example")
    refuse_unused(sacct is None, "only acts with --sacct; give --sacct or leave it out", "run_ids")
    refuse_unused(not events and not example, "says what the EVENTS files are; give them or leave it out", "fmt")
    if example:
        events, n_gpus = (_example_run(fmt),), n_gpus or data._RUN_GPUS
    names = [Path(p).name for p in (*(events or ()), *((sacct,) if sacct is not None else ()))]
    try:
        with feedback.ticking(f"reading {', '.join(names[:3])}{' ...' if len(names) > 3 else ''}"):
            from ._read import read_run  # within the line: its readers take a moment to import

            return read_run(events or None, sacct=sacct, run=run_ids, n_gpus=n_gpus, tz=tz, format=fmt), n_gpus
    except ValueError as err:
        raise usage_error(err) from None


def _example_run(fmt: str) -> Path:
    """The sample run as written in `fmt`: the trainer's events, or a framework's own log of the same run."""
    name = "run-events.csv" if fmt in ("auto", "events") else f"run-{fmt}.log"
    if name not in data.names():
        written = sorted(n.removeprefix("run-").removesuffix(".log") for n in data.names() if n.endswith(".log"))
        raise click.UsageError(f"--format: the sample run is not written as {fmt}; with --example, --format is "
                               f"auto, events or one of {', '.join(written)}")
    return data.path(name)


def _scalars(ds, names) -> dict:
    return {name: float(ds[name]) if ds[name].dtype.kind == "f" else ds[name].item() for name in names if name in ds}


@click.group("run", cls=OneLineErrors, epilog=_EPILOG)
def run_command():
    """A run's own record: its measured ETTR and badput, the model beside it, its failures replayed."""


@run_command.command("show", epilog=_EPILOG)
@_record_options
@click.option("--plot", type=FigurePath(), default=None, help="Draw the run's timeline to this image file.")
def show_command(events, example, fmt, sacct, run_ids, n_gpus, tz, as_json, plot):
    """Measure a run: wall time split into productive, writes, lost work, restarts and queue; interruptions."""
    from ._measure import MEASURED_COMPONENTS, measure_run

    record, n_gpus = _read(events, example, fmt, sacct, run_ids, n_gpus, tz)
    try:
        ds = measure_run(record, n_gpus=n_gpus)
    except ValueError as err:
        raise usage_error(err) from None
    if plot is not None:
        from ._plot import run_figure

        draw_figure(plot, run_figure, record, path=plot, measured=ds)
    totals = {c: float(ds.time.sel(component=c)) for c in MEASURED_COMPONENTS}
    if as_json:
        click.echo(to_json({"summary": record.summary.to_dict(), "components_h": totals,
                            "components_ns": {c: int(ds.time_ns.sel(component=c)) for c in MEASURED_COMPONENTS},
                            "each_interruption": _interruption_rows(ds),
                            **_scalars(ds, [k for k in ds.data_vars if not ds[k].dims]),
                            "interruptions_by_reason": dict(zip(ds.reason.values.tolist(),
                                                                ds.interruptions_by_reason.values.tolist())),
                            "notes": ds.attrs["notes"], "units": {"time": "h", "failure_rate": "1/node-day"}}))
        return
    click.echo(str(record.summary))
    wall = float(ds.wall)
    click.echo(f"wall {format_hours(wall)}, ETTR {float(ds.ettr):.4f} (productive / wall), "
               f"{int(ds.interruptions)} interruptions ({int(ds.failures)} failures, {int(ds.planned)} planned) "
               f"in {int(ds.attempts)} attempts")
    rows = [{"component": c, "hours": v, "share": v / wall if wall else np.nan} for c, v in totals.items()]
    click.echo(format_table(rows))
    if "node_day_rate" in ds:
        click.echo(f"interruption rate {float(ds.node_day_rate):.4g} per node-day "
                   f"(95% {float(ds.node_day_rate_low):.4g} - {float(ds.node_day_rate_high):.4g}, exact Poisson)")
    if ds.sizes["reason"]:
        click.echo("interruptions by reason: " + ", ".join(
            f"{r} {n}" for r, n in zip(ds.reason.values[:12], ds.interruptions_by_reason.values[:12]))
            + (" ..." if ds.sizes["reason"] > 12 else ""))
    if ds.attrs["notes"]:
        click.echo("notes: " + ds.attrs["notes"])
    if plot is not None:
        click.echo(f"wrote {plot}")


def _interruption_rows(ds) -> list:
    """One JSON row an interruption: when, what, and what it cost (ns exact, -1 where unknown)."""
    from ._events import format_instant

    return [{"time": format_instant(int(t)), "runtime_h": float(h), "kind": str(k), "reason": str(r),
             "infrastructure": bool(i), "lost_ns": int(lost), "queue_ns": int(q), "restart_ns": int(rs),
             "restart_completed": bool(done)}
            for t, h, k, r, i, lost, q, rs, done in zip(
                ds.interruption_time.values.astype(np.int64), ds.interruption_runtime.values,
                ds.interruption_kind.values, ds.interruption_reason.values, ds.interruption_infrastructure.values,
                ds.interruption_lost_ns.values, ds.interruption_queue_ns.values, ds.interruption_restart_ns.values,
                ds.interruption_restart_completed.values)]


def _assumed(fields: dict):
    given = {k: v for k, v in fields.items() if v is not None}
    if not given:
        return None
    missing = [f"--assumed-{k.replace('_', '-')}" for k in ("failure_rate", "checkpoint_interval") if k not in given]
    if missing:
        raise click.UsageError(f"{missing[0]}: needed with the other --assumed-* options")
    return given


@run_command.command(epilog=_EPILOG)
@_record_options
@click.option("--failure-rate", type=click.FloatRange(0, None), default=None,
              help="Failures per node-day for the model [default: the run's own].")
@click.option("--assumed-failure-rate", type=click.FloatRange(0, None), default=None,
              help="The plan's failure rate (per node-day): the gap to it is split by input.")
@click.option("--assumed-checkpoint-interval", type=Duration(), default=None, help="The plan's interval.")
@click.option("--assumed-checkpoint-cost", type=Duration(), default=None, help="The plan's write time.")
@click.option("--assumed-restart-cost", type=Duration(), default=None, help="The plan's restart time.")
@click.option("--assumed-queue-wait", type=Duration(), default=None, help="The plan's queue wait.")
@click.option("--runs", "n_runs", type=click.IntRange(100, 10**7), default=20_000, show_default=True,
              help="Runs simulated for one run's ETTR distribution.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True)
@click.option("--plot", type=FigurePath(), default=None, help="Draw the run and its prediction to this image file.")
def predict(events, example, fmt, sacct, run_ids, n_gpus, tz, as_json, failure_rate, n_runs, seed, plot,
            **assumed_fields):
    """The model beside the run: predicted ETTR, one run's ETTR distribution, where the run falls, the gap by input."""
    import dataclasses

    from ._measure import measure_run
    from ._model import implied_scenario, predict_run

    record, n_gpus = _read(events, example, fmt, sacct, run_ids, n_gpus, tz)
    given = _assumed({k.removeprefix("assumed_"): v for k, v in assumed_fields.items()})
    try:
        assumed = None
        if given is not None:
            implied = implied_scenario(measure_run(record, n_gpus=n_gpus), n_gpus=n_gpus)
            try:
                assumed = dataclasses.replace(implied, **given)
            except ValueError as err:  # refused by its --assumed-* flag (--checkpoint-interval is replay's)
                raise usage_error(err, {k: f"--assumed-{k.replace('_', '-')}" for k in given}) from None
        ds = predict_run(record, assumed=assumed, n_gpus=n_gpus, failure_rate=failure_rate, n_runs=n_runs, seed=seed)
    except ValueError as err:
        raise usage_error(err) from None
    if plot is not None:
        from ._plot import run_figure

        draw_figure(plot, run_figure, record, ds, path=plot)
    scalars = _scalars(ds, [k for k in ds.data_vars if not ds[k].dims])
    if as_json:
        out = {**scalars, "run_ettr_quantile": dict(zip(map(str, ds["quantile"].values.tolist()),
                                                        ds.run_ettr_quantile.values.tolist())),
               "scenario": ds.attrs["scenario"], "notes": _notes(record, ds)}
        if "input" in ds.dims:
            out["by_input"] = {str(i): {"assumed": float(ds.assumed_value[k]), "measured": float(ds.measured_value[k]),
                                        "effect": float(ds.effect[k])} for k, i in enumerate(ds["input"].values)}
        click.echo(to_json(out))
        return
    q = dict(zip(ds["quantile"].values.tolist(), ds.run_ettr_quantile.values.tolist()))
    click.echo(f"model ({ds.attrs['scenario_source']}): {ds.attrs['scenario']}")
    click.echo(f"observed ETTR {scalars['observed_ettr']:.4f} ({scalars['observed_ettr_model_terms']:.4f} without "
               f"the startup, which the model has not); predicted {scalars['predicted_ettr_renewal']:.4f} (renewal), "
               f"{scalars['predicted_ettr_simulated']:.4f} (simulated)")
    click.echo(f"one run's ETTR: 5% {q[0.05]:.4f}, median {q[0.5]:.4f}, 95% {q[0.95]:.4f}; this run is at the "
               f"{100 * scalars['observed_quantile']:.1f}% quantile")
    if "input" in ds.dims:
        click.echo(f"assumed plan's ETTR {scalars['assumed_ettr']:.4f}; gap to the run {scalars['gap']:+.4f}:")
        rows = [{"input": str(i), "assumed": float(ds.assumed_value[k]), "measured": float(ds.measured_value[k]),
                 "ettr_with_it": float(ds.ettr_substituted[k]), "effect": float(ds.effect[k])}
                for k, i in enumerate(ds["input"].values)]
        click.echo(format_table(rows))
        click.echo(f"all measured inputs together {scalars['gap_all_inputs']:+.4f}; the rest (this run's luck and "
                   f"what the model leaves out) {scalars['gap_unexplained']:+.4f}")
    _echo_notes(record, ds)
    if plot is not None:
        click.echo(f"wrote {plot}")


def _notes(record, ds) -> str:
    """How the record was read and measured, where not at face value (the summary's and the measurement's)."""
    read = "; ".join(f"{k}: {v}" for k, v in sorted(record.summary.notes.items()))
    return "; ".join(n for n in (read, ds.attrs.get("notes", "")) if n)


def _echo_notes(record, ds):
    if notes := _notes(record, ds):
        click.echo("notes: " + notes)


def _saving_text(ds) -> str:
    """'saves 1.5d', or 'costs at least 2h' where a capped walk's wall time is only a lower bound."""
    saving = float(ds.saving)
    run_capped, replayed_capped = (bool(ds.capped.sel(plan=p)) for p in ("run", "replayed"))
    verb = "saves" if saving >= 0 else "costs"
    if run_capped and replayed_capped:
        return f"{verb} {format_hours(abs(saving))} (both walks capped: neither bound holds)"
    # A capped walk's wall is a lower bound: the replayed one's bounds the saving from above.
    at_most = replayed_capped == (saving >= 0)
    bound = "" if not (run_capped or replayed_capped) else " at most" if at_most else " at least"
    return f"{verb}{bound} {format_hours(abs(saving))}"


@run_command.command(epilog=_EPILOG)
@_record_options
@click.option("--checkpoint-interval", type=Duration(), default=None, help="The replayed plan's interval.")
@click.option("--checkpoint-cost", type=Duration(), default=None, help="The replayed plan's write time.")
@click.option("--checkpoint-persist", type=Duration(), default=None,
              help="Asynchronous writes: time until a checkpoint is restorable.")
@click.option("--restart-cost", type=Duration(), default=None, help="The replayed plan's restart time.")
@click.option("--queue-wait", type=Duration(), default=None, help="The replayed plan's queue wait.")
@click.option("--fast-checkpoint", "fast_checkpoints", type=LevelSpec(), multiple=True,
              help=f"A fast level below the run's checkpoint: {FAST_CHECKPOINT_EXAMPLE} (repeat for more; which "
                   "survive each failure is drawn, seeded).")
@click.option("--runs", "n_runs", type=click.IntRange(100, 10**7), default=20_000, show_default=True,
              help="Runs simulated for the counterfactual with new failure draws.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True)
def replay(events, example, fmt, sacct, run_ids, n_gpus, tz, as_json, n_runs, seed, **changes):
    """Replay the run's own failures under another plan (and beside new failure draws)."""
    import dataclasses

    from .._scenario import as_checkpoint_levels
    from ._model import replay_run

    record, n_gpus = _read(events, example, fmt, sacct, run_ids, n_gpus, tz)
    refuse_unused(not (n_gpus or record.n_gpus), "only acts when the run's GPUs are known; give --gpus (or an "
                  "--sacct export with the allocation) or leave it out", "n_runs")
    try:
        ds = replay_run(record, n_gpus=n_gpus, n_runs=n_runs, seed=seed, **{**changes, "fast_checkpoints": (
            tuple(changes["fast_checkpoints"]) or None)})
    except ValueError as err:
        raise usage_error(err) from None
    plans = ds.plan.values.tolist()
    if as_json:
        changes_h = {k: v for k, v in changes.items() if v is not None and k != "fast_checkpoints"}
        click.echo(to_json({"changes_h": changes_h,
                            "fast_checkpoints_h": [dataclasses.asdict(level) for level in
                                                   as_checkpoint_levels(changes["fast_checkpoints"]) or ()],
                            "saving_h": float(ds.saving), "reproduced": bool(ds.reproduced),
                            "notes": _notes(record, ds),
                            **{p: {"wall_h": float(ds.wall.sel(plan=p)), "ettr": float(ds.ettr.sel(plan=p)),
                                   "failures": int(ds.failures.sel(plan=p)),
                                   "extrapolated_failures": int(ds.extrapolated_failures.sel(plan=p)),
                                   "capped": bool(ds.capped.sel(plan=p)),
                                   **({"simulated_ettr": float(ds.simulated_ettr.sel(plan=p))}
                                      if "simulated_ettr" in ds else {})} for p in plans}}))
        return
    rows = [{"plan": p, "wall_h": float(ds.wall.sel(plan=p)), "ettr": float(ds.ettr.sel(plan=p)),
             "failures": int(ds.failures.sel(plan=p)), "drawn_beyond": int(ds.extrapolated_failures.sel(plan=p)),
             **({"ettr_simulated": float(ds.simulated_ettr.sel(plan=p))} if "simulated_ettr" in ds else {})}
            for p in plans]
    click.echo(format_table(rows))
    for p in plans:
        if bool(ds.capped.sel(plan=p)):
            click.echo(f"warning: the {p} plan stopped at {MAX_EVENTS:,} events before the run's end (its ETTR is "
                       f"near 0): its figures are lower bounds on the wall time", err=True)
    click.echo(f"the replayed plan {_saving_text(ds)} of wall time on this run's failures"
               + ("" if bool(ds.reproduced) else " (the replay at the run's own plan does not reproduce its wall "
                                                 "time: compare with care)"))
    _echo_notes(record, ds)
