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
FRAMEWORKS = ["hf_trainer", "lightning", "megatron", "torchtitan"]
BEST_INTERVAL = "1h"  # the replay the pages show: about the exact optimum at the run's own inputs


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def page(relative: str) -> str:
    """A page's text with its line breaks as spaces: a quoted number may wrap."""
    return " ".join((REPO / relative).read_text(encoding="utf-8").split())


def test_the_generator_writes_the_shipped_files_byte_for_byte(tmp_path, capsys):
    _make._main(["--out", str(tmp_path)])
    written = sorted(path.name for path in tmp_path.iterdir())
    assert written == rm.data.names() == [JOB_LOG, RUN_EVENTS, *(f"run-{fmt}.log" for fmt in FRAMEWORKS)]
    for name in written:
        assert (tmp_path / name).read_bytes() == rm.data.path(name).read_bytes(), name
    assert f"wrote {tmp_path / JOB_LOG}" in capsys.readouterr().out


def test_the_samples_are_small():
    assert sum(rm.data.path(name).stat().st_size for name in rm.data.names()) < 750_000


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


def test_every_framework_the_run_is_logged_in_has_a_reader():
    assert set(FRAMEWORKS) <= set(rm.record.TRAINER_FORMATS)


@pytest.mark.parametrize("fmt", FRAMEWORKS)
def test_each_trainer_log_reads_as_its_format_and_measures_the_same_run(fmt):
    events = rm.measure_run(rm.read_run(rm.data.path(RUN_EVENTS), n_gpus=4096))
    record = rm.read_run(rm.data.path(f"run-{fmt}.log"), n_gpus=4096)
    assert any(reason.startswith(f"{fmt} log lines") for reason in record.summary.to_dict()["skipped"])  # auto
    measured = rm.measure_run(record)
    assert int(measured.interruptions) == int(events.interruptions)
    second = 1 / 3600  # the logs print times to the millisecond at most
    assert float(measured.wall) == pytest.approx(float(events.wall), abs=second)
    productive = [float(m.time.sel(component="productive")) for m in (measured, events)]
    assert productive[0] >= productive[1] - second
    # A log without a write's duration or a failure's time reads them as compute or down time: close, not equal.
    assert float(measured.ettr) == pytest.approx(float(events.ettr), abs=0.02)


def test_the_run_record_page_quotes_what_the_trainer_logs_give():
    def ettr(name):
        return f"{float(rm.measure_run(rm.read_run(rm.data.path(name), n_gpus=4096)).ettr):.4f}"

    run_ettr = ettr(RUN_EVENTS)
    assert [fmt for fmt in FRAMEWORKS if ettr(f"run-{fmt}.log") == run_ettr] == ["megatron", "torchtitan"]
    assert f"torchtitan's logs give its ETTR of {run_ettr}" in page("docs/user-guide/run-record.md")


def test_example_with_a_format_reads_that_frameworks_log():
    by_example = invoke("run", "show", "--example", "--format", "megatron", "--json")
    by_file = invoke("run", "show", str(rm.data.path("run-megatron.log")), "--gpus", "4096", "--json")
    assert by_example.exit_code == 0, by_example.output
    assert by_example.output == by_file.output


def test_example_with_a_format_it_is_not_written_in_is_refused_naming_those_it_is():
    result = invoke("run", "show", "--example", "--format", "history")
    assert result.exit_code == 2
    assert "--format" in result.output and "megatron" in result.output and "Traceback" not in result.output


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
