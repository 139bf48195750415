"""The step lines a reader takes in bulk (`read_lines`, `plain_instants`) give the events, and the errors, that
reading each line alone gives: logs of many step lines in a row, with times about daylight-saving changes,
dates that do not exist and steps past int64, read both ways."""

import re
from datetime import datetime, timedelta, tzinfo

import pytest
import xarray as xr
from hypothesis import given, settings, strategies as st

from relmodel.record import RunRecordError, read_run
from relmodel.record._trainers import _megatron, _torchtitan
import test_trainer_log_megatron as megatron
import test_trainer_log_torchtitan as torchtitan

NEVER = re.compile(r"(?!)")
QUICK_PATTERN = {"megatron": (_megatron, "_PLAIN_ITERATION"), "torchtitan": (_torchtitan, "_PLAIN_STEP")}


class QuarterPastChange(tzinfo):
    """A zone whose offset steps from +00:00 to +00:15 at 01:15 local on 2024-06-01: an hour whose two ends
    are both valid local times with different offsets (01:15 to 01:30 does not exist)."""

    AT = datetime(2024, 6, 1, 1, 15)

    def utcoffset(self, dt):
        local = dt.replace(tzinfo=None, fold=0)
        after = local >= self.AT + timedelta(minutes=15) or (local >= self.AT and dt.fold)
        return timedelta(minutes=15 if after else 0)

    def dst(self, dt):
        return None


ZONES = ["UTC", "Europe/Paris", "America/St_Johns", "Australia/Lord_Howe", QuarterPastChange()]
# Instants about daylight-saving changes of those zones (local, naive).
CHANGES = [datetime(2024, 3, 31, 1, 30), datetime(2024, 10, 27, 1, 30), datetime(2024, 3, 10, 1, 0),
           datetime(2024, 11, 3, 0, 30), datetime(2024, 4, 7, 1, 0), datetime(2024, 10, 6, 1, 0),
           datetime(2024, 6, 1, 0, 50)]


def _read_both_ways(path, fmt, tz):
    """The record read with bulk step lines, and line by line (the bulk pattern matching nothing)."""
    outcomes = []
    for quick in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            if not quick:
                patch.setattr(*QUICK_PATTERN[fmt], NEVER)
            try:
                outcomes.append(read_run(path, format=fmt, tz=tz).events)
            except RunRecordError as err:
                outcomes.append(err)
    return outcomes


def _assert_same(bulk, per_line):
    if isinstance(per_line, RunRecordError):
        assert isinstance(bulk, RunRecordError), bulk
        assert (str(bulk), bulk.line) == (str(per_line), per_line.line)
    else:
        assert not isinstance(bulk, RunRecordError), bulk
        xr.testing.assert_identical(bulk, per_line)


def _megatron_step(at: datetime, step: str, day: str) -> str:
    return (f" [{day} {at:%H:%M:%S.%f}] iteration {step:>8}/  100000 | consumed samples: 1 | elapsed time per "
            "iteration (ms): 6000.0 | lm loss: 7.1E+00 |")


def _torchtitan_step(at: datetime, step: str, day: str) -> str:
    return (f"[rank0]:[titan] {day} {at:%H:%M:%S},{at.microsecond // 1000:03d} - root - INFO - "
            f"{torchtitan.RED}step: {step:>2}  {torchtitan.GREEN}loss:  7.5000  {torchtitan.RESET}")


STEP_LINE = {"megatron": _megatron_step, "torchtitan": _torchtitan_step}


