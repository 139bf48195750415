"""The command line's shared floor: option types, decorators and output helpers that every
command module imports downward (the top-level `cli` and those of the subpackages alike)."""

from __future__ import annotations

import errno
import json
import math
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

import click
from click.core import ParameterSource

from . import _feedback as feedback
from ._extras import MissingExtraError, require
from ._checks import MEMORY_BUDGET_ENV, memory_budget_set, parse_memory_size
from ._engine import DEFAULT_MAX_FAILURES, MAX_JOBS
from ._errors import ScenarioError, parameter_and_reason
from ._scenario import FIELDS, Scenario
from ._store import OutputError
from ._units import format_hours, to_hours_with_unit


class Duration(click.ParamType):
    """A duration option, converted to hours. On the command line a non-zero
    number needs its unit (`units.to_hours_with_unit`): "--checkpoint-cost 300"
    is refused rather than read as 300 hours."""

    name = "DURATION"

    def convert(self, value, param, ctx):
        try:
            return to_hours_with_unit(value, "duration")
        except ValueError as err:
            self.fail(parameter_and_reason(err)[1], param, ctx)


class FieldValues(click.ParamType):
    """One Scenario field: a value, or a comma-separated list of them (a sweep axis).

    The text is only read here (a number, or a duration with its unit); the
    Scenario built from it checks each value, once.
    """

    def __init__(self, field: str):
        self.field = field
        self.name = {"duration": "DURATION", "count": "INT", "choice": "CHOICE"}.get(FIELDS[field][1], "FLOAT")

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        items = [v.strip() for v in value.split(",")]
        kind = FIELDS[self.field][1]
        try:
            parsed = [_parse(item, kind, self.field) for item in items]
        except ValueError as err:  # it names the field; the flag replaces it
            self.fail(parameter_and_reason(err)[1], param, ctx)
        return parsed if len(parsed) > 1 else parsed[0]


# A fast checkpoint level as one quoted argument: spaces after the commas let a help text wrap between keys.
FAST_CHECKPOINT_EXAMPLE = '"interval=10min, cost=5s, restart=3min, persist=1min, survives=0.85"'


class LevelSpec(click.ParamType):
    """One fast checkpoint level: ``interval=10min,cost=5s,restart=3min,persist=1min,survives=0.85``
    (``interval``, ``restart`` and ``survives`` required; ``cost`` and ``persist`` default to 0).
    Checked when the Scenario is built."""

    name = "LEVEL"
    _KEYS = ("interval", "cost", "restart", "persist", "survives")

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        fields = {}
        for item in filter(None, (part.strip() for part in value.split(","))):
            key, sep, text = item.partition("=")
            key = key.strip()
            if not sep or key not in self._KEYS:
                self.fail(f"{item!r}: expected key=value with a key in {', '.join(self._KEYS)}", param, ctx)
            if key in fields:
                self.fail(f"{key} given twice", param, ctx)
            fields[key] = text.strip()
        if "interval" not in fields:
            self.fail("needs interval=...", param, ctx)
        for key in ("interval", "cost", "restart", "persist"):  # as every duration flag: "cost=5" is not 5 hours
            if key in fields:
                try:
                    fields[key] = to_hours_with_unit(fields[key], key)
                except ValueError as err:
                    self.fail(f"{key}={fields[key]!r}: {parameter_and_reason(err)[1]}", param, ctx)
        if "survives" in fields:
            try:
                fields["survives"] = float(fields["survives"])
            except ValueError:
                self.fail(f"survives={fields['survives']!r} is not a number", param, ctx)
        return fields


class OutputPath(click.Path):
    """A path the command writes, judged before any work (`relmodel._store.judge_output`): a
    link by its target; something there that is not an output of this kind is refused,
    never replaced; an output of this kind is replaced as `overwrite` says.

    Parameters
    ----------
    kind : {"dataset", "figure", "json"}
        What the command writes there.
    overwrite : {"flag", "always", "never"}, default "always"
        Whether an output of this kind there is replaced: as the command's
        ``--overwrite`` says (processed first: `overwrite_option`), always (a
        figure, a report), or never judged here (the command judges it itself:
        a sweep resumes its own study).
    """

    def __init__(self, kind: str, overwrite: str = "always", **kwargs):
        super().__init__(path_type=Path, **kwargs)
        self.kind, self.overwrite = kind, overwrite

    def convert(self, value, param, ctx):
        from ._store import judge_output

        path = super().convert(value, param, ctx)
        self.check_suffix(path, param, ctx)
        _check_folder(self, path, param, ctx)
        if self.overwrite != "never":
            overwrite = self.overwrite == "always" or bool(ctx is not None and ctx.params.get("overwrite"))
            try:
                judge_output(path, self.kind, parameter=param.opts[-1] if param is not None else "path",
                             overwrite=overwrite)
            except OutputError as err:
                self.fail(err.reason, param, ctx)
        return path

    def check_suffix(self, path: Path, param, ctx):
        """Refuse a suffix this output cannot have (none refused here)."""


