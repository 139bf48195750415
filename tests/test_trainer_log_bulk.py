"""The step lines a reader takes together (`read_lines`, `StepLine`) give the events, and the errors, that
reading each line alone gives: logs of many step lines in a row, in the forms the trainers print and near
them, with times about daylight-saving changes, dates that do not exist and steps past int64, read both
ways."""

from datetime import datetime, timedelta, tzinfo

import pytest
import xarray as xr
from hypothesis import given, settings, strategies as st

from relmodel.record import RunRecordError, read_run
from relmodel.record._trainers import _megatron, _torchtitan
import test_trainer_log_megatron as megatron
import test_trainer_log_torchtitan as torchtitan

STEP_FORM = {"megatron": (_megatron._Reader, "step_form"), "torchtitan": (_torchtitan._Reader, "step_form")}


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
    """The record read with step lines taken together, and line by line (no form of step line)."""
    outcomes = []
    for quick in (True, False):
        with pytest.MonkeyPatch.context() as patch:
            if not quick:
                patch.setattr(*STEP_FORM[fmt], None)
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


# Forms of a step line: the trainer's own first, then others the reader takes (or refuses) line by line.
MEGATRON_FORMS = [
    " [{day} {clock}.{micro}] iteration {step:>8}/  100000 | consumed samples: 1 | elapsed time per iteration (ms): "
    "6000.0 | lm loss: 7.1E+00 |",
    "[rank3]: [{day}T{clock}.{milli}] iteration {step}/ 100000 | elapsed time per iteration (ms): 6000.0 |",
    "[rank3]:[{day} {clock}] iteration {step}/100000 | elapsed time per iteration (ms): 6000.0 |",
    "\t[{day} {clock}.{micro}] iteration {step:>8}/  100000 | elapsed time per iteration (ms): 6000.0 |",
    " [{day} {clock}.{micro}999] iteration {step:>8}/  100000 | elapsed time per iteration (ms): 6000.0 |",
    " [{day} {clock}.{micro}] iteration {step:>8}/  1234567890123456789012 | elapsed time per iteration (ms): 1 |",
    " [{day} {clock}.{micro}] iteration {step:>8}/  100000 | elapsed time per \x1b[1miteration (ms): 6000.0 |",
    " [{day} {clock}.{micro}] iteration {step:>8}/  100000 | consumed samples: 1 |",
]
TORCHTITAN_FORMS = [
    "[rank0]:[titan] {day} {clock},{milli} - root - INFO - \x1b[31mstep: {step:>2}  \x1b[32mloss:  7.5000  "
    "\x1b[38;2;180;60;0mgrad_norm:  1.2500  \x1b[39m",
    "[titan] {day} {clock},{milli} - root - INFO - step: {step}  loss:  7.5000",
    "{day} {clock},{milli} - root - INFO - \x1b[31mstep: {step:>2}  \x1b[32mloss:  7.5000",
    "[rank0]: [titan] {day} {clock},{milli} - root - INFO - step: {step}  loss:  7.5000",
    "[titan] {day} {clock},{milli} - torchtitan - INFO - step: {step}  loss:  7.5000",
    "[titan] {day} {clock}.{milli} - root - INFO - step: {step}  loss:  7.5000",
    "[titan] {day} {clock},{milli} - root - INFO - step: {step}/100 = 1.0%  loss:  7.5000",
]
FORMS = {"megatron": MEGATRON_FORMS, "torchtitan": TORCHTITAN_FORMS}


def _step_line(fmt: str, form: int, at: datetime, step: str, day: str) -> str:
    return FORMS[fmt][form].format(day=day, clock=f"{at:%H:%M:%S}", micro=f"{at:%f}", milli=f"{at:%f}"[:3],
                                   step=step)


def _log(fmt, begin: datetime, gaps: list, steps: list, odd: dict, forms: list | None = None) -> list:
    """A log of one attempt that prints a step line after each gap (seconds), in the trainer's form or in
    `forms`; `odd` puts some other text in place of a line's time or step."""
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
        lines.append(_step_line(fmt, forms[k] if forms else 0, at, step, day))
    return lines


@st.composite
def _logs(draw):
    fmt = draw(st.sampled_from(sorted(FORMS)))
    begin = draw(st.sampled_from(CHANGES)) + timedelta(seconds=draw(st.integers(-7200, 3600)))
    n = draw(st.integers(1, 60))
    gaps = draw(st.lists(st.floats(0, 900, allow_nan=False).map(lambda s: round(s, 3)), min_size=n, max_size=n))
    first = draw(st.integers(1, 10**6))
    steps = [str(first + k) for k in range(n)]
    odd = draw(st.dictionaries(st.integers(0, n - 1), st.sampled_from(
        ["2024-02-30", "2024-13-01", "1899-12-31", "2099-12-31", "9" * 19, "4611686018427387905", "1" * 17]),
        max_size=2))
    forms = draw(st.lists(st.one_of(st.just(0), st.integers(0, len(FORMS[fmt]) - 1)), min_size=n, max_size=n))
    return fmt, _log(fmt, begin, gaps, steps, odd, forms)


@settings(max_examples=80)
@given(log=_logs(), tz=st.sampled_from(ZONES), line_end=st.sampled_from(["\n", "\r\n"]))
def test_bulk_step_lines_read_as_each_line_alone(tmp_path_factory, log, tz, line_end):
    fmt, lines = log
    path = tmp_path_factory.mktemp("bulk") / "attempt.out"
    path.write_bytes((line_end.join(lines) + line_end).encode())
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


@pytest.mark.parametrize("fmt", sorted(FORMS))
def test_a_run_of_step_lines_is_read_in_bulk(tmp_path, monkeypatch, fmt):
    """The lines of the form are taken together (not only read alone): one call takes all 50."""
    from relmodel.record._trainers._format import AttemptEvents

    calls = []
    original = AttemptEvents.step_lines
    monkeypatch.setattr(AttemptEvents, "step_lines",
                        lambda run, first, time_ns, steps: calls.append(steps.size) or original(run, first, time_ns,
                                                                                                steps))
    lines = _log(fmt, datetime(2024, 1, 1), [10.0] * 50, [str(k) for k in range(1, 51)], {})
    path = tmp_path / "attempt.out"
    path.write_text("\n".join(lines) + "\n")
    record = read_run(path, format=fmt)
    assert calls == [50]
    assert (record.events.kind == "step").sum() == 50


@pytest.mark.parametrize("fmt", sorted(FORMS))
def test_an_hour_whose_offset_changes_reads_as_each_line_alone(tmp_path, fmt):
    """Both ends of 01:00-02:00 are valid with different offsets: no one offset holds for the hour."""
    lines = _log(fmt, datetime(2024, 6, 1, 0, 50), [300] * 4 + [1800] + [300] * 3, [str(k) for k in range(1, 9)], {})
    path = tmp_path / "attempt.out"
    path.write_text("\n".join(lines) + "\n")
    bulk, per_line = _read_both_ways(path, fmt, QuarterPastChange())
    _assert_same(bulk, per_line)
    assert not isinstance(per_line, RunRecordError)
