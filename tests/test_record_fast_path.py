"""The trainer-events CSV read by columns gives the record that reading it row by row gives, variable for
variable and bit for bit, with the same summary; and on a malformed file, the same error."""

from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relmodel import _fast_csv
from relmodel._fast_csv import Doubt
from relmodel.record import RunRecordError, read_run
from relmodel.record import _events
from relmodel.record._read import _zone

START = 1_704_067_200  # 2024-01-01T00:00:00Z
NEEDS_STEP = ("checkpoint_written", "checkpoint_restored")


def _row_by_row(*args, **kwargs):
    with mock.patch.object(_events, "_csv_columns", side_effect=Doubt(0, "row by row")):
        return read_run(*args, **kwargs)


def _stamp(seconds: int, digits: int, fraction: int, form: int) -> str:
    """An instant in one of the forms a record's times come in."""
    whole = np.datetime64(seconds, "s").astype(str)
    tail = ("." + str(fraction).zfill(9)[:digits]) if digits else ""
    return [whole + tail + "Z", whole.replace("T", " ") + tail + "z", whole + tail, whole + tail + "+02:00",
            str(seconds) + tail][form]


times = st.builds(_stamp, st.integers(START, START + 10**7), st.integers(0, 9), st.integers(0, 10**9 - 1),
                  st.integers(0, 4))
seconds = st.one_of(st.just(""), st.sampled_from(["nan", " NA ", "None"]),
                    st.builds(lambda w, f, d: f"{w}.{str(f).zfill(9)[:d]}" if d else str(w),
                              st.integers(0, 10**6), st.integers(0, 10**9 - 1), st.integers(0, 9)),
                    st.sampled_from(["1e3", " 20 ", ".5", "7."]))
steps = st.one_of(st.sampled_from(["", "null", "N/A"]), st.integers(0, 10**9).map(str),
                  st.sampled_from([" 12 ", "3.0"]))


@st.composite
def rows(draw):
    kind = draw(st.sampled_from(_events.EVENT_KINDS))
    step, duration = draw(steps), draw(seconds)
    if kind in NEEDS_STEP and step.strip().lower() in ("", "null", "n/a"):
        step = str(draw(st.integers(0, 10**6)))
    if kind == "checkpoint_written" and duration.strip().lower() in ("", "nan", "na", "none"):
        duration = "20"
    return {"time": draw(times), "event": draw(st.sampled_from([kind, kind.upper(), f" {kind} "])), "step": step,
            "duration_s": duration, "wait_s": draw(seconds), "reason": draw(st.sampled_from(["", "NCCL timeout",
                                                                                            " Faulty GPU "]))}


@st.composite
def files(draw):
    columns = draw(st.permutations(["time", "event", "step", "duration_s", "wait_s", "reason", "host"]))
    events = draw(st.lists(rows(), min_size=1, max_size=30))
    lines = [",".join(c.upper() if c == "event" else c for c in columns)]
    for event in events:
        lines.append(",".join(event.get(c, "node7") for c in columns))
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(["", "   "])))
    return "\n" * draw(st.integers(0, 2)) + "\n".join(lines) + "\n"


def _same(path, **kwargs):
    fast, slow = read_run(path, **kwargs), _row_by_row(path, **kwargs)
    assert list(fast.events.variables) == list(slow.events.variables)
    for name, variable in slow.events.variables.items():
        assert fast.events[name].dtype == variable.dtype, name
        assert np.array_equal(fast.events[name].values, variable.values, equal_nan=variable.dtype.kind == "f"), name
    assert fast.events.attrs == slow.events.attrs
    assert fast.summary.to_dict() == slow.summary.to_dict()
    return fast


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=files(), tz=st.sampled_from(["UTC", "Europe/Paris"]))
def test_by_columns_as_row_by_row(tmp_path, text, tz):
    path = tmp_path / "events.csv"
    path.write_text(text)
    _events._csv_columns(text, str(path), _zone(tz))  # read by columns, no doubt
    _same(path, tz=tz)
    with mock.patch.object(_fast_csv, "BLOCK_BYTES", 48):  # rows, and their lines, across blocks
        _events._csv_columns(text, str(path), _zone(tz))
        _same(path, tz=tz)