class FigurePath(OutputPath):
    """An image file to draw, its suffix one matplotlib can write (checked before any work);
    an image of that format there is redrawn, anything else refused."""

    def __init__(self):
        super().__init__("figure", dir_okay=False)

    def check_suffix(self, path, param, ctx):
        from matplotlib.figure import Figure  # here: only when a figure is asked for

        formats = Figure().canvas.get_supported_filetypes()
        if path.suffix.lstrip(".").lower() not in formats:
            self.fail(f"{str(path)!r} needs an image suffix: {', '.join('.' + f for f in sorted(formats))}",
                      param, ctx)


def _check_folder(kind: click.Path, path: Path, param, ctx):
    """Refuse, before any work, an output whose folder does not exist (a usage problem) or where
    no file can be made (the machine's: a read-only folder or filesystem); both failed after the run."""
    import tempfile

    if not path.parent.is_dir():
        kind.fail(f"no such folder: {path.parent}", param, ctx)
    try:  # the way every output is written: a hidden temporary beside it, renamed into place
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.probe-"):
            pass
    except OSError as err:
        flag = param.opts[-1] if param is not None else "path"
        raise click.ClickException(f"{flag}: cannot write in {path.parent} ({err.strerror or err}); "
                                   f"choose another {flag}") from None


class DatasetPath(OutputPath):
    """A Dataset to write: netCDF (.nc) or zarr (.zarr), by suffix (checked before any work);
    a relmodel output there is replaced only with ``--overwrite``, anything else refused.

    Parameters
    ----------
    suffixes : tuple of str, default (".nc", ".zarr")
        The formats the command writes.
    overwrite : {"flag", "never"}, default "flag"
        "never" for a command that judges its output itself (`OutputPath`).
    """

    def __init__(self, suffixes=(".nc", ".zarr"), overwrite: str = "flag"):
        super().__init__("dataset", overwrite)
        self.suffixes = suffixes

    def check_suffix(self, path, param, ctx):
        if path.suffix not in self.suffixes:
            self.fail(f"unknown suffix {path.suffix!r} in {str(path)!r}; use {' or '.join(self.suffixes)}",
                      param, ctx)
        try:
            require("zarr" if path.suffix == ".zarr" else "h5netcdf", f"a {path.suffix} output")
        except MissingExtraError as err:
            self.fail(str(err), param, ctx)


def _parse(text: str, kind: str, field: str):
    """One item of a FieldValues option, read as the command line reads it."""
    if kind == "choice":
        return text
    if kind == "duration":
        return to_hours_with_unit(text, field)
    try:
        number = float(text)
    except ValueError:
        raise ScenarioError(field, f"{text!r} is not a number") from None
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
        ("--checkpoint-persist", "checkpoint_persist", "0", "Time after a write until the checkpoint is durable "
                                                            "(asynchronous checkpointing)."),
    ]
    func = click.option("--taxonomy", default=None, metavar="NAME|FILE",
                        help="Failure kinds with their own shares, restart costs and queue waits: a preset "
                             "(meta-2024, slurm-default) or a taxonomy TOML file. Replaces --restart-cost and "
                             "--queue-wait.")(func)
    func = click.option("--fast-checkpoint", "fast_checkpoints", type=LevelSpec(), multiple=True,
                        help="A checkpoint level faster than the durable one, fastest first, repeatable: "
                             f"{FAST_CHECKPOINT_EXAMPLE} (survives: the fraction of failures after which it can be "
                             "restored).")(func)
    for flag, field, default, help_text in reversed(specs):
        extra = {"required": True} if field == "n_gpus" else {"default": default, "show_default": default is not None}
        func = click.option(flag, field, type=FieldValues(field), help=help_text, **extra)(func)
    return func


