"""The `relmodel` command line."""

import json
import os
import sys
import warnings

import click
import pytest
import xarray as xr
from click.testing import CliRunner

import relmodel as rm
from relmodel._cli_shared import LevelSpec
from relmodel._cli import main


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def test_help_explains_units():
    result = invoke("simulate", "--help")
    assert result.exit_code == 0 and "5min" in result.output and "node-day" in result.output


def test_simulate_sweep_writes_netcdf_and_prints_a_table(tmp_path):
    out = tmp_path / "sweep.nc"
    result = invoke("simulate", "--gpus", "1024,4096", "--checkpoint-interval", "30min,1h", "--n-jobs", "2000",
                    "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "ettr_renewal" in result.output.splitlines()[0]
    ds = xr.open_dataset(out, engine="h5netcdf")
    assert ds.sizes["n_gpus"] == 2 and ds.sizes["checkpoint_interval"] == 2 and "ettr" in ds


def test_simulate_prints_a_grid_a_point_at_a_time_with_the_grid_bits(tmp_path, monkeypatch):
    """Without --out or --json the table comes a row a point, each point simulated with its key in
    the grid (whose bits it then has: `test_kernels`' sub-grid test): the same text as the whole
    grid's table (columns sized before the first row), the same numbers as its JSON."""
    from relmodel import _engine as engine
    from relmodel._cli_shared import table_cell

    args = ["simulate", "--gpus", "512,4096,16384", "--checkpoint-interval", "30min,2h", "--n-jobs", "3000",
            "--seed", "5"]
    keys = []
    kernel_run = engine.run

    def recorded(packed, *args, **kwargs):
        keys.append(kwargs.get("scenario_keys"))
        return kernel_run(packed, *args, **kwargs)

    monkeypatch.setattr(engine, "run", recorded)
    streamed = invoke(*args)
    assert streamed.exit_code == 0, streamed.output
    assert keys == [[k] for k in range(6)]
    out = tmp_path / "grid.zarr"
    whole = invoke(*args, "--out", str(out))
    assert whole.exit_code == 0
    assert streamed.stdout == whole.stdout.replace(f"wrote {out}\n", "")
    rows = json.loads(invoke(*args, "--json").stdout)["rows"]
    lines = streamed.stdout.splitlines()
    assert lines[0].split() == list(rows[0]) and len(lines) == 1 + len(rows)
    for row, line in zip(rows, lines[1:]):
        assert line.split() == [table_cell(k, v) for k, v in row.items()]


def test_the_table_prints_durations_with_their_unit_and_the_json_keeps_hours():
    """A grid typed as 30min,2h prints 30min and 2h under `checkpoint_interval`, not bare hours."""
    args = ["simulate", "--gpus", "1024", "--checkpoint-interval", "30min,2h,90s", "--n-jobs", "500"]
    lines = invoke(*args).stdout.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["30min", "2h", "1.5min"]
    rows = json.loads(invoke(*args, "--json").stdout)["rows"]
    assert [row["checkpoint_interval"] for row in rows] == [0.5, 2.0, 90 / 3600]


def test_a_streamed_grid_warns_once_of_its_capped_jobs():
    with warnings.catch_warnings():
        warnings.simplefilter("default", rm.CappedJobsWarning)  # (the suite makes our warnings errors)
        result = invoke("simulate", "--gpus", "8192,16384", "--n-jobs", "400", "--max-failures", "3")
    assert result.exit_code == 0, result.output
    assert result.stderr.count("Warning:") == 1 and "Warning: 800 of 800 jobs hit max_failures=3" in result.stderr


def test_simulate_json_is_strict_json():
    result = invoke("simulate", "--gpus", "64", "--weibull-shape", "0.7", "--n-jobs", "500", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    row = out["rows"][0]
    assert row["ettr_renewal"] is None and 0 < row["ettr"] <= 1
    assert out["units"]["rows.*.wall_p95_h"] == "h" and out["units"]["rows.*.failures_mean"] == "failures per job"


@pytest.mark.parametrize("args, flag", [
    (["--gpus", "0"], "--gpus"), (["--gpus", "8", "--checkpoint-cost", "5m"], "--checkpoint-cost"),
    (["--gpus", "8", "--checkpoint-interval", "0"], "--checkpoint-interval"),
    (["--gpus", "8", "--failure-rate", "nan"], "--failure-rate"),
    (["--gpus", "8", "--failure-rate", "-1"], "--failure-rate"),
    (["--gpus", "8", "--work", "3 fortnights"], "--work"),
    (["--gpus", "8", "--n-jobs", "0"], "--n-jobs"), (["--gpus", "8", "--out", "x.csv"], "--out"),
    (["--gpus", "8,8"], "--gpus"), (["--gpus", "8", "--threads", "999"], "--threads"),
])
def test_bad_input_is_a_usage_error_naming_the_flag(args, flag):
    result = invoke("simulate", *args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and flag in lines[0]


# -- durations need a unit on the command line ----------------------------------------

@pytest.mark.parametrize("command", ["simulate", "plan"])
@pytest.mark.parametrize("flag, number", [
    ("--checkpoint-cost", "300"), ("--work", "14"), ("--restart-cost", "10"), ("--checkpoint-interval", "30"),
    ("--queue-wait", "2.5"), ("--restart-cost", "1e-3"),
])
def test_a_bare_duration_is_refused_asking_for_a_unit(command, flag, number):
    result = invoke(command, "--gpus", "8", flag, number)
    assert result.exit_code == 2
    assert result.output.strip() == f"Error: {flag}: {number} has no unit; write {number}s, {number}min or {number}h"


def test_a_sweep_axis_of_durations_needs_units_too():
    result = invoke("simulate", "--gpus", "8", "--checkpoint-interval", "30min,1")
    assert result.exit_code == 2 and "--checkpoint-interval: 1 has no unit" in result.output


def test_zero_needs_no_unit_and_the_api_keeps_hours():
    result = invoke("simulate", "--gpus", "8", "--work", "1d", "--checkpoint-cost", "0", "--queue-wait", "-0",
                    "--n-jobs", "100", "--json")
    assert result.exit_code == 0, result.output
    assert rm.Scenario(n_gpus=8, failure_rate=1e-3, checkpoint_interval=1, work=14, checkpoint_cost=300).checkpoint_cost == 300.0


# Option names that mean a duration; the walk below holds every option so named, in
# every command, to a unit. Those that are not durations in hours are listed apart.
DURATION_WORDS = ("work", "interval", "cost", "restart", "persist", "wait", "duration", "time", "every", "pause",
                  "until", "window", "delay")
NOT_DURATIONS = {
    ("pipeline", "p2p_delay"), ("pipeline", "reroute_delay"), ("pipeline", "optimizer_time"),  # task-time units
    ("simulate", "queue_wait_distribution"), ("plan", "queue_wait_distribution"),  # a choice
    ("compare", "queue_wait_distribution"),
    ("sweep", "workers"),  # a count
}
LEVEL_KEYS = ("interval", "cost", "restart", "persist")


def all_options(command=main, path=()):
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from all_options(sub, (*path, name))
    else:
        yield from ((path, p) for p in command.params if isinstance(p, click.Option))


def test_every_duration_in_every_flag_and_key_needs_a_unit():
    """A walk over all commands and options: an option named as a duration (or
    a key of one, as in --fast-checkpoint) refuses a bare number, so a new flag
    cannot slip past the rule (--fast-checkpoint cost=5 is not 5 hours)."""
    walked = []
    for path, option in all_options():
        if (path[-1], option.name) in NOT_DURATIONS:
            continue
        if isinstance(option.type, LevelSpec):
            for key in LEVEL_KEYS:
                spec = {"interval": "10min", "restart": "3min", "survives": "0.9", key: "300"}
                with pytest.raises(click.BadParameter, match=f"{key}='300': 300 has no unit"):
                    option.type.convert(",".join(f"{k}={v}" for k, v in spec.items()), option, None)
                walked.append((path, option.name, key))
        elif any(word in option.name for word in DURATION_WORDS):
            with pytest.raises((click.BadParameter, ValueError), match="300 has no unit"):
                option.type.convert("300", option, None)
            walked.append((path, option.name))
    # simulate, compare and plan: 6 each (and 4 keys of --fast-checkpoint); pipeline 6; cluster 8;
    # run predict 4 (--assumed-*), run replay 5 (and 4 keys of its --fast-checkpoint)
    assert len(walked) == 3 * (6 + 4) + 6 + 8 + 4 + (5 + 4), walked


# -- an error names the flag as typed -------------------------------------------------

LEVEL = "interval=10min,cost=5s,restart=3min,survives=0.85"


@pytest.mark.parametrize("args, line", [
    (["--fast-checkpoint", "interval=10min,cost=5s,restart=-3min,survives=0.85"],
     "Error: --fast-checkpoint (1st) restart: must be >= 0 (got -3min)"),
    (["--fast-checkpoint", "interval=10min,restart=3min,survives=1.85"],
     "Error: --fast-checkpoint (1st) survives: must be in [0, 1] (got 1.85)"),
    (["--fast-checkpoint", LEVEL, "--fast-checkpoint", "interval=5min,restart=3min,survives=0.9"],
     "Error: --fast-checkpoint (2nd) interval: levels go fastest first"),
    (["--checkpoint-interval", "5min", "--fast-checkpoint", LEVEL],
     "Error: --checkpoint-interval: must be longer than the slowest fast level's interval 10min (got 5min)"),
])
def test_a_level_of_fast_checkpoint_is_named_by_its_flag_its_place_and_key(args, line):
    result = invoke("simulate", "--gpus", "1024", *args)
    assert result.exit_code == 2
    assert _one_error_line(result).startswith(line)


def test_a_parameter_named_in_the_reason_is_its_flag_too():
    result = invoke("plan", "--gpus", "1024", "--strategy", "multilevel")
    assert result.exit_code == 2
    assert _one_error_line(result) == ("Error: --strategy: 'multilevel': it needs --fast-checkpoint "
                                       "(this run allows blocking)")


# -- a run that cannot finish says so --------------------------------------------------

def _one_error_line(result) -> str:
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


@pytest.fixture
def no_simulation(monkeypatch):
    """The refusal comes before any simulation."""
    def refuse(*args, **kwargs):
        raise AssertionError("simulated a run that cannot finish")
    for module, name in (("relmodel._simulate", "simulate"), ("relmodel._plan", "plan")):
        monkeypatch.setattr(sys.modules[module], name, refuse)


@pytest.mark.parametrize("args", [
    ["simulate", "--gpus", "16384", "--failure-rate", "50"],  # a rate per GPU-hour, typed per node-day
    ["simulate", "--gpus", "16384,32768", "--failure-rate", "50", "--json"],
    ["plan", "--gpus", "16384", "--failure-rate", "50"],
])
def test_a_run_no_job_can_finish_says_so_in_one_sentence(args, no_simulation):
    result = invoke(*args)
    assert result.exit_code == 2
    line = _one_error_line(result)
    assert line.startswith("Error: No job can finish") and "is --failure-rate per node-day?" in line
    assert "nan" not in line.lower()


@pytest.mark.parametrize("args, hint", [
    (["--failure-rate", "0.5", "--restart-cost", "3h"], "--restart-cost must be well under the MTTF"),
    (["--failure-rate", "0.5", "--checkpoint-interval", "3h"], "--checkpoint-interval and --checkpoint-cost"),
])
def test_the_sentence_points_at_the_stretch_no_job_gets_through(args, hint, no_simulation):
    line = _one_error_line(invoke("simulate", "--gpus", "16384", *args))
    assert hint in line and "attempts" in line


def test_a_plan_of_free_checkpoints_beside_rare_failing_lemons_is_numbers():
    """Checkpoints and restarts that cost nothing, 1% of nodes failing a million times as often: every
    figure a number (a NaN of failures per job once reached an integer: 'cannot convert float NaN')."""
    result = invoke("plan", "--gpus", "670", "--gpus-per-node", "16", "--failure-rate", "0.788", "--restart-cost",
                    "0", "--checkpoint-cost", "0", "--lemon-fraction", "0.01", "--lemon-rate-factor", "1e6",
                    "--checkpoint-interval", "727.78h", "--work", "100000h", "--n-jobs", "200", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    exact = out["ettr_by_interval"]["exact"]
    assert 0.999 < out["ettr"] == exact["renewal"] < 1 and exact["simulated_jobs"] == 200
    assert exact["simulated_ci95"][0] <= exact["renewal"] <= exact["simulated_ci95"][1]
    assert out["ettr_by_interval"]["current"]["renewal"] < 1e-3  # a month between checkpoints: hopeless


def test_plan_says_so_only_when_no_interval_lets_a_job_finish():
    # 0.5 per node-day on 16384 GPUs: an MTTF of 1.4 min, hopeless at a 3h interval but
    # not at the planner's (a restart of 1 min gets through).
    result = invoke("plan", "--gpus", "16384", "--failure-rate", "0.5", "--checkpoint-interval", "3h",
                    "--restart-cost", "1min", "--checkpoint-cost", "1s", "--work", "1d", "--n-jobs", "500", "--json")
    assert result.exit_code == 0, result.output


def test_plan_at_a_rate_in_the_wrong_unit_asks_about_the_unit():
    """`plan --failure-rate 6.5` (an MTTF of 26 s, ETTR 0.0000) gives the hint about the unit that simulate gives."""
    result = invoke("plan", "--gpus", "4096", "--work", "30d", "--failure-rate", "6.5", "--n-jobs", "200")
    assert result.exit_code == 0, result.output
    assert "note: 6.5 failures per node-day is a job MTTF of 25.96s; is --failure-rate per node-day?" in result.output
    usual = invoke("plan", "--gpus", "4096", "--work", "30d", "--failure-rate", "6.5e-3", "--n-jobs", "200")
    assert usual.exit_code == 0 and "per node-day?" not in usual.output


def test_a_sweep_where_some_points_can_finish_is_a_table():
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # as a user sees them (the suite turns relmodel's into errors)
        result = invoke("simulate", "--gpus", "16384", "--failure-rate", "50,1e-3", "--n-jobs", "500")
    assert result.exit_code == 0, result.output
    assert "1 grid point(s) not simulated" in result.output  # the warning says why a row is NaN


def test_a_study_no_job_of_which_finished_says_so(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text('[fixed]\nfailure_rate = 50\nwork = "1d"\ncheckpoint_interval = "1h"\n'
                     '[sweep]\nn_gpus = [8192, 16384]\n[run]\nn_jobs = 100\nseed = 1\n')
    result = invoke("sweep", str(study), "--out", str(tmp_path / "out.zarr"), "--quiet")
    assert result.exit_code == 2
    assert _one_error_line(result).startswith("Error: No job finished at any of the 2 points")


# -- a missing required input names itself ---------------------------------------------

# A stand-in value for each required parameter of any command.
REQUIRED = {"n_gpus": "8", "study_file": "study.toml", "out": "x.zarr", "log_file": "log.csv"}


@pytest.mark.parametrize("command", sorted(main.list_commands(None)))
def test_a_missing_required_option_or_argument_names_itself(command):
    cmd = main.get_command(None, command)
    required = [p for p in cmd.params if p.required]
    assert {p.name for p in required} <= set(REQUIRED), "give the new required parameter a stand-in value"
    for missing in required:
        args = [command]
        for p in required:
            if p is not missing:
                args += [REQUIRED[p.name]] if isinstance(p, click.Argument) else [p.opts[-1], REQUIRED[p.name]]
        line = _one_error_line(invoke(*args))
        kind = "argument" if isinstance(missing, click.Argument) else "option"
        label = missing.human_readable_name if kind == "argument" else missing.opts[-1]
        assert line == f"Error: Missing {kind} '{label}'.", line


# -- input files that are not files ----------------------------------------------------

SMALL_FILE_INPUTS = [lambda path: ["sweep", path, "--out", "x.zarr"],  # study and taxonomy files: at most 1 MiB
                     lambda path: ["simulate", "--gpus", "8", "--taxonomy", path]]
LOG_INPUT = lambda path: ["fit", path]  # noqa: E731  (a job log may be big)


@pytest.mark.parametrize("make_args, kind", [
    *((make_args, kind) for make_args in SMALL_FILE_INPUTS for kind in ("fifo", "device", "huge")),
    (LOG_INPUT, "fifo"), (LOG_INPUT, "device"),
])
def test_a_device_fifo_or_huge_input_file_is_refused_unread(make_args, kind, tmp_path):
    """Checked with stat before it is opened: reading a FIFO nothing writes to would
    block for ever, /dev/zero never ends, and a huge file fills memory."""
    path = {"fifo": tmp_path / "in.toml", "device": "/dev/zero", "huge": tmp_path / "huge.toml"}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "huge":
        with open(path, "wb") as file:
            file.truncate(2**40)  # sparse: a terabyte that takes no disk
    result = invoke(*make_args(str(path)))
    assert result.exit_code == 2 and str(path) in _one_error_line(result)


@pytest.mark.parametrize("args, flag", [
    (["--run-duration", "0"], "--run-duration"),  # not read as no value (14-day runs)
    (["--run-duration", "1d", "--runs", "0"], "--runs"),  # not read as no value (1000 runs)
])
def test_pipeline_zero_is_refused_not_replaced_by_a_default(args, flag):
    result = invoke("pipeline", "--stages", "2", "--replicas", "2", "--microbatches", "2", *args)
    assert result.exit_code == 2 and f"{flag}:" in result.output and "Traceback" not in result.output


def test_sweep_plot_axes_are_named_by_their_flags(tmp_path):
    study = tmp_path / "study.toml"
    study.write_text('[fixed]\nfailure_rate = 6.5e-3\nwork = "1d"\n[sweep]\nn_gpus = [64, 128]\n'
                     'checkpoint_interval = ["1h", "2h"]\n[run]\nn_jobs = 200\nseed = 1\n')
    out, plot = str(tmp_path / "s.zarr"), str(tmp_path / "s.png")
    same = invoke("sweep", str(study), "--out", out, "--quiet", "--plot", plot, "--x", "n_gpus", "--y", "n_gpus")
    assert same.exit_code == 2 and "--y: must be another sweep axis than x" in same.output
    unknown = invoke("sweep", str(study), "--out", out, "--quiet", "--plot", plot, "--x", "foo")
    assert unknown.exit_code == 2 and "--x: 'foo' is not a sweep axis" in unknown.output


@pytest.mark.parametrize("args, flag", [
    (["simulate", "--gpus", "8", "--n-jobs", "100", "--out", "{missing}/x.nc"], "--out"),
    (["cluster", "--gpus", "16", "--duration", "1h", "--plot", "{missing}/x.png"], "--plot"),
])
def test_an_output_into_a_missing_folder_is_refused_before_any_work(tmp_path, args, flag):
    """`--out` or `--plot` into a missing folder is a usage error before the run, not an internal error
    (exit 70) after it."""
    result = invoke(*[a.format(missing=tmp_path / "missing") for a in args])
    assert result.exit_code == 2 and f"{flag}: no such folder" in result.output


@pytest.mark.parametrize("command", [["plan"], ["run", "replay"]])
def test_the_fast_checkpoint_example_wraps_between_keys_and_reads(command):
    """The help's example level is one quoted argument that a narrow terminal wraps between its keys (not inside
    one), and reads as given."""
    from relmodel._cli_shared import FAST_CHECKPOINT_EXAMPLE

    out = CliRunner().invoke(main, [*command, "--help"], terminal_width=60)
    assert out.exit_code == 0, out.output
    assert FAST_CHECKPOINT_EXAMPLE in " ".join(out.output.split())
    words = FAST_CHECKPOINT_EXAMPLE.split()
    assert all(word in out.output.split() for word in words)  # each key=value whole on its line
    level = LevelSpec().convert(FAST_CHECKPOINT_EXAMPLE.strip('"'), None, None)
    assert level == {"interval": 10 / 60, "cost": 5 / 3600, "restart": 3 / 60, "persist": 1 / 60, "survives": 0.85}
