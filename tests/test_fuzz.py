"""Fuzzing the command line: any mix of flags and values, valid or not, ends in
a result (exit 0), a one-line usage error (exit 2) or a reported failure (exit
1: a file not written, a run no job of which can finish) within a bound on the
work done; never a traceback, never a hang."""

import contextlib
import signal
import warnings

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relmodel._cli import main

# A hang, not a slow run: CPU time, which a busy machine does not use up, with 10x
# the slowest valid draw (`pipeline --stages 1000 --failure-rate 10`: 13 CPU seconds
# idle, plus a cold JIT compilation of up to 15).
CALL_CPU_SECONDS = 300
COMMANDS = ("simulate", "plan", "pipeline", "cluster", "fit", "sweep")
# Values that trip parsers: valid ones of every kind, and the edges and the junk around them.
VALUES = (
    "1", "8", "64", "1000", "16384", "1000000", "0", "-1", "2.5", "1e3", "1e-300", "1e400", "nan", "inf", "-inf",
    "", " ", "abc", "1,8,64", "1,,2", "0..3", "3..1", "6.5e-3", "0.9", "1.5",
    "90s", "5min", "1h", "1.5d", "3w", "10m", "-1h", "1e6d", "1e-9s", "nanh", "1 h", "h",
    "fixed", "exponential", "numba", "cython", "1f1b", "zb-h1", "all", "elastic", "fifo",
)
RARE_VALUES = ("1e6d", "1000000", "1e400", "1e3")  # each draw keeps at most a couple of these big ones
# Valid values by kind, drawn most of the time so that most command lines get past
# parsing into the models (junk in any one option would stop them at the door).
VALID = {
    "duration": ("90s", "5min", "1h", "1.5d", "3w", "0", "2h", "1e-9s", "1e6d"),
    "count": ("1", "8", "64", "1000", "16384", "1000000"),
    "number": ("0", "1e-9", "6.5e-3", "0.5", "1", "2", "10", "1000"),
    "queue_wait_distribution": ("fixed", "exponential"),
    "taxonomy": ("meta-2024", "slurm-default"),
}


class NoAnswer(BaseException):
    """The call used up its CPU time. A BaseException, so that no `except Exception`
    (nor `except OSError`, which catches TimeoutError) in the code under test hides it."""


@contextlib.contextmanager
def cpu_time_bound(seconds):
    """Interrupt the call once this process has used `seconds` of CPU time (all its
    threads): a bound on the work the call does, which, unlike a wall-clock alarm, other
    processes on a busy machine do not use up. (A call blocked on input uses no CPU: the
    inputs here are regular files.)"""
    def too_long(signum, frame):
        raise NoAnswer(f"no answer within {seconds} CPU seconds")

    before = signal.signal(signal.SIGPROF, too_long)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, before)


@st.composite
def command_lines(draw, command, out_dir):
    cmd = main.get_command(None, command)
    args = [command]
    for argument in (p for p in cmd.params if isinstance(p, click.Argument)):
        args.append(draw(st.sampled_from(sorted(str(p) for p in out_dir.glob("input*")) + ["missing.csv", ""])))
    options = [p for p in cmd.params if isinstance(p, click.Option) and p.name not in ("help",)]
    required = [p for p in options if p.required]  # present in most draws, so most draws get past them
    drawn = draw(st.lists(st.sampled_from(options), max_size=8, unique_by=lambda p: p.name))
    if draw(st.integers(0, 9)):
        drawn += [p for p in required if p not in drawn]
    for option in drawn:
        flag = option.opts[-1] if option.opts[-1].startswith("--") else option.opts[0]
        if option.is_flag:
            args.append(flag)
        elif option.name in ("from_log", "trace"):
            args += [flag, draw(st.sampled_from(sorted(str(p) for p in out_dir.glob("input*")) + ["missing.csv"]))]
        elif option.name in ("out", "plot", "json_path", "figures"):
            args += [flag, str(out_dir / draw(st.sampled_from(["x.nc", "x.png", "x.zarr", "x.txt", "x"])))]
        else:
            choices = tuple(getattr(option.type, "choices", ()))
            valid = choices or VALID[_kind(option)]
            args += [flag, draw(st.one_of(st.sampled_from(valid), st.sampled_from(valid), st.sampled_from(VALUES)))]
    return args


def _kind(option) -> str:
    from relmodel._scenario import FIELDS

    if option.name in VALID:
        return option.name
    field = getattr(option.type, "field", None)
    if field is not None:
        kind = FIELDS[field][1]
        return "duration" if kind == "duration" else "count" if kind == "count" else "number"
    if isinstance(option.type, click.types.IntParamType) or "gpus" in option.name or option.name in (
            "stages", "replicas", "microbatches", "n_jobs", "runs", "seed"):
        return "count"
    if "duration" in option.name or "time" in option.name or "delay" in option.name or "wait" in option.name:
        return "duration"
    return "number"


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory):
    """A folder for outputs, with the input files commands may be pointed at:
    job logs (valid and malformed), a study file, an empty file and junk."""
    from hypothesis import find

    from relmodel._synthetic_log import synthetic_log
    from relmodel.testing.strategies import job_logs

    folder = tmp_path_factory.mktemp("fuzz")
    synthetic_log(300, failure_rate=6.5e-3, seed=1).to_csv(folder / "input-log.csv")
    (folder / "input-bad-log.csv").write_text(find(job_logs(malformed=True), lambda text: True))
    (folder / "input-study.toml").write_text(
        '[fixed]\nfailure_rate = 6.5e-3\nwork = "1d"\n[sweep]\nn_gpus = [8, 64]\n[run]\nn_jobs = 500\nseed = 1\n')
    (folder / "input-empty.txt").write_text("")
    (folder / "input-junk.bin").write_bytes(bytes(range(256)))
    return folder


@pytest.mark.parametrize("command", COMMANDS)
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_any_command_line_ends_in_a_result_or_a_one_line_error(command, out_dir, data):
    args = data.draw(command_lines(command, out_dir))
    if sum(a in RARE_VALUES for a in args) > 2:
        return
    if command == "simulate" and "--max-failures" not in args:
        # A run's cost is bounded by design at n_jobs x max_failures failure events
        # (1e10 at the defaults, a minute or two for a point just short of hopeless);
        # this keeps the bound within the CPU time of a call.
        args += ["--max-failures", "2000"]
    try:
        with cpu_time_bound(CALL_CPU_SECONDS), warnings.catch_warnings():
            warnings.simplefilter("default")  # as a user sees them (the suite turns relmodel's into errors)
            result = CliRunner().invoke(main, args)
    except NoAnswer as err:
        pytest.fail(f"relmodel {' '.join(args)}: {err}")
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"relmodel {' '.join(args)} raised {result.exception!r}\n{result.output}")
    assert result.exit_code in (0, 1, 2), (args, result.exit_code, result.output)
    if result.exit_code == 2:
        errors = [line for line in result.output.splitlines() if line.startswith("Error")]
        assert len(errors) == 1, (args, result.output)