BACKEND_HELP = ("auto: the Cython twin for short runs (no compile wait), Numba (parallel) for long ones; "
                "the results are the same bits whichever.")


def simulation_options(func):
    """The options of a command that simulates a scenario or grid (`simulate`, `compare`): the
    Scenario fields, the run's (--n-jobs, --seed, --backend, --threads, --max-failures), its outputs
    (--out, --overwrite, --json) and its feedback (--progress, --quiet); one list, so that the
    commands cannot drift apart.

    Parameters
    ----------
    func : callable
        The command's function; it receives n_jobs, seed, backend, threads, max_failures, out,
        overwrite, progress, as_json, quiet and the Scenario fields.

    Returns
    -------
    callable
        The function with the options, to put directly under the command's decorator.
    """
    options = [
        click.option("--n-jobs", type=click.IntRange(1, MAX_JOBS), default=100_000, show_default=True,
                     help="Jobs per scenario point."),
        click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True),
        click.option("--backend", type=click.Choice(["auto", "numba", "cython"]), default="auto",
                     show_default=True, help=BACKEND_HELP),
        click.option("--threads", type=click.IntRange(min=1), default=None,
                     help="Numba threads (results do not depend on it)."),
        click.option("--max-failures", type=click.IntRange(1, 2**62), default=DEFAULT_MAX_FAILURES,
                     show_default=True, help="Stop (and count as capped) a job at this many failures."),
        click.option("--out", type=DatasetPath(), default=None,
                     help="Write the Dataset: .nc (netCDF, h5netcdf) or .zarr."),
        overwrite_option(),
        click.option("--progress/--no-progress", default=None,
                     help="Show a progress bar [default: on a terminal, unless --quiet]."),
        click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (with a units block)."),
    ]
    func = quiet_option()(func)
    for option in reversed(options):
        func = option(func)
    return scenario_options(func)


def taxonomy_fields(fields: dict) -> dict:
    """With --taxonomy, the restart cost and queue wait come per kind from it:
    their defaults are dropped (given explicitly, they must match its means)."""
    if fields.get("taxonomy") is None:
        fields.pop("taxonomy", None)
        return fields
    ctx = click.get_current_context()
    for name in ("restart_cost", "queue_wait"):
        if ctx.get_parameter_source(name) == ParameterSource.DEFAULT:
            fields.pop(name, None)
    return fields


# A full disk or quota, a read-only file system, no permission, the file size limit: the
# environment (exit 1), not relmodel's bug (exit 70).
ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG})


def refuse_unused(unused: bool, reason: str, *names: str):
    """Refuse the first of the options `names` given on the command line while
    `unused` holds: one line, "--flag: reason". Silently ignoring an option
    that does nothing in this run hides a mistake."""
    if not unused:
        return
    ctx = click.get_current_context()
    for param in ctx.command.params:
        if param.name in names and ctx.get_parameter_source(param.name) != ParameterSource.DEFAULT:
            raise click.UsageError(f"{param.opts[0]}: {reason}")


FLAGS = {"n_gpus": "--gpus", "n_threads": "--threads",
         **{f: "--" + f.replace("_", "-") for f in (*FIELDS, "taxonomy", "n_jobs", "seed", "max_failures",
                                                    "target_ettr")
            if f != "n_gpus"},
         "fast_checkpoints": "--fast-checkpoint"}


def usage_error(err: ValueError) -> click.UsageError:
    """A ValueError whose message starts with a parameter name, as an error naming the flag."""
    parameter, message = parameter_and_reason(err)
    return click.UsageError(f"{FLAGS.get(parameter, parameter)}: {message}" if message else str(err))


def build_scenario(fields: dict) -> Scenario:
    fields = dict(fields)
    fields["fast_checkpoints"] = tuple(fields.get("fast_checkpoints") or ()) or None
    try:
        return Scenario(**taxonomy_fields(fields))
    except ValueError as err:
        raise usage_error(err) from None


def quiet_option(help_text: str = "No progress bar and no notes on stderr."):
    """The `--quiet` flag of a command: its whole body runs under `_feedback.quiet`.

    The command still receives `quiet` (to leave out its own lines on stdout).

    Parameters
    ----------
    help_text : str
        The flag's help.

    Returns
    -------
    callable
        A decorator, to put directly above the command's ``def``.
    """
    import functools

    def decorate(func):
        @functools.wraps(func)
        def command(*args, quiet, **kwargs):
            with feedback.quiet(quiet):
                return func(*args, quiet=quiet, **kwargs)

        return click.option("--quiet", is_flag=True, help=help_text)(command)

    return decorate


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    """Warnings on the command line: one line, no source excerpt."""
    click.echo(f"Warning: {message}", err=True)