FAULTS = [("event", "checkpoint_taken"), ("time", "2024-13-01T00:00:00Z"), ("time", "2024-01-01T25:00Z"),
          ("time", ""), ("step", "1.5"), ("step", "-3"), ("duration_s", "-1"), ("duration_s", "2e9"),
          ("wait_s", "inf"), ("wait_s", "ten"), ("reason", '"NCCL'), ("reason", "NCCL,timeout")]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=files(), fault=st.sampled_from(FAULTS), where=st.integers(0, 10**6))
def test_the_same_error_on_a_malformed_file(tmp_path, text, fault, where):
    lines = text.split("\n")
    header_at = next(i for i, t in enumerate(lines) if t.strip())
    header = lines[header_at].lower().split(",")
    rows = [i for i, t in enumerate(lines) if i > header_at and t.strip()]
    at = rows[where % len(rows)]
    fields = lines[at].split(",")
    fields[header.index(fault[0])] = fault[1]
    lines[at] = ",".join(fields)
    path = tmp_path / "events.csv"
    path.write_text("\n".join(lines))
    _same_outcome(path)


def _same_outcome(path):
    """The same error, or where reading row by row takes the file after all, the same record."""
    try:
        _row_by_row(path)
    except RunRecordError as err:
        with pytest.raises(RunRecordError) as fast:
            read_run(path)
        assert str(fast.value) == str(err)
    else:
        _same(path)


@pytest.mark.parametrize("fault", ["checkpoint_written,5,,", "checkpoint_written,,20,", "checkpoint_restored,,,",
                                   "step,1,,,extra", "step,1"])
def test_a_checkpoint_without_its_step_or_a_row_of_another_length(tmp_path, fault):
    path = tmp_path / "events.csv"
    path.write_text("time,event,step,duration_s,wait_s\n2024-01-01T00:00:00Z,attempt_start,,,\n"
                    f"2024-01-01T00:01:00Z,{fault}\n")
    _same_outcome(path)


def test_times_of_every_form_to_the_nanosecond(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text("time,event\n2024-01-01T00:00:00.000000001Z,attempt_start\n2024-01-01 00:00:01,first_step\n"
                    "2024-01-01T01:00:02.5+01:00,step\n1704067203.25,run_end\n")
    assert _same(path).events.time_ns.values.tolist() == [1_704_067_200_000_000_001, 1_704_067_201_000_000_000,
                                                          1_704_067_202_500_000_000, 1_704_067_203_250_000_000]


@given(st.integers(-2, 10_001), st.integers(-1, 14), st.integers(-1, 33))
def test_days_since_epoch_is_the_calendars(year, month, day):
    """The vectorised calendar behind the times read in bulk agrees with `datetime.date`, invalid dates included."""
    from datetime import date

    days, valid = _fast_csv.days_since_epoch(*(np.array([x], dtype=np.int64) for x in (year, month, day)))
    try:
        expected = (date(year, month, day) - date(1970, 1, 1)).days
    except ValueError:
        assert not valid[0]
    else:
        assert valid[0] and days[0] == expected


def test_days_since_epoch_over_every_day_of_four_centuries():
    from datetime import date, timedelta

    every = [date(1700, 1, 1) + timedelta(days=k) for k in range(146_097)]
    days, valid = _fast_csv.days_since_epoch(*(np.array([getattr(d, f) for d in every], dtype=np.int64)
                                               for f in ("year", "month", "day")))
    assert valid.all()
    assert np.array_equal(days, [(d - date(1970, 1, 1)).days for d in every])
