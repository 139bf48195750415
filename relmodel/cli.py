"""The `relmodel` command."""

from __future__ import annotations

import json
import math
import sys
import warnings
from pathlib import Path

import click

from .scenario import FIELDS, Scenario, ScenarioError, _check_number
from .units import UNITS_HELP

_UNITS_EPILOG = (
    f"Durations are {UNITS_HELP}. Failure rates are failures per node-day. "
    "A comma-separated list (e.g. --gpus 1024,4096,16384) makes a sweep axis."
)


class FieldValues(click.ParamType):
    """One Scenario field: a value, or a comma-separated list of them (a sweep axis)."""

    def __init__(self, field: str):
        self.field = field
        self.name = {"duration": "DURATION", "count": "INT", "choice": "CHOICE"}.get(FIELDS[field][1], "FLOAT")

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        items = [v.strip() for v in value.split(",")]
        kind = FIELDS[self.field][1]
        try:
            parsed = [_check_number(self.field, _parse(item, kind), kind=kind) for item in items]
        except ScenarioError as err:
            self.fail(str(err).split(": ", 1)[1], param, ctx)
        return parsed if len(parsed) > 1 else parsed[0]


def _parse(text: str, kind: str):
    if kind in ("duration", "choice"):
        return text
    try:
        number = float(text)
    except ValueError:
        raise ScenarioError("", f"{text!r} is not a number") from None
    return int(number) if kind == "count" and number.is_integer() else number


def scenario_options(func=None, *, interval_default="1h", interval_help="Productive time between checkpoints."):
    """The Scenario fields as options (shared by every command that takes a run)."""
    if func is None:
        return lambda f: scenario_options(f, interval_default=interval_default, interval_help=interval_help)
    specs = [
        ("--gpus", "n_gpus", None, "GPUs of the job."),
        ("--failure-rate", "failure_rate", 6.5e-3, "Failures per node-day (Meta study: 6.5e-3 and 2.34e-3)."),
        ("--checkpoint-interval", "checkpoint_interval", interval_default, interval_help),
        ("--work", "work", "7d", "Productive time the job needs."),
        ("--checkpoint-cost", "checkpoint_cost", "5min", "Blocking time of one checkpoint write."),
        ("--restart-cost", "restart_cost", "10min", "Initialisation after each interruption."),
        ("--queue-wait", "queue_wait", "0", "Wait after each interruption before the restart."),
        ("--gpus-per-node", "gpus_per_node", 8, "GPUs per node."),
        ("--weibull-shape", "weibull_shape", 1.0, "Shape of Weibull inter-failure times (1: exponential)."),
        ("--lemon-fraction", "lemon_fraction", 0.0, "Fraction of nodes that fail more often."),
        ("--lemon-rate-factor", "lemon_rate_factor", 1.0, "How many times more often they fail."),
        ("--queue-wait-distribution", "queue_wait_distribution", "fixed", "fixed or exponential."),
    ]
    for flag, field, default, help_text in reversed(specs):
        extra = {"required": True} if field == "n_gpus" else {"default": default, "show_default": default is not None}
        func = click.option(flag, field, type=FieldValues(field), help=help_text, **extra)(func)
    return func


FLAGS = {"n_gpus": "--gpus", "n_threads": "--threads",
         **{f: "--" + f.replace("_", "-") for f in (*FIELDS, "n_jobs", "seed", "max_failures", "target_ettr")
            if f != "n_gpus"}}


def usage_error(err: ValueError) -> click.UsageError:
    """A ValueError whose message starts with a parameter name, as an error naming the flag."""
    parameter, _, message = str(err).partition(": ")
    return click.UsageError(f"{FLAGS.get(parameter, parameter)}: {message}" if message else str(err))


def build_scenario(fields: dict) -> Scenario:
    try:
        return Scenario(**fields)
    except ValueError as err:
        raise usage_error(err) from None