# An error relmodel did not expect: a bug, told apart from bad input (2) and refusals (1).
EXIT_INTERNAL_ERROR = 70  # sysexits' EX_SOFTWARE


def _hold_memory_budget(ctx, param, value):
    """`--memory-budget`: the budget `_checks.check_memory` holds the command to, while it runs."""
    if value is None:
        return
    try:
        nbytes = parse_memory_size(param.opts[0], value)
    except ValueError as err:
        raise click.BadParameter(parameter_and_reason(err)[1], ctx=ctx, param=param) from None
    ctx.with_resource(memory_budget_set(nbytes))


def memory_budget_option() -> click.Option:
    """The `--memory-budget` option every command has (`OneLineErrors.add_command` gives it)."""
    return click.Option(["--memory-budget"], metavar="SIZE", expose_value=False, callback=_hold_memory_budget,
                        help=f"What the command may allocate, checked before it starts: e.g. 8GiB, 512MB, 25% "
                             f"[default: half this machine's memory, or {MEMORY_BUDGET_ENV}].")


class OneLineErrors(click.Group):
    """Bad input is one line, `Error: <flag>: <reason>`, and exit status 2 (no usage dump).

    A refusal is one line and exit status 1; an error relmodel did not expect is
    one line naming it and exit status 70. `relmodel --debug ...` shows the
    traceback of each as well. Every command added has `--memory-budget`.
    """

    def add_command(self, cmd, name=None):
        if not isinstance(cmd, click.Group) and "memory_budget" not in {p.name for p in cmd.params}:
            cmd.params.append(memory_budget_option())
        super().add_command(cmd, name)

    def main(self, args=None, prog_name=None, **kwargs):
        kwargs.pop("standalone_mode", None)
        argv = list(sys.argv[1:] if args is None else args)
        debug = "--debug" in argv[:argv.index("--") if "--" in argv else len(argv)]
        try:
            with warnings.catch_warnings():
                warnings.showwarning = _one_line_warning
                result = super().main(argv, prog_name, standalone_mode=False, **kwargs)
        except (click.ClickException, click.Abort, MissingExtraError) as err:
            if debug:
                _print_traceback(err)
            self._one_line(err)
        except OutputError as err:  # an output path refused where no flag was at hand (`output_errors`)
            if debug:
                _print_traceback(err)
            self._one_line(click.UsageError(str(err)))
        except Exception as err:  # noqa: BLE001  a bug: one line, and the traceback on --debug
            if debug:
                raise
            reason = f"{type(err).__name__}: {err}".splitlines()[0]
            click.echo(f"Error: internal error ({reason}); please report it with the output of "
                       f"`relmodel --debug {' '.join(argv)}`", err=True)
            sys.exit(EXIT_INTERNAL_ERROR)
        sys.exit(result if isinstance(result, int) else 0)

    @staticmethod
    def _one_line(err):
        if isinstance(err, click.MissingParameter):
            # Click's own wording names the option: "Missing option '--gpus'."
            click.echo(f"Error: {err.format_message()}", err=True)
            sys.exit(2)
        if isinstance(err, click.BadParameter):
            # "--flag: reason", as for every other bad input, rather than click's own wording.
            flag = err.param.opts[-1] if err.param is not None and err.param.opts else err.param_hint
            click.echo(f"Error: {flag}: {err.message}" if flag else f"Error: {err.format_message()}", err=True)
            sys.exit(2)
        if isinstance(err, click.UsageError):
            click.echo(f"Error: {err.format_message()}", err=True)
            sys.exit(2)
        if isinstance(err, click.ClickException):
            err.show()
            sys.exit(err.exit_code)
        # An install to make (MissingExtraError), or ^C.
        click.echo("Aborted." if isinstance(err, click.Abort) else f"Error: {err}", err=True)
        sys.exit(1)


def _print_traceback(err: BaseException):
    """The traceback of a handled error, with the one it was raised from (kept even under `from None`)."""
    import traceback

    cause = err.__cause__ or err.__context__
    if cause is not None:
        traceback.print_exception(cause, file=sys.stderr)
    traceback.print_exception(err, file=sys.stderr)


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


