"""The `relmodel` command."""

from __future__ import annotations

import itertools
import math
import sys
from contextlib import contextmanager
from pathlib import Path

import click
import numpy as np
from click.core import ParameterSource

from . import _feedback as feedback
from ._cli_shared import (BACKEND_HELP, ENVIRONMENT_ERRNOS, FLAGS, ONLY_WITH_OUT, DatasetPath, FigurePath,
                          OneLineErrors, OutputPath, build_scenario, draw_figure, format_table, overwrite_option,
                          quiet_option, refuse_unused, scenario_options, simulation_options, table_cell, table_line,
                          to_json, usage_error, write_dataset)
from .elastic._cli import cluster
from ._engine import DEFAULT_MAX_FAILURES, MAX_JOBS, check_grid_memory
from ._errors import ScenarioError, parameter_and_reason
from ._extras import require
from .pipeline._cli import pipeline
from .record._cli import run_command
from ._scenario import Scenario
from ._sweep import MAX_LOCAL_WORKERS
from ._units import UNIT_REQUIRED_HELP, format_hours

STUDY_FILE_MAX_BYTES = 2**20  # a study file is a few lines; a bigger one is the wrong file
_UNITS_EPILOG = (
    f"Durations are {UNIT_REQUIRED_HELP}. Failure rates are failures per node-day. "
    "A comma-separated list (e.g. --gpus 1024,4096,16384) makes a sweep axis."
)


def refuse_if_no_job_can_finish(sc: Scenario, max_failures: int, where: str | None = None):
    """Stop, in one sentence, a run of which no job at any point can finish:
    each would hit `max_failures` (`engine.certainly_capped`), so its table would
    be all NaN. Typically a failure rate typed per GPU-hour instead of per node-day."""
    from ._engine import certainly_capped, failure_free_stretches, pack

    packed = pack(sc)
    if not certainly_capped(packed, max_failures).all():
        return
    lam, compute, restart, _ = failure_free_stretches(packed)
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0: a restart-free run at an infinite rate
        exponent = np.nan_to_num(np.maximum(lam * compute, lam * restart), nan=np.inf)
    row = int(np.argmin(exponent))  # the point closest to finishing
    point = next(itertools.islice(sc.points(), row, None))
    with np.errstate(over="ignore"):  # inf past float64: still the larger of the two, or a tie
        restart_binds = lam[row] * restart[row] > lam[row] * compute[row]
    stretch = f"{format_hours(restart[row])} restart" if restart_binds else \
        f"{format_hours(compute[row])} stretch of work between checkpoints"
    digits = exponent[row] / math.log(10.0)
    if not math.isfinite(digits):
        attempts = "endless attempts"
    elif digits > 308:  # a power of ten with hundreds of digits in its exponent reads as noise
        attempts = "more than 1e308 attempts"
    else:
        attempts = f"~1e{digits:.0f} attempts"
    if point.failure_rate >= 1.0:  # 100 times the measured rates: a unit mistake, most likely
        hint = "is --failure-rate per node-day?"
    elif restart_binds:
        hint = "--restart-cost must be well under the MTTF, which --gpus and --failure-rate set"
    else:
        hint = ("--checkpoint-interval and --checkpoint-cost must be well under the MTTF, which --gpus and "
                "--failure-rate set")
    if where is None:
        where = "" if sc.size == 1 else f" at any of the {sc.size} points"
    raise click.UsageError(  # the inputs, as typed, allow no run: a usage problem
        f"No job can finish{where}: with a job MTTF of {format_hours(1.0 / lam[row])}, getting through one "
        f"{stretch} takes {attempts}; {hint}")


class Commands(OneLineErrors):
    """The commands of `relmodel`: the core ones below, and those of the subpackages
    (`pipeline`, `cluster`), registered after them."""


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             epilog=_UNITS_EPILOG)
@click.version_option(package_name="relmodel")
@click.option("--debug", is_flag=True, help="Show the traceback of an error as well as its one line.")
def main(debug):
    """Reliability of large ML training runs: Monte Carlo job timelines and closed-form ETTR."""


