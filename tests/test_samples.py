"""The sample files that ship with relmodel: made by their generator byte for byte, read by the commands with
--example, and giving the numbers the pages quote."""

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import relmodel as rm
from relmodel._cli import main
from relmodel._units import format_hours
from relmodel.data import _make

REPO = Path(__file__).resolve().parents[1]
JOB_LOG, RUN_EVENTS = "cluster-jobs.sacct", "run-events.csv"
BEST_INTERVAL = "1h"  # the replay the pages show: about the exact optimum at the run's own inputs


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def page(relative: str) -> str:
    """A page's text with its line breaks as spaces: a quoted number may wrap."""
    return " ".join((REPO / relative).read_text(encoding="utf-8").split())


def test_the_generator_writes_the_shipped_files_byte_for_byte(tmp_path, capsys):
    _make._main(["--out", str(tmp_path)])
    written = sorted(path.name for path in tmp_path.iterdir())
    assert written == rm.data.names() == [JOB_LOG, RUN_EVENTS]
    for name in written:
        assert (tmp_path / name).read_bytes() == rm.data.path(name).read_bytes(), name
    assert f"wrote {tmp_path / JOB_LOG}" in capsys.readouterr().out


def test_the_samples_are_small():
    assert sum(rm.data.path(name).stat().st_size for name in rm.data.names()) < 500_000


def test_an_unknown_sample_name_is_refused_naming_the_known_ones():
    with pytest.raises(rm.ParameterError, match=f"name: no sample file 'jobs.sacct'; the samples are {JOB_LOG}, "
                                                f"{RUN_EVENTS}"):
        rm.data.path("jobs.sacct")


@pytest.fixture(scope="module")
def job_log_quotes():
    fitted = rm.fit(rm.data.path(JOB_LOG))
    low, high = fitted.failure_rate_ci
    attrs = fitted.dataset.attrs
    return [f"{attrs['infrastructure_failures']} infrastructure failures in {attrs['node_days']:,.0f} node-days",
            f"{fitted.failure_rate * 1000:.3f} per 1000 node-days (95% CI {low * 1000:.3f} to {high * 1000:.3f})"]


@pytest.fixture(scope="module")
def run_quotes():
    record = rm.read_run(rm.data.path(RUN_EVENTS), n_gpus=4096)
    measured = rm.measure_run(record)
    replayed = rm.replay_run(record, checkpoint_interval=BEST_INTERVAL, n_runs=100)
    return [f"ETTR is {float(measured.ettr):.4f}", f"{int(measured.interruptions)} interruptions",
            f"{format_hours(float(replayed.saving))} less wall time",
            f"(ETTR {float(replayed.ettr.sel(plan='replayed')):.4f})"]


def test_the_job_log_is_real_shaped_and_its_rate_is_near_the_one_it_was_drawn_at():
    text = rm.data.path(JOB_LOG).read_text()
    for shape in ("|NODE_FAIL|", "|PREEMPTED|", "|OUT_OF_MEMORY|", "|REQUEUED|", "|CANCELLED by ", ".batch|",
                  ".extern|", "gres/gpu=", "node["):
        assert shape in text, shape
    assert re.search(r"\|\d+-\d\d:\d\d:\d\d\|", text), "no elapsed time of a day or more"
    fitted = rm.fit(rm.data.path(JOB_LOG))
    low, high = fitted.failure_rate_ci
    assert low < 6.5e-3 < high and high / low < 2


def test_the_pages_quote_what_the_job_log_gives(job_log_quotes):
    for relative in ("README.md", "docs/getting-started/tour.md", "docs/user-guide/job-logs.md"):
        for quote in job_log_quotes:
            assert quote in page(relative), (relative, quote)


def test_the_pages_quote_what_the_run_gives(run_quotes):
    for relative in ("README.md", "docs/getting-started/tour.md", "docs/user-guide/run-record.md"):
        for quote in run_quotes:
            assert quote in page(relative), (relative, quote)


def test_the_run_is_checkpointed_far_from_its_best_interval():
    record = rm.read_run(rm.data.path(RUN_EVENTS), n_gpus=4096)
    implied = rm.record.implied_scenario(rm.measure_run(record))
    assert implied.checkpoint_interval == 3.0
    assert abs(rm.optimal_interval(implied, method="exact") - rm.to_hours(BEST_INTERVAL)) < 0.1


@pytest.mark.parametrize("command", [["fit"], ["run", "show"], ["run", "predict", "--runs", "100"],
                                     ["run", "replay", "--runs", "100", "--checkpoint-interval", BEST_INTERVAL]])
def test_example_reads_the_sample_as_its_file_would(command, tmp_path):
    name, gpus = (JOB_LOG, []) if command[0] == "fit" else (RUN_EVENTS, ["--gpus", "4096"])
    with_example = invoke(*command, "--example", "--json")
    with_file = invoke(*command, str(rm.data.path(name)), *gpus, "--json")
    assert with_example.exit_code == 0, with_example.output
    assert with_example.output == with_file.output


@pytest.mark.parametrize("command, file_flag", [(["fit"], "LOG_FILE"), (["run", "show"], "EVENTS"),
                                                (["run", "predict"], "EVENTS"), (["run", "replay"], "EVENTS")])
def test_example_and_a_file_or_neither_is_a_usage_error_naming_both(command, file_flag):
    name = JOB_LOG if command[0] == "fit" else RUN_EVENTS
    for args in ([*command, str(rm.data.path(name)), "--example"], command):
        result = invoke(*args)
        assert result.exit_code == 2, result.output
        assert file_flag in result.output and "--example" in result.output
        assert "Traceback" not in result.output


@pytest.mark.parametrize("command", [["fit"], ["run", "show"], ["run", "predict"], ["run", "replay"]])
def test_help_names_example(command):
    assert "--example" in invoke(*command, "--help").output