class OneLineErrors(click.Group):
    """Bad input is one line, `Error: <flag>: <reason>`, and exit status 2 (no usage dump)."""

    def main(self, args=None, prog_name=None, **kwargs):
        kwargs.pop("standalone_mode", None)
        try:
            result = super().main(args, prog_name, standalone_mode=False, **kwargs)
        except click.UsageError as err:
            click.echo(f"Error: {err.format_message()}", err=True)
            sys.exit(2)
        except click.ClickException as err:
            err.show()
            sys.exit(err.exit_code)
        except click.Abort:
            click.echo("Aborted.", err=True)
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             epilog=_UNITS_EPILOG)
@click.version_option(package_name="relmodel")
def main():
    """Reliability of large ML training runs: Monte Carlo job timelines and closed-form ETTR."""


@main.command(epilog=_UNITS_EPILOG)
@scenario_options
@click.option("--n-jobs", type=click.IntRange(min=1), default=100_000, show_default=True, help="Jobs per scenario point.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True)
@click.option("--backend", type=click.Choice(["numba", "cython"]), default="numba", show_default=True)
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Numba threads (results do not depend on it).")
@click.option("--max-failures", type=click.IntRange(min=1), default=100_000, show_default=True,
              help="Stop (and count as capped) a job at this many failures.")
@click.option("--out", type=click.Path(dir_okay=True, path_type=Path), default=None,
              help="Write the Dataset: .nc (netCDF, h5netcdf) or .zarr.")
@click.option("--progress/--no-progress", default=False, help="Show a progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def simulate(n_jobs, seed, backend, threads, max_failures, out, progress, as_json, **fields):
    """Monte Carlo job timelines for one scenario or a sweep; prints a summary table."""
    from .closed_form import ClosedFormWarning, ettr
    from .simulate import simulate as run_simulation

    sc = build_scenario(fields)
    if out is not None and out.suffix not in (".nc", ".zarr"):
        raise click.UsageError(f"--out: unknown suffix {out.suffix!r}; use .nc or .zarr")
    try:
        ds = run_simulation(sc, n_jobs=n_jobs, seed=seed, backend=backend, n_threads=threads,
                            max_failures=max_failures, progress=progress)
    except ValueError as err:
        raise usage_error(err) from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClosedFormWarning)  # NaN in the table says it
        ds["ettr_renewal"] = ettr(sc, "renewal")
    if out is not None:
        write_dataset(ds, out)
    rows = summary_rows(ds, sc.dims)
    if as_json:
        click.echo(to_json({"rows": rows, "attrs": dict(ds.attrs)}))
    else:
        click.echo(format_table(rows))
        if out is not None:
            click.echo(f"wrote {out}")


@main.command(epilog=_UNITS_EPILOG)
@scenario_options(interval_default=None,
                  interval_help="The interval used today, shown beside the optimal ones (optional).")
@click.option("--target-ettr", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
              help="What each parameter would need, alone, to reach this ETTR; and the largest job that does.")
@click.option("--n-jobs", type=click.IntRange(min=100), default=20_000, show_default=True,
              help="Jobs of the quick check simulation, per interval.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True)
@click.option("--backend", type=click.Choice(["numba", "cython"]), default="numba", show_default=True)
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Draw ETTR against interval and against scale to this image file.")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON object (keys mttf_h, optimal_interval_h, ettr, and more).")
def plan(target_ettr, n_jobs, seed, backend, plot, as_json, **fields):
    """Capacity plan: checkpoint interval, ETTR, MTTF, time lost, sensitivities, targets."""
    from .plan import plan as make_plan

    for name, value in fields.items():
        if isinstance(value, list):
            raise click.UsageError(f"{FLAGS[name]}: plan takes one value (got {len(value)})")
    if fields["checkpoint_interval"] is None:
        del fields["checkpoint_interval"]
    build_scenario({"checkpoint_interval": 1.0, **fields})  # flag-named errors before any work
    try:
        result = make_plan(target_ettr=target_ettr, n_jobs=n_jobs, seed=seed, backend=backend, **fields)
    except ValueError as err:
        raise usage_error(err) from None
    if plot is not None:
        from .plot import plan_figure

        plan_figure(result.scenario, plot)
    if as_json:
        click.echo(to_json(result.to_dict()))
    else:
        click.echo(str(result))
        if plot is not None:
            click.echo(f"wrote {plot}")


@main.command(epilog="Study files: [fixed] scenario fields, [sweep] axes (lists, or {start, stop, num, "
                    "scale}), [run] n_jobs, seed, backend, max_failures, chunk_points, outputs. " + _UNITS_EPILOG)
@click.argument("study_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="The store: .zarr (written chunk by chunk, resumable) or .nc (converted at the end).")
@click.option("--scheduler", default="local", show_default=True,
              help="local (Numba threads here), dask-local (a LocalCluster here) or tcp://HOST:PORT.")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Workers of dask-local (default: cores).")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Draw the standard figures of two sweep axes to this image file.")
@click.option("--x", "x_dim", default=None, help="Sweep axis on the x axis of --plot (default: the first).")
@click.option("--y", "y_dim", default=None, help="Sweep axis on the y axis of --plot (default: the second).")
def sweep(study_file, out, scheduler, workers, quiet, plot, x_dim, y_dim):
    """Run (or resume) a study: a grid of scenarios, chunk by chunk, into a zarr or netCDF store."""
    from .study import StudyError, load_study
    from .sweep import open_study, run_study

    try:
        study = load_study(study_file)
        run_study(study, out, source=study_file.read_text(), scheduler=scheduler, n_workers=workers,
                  progress=not quiet)
    except StudyError as err:
        raise click.UsageError(str(err)) from None
    if plot is not None:
        from .plot import study_figure

        try:
            study_figure(open_study(out), x_dim, y_dim, plot)
        except ValueError as err:
            raise usage_error(err) from None
    if not quiet:
        click.echo(f"wrote {out}" + (f" and {plot}" if plot else ""))


@main.command()
@click.option("--quick", is_flag=True, help="A tenth of the jobs: under two minutes on 2 cores.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Also write every figure, with machine information, to this file.")
@click.option("--figures", type=click.Path(file_okay=False), default=None,
              help="Draw the scaling figures (threads, failures per job) into this folder.")
def bench(quick, json_path, figures):
    """relmodel against a NumPy and a SimPy implementation and the bare generator."""
    from .bench import run as run_bench

    run_bench(quick, json_path, figures)


def to_json(obj) -> str:
    """Strict JSON: NaN and infinities become null."""
    def clean(x):
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        if isinstance(x, float) and not math.isfinite(x):
            return None
        return x.item() if hasattr(x, "item") else x
    return json.dumps(clean(obj), indent=2, allow_nan=False)


def write_dataset(ds, path: Path):
    if path.suffix == ".zarr":
        try:
            ds.to_zarr(path, mode="w")
        except ImportError as err:
            raise click.ClickException(f"writing .zarr needs the zarr package ({err})") from None
    else:
        ds.to_netcdf(path, engine="h5netcdf")


def summary_rows(ds, dims) -> list[dict]:
    flat = ds.stack(point=dims) if dims else ds.expand_dims(point=[0])
    rows = []
    for i in range(flat.sizes["point"]):
        pt = flat.isel(point=i)
        row = {d: pt[d].item() for d in dims}
        row.update({
            "ettr": float(pt.ettr), "ettr_se": float(pt.ettr_se), "ettr_renewal": float(pt.ettr_renewal),
            "ettr_job_mean": float(pt.ettr_job_mean), "wall_p50_h": float(pt.wall_quantile.sel(quantile=0.5)),
            "wall_p95_h": float(pt.wall_quantile.sel(quantile=0.95)), "failures_mean": float(pt.failures_mean),
            "n_capped": int(pt.n_capped),
        })
        rows.append(row)
    return rows


def format_table(rows: list[dict]) -> str:
    if not rows:
        return ""
    def cell(key, value):
        if isinstance(value, float):
            if key == "ettr_se":
                return f"{value:.2g}"
            return f"{value:.4f}" if key.startswith("ettr") else f"{value:.4g}"
        return str(value)
    keys = list(rows[0])
    table = [keys] + [[cell(k, r[k]) for k in keys] for r in rows]
    widths = [max(len(line[j]) for line in table) for j in range(len(keys))]
    return "\n".join("  ".join(v.rjust(w) for v, w in zip(line, widths)) for line in table)


def _add_subsystem_commands():
    # Imported last: these modules use the helpers above.
    from .elastic.cli import cluster
    from .pipeline.cli import pipeline

    main.add_command(pipeline)
    main.add_command(cluster)


_add_subsystem_commands()

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
