"""Fuzzing the command line: any mix of flags and values, valid or not, for every
command, ends in a result (exit 0), a one-line usage error (exit 2) or a reported
failure (exit 1: a file not written, a run no job of which can finish) within a
bound on the work done and on the memory traced; never a traceback, a warning
other than relmodel's own, nor a hang."""

import warnings

import click
import pytest
from click.testing import CliRunner
from fuzzing import (LEAKED_TEXT, MEMORY_BUDGET, NoAnswer, budget_in_force, cpu_time_bound, own_warning,
                     traced_peak)
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import relmodel._cli_shared
from relmodel import data
from relmodel._cli import main

# Commands not drawn, and why (every other one the group holds is: a new command is fuzzed
# without being named here).
SKIPPED = {}
# `bench` runs for minutes once its flags pass: its draws stop where the work would start.
STOPPED_AT_THE_WORK = {("bench",): "relmodel._bench.run_benchmark"}
# Values that trip parsers: valid ones of every kind, and the edges and the junk around them.
VALUES = (
    "1", "8", "64", "1000", "16384", "1000000", "0", "-1", "2.5", "1e3", "1e-300", "1e400", "nan", "inf", "-inf",
    "", " ", "abc", "1,8,64", "1,,2", "0..3", "3..1", "6.5e-3", "0.9", "1.5", "1,1", "2**64", "18446744073709551617",
    "90s", "5min", "1h", "1.5d", "3w", "10m", "-1h", "1e6d", "1e-9s", "nanh", "1 h", "h", "1e308h", "1e-308h",
    "fixed", "exponential", "numba", "cython", "1f1b", "zb-h1", "all", "elastic", "fifo",
)
RARE_VALUES = ("1e6d", "1000000", "1e400", "1e3", "1e308h")  # each draw keeps at most a couple of these big ones
# Valid values by kind, drawn most of the time so that most command lines get past
# parsing into the models (junk in any one option would stop them at the door).
VALID = {
    "duration": ("90s", "5min", "1h", "1.5d", "3w", "0", "2h", "1e-9s", "1e6d"),
    "count": ("1", "8", "64", "1000", "16384", "1000000"),
    "jobs": ("1", "100", "1000", "20000"),  # runs' sizes: a million is among the junk, drawn rarely
    "number": ("0", "1e-9", "6.5e-3", "0.5", "1", "2", "10", "1000"),
    "queue_wait_distribution": ("fixed", "exponential"),
    "taxonomy": ("meta-2024", "slurm-default"),
    "fast_checkpoints": ("interval=10min,cost=5s,restart=3min,persist=30s,survives=0.85", "interval=5min",
                         "interval=10min,cost=5s,survives=1.5", "interval=0", "cost=5s", "interval=10min,junk=1"),
    "tz": ("UTC", "Europe/Paris", "+02:00", "+99:00", "Mars/Olympus"),
    "run_ids": ("1", "1,2", "1,1", "x"),
    "strategies": ("recycle", "restart,spare", "recycle,recycle", "bamboo,oobleck", "drop-pipeline", "nope"),
    "failures": ("0..2", "0,1", "1", "0,1,1", "2..1"),
    "model_name": ("gpt3-175b", "llama2-70b", "nope"),
    "gpu": ("a100-80gb", "h100-80gb", "nope"),
    "batch_range": ("0.5,2", "1,1", "2,0.5", "0,1"),
    "x_dim": ("n_gpus", "failure_rate", "nope"),
    "y_dim": ("n_gpus", "failure_rate", "nope"),
    # Only the in-process scheduler: a LocalCluster starts processes and tcp:// waits on a network.
    "scheduler": ("local", "nope"),
    "memory_budget": ("1GiB", "256MiB", "1MiB", "50%", "0", "1e400GiB", "2**64", "nope"),
}
# Options that name a file read, and one that names an output folder.
INPUT_OPTIONS = ("from_log", "trace", "traces", "sacct", "verify_path")
OUTPUT_OPTIONS = ("out", "plot", "json_path", "figures")