def _log(fmt, begin: datetime, gaps: list, steps: list, odd: dict) -> list:
    """A log of one attempt that prints a step line after each gap (seconds); `odd` puts some other text in
    place of a line's time or step."""
    if fmt == "megatron":
        lines = [*megatron._startup(30), f"[after megatron is initialized] datetime: {begin:%Y-%m-%d %H:%M:%S.%f} ",
                 f"[before the start of training step] datetime: {begin:%Y-%m-%d %H:%M:%S.%f} "]
    else:
        lines = [f"[rank0]:[titan] {begin:%Y-%m-%d %H:%M:%S},000 - root - INFO - Starting job: run",
                 f"[rank0]:[titan] {begin:%Y-%m-%d %H:%M:%S},000 - root - INFO - Training starts at step 1."]
    at = begin
    for k, (gap, step) in enumerate(zip(gaps, steps)):
        at += timedelta(seconds=gap)
        day, step = f"{at:%Y-%m-%d}", step
        if k in odd:
            day, step = (odd[k], step) if "-" in odd[k] else (day, odd[k])
        lines.append(STEP_LINE[fmt](at, step, day))
    return lines


@st.composite
def _logs(draw):
    fmt = draw(st.sampled_from(sorted(STEP_LINE)))
    begin = draw(st.sampled_from(CHANGES)) + timedelta(seconds=draw(st.integers(-7200, 3600)))
    n = draw(st.integers(1, 60))
    gaps = draw(st.lists(st.floats(0, 900, allow_nan=False).map(lambda s: round(s, 3)), min_size=n, max_size=n))
    first = draw(st.integers(1, 10**6))
    steps = [str(first + k) for k in range(n)]
    odd = draw(st.dictionaries(st.integers(0, n - 1), st.sampled_from(
        ["2024-02-30", "2024-13-01", "1899-12-31", "2099-12-31", "9" * 19, "4611686018427387905", "1" * 17]),
        max_size=2))
    return fmt, _log(fmt, begin, gaps, steps, odd)


@settings(max_examples=80)
@given(log=_logs(), tz=st.sampled_from(ZONES))
def test_bulk_step_lines_read_as_each_line_alone(tmp_path_factory, log, tz):
    fmt, lines = log
    path = tmp_path_factory.mktemp("bulk") / "attempt.out"
    path.write_text("\n".join(lines) + "\n")
    _assert_same(*_read_both_ways(path, fmt, tz))


@pytest.mark.parametrize("fmt, samples", [("megatron", [megatron.FIRST, megatron.SECOND]),
                                          ("torchtitan", [torchtitan.FIRST, torchtitan.SECOND])])
@pytest.mark.parametrize("tz", ["UTC", "Europe/Paris"])
def test_the_framework_samples_read_alike_both_ways(tmp_path, fmt, samples, tz):
    paths = []
    for k, lines in enumerate(samples):
        paths.append(tmp_path / f"attempt-{k}.out")
        paths[-1].write_text("\n".join(lines) + "\n")
    _assert_same(*_read_both_ways(paths, fmt, tz))


def test_a_run_of_step_lines_is_read_in_bulk(tmp_path, monkeypatch):
    """The bulk path is taken (not only its fallback): one `plain_instants` call reads all the run's times."""
    from relmodel.record._trainers import _format

    calls = []
    original = _format.plain_instants
    monkeypatch.setattr(_format, "plain_instants",
                        lambda texts, *args: calls.append(len(texts)) or original(texts, *args))
    lines = _log("megatron", datetime(2024, 1, 1), [10.0] * 50, [str(k) for k in range(1, 51)], {})
    path = tmp_path / "attempt.out"
    path.write_text("\n".join(lines) + "\n")
    record = read_run(path, format="megatron")
    assert calls == [50]
    assert (record.events.kind == "step").sum() == 50


@pytest.mark.parametrize("fmt", sorted(STEP_LINE))
def test_an_hour_whose_offset_changes_reads_as_each_line_alone(tmp_path, fmt):
    """Both ends of 01:00-02:00 are valid with different offsets: no one offset holds for the hour."""
    lines = _log(fmt, datetime(2024, 6, 1, 0, 50), [300] * 4 + [1800] + [300] * 3, [str(k) for k in range(1, 9)], {})
    path = tmp_path / "attempt.out"
    path.write_text("\n".join(lines) + "\n")
    bulk, per_line = _read_both_ways(path, fmt, QuarterPastChange())
    _assert_same(bulk, per_line)
    assert not isinstance(per_line, RunRecordError)