@main.command("simulate", epilog=_UNITS_EPILOG)
@simulation_options
def simulate_command(n_jobs, seed, backend, threads, max_failures, out, overwrite, progress, quiet, as_json, **fields):
    """Monte Carlo job timelines for one scenario or a sweep; prints a summary table."""
    from . import _labels as labels
    from ._closed_form import ettr_arrays
    from ._simulate import simulate as run_simulation

    refuse_unused_run_flags(out, backend)
    sc = build_scenario(fields)
    # Every row's estimates, then its row of the JSON or table, at once; streamed, a row at a time.
    refuse_past_budget(sc, n_jobs, per_row=ROW_TEXT_BYTES if as_json or out is not None else 0)
    refuse_if_no_job_can_finish(sc, max_failures)
    widths = None if as_json else simulate_widths(sc, n_jobs)  # (the text table's, known before any row)
    with simulation_run(sc, n_jobs, seed, backend, threads, max_failures, progress) as (bar, run):
        if not as_json and out is None and sc.size > 1:
            # The table a point at a time, each with its key in the grid (the grid's bits): the first
            # row comes with the first point, not after the whole grid.
            simulate_streamed(sc, run, widths, bar)
            return
        ds = run_simulation(sc, **run)
    # Beside the estimate, its closed form (NaN in the table where it does not hold).
    ds["ettr_renewal"] = labels.grid_variable(sc, labels.CLOSED_FORMS["ettr_renewal"], ettr_arrays(sc, "renewal"))
    if out is not None:
        write_dataset(ds, out, overwrite=overwrite, writer="relmodel simulate")
    rows = summary_rows(ds, sc.dims)
    if as_json:
        click.echo(to_json({"rows": rows, "attrs": dict(ds.attrs), "units": json_units(sc.dims, SIMULATE_UNITS)}))
    else:
        click.echo(format_table(rows, widths))
        if out is not None:
            click.echo(f"wrote {out}")


def refuse_unused_run_flags(out, backend: str):
    """Refuse the flags of a simulating command that do nothing in this run: --overwrite without
    an output, Numba's thread count for the Cython twin."""
    refuse_unused(out is None, ONLY_WITH_OUT, "overwrite")
    refuse_unused(backend == "cython", "only acts with the Numba kernels; give --backend numba or auto, or leave "
                                       "it out", "threads")


@contextmanager
def simulation_run(sc: Scenario, n_jobs: int, seed: int, backend: str, threads, max_failures: int, progress):
    """A run of `sc` as `simulate` and `compare` take it: a progress bar over its jobs (closed at
    the end) and the run's keyword arguments, driving it; a value the run refuses as an error naming
    its flag. Yields (bar, keyword arguments)."""
    bar = feedback.progress_bar(sc.size * n_jobs, "simulate", enabled_=feedback.enabled(progress))
    run = dict(n_jobs=n_jobs, seed=seed, backend=backend, n_threads=threads, max_failures=max_failures,
               progress=False if bar.disable else bar.update)
    try:
        yield bar, run
    except ValueError as err:
        raise grid_usage_error(sc, err) from None
    finally:
        bar.close()


def refuse_past_budget(sc: Scenario, n_jobs: int, per_row: int = 0):
    """Refuse a grid whose run would pass the memory budget, before any work on it."""
    try:
        check_grid_memory(sc, n_jobs, per_row=per_row)
    except ValueError as err:
        raise grid_usage_error(sc, err) from None


def grid_usage_error(sc: Scenario, err: ValueError) -> click.UsageError:
    """`usage_error`, where the grid as a whole (the parameter "scenario") is named by the sweep flags that size it."""
    return usage_error(err, {"scenario": " x ".join(FLAGS.get(d, d) for d in sc.dims) or "--n-jobs"})


@main.command("compare", epilog=_UNITS_EPILOG)
@simulation_options
@click.option("--plot", type=FigurePath(), default=None,
              help="Draw the closed forms against the simulation (ETTR against the first sweep axis) to this "
                   "image file.")
def compare_command(plot, n_jobs, seed, backend, threads, max_failures, out, overwrite, progress, quiet, as_json,
                    **fields):
    """Closed forms against the simulation, point by point over a grid; prints a table and a verdict."""
    from ._simulate import compare

    refuse_unused_run_flags(out, backend)
    sc = build_scenario(fields)
    refuse_past_budget(sc, n_jobs, per_row=ROW_TEXT_BYTES)
    refuse_if_no_job_can_finish(sc, max_failures)
    with simulation_run(sc, n_jobs, seed, backend, threads, max_failures, progress) as (_, run):
        ds = compare(sc, **run)
    if out is not None:
        write_dataset(ds, out, overwrite=overwrite, writer="relmodel compare")
    rows = compare_rows(ds, sc.dims)
    counts, verdict = compare_verdict(rows, sc.dims)
    if as_json:
        click.echo(to_json({"rows": rows, "verdict": {**counts, "text": verdict}, "attrs": dict(ds.attrs),
                            "units": {**json_units(sc.dims, COMPARE_UNITS), **VERDICT_UNITS}}))
    else:
        # A closed form that does not apply (NaN in the Dataset, null in the JSON) reads "n/a".
        click.echo(format_table([{k: "n/a" if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}
                                 for row in rows]))
        click.echo(f"verdict: {verdict}")
    if plot is not None:
        from .plot import compare_figure

        draw_figure(plot, compare_figure, ds, plot)
    if not as_json:
        for path in (out, plot):
            if path is not None:
                click.echo(f"wrote {path}")