def overwrite_option():
    """The `--overwrite` flag of a command that writes `--out`: processed before the other
    options, so that `DatasetPath` judges `--out` with it."""
    return click.option("--overwrite", is_flag=True, is_eager=True,
                        help="Replace a relmodel output at --out (without it, none is replaced; a file or "
                             "folder relmodel did not write is never replaced).")


@contextmanager
def output_errors(flag: str, path):
    """Errors of writing an output as one line naming its flag: a refusal of what is there
    (`relmodel._store.OutputError`, exit 2) or the environment (a full disk, the file size
    limit, no permission: exit 1).

    Parameters
    ----------
    flag : str
        The option that named the output.
    path : str or pathlib.Path
        The output, named in the error.
    """
    from ._study import StudyError

    try:
        yield
    except OutputError as err:
        raise click.UsageError(f"{flag}: {err.reason}") from None
    except StudyError as err:  # the lock: another writer, or a place no lock file can be made
        raise click.ClickException(str(err)) from None
    except OSError as err:
        raise click.ClickException(f"{flag}: cannot write {path}: {err.strerror or err}") from None


def draw_figure(path: Path, draw, /, *args, **kwargs):
    """Draw a command's `--plot` after its result: stdout flushed first, a line on stderr that moves
    while it draws (`relmodel._feedback.ticking`), an error of writing it in one line naming the flag.

    Parameters
    ----------
    path : pathlib.Path
        The `--plot` path.
    draw : callable
        Draws and saves the figure: ``draw(*args, **kwargs)``.
    *args, **kwargs
        Passed to `draw`.
    """
    sys.stdout.flush()
    with output_errors("--plot", path), feedback.ticking(f"drawing {path}"):
        draw(*args, **kwargs)


def write_dataset(ds, path: Path, *, overwrite: bool, writer: str, groups=None):
    """Write `--out` under the output's lock (every writer of a path takes it, however the
    path is spelled), judged again there (`relmodel._store.judge_output`: never over what
    relmodel did not write, over a relmodel output only with `overwrite`), in one step once
    whole; one-line errors.

    Parameters
    ----------
    ds : xarray.Dataset
        What to write: .zarr or .nc by the path's suffix.
    path : pathlib.Path
        The `--out` path.
    overwrite : bool
        Whether a relmodel output there may be replaced.
    writer : str
        The command, named to a run that finds the output busy.
    groups : dict of str to xarray.Dataset, optional
        Further netCDF groups (`relmodel._store.write_netcdf`).
    """
    from ._store import exclusive, judge_output, write_netcdf, write_path, write_zarr

    require("filelock", "--out")
    given, path = path, write_path(path)
    if not path.parent.is_dir():  # the environment, not the command: exit 1
        raise click.ClickException(f"--out: no such folder: {path.parent}")
    with output_errors("--out", path), exclusive(path, "", writer):
        judge_output(given, "dataset", parameter="--out", overwrite=overwrite)
        if Path(given).suffix == ".zarr":  # the format as named (a link's target may have another suffix)
            write_zarr(ds, path)
        else:
            write_netcdf(ds, path, groups)


def table_cell(key: str, value) -> str:
    """A value as the command tables print it: a Scenario duration with its unit (the JSON keeps
    hours), ETTRs to 4 decimals, standard errors to 2 figures, other floats to 4 figures."""
    if isinstance(value, float) and FIELDS.get(key, (None, None))[1] == "duration":
        return format_hours(value)
    if isinstance(value, float):
        if key == "ettr_se":
            return f"{value:.2g}"
        return f"{value:.4f}" if key.startswith("ettr") else f"{value:.4g}"
    return str(value)


def table_line(cells, widths) -> str:
    """One line of a table: the cells right-aligned in their columns."""
    return "  ".join(v.rjust(w) for v, w in zip(cells, widths))


def format_table(rows: list[dict], widths: dict | None = None) -> str:
    """Rows (dicts of the same keys) as a text table under a header; each column as wide as its
    longest cell, or as `widths` says (a table printed a row at a time knows them first)."""
    if not rows:
        return ""
    keys = list(rows[0])
    table = [keys] + [[table_cell(k, r[k]) for k in keys] for r in rows]
    if widths is None:
        widths = {k: max(len(line[j]) for line in table) for j, k in enumerate(keys)}
    return "\n".join(table_line(line, [widths[k] for k in keys]) for line in table)