def leaf_commands(group=main, path=()):
    """Every command of the group, as the words that call it (`("run", "show")`), at any depth."""
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from leaf_commands(command, (*path, name))
        else:
            yield (*path, name)


def command_of(words):
    command = main
    for word in words:
        command = command.commands[word]
    return command


def valid_inputs(argument: str, folder) -> list:
    """The files an argument is meant for: a job log, a study file, a run's record."""
    return {"log_file": [str(folder / "input-log.csv"), str(data.path("cluster-jobs.sacct"))],
            "study_file": [str(folder / "input-study.toml")],
            "events": [str(data.path(name)) for name in data.names() if name.startswith("run-")]}[argument]


def input_files(folder):
    return sorted(str(p) for p in folder.glob("input*")) + [str(data.path(n)) for n in data.names()] + [
        "missing.csv"]


@st.composite
def command_lines(draw, words, out_dir):
    cmd = command_of(words)
    args = list(words)
    for argument in (p for p in cmd.params if isinstance(p, click.Argument)):
        many = argument.nargs == -1
        files = st.one_of(*[st.sampled_from(valid_inputs(argument.name, out_dir))] * 3,
                          st.sampled_from(input_files(out_dir) + [""]))
        args += draw(st.lists(files, min_size=0 if many else 1, max_size=2 if many else 1))
    options = [p for p in cmd.params if isinstance(p, click.Option) and p.name not in ("help",)]
    required = [p for p in options if p.required]  # present in most draws, so most draws get past them
    drawn = draw(st.lists(st.sampled_from(options), max_size=8, unique_by=lambda p: p.name))
    if draw(st.integers(0, 9)):
        drawn += [p for p in required if p not in drawn]
    for option in drawn:
        flag = option.opts[-1] if option.opts[-1].startswith("--") else option.opts[0]
        if option.is_flag:
            args.append(flag)
        elif option.name in INPUT_OPTIONS:
            args += [flag, draw(st.sampled_from(input_files(out_dir)))]
        elif option.name in OUTPUT_OPTIONS:
            args += [flag, str(out_dir / draw(st.sampled_from(["x.nc", "x.png", "x.zarr", "x.txt", "x.json", "x",
                                                                "read-only/x.png", "input-log.csv/x.png"])))]
        else:
            choices = tuple(getattr(option.type, "choices", ()))
            valid = choices or VALID[_kind(option)]
            args += [flag, draw(st.integers(0, 7).flatmap(lambda i: st.sampled_from(VALUES if i == 0 else valid)))]
    return args