@main.command("plan", epilog=_UNITS_EPILOG)
@scenario_options(interval_default=None,
                  interval_help="The interval used today, shown beside the optimal ones (optional).")
@click.option("--target-ettr", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
              help="What each parameter would need, alone, to reach this ETTR; and the largest job that does.")
@click.option("--n-jobs", type=click.IntRange(100, MAX_JOBS), default=20_000, show_default=True,
              help="Jobs of the quick check simulation, per interval.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True)
@click.option("--backend", type=click.Choice(["auto", "numba", "cython"]), default="auto", show_default=True,
              help=BACKEND_HELP)
@click.option("--plot", type=FigurePath(), default=None,
              help="Draw ETTR against interval and against scale to this image file.")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON object (keys mttf_h, optimal_interval_h, ettr, ..., and units).")
@click.option("--from-log", "from_log", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Take the failure rate from this job log (as `relmodel fit` does, jobs >= 128 GPUs).")
@click.option("--strategy", type=click.Choice(["blocking", "asynchronous", "multilevel"]), default=None,
              help="With --checkpoint-persist or --fast-checkpoint: plan this strategy instead of the recommended "
                   "one (the table of strategies still shows them all).")
@quiet_option()
def plan_command(target_ettr, n_jobs, seed, backend, plot, as_json, from_log, strategy, quiet, **fields):
    """Capacity plan: checkpoint interval, ETTR, MTTF, time lost, sensitivities, targets."""
    from ._closed_form import MIN_INTERVAL
    from ._checkpoint_plan import strategy_scenarios
    from ._plan import check_plan, plan_checked
    from ._plan import header as plan_header

    for name, value in fields.items():
        if isinstance(value, list):
            raise click.UsageError(f"{FLAGS[name]}: plan takes one value (got {len(value)})")
    fitted = None
    if from_log is not None:
        if click.get_current_context().get_parameter_source("failure_rate") == ParameterSource.COMMANDLINE:
            raise click.UsageError("--from-log: give --from-log or --failure-rate, not both")
        fitted = fit_log(from_log, flag="--from-log", gpus_per_node=fields["gpus_per_node"])
        fields["failure_rate"] = fitted.failure_rate
    has_current = fields["checkpoint_interval"] is not None
    if not has_current:
        fields["checkpoint_interval"] = 1.0  # a stand-in: the plan shows no "current" interval
    sc = build_scenario(fields)  # flag-named errors before any work; the one check of each value
    # A job that can finish at no checkpoint interval is hopeless at the shortest one the
    # planner tries and with none at all (shorter intervals shorten the stretches of work,
    # fewer checkpoints the runtime over which restarts recur): check those two.
    # (With checkpoint levels, for the blocking strategy: a fast level only helps.)
    extremes = {max(MIN_INTERVAL, sc.work / 2**40), 2 * sc.work}  # one value when the work is under a second
    try:
        blocking = strategy_scenarios(sc)["blocking"] if sc.has_levels else sc
    except ValueError as err:
        raise usage_error(err) from None
    refuse_if_no_job_can_finish(blocking.sweep(checkpoint_interval=sorted(extremes)), DEFAULT_MAX_FAILURES,
                                where=" at any checkpoint interval")
    try:
        n_jobs, seed = check_plan(sc, target_ettr, n_jobs, seed, strategy=strategy)  # every refusal first
    except ValueError as err:
        raise usage_error(err) from None
    if sc.failure_rate >= 1.0 and fitted is None:  # 100 times the measured rates: a unit mistake, most likely
        click.echo(f"note: {sc.failure_rate:g} failures per node-day is a job MTTF of {format_hours(sc.mttf)}; "
                   "is --failure-rate per node-day?", err=True)
    if not as_json:
        # What needs no simulation first, so that the command answers at once.
        if fitted is not None:
            low, high = fitted.failure_rate_ci
            click.echo(f"failure rate from {from_log}: {fitted.failure_rate:.4g} per node-day "
                       f"(95% CI {low:.4g} to {high:.4g}; {fitted.n_failures} failures in "
                       f"{fitted.node_days:.4g} node-days)\n")
        click.echo(plan_header(sc))
        sys.stdout.flush()
    try:
        result = plan_checked(sc, has_current, target_ettr, n_jobs, seed, backend, None, feedback.enabled(),
                              strategy)
    except ValueError as err:
        raise usage_error(err) from None
    if as_json:
        extra = {} if fitted is None else {"failure_rate_from_log": {
            "log": str(from_log), "failure_rate_per_node_day": fitted.failure_rate,
            "failure_rate_ci": list(fitted.failure_rate_ci), "infrastructure_failures": fitted.n_failures,
            "node_days": fitted.node_days}}
        out = {**result.to_dict(), **extra}
        if fitted is not None:
            out["units"] = {**out["units"], **{f"failure_rate_from_log.{k}": u for k, u in FROM_LOG_UNITS.items()}}
        click.echo(to_json(out))
    else:
        click.echo(result.details())
    if plot is not None:
        from .plot import plan_figure

        draw_figure(plot, plan_figure, result, plot, backend=backend)
        if not as_json:
            click.echo(f"wrote {plot}")


FROM_LOG_UNITS = {"failure_rate_per_node_day": "failures per node-day", "failure_rate_ci": "failures per node-day",
                  "infrastructure_failures": "failures", "node_days": "node-days"}


# The units of the attrs `simulate --json` and `compare --json` print.
RUN_ATTR_UNITS = {"attrs.seed": "(a seed)", "attrs.n_jobs": "jobs per point", "attrs.max_failures": "failures per job",
                  "attrs.block_size": "jobs", "attrs.histogram_bins": "bins"}


def json_units(dims, columns: dict) -> dict:
    """The `units` block of a simulating command's JSON (`simulate`, `compare`): dotted key path -> unit.

    Parameters
    ----------
    dims : the sweep dims (scenario fields), which become keys of each row.
    columns : dict
        The unit of each further key of a row.

    Returns
    -------
    dict
        The units of the rows' keys, then of the run's attrs.
    """
    from ._plan import SCENARIO_UNITS

    units = {f"rows.*.{d}": SCENARIO_UNITS.get(d, "") for d in dims}
    units.update({f"rows.*.{k}": unit for k, unit in columns.items()})
    return {**units, **RUN_ATTR_UNITS}


# The units of a `simulate` row past its sweep dims.
SIMULATE_UNITS = {**{k: "1" for k in ("ettr", "ettr_se", "ettr_renewal", "ettr_job_mean")},
                  "wall_p50_h": "h", "wall_p95_h": "h", "failures_mean": "failures per job", "n_capped": "jobs"}


@main.command("fit")
@click.argument("log_file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--example", is_flag=True,
              help="Fit the sample log that ships with relmodel (a 128-node cluster's sacct) instead of LOG_FILE.")
@click.option("--format", "log_format", type=click.Choice(["auto", "sacct", "csv"]), default="auto",
              show_default=True, help="sacct: `sacct --parsable2` output; csv: job_id, n_gpus, start, end, state, ...")
@click.option("--min-gpus", type=click.IntRange(min=1), default=128, show_default=True,
              help="Only jobs with at least this many GPUs enter the rate.")
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=8, show_default=True,
              help="GPUs per node (for logs that give GPU counts only).")
@click.option("--taxonomy", default="meta-2024", show_default=True, help="Taxonomy preset name or TOML file.")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Of the Poisson interval on the rate.")
@click.option("--skip-bad-rows", is_flag=True, help="Skip (and count) malformed rows instead of stopping.")
@click.option("--plot", type=FigurePath(), default=None, help="Draw MTTF against job size to this image file.")
@click.option("--out", type=DatasetPath(), default=None, help="Write the fit's Dataset: .nc or .zarr.")
@overwrite_option()
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON object (failure_rate_per_node_day, failure_rate_ci, mttf_h_at, ..., and units).")
@quiet_option("No notes on stderr.")
def fit_command(log_file, example, log_format, min_gpus, gpus_per_node, taxonomy, confidence, skip_bad_rows, plot,
                out, overwrite, as_json, quiet):
    """Fit the failure rate per node-day from a scheduler job log (Slurm sacct or CSV).

    Try it on the sample log: relmodel fit --example.
    """
    if example == (log_file is not None):
        raise click.UsageError("LOG_FILE or --example: give one of the two")
    refuse_unused(out is None, ONLY_WITH_OUT, "overwrite")
    if example:
        from . import data

        log_file = data.path("cluster-jobs.sacct")
    result = fit_log(log_file, flag="LOG_FILE", format=log_format, min_gpus=min_gpus, gpus_per_node=gpus_per_node,
                     taxonomy=taxonomy, confidence=confidence, errors="skip" if skip_bad_rows else "raise")
    if out is not None:
        write_dataset(result.dataset, out, overwrite=overwrite, writer="relmodel fit")
    # The results first, then the figure.
    click.echo(to_json(result.to_dict()) if as_json else str(result))
    if plot is not None:
        draw_figure(plot, result.plot, plot)
    if not as_json:
        for path in (plot, out):
            if path is not None:
                click.echo(f"wrote {path}")


def fit_log(path: Path, *, flag: str, **kwargs):
    """`relmodel._fit` on a log file, its errors as one-line usage errors naming the file and line."""
    if not path.is_file():
        raise click.UsageError(f"{flag}: no such file: {path}")
    # On a terminal the line moves from before the log readers are imported to the fit's end.
    with feedback.ticking(f"reading and fitting {path} ({path.stat().st_size / 1e6:.3g} MB)"):
        return _fit_log(path, **kwargs)


def _fit_log(path: Path, **kwargs):
    from ._fit import FitError, fit
    from ._job_logs import LogError
    from ._taxonomy import TaxonomyError

    try:
        return fit(path, **kwargs)
    except LogError as err:
        raise click.UsageError(f"{path}: {err}") from None
    except TaxonomyError as err:  # a name that is no taxonomy, or a taxonomy file's error
        raise click.UsageError(f"--taxonomy: {err.reason if err.parameter == 'taxonomy' else err}") from None
    except FitError as err:
        raise click.UsageError(f"--{err.parameter.replace('_', '-')}: {err.reason}") from None


@main.command("sweep", epilog="Study files: [fixed] scenario fields, [sweep] axes (lists, or {start, stop, num, "
                    "scale}), [run] n_jobs, seed, backend, max_failures, chunk_points, outputs. " + _UNITS_EPILOG)
@click.argument("study_file", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--out", type=DatasetPath(overwrite="never"), default=None,
              help="The store: .zarr (written chunk by chunk, resumable) or .nc (converted at the end).")
@click.option("--verify", "verify_path", type=click.Path(path_type=Path), default=None, metavar="STORE",
              help="Check every chunk, variable and attribute of a study against its checksums and report; "
                   "compute nothing.")
@click.option("--scheduler", default="local", show_default=True,
              help="local (Numba threads here), dask-local (a LocalCluster here) or tcp://HOST:PORT.")
@click.option("--workers", type=click.IntRange(1, MAX_LOCAL_WORKERS), default=None,
              help="Workers of dask-local (default: cores).")
@click.option("--plot", type=FigurePath(), default=None,
              help="Draw the standard figures of two sweep axes to this image file.")
@click.option("--x", "x_dim", default=None, help="Sweep axis on the x axis of --plot (default: the first).")
@click.option("--y", "y_dim", default=None, help="Sweep axis on the y axis of --plot (default: the second).")
@quiet_option("No progress bar, and no line saying what was written.")
def sweep_command(study_file, out, verify_path, scheduler, workers, quiet, plot, x_dim, y_dim):
    """Run (or resume) a study: a grid of scenarios, chunk by chunk, into a zarr or netCDF store.

    One run writes a store at a time (another is refused); a run started again
    reads back every finished chunk against its checksum and computes again
    those missing or damaged. `--verify STORE` only reports them.
    """
    from ._study import StudyError, parse_study
    from ._study_reader import open_study
    from ._sweep import run_study
    from ._taxonomy import read_small_text

    if verify_path is not None:
        if study_file is not None or out is not None:
            raise click.UsageError("--verify: give only the store to check (no study file, no --out)")
        refuse_unused(True, "not used with --verify (it computes and draws nothing)", "scheduler", "workers",
                      "plot", "x_dim", "y_dim")
        verify_store(verify_path, quiet)
        return
    if study_file is None or out is None:
        raise click.UsageError("give a study file and --out (or --verify STORE)")
    refuse_unused(plot is None, "only acts with --plot; give --plot or leave it out", "x_dim", "y_dim")
    if workers is not None:
        require("distributed", "--workers")
    refuse_unused(scheduler != "dask-local", "only acts with --scheduler dask-local; give that scheduler or leave "
                                             "it out", "workers")

    try:  # as a taxonomy file is read: a device, a FIFO or a huge file is refused, not read for ever
        source = read_small_text(study_file, STUDY_FILE_MAX_BYTES)
    except OSError as err:
        raise click.UsageError(f"{study_file}: cannot read the study file ({err.strerror or err})") from None
    except ValueError as err:
        raise click.UsageError(f"{study_file}: {err}") from None
    try:
        study = parse_study(source, name=str(study_file), folder=study_file.parent)
        report = {}
        run_study(study, out, source=source, label=str(study_file), scheduler=scheduler, n_workers=workers,
                  progress=feedback.enabled(), report=report)
    except StudyError as err:
        raise click.UsageError(str(err)) from None
    except ConnectionError as err:  # the environment too (exit 1): an unreachable scheduler
        raise click.ClickException(f"--scheduler: {err}") from None
    except OSError as err:
        if err.errno not in ENVIRONMENT_ERRNOS:  # anything else is ours (exit 70)
            raise
        raise click.ClickException(f"--out: cannot write {out}: {err.strerror or err}") from None
    except ScenarioError as err:  # a [run] value the engine refuses (names the key)
        raise click.UsageError(f"{study_file}: {err}") from None
    except RecursionError:  # tomllib recurses into nested arrays and tables
        raise click.UsageError(f"{study_file}: not valid TOML (nested too deeply)") from None
    # As for simulate, a study of which no job finished says so rather than leave a store
    # of NaN (checked on the store: the grid may be too big to check up front). The run
    # has just verified and written every chunk under the lock: no second full read.
    with open_study(out, verify=False) as ds:
        none_finished = "n_capped" in ds and bool((ds.n_capped == study.n_jobs).all())
        result = None if none_finished or quiet else study_result(ds)
    if none_finished:  # the study as written lets no job finish: a usage problem, as in simulate
        raise click.UsageError(
            f"No job finished at any of the {study.scenario.size} points of {study_file}: every job hit "
            f"max_failures={study.max_failures} (n_capped in {out}); is failure_rate per node-day?")
    if plot is not None:
        from .plot import study_figure

        try:
            draw_figure(plot, study_figure, open_study(out, verify=False), x_dim, y_dim, plot)
        except ValueError as err:
            parameter, message = parameter_and_reason(err)
            raise click.UsageError(f"--{parameter}: {message}" if parameter in ("x", "y") else str(err)) from None
    if not quiet:
        done = (f"wrote {out}" if report["computed_chunks"]
                else f"{out} was finished: every chunk verified, none computed")
        click.echo((result + "\n" if result else "") + done + (f"; wrote {plot}" if plot else ""))


def study_result(ds) -> str | None:
    """A finished study's result in a line: its lowest and highest ETTR and their grid points (None
    without an ETTR output or a finite ETTR)."""
    if "ettr" not in ds or not np.isfinite(ettr := ds.ettr.values).any():
        return None
    dims = list(ds.ettr.dims)

    def at(flat: int) -> str:
        index = np.unravel_index(flat, ettr.shape)
        where = ", ".join(f"{d}={table_cell(d, ds[d].values[i].item())}" for d, i in zip(dims, index))
        return f"{table_cell('ettr', float(ettr[index]))}" + (f" at {where}" if where else "")

    if ettr.size == 1:
        return f"ETTR {at(0)}"
    return f"ETTR from {at(int(np.nanargmin(ettr)))} to {at(int(np.nanargmax(ettr)))} over {ettr.size} points"


def verify_store(path: Path, quiet: bool):
    """`relmodel sweep --verify`: a line per damaged chunk; exit 1 if there is any.

    Parameters
    ----------
    path : pathlib.Path
        A study's .zarr store or .nc file.
    quiet : bool
        Print nothing when every chunk is whole.
    """
    from ._study import StudyError
    from ._study_reader import verify_study

    try:
        problems = verify_study(path)
    except StudyError as err:
        raise click.UsageError(str(err)) from None
    for cid, why in sorted(problems.items()):
        click.echo(f"{path}: {cid}: {why}")
    # A sweep recomputes chunks and writes metadata anew; coordinates, variables and attributes it cannot.
    beyond_repair = sorted(key for key in problems if not key.startswith("chunk-") and key != "metadata")
    if beyond_repair:
        raise click.ClickException(f"{path}: {', '.join(beyond_repair)} not whole; delete it and run the study's "
                                   "sweep again")
    if problems:
        chunks = sum(key.startswith("chunk-") for key in problems)
        parts = ([f"{chunks} chunk(s) not whole"] if chunks else []) + (
            ["its consolidated metadata not whole"] if "metadata" in problems else [])
        raise click.ClickException(f"{path}: {' and '.join(parts)}; run the study's sweep again to mend it")
    if not quiet:
        click.echo(f"{path}: every chunk, variable, attribute and the coordinates match their checksums")


@main.command()
@click.option("--quick", is_flag=True, help="A tenth of the jobs: under two minutes on 2 cores.")
@click.option("--json", "json_path", type=OutputPath("json", dir_okay=False), default=None,
              help="Also write every figure, with machine information, to this file (a JSON file there is "
                   "replaced; anything else is refused).")
@click.option("--figures", type=click.Path(file_okay=False), default=None,
              help="Draw the scaling figures (threads, failures per job) into this folder.")
def bench(quick, json_path, figures):
    """relmodel against a NumPy and a SimPy implementation and the bare generator."""
    from ._bench import run_benchmark

    run_benchmark(quick, json_path, figures)


# The summary table's columns past the sweep dims, and their widest cell (`table_cell`).
SUMMARY_WIDTHS = {"ettr": 6, "ettr_se": 8, "ettr_renewal": 6, "ettr_job_mean": 6, "wall_p50_h": 10,
                  "wall_p95_h": 10, "failures_mean": 10}


def simulate_widths(sc: Scenario, n_jobs: int) -> dict:
    """The summary table's column widths, known before any row: a sweep dim's widest value, each
    estimate's widest cell, the digits of n_jobs (so a table printed a row at a time lines up)."""
    widths = {d: max([len(d)] + [len(table_cell(d, v)) for v in summary_values(getattr(sc, d))])
              for d in sc.dims}
    widths.update({k: max(len(k), w) for k, w in SUMMARY_WIDTHS.items()})
    widths["n_capped"] = max(len("n_capped"), len(str(n_jobs)))
    return widths


def summary_values(values) -> list:
    """A sweep dim's values as the summary rows hold them (Python scalars)."""
    return [np.asarray(v).item() for v in values]


def simulate_streamed(sc: Scenario, run: dict, widths: dict, bar):
    """`relmodel simulate`'s text table, a grid point at a time (`run`: simulate's arguments), each
    point run with its key in the grid and summarised as `simulate` summarises it (no Dataset a point:
    the first row comes before the Numba kernels compile)."""
    import warnings

    from . import _engine as engine
    from ._closed_form import ettr_arrays
    from ._simulate import DEFAULT_QUANTILES, run_warnings

    def echo(line: str):
        bar.clear()  # (a no-op where the bar is off)
        click.echo(line)
        bar.refresh()

    echo(table_line(list(widths), list(widths.values())))
    coords = {d: summary_values(getattr(sc, d)) for d in sc.dims}
    capped, failures = [], []
    for key, (index, point) in enumerate(zip(np.ndindex(*sc.shape), sc.points())):
        _, estimates = engine.estimate([point], run["n_jobs"], run["seed"], run["backend"], scenario_keys=[key],
                                       quantiles=DEFAULT_QUANTILES, max_failures=run["max_failures"],
                                       n_threads=run["n_threads"], progress=run["progress"] or None)
        est = {name: value[0] for name, value in estimates.items()}
        est["ettr_renewal"] = ettr_arrays(point, "renewal")[0]
        row = summary_row({d: coords[d][i] for d, i in zip(sc.dims, index)}, est, DEFAULT_QUANTILES)
        echo(table_line([table_cell(k, v) for k, v in row.items()], [widths[k] for k in row]))
        capped.append(row["n_capped"])
        failures.append(row["failures_mean"])
    for message, category in run_warnings(capped, failures, run["n_jobs"], run["max_failures"]):
        warnings.warn(message, category, stacklevel=2)


def grid_points(ds, dims) -> tuple:
    """`ds` with its grid as one `point` dim, and each point's sweep coordinates (Python scalars)."""
    flat = ds.stack(point=dims) if dims else ds.expand_dims(point=[0])
    columns = [flat[d].values.tolist() for d in dims]
    return flat, [dict(zip(dims, values)) for values in zip(*columns)] if dims else [{}] * flat.sizes["point"]


def summary_rows(ds, dims) -> list[dict]:
    flat, coords = grid_points(ds, dims)
    quantiles = list(flat["quantile"].values)
    # Plain arrays, point first: indexing a DataArray point by point costs milliseconds each.
    values = {name: flat[name].transpose("point", ...).values for name in SUMMARY_VARIABLES}
    return [summary_row(point, {name: array[i] for name, array in values.items()}, quantiles)
            for i, point in enumerate(coords)]


# Bytes a point's row of the summary takes as it is printed (its dict, its JSON copy and text).
ROW_TEXT_BYTES = 4096
# What a summary row reads of a point's estimates (`simulate`'s variables, and the renewal form).
SUMMARY_VARIABLES = ("ettr", "ettr_se", "ettr_renewal", "ettr_job_mean", "wall_quantile", "failures_mean", "n_capped")


def summary_row(coords: dict, values: dict, quantiles) -> dict:
    """One point's row of the summary table: its sweep coordinates, then its estimates (`values`,
    keyed by SUMMARY_VARIABLES; `wall_quantile` at the levels `quantiles`)."""
    wall = dict(zip(quantiles, np.asarray(values["wall_quantile"]).tolist()))
    return {**coords, "ettr": float(values["ettr"]), "ettr_se": float(values["ettr_se"]),
            "ettr_renewal": float(values["ettr_renewal"]), "ettr_job_mean": float(values["ettr_job_mean"]),
            "wall_p50_h": float(wall[0.5]), "wall_p95_h": float(wall[0.95]),
            "failures_mean": float(values["failures_mean"]), "n_capped": int(values["n_capped"])}


# The compare table's columns past the sweep dims: column -> `compare`'s variable.
COMPARE_COLUMNS = {"ettr_linear": "ettr_linear", "ettr_renewal": "ettr_renewal", "ettr_sim": "ettr_sim",
                   "ettr_se": "ettr_sim_se", "z_renewal": "z_renewal", "linear_rel_error": "linear_rel_error",
                   "renewal_exact": "renewal_exact", "linear_valid": "linear_valid"}
AGREEMENT_SE = 3  # a closed form within this many standard errors of the simulation agrees with it
# The units of a `compare` row past its sweep dims, and of its verdict's counts.
COMPARE_UNITS = {**{k: "1" for k in ("ettr_linear", "ettr_renewal", "ettr_sim", "ettr_se")},
                 "z_renewal": "standard errors", "linear_rel_error": "1 (fraction)", "renewal_exact": "(flag)",
                 "linear_valid": "(flag)"}
VERDICT_UNITS = {f"verdict.{k}": "points" for k in ("points", "renewal_compared", "renewal_agrees", "linear_off")}


def compare_rows(ds, dims) -> list[dict]:
    """The rows of `relmodel compare`: a grid point's sweep coordinates, then COMPARE_COLUMNS."""
    flat, coords = grid_points(ds, dims)
    columns = {column: flat[name].values.tolist() for column, name in COMPARE_COLUMNS.items()}
    return [{**point, **{column: values[i] for column, values in columns.items()}} for i, point in enumerate(coords)]


def compare_verdict(rows: list[dict], dims) -> tuple[dict, str]:
    """What `compare_rows` says, in counts of points and in a sentence a planner can act on: where
    the simulation agrees with the renewal form, and where the linear form is off by more than its
    tolerance (each with its worst point)."""
    from ._closed_form import LINEAR_TOLERANCE

    def at(row) -> str:
        return " at " + ", ".join(f"{d}={table_cell(d, row[d])}" for d in dims) if dims else ""

    def worst(subset, key) -> dict:
        return max(subset, key=lambda row: abs(row[key]) if math.isfinite(row[key]) else -1.0)

    def points(k: int) -> str:
        return f"{k} of {n} point{'s' if n > 1 else ''}"

    n = len(rows)
    simulated = [row for row in rows if math.isfinite(row["ettr_sim"])]
    compared = [row for row in simulated if math.isfinite(row["z_renewal"])]
    agree = [row for row in compared if abs(row["z_renewal"]) <= AGREEMENT_SE]
    off = [row for row in rows if not row["linear_valid"]]
    counts = {"points": n, "renewal_compared": len(compared), "renewal_agrees": len(agree), "linear_off": len(off)}
    parts = []
    if compared:
        text = f"simulation within {AGREEMENT_SE} standard errors of the renewal form at {points(len(agree))}"
        if len(agree) < len(compared):
            row = worst(compared, "z_renewal")
            text += f" (furthest: z = {row['z_renewal']:+.1f}{at(row)})"
        parts.append(text)
    no_renewal = sum(not math.isfinite(row["ettr_renewal"]) for row in rows)
    if no_renewal:
        parts.append(f"renewal form n/a at {points(no_renewal)} (it is exact for exponential failures only)")
    if len(simulated) < n:
        parts.append(f"not simulated at {points(n - len(simulated))} (see the warning)")
    tolerance = f"{LINEAR_TOLERANCE:.0%}"
    if off:
        row = worst(off, "linear_rel_error")
        advice = "; use the renewal form there" if all(math.isfinite(r["ettr_renewal"]) for r in off) else ""
        parts.append(f"linear form off by more than {tolerance} (or undefined) at {points(len(off))} "
                     f"(worst: {row['linear_rel_error']:+.1%}{at(row)}){advice}")
    else:
        parts.append(f"linear form within {tolerance} at {points(n)}")
    return counts, "; ".join(parts)


# The subpackages' commands (their modules import from `_cli_shared`, never from this one).
main.add_command(pipeline)
main.add_command(cluster)
main.add_command(run_command)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