def _kind(option) -> str:
    from relmodel._scenario import FIELDS

    if option.name in VALID:
        return option.name
    field = getattr(option.type, "field", None)
    if field is not None:
        kind = FIELDS[field][1]
        return "duration" if kind == "duration" else "count" if kind == "count" else "number"
    if option.name in ("n_jobs", "n_runs"):
        return "jobs"
    if isinstance(option.type, click.types.IntParamType) or "gpus" in option.name or option.name in (
            "stages", "replicas", "microbatches", "n_jobs", "runs", "seed"):
        return "count"
    if isinstance(option.type, click.types.FloatParamType):
        return "number"
    if any(word in option.name for word in ("duration", "time", "delay", "wait", "interval", "cost", "every")):
        return "duration"
    return "number"


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    """A folder for outputs, with the input files commands may be pointed at: job logs
    (valid and malformed), a study file, run records (broken ones), an empty file, junk,
    and a folder no one may write in."""
    from hypothesis import find

    from relmodel._synthetic_log import synthetic_log
    from relmodel.testing.strategies import job_logs

    folder = tmp_path_factory.mktemp("fuzz")
    synthetic_log(300, failure_rate=6.5e-3, seed=1).to_csv(folder / "input-log.csv")
    (folder / "input-bad-log.csv").write_text(find(job_logs(malformed=True), lambda text: True))
    (folder / "input-study.toml").write_text(
        '[fixed]\nfailure_rate = 6.5e-3\nwork = "1d"\n[sweep]\nn_gpus = [8, 64]\n[run]\nn_jobs = 500\nseed = 1\n')
    events = data.path("run-events.csv").read_text().splitlines()
    (folder / "input-events-cut.csv").write_text("\n".join(events[:len(events) // 2]) + "\n")
    (folder / "input-events-header.csv").write_text(events[0] + "\n")
    (folder / "input-events-bad-time.csv").write_text(
        "\n".join([events[0]] + [line.replace("Z", "+99:00", 1) for line in events[1:5]]) + "\n")
    (folder / "input-empty.txt").write_text("")
    (folder / "input-junk.bin").write_bytes(bytes(range(256)))
    read_only = folder / "read-only"
    read_only.mkdir()
    read_only.chmod(0o555)
    return folder


COMMANDS = [words for words in leaf_commands() if words not in SKIPPED]


def test_every_command_is_drawn_or_skipped_with_a_reason():
    assert set(COMMANDS) | set(SKIPPED) == set(leaf_commands())
    assert ("run", "replay") in COMMANDS  # the walk reaches a group's commands


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
# Three fifths of the profile's draws a command (15 in CI): a command line runs a whole model, so that
# the two fuzz modules together stay within a minute on two cores.
@settings(max_examples=max(1, settings.default.max_examples * 3 // 5),
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None)
@given(data=st.data())
def test_any_command_line_ends_in_a_result_or_a_one_line_error(words, out_dir, data):
    args = data.draw(command_lines(words, out_dir))
    if sum(a in RARE_VALUES for a in args) > 2:
        return
    if words == ("cluster",) and _number(flag_value(args, "--failure-rate")) >= 100:
        # Kept short: each node failure re-solves the allocation in Python, so the up to
        # MAX_NODE_FAILURES failures a run may have take minutes.
        return
    if "max_failures" in {p.name for p in command_of(words).params} and "--max-failures" not in args:
        # A run's cost is bounded by design at n_jobs x max_failures failure events
        # (1e10 at the defaults, a minute or two for a point just short of hopeless);
        # this keeps the bound within the CPU time of a call.
        args += ["--max-failures", "2000"]
    shown = []

    def show(message, category, *rest, **kwargs):
        shown.append(category)
        one_line(message, category, *rest, **kwargs)

    one_line = relmodel._cli_shared._one_line_warning
    command_line = f"relmodel {' '.join(args)}"
    try:
        with pytest.MonkeyPatch.context() as patch, cpu_time_bound(), warnings.catch_warnings(), \
                traced_peak() as peak:
            patch.setenv("RELMODEL_MEMORY_BUDGET", MEMORY_BUDGET)
            patch.setattr(relmodel._cli_shared, "_one_line_warning", show)
            if words in STOPPED_AT_THE_WORK:
                patch.setattr(STOPPED_AT_THE_WORK[words], lambda *a, **k: None)
            warnings.simplefilter("always")  # each one, as a user sees them (the suite turns relmodel's into errors)
            result = CliRunner().invoke(main, args)
    except NoAnswer as err:
        pytest.fail(f"{command_line}: {err}")
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{command_line} raised {result.exception!r}\n{result.output}")
    event(f"exit {result.exit_code}")
    assert result.exit_code in (0, 1, 2), (command_line, result.exit_code, result.output)
    assert not LEAKED_TEXT.search(result.output), (command_line, result.output)
    assert all(own_warning(category) for category in shown), (command_line, shown, result.stderr)
    if result.exit_code:
        errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
        assert len(errors) == 1, (command_line, result.stderr)
    assert peak[0] <= budget_in_force(flag_value(args, "--memory-budget")), (
        command_line, f"{peak[0] / 2**20:.0f} MiB traced")


def flag_value(args: list, flag: str):
    """The value given to `flag` (its last), or None."""
    given = [i for i, arg in enumerate(args[:-1]) if arg == flag]
    return args[given[-1] + 1] if given else None


def _number(text) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return float("nan")
