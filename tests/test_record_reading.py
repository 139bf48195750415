"""No record read wrong: malformed rows are named by file, line and field, times and durations are read
exactly from their text, and rounding in a log is told apart from a contradiction."""

import json

import pytest

from relmodel.record import RunRecordError, measure_run, read_run
from relmodel.record._measure import ROUNDING_NS

HEADER = "time,event,step,duration_s,wait_s,reason\n"
RUN = [
    "2024-01-01T00:00:00Z,attempt_start,,,,",
    "2024-01-01T00:10:00Z,first_step,1,,,",
    "2024-01-01T01:10:00Z,failure,,,,Faulty GPU",
    "2024-01-01T01:35:00Z,attempt_start,,,,",
    "2024-01-01T01:45:00Z,first_step,201,,,",
    "2024-01-01T04:45:00Z,run_end,,,,",
]


def _csv(tmp_path, rows, header=HEADER):
    path = tmp_path / "events.csv"
    path.write_text(header + "\n".join(rows) + "\n")
    return path


def _refused(path, line, field, words):
    with pytest.raises(RunRecordError, match=words) as info:
        measure_run(read_run(path))
    assert (info.value.line, info.value.field) == (line, field)
    assert str(info.value).startswith(f"{path}, line {line}: {field or 'record'}: ")


def test_an_unterminated_quote_is_refused_not_read_to_the_end(tmp_path):
    # The csv module reads an open quote to the end of the file: one field, the rest of the run gone.
    rows = RUN.copy()
    rows[2] = '2024-01-01T01:10:00Z,failure,,,,"Faulty GPU'
    _refused(_csv(tmp_path, rows), 4, "reason", "unterminated quote: the field runs on to line 7")


def test_a_field_past_the_csv_limit_is_a_record_error(tmp_path):
    rows = RUN.copy()
    rows[2] = '2024-01-01T01:10:00Z,failure,,,,"' + "x" * 200_000 + "\n" + "\n".join(RUN[3:])
    _refused(_csv(tmp_path, rows[:3]), 4, "", "field larger than field limit")


@pytest.mark.parametrize("offset", ["+25:00", "-24:00", "+05:60", "+9999"])
def test_an_impossible_utc_offset_names_its_line(tmp_path, offset):
    rows = RUN.copy()
    rows[1] = f"2024-01-01T00:10:00{offset},first_step,1,,,"
    _refused(_csv(tmp_path, rows), 3, "time", "no valid UTC offset")


@pytest.mark.parametrize("header", [
    "time,event,step,duration_s,wait_s,reason,reason\n",
    "time,event,step,duration_s,wait_s,Time\n",
    "time,event,step, STEP ,duration_s,wait_s,reason\n",
])
def test_a_column_named_twice_is_refused(tmp_path, header):
    _refused(_csv(tmp_path, [r + "," for r in RUN], header), 1, header.split(",")[-1].strip().lower()
             if "STEP" not in header else "step", "named 2 times")


def test_a_json_key_named_twice_is_refused(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"time": "2024-01-01T00:00:00Z", "event": "attempt_start"}\n'
                    '{"time": "2024-01-01T00:10:00Z", "event": "first_step", "Time": "2024-01-01T00:20:00Z"}\n')
    _refused(path, 2, "time", "named 2 times")


def test_an_unused_column_may_repeat(tmp_path):
    record = read_run(_csv(tmp_path, [r + ",x,y" for r in RUN], HEADER.strip() + ",note,note\n"))
    assert len(record) == len(RUN)


def test_epoch_times_as_json_numbers_are_exact(tmp_path):
    # As floats these are 1704067200.1234567 and 1704067201.0: 89 ns and 1 ns off.
    path = tmp_path / "events.jsonl"
    path.write_text('{"time": 1704067200.123456789, "event": "attempt_start"}\n'
                    '{"time": 1704067201.000000001, "event": "first_step", "step": 1}\n'
                    '{"time": 1.7040672015e9, "event": "run_end"}\n')
    record = read_run(path)
    assert record.events.time_ns.values.tolist() == [1704067200123456789, 1704067201000000001, 1704067201500000000]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_durations_are_exact_to_the_nanosecond(tmp_path, fmt):
    # 86399.123456789 s is not a float: read as one, the write would be 2 ns off.
    rows = [("2024-01-01T00:00:00Z", "attempt_start", "", ""), ("2024-01-01T00:00:00Z", "first_step", "1", ""),
            ("2024-01-03T00:00:00Z", "checkpoint_written", "5", "86399.123456789"),
            ("2024-01-03T01:00:00Z", "run_end", "", "")]
    path = tmp_path / f"events.{fmt}"
    if fmt == "csv":
        path.write_text("time,event,step,duration_s\n" + "\n".join(",".join(r) for r in rows) + "\n")
    else:
        path.write_text("".join(json.dumps({"time": t, "event": e, **({"step": int(s)} if s else {})}).replace(
            "}", f', "duration_s": {d}}}' if d else "}") + "\n" for t, e, s, d in rows))
    measured = measure_run(read_run(path))
    assert int(measured.time_ns.sel(component="checkpoint")) == 86399_123456789
    record = read_run(path)
    back = tmp_path / f"back.{fmt}"
    getattr(record, f"to_{fmt}")(back)
    assert read_run(back).events.duration_ns.values.tolist() == record.events.duration_ns.values.tolist()


@pytest.mark.parametrize("field, rounding_ms", [("duration_s", 1), ("duration_s", 5), ("wait_s", 3)])
def test_a_duration_rounded_past_the_previous_event_is_taken_to_start_there(tmp_path, field, rounding_ms):
    # A 60.001 s write logged 60 s after the first step: rounding, not a contradiction.
    logged = f"{60 + rounding_ms / 1000:.3f}"
    written = (f"2024-01-01T00:11:00Z,checkpoint_written,5,{logged},," if field == "duration_s"
               else f"2024-01-01T00:11:00Z,failure,,,{logged},xid 79")
    rows = [RUN[0], RUN[1], written] + ([] if field == "duration_s" else RUN[3:5]) + [
        "2024-01-01T05:00:00Z,run_end,,,,"]
    measured = measure_run(read_run(_csv(tmp_path, rows)))
    component = "checkpoint" if field == "duration_s" else "persist_wait"
    assert int(measured.time_ns.sel(component=component)) == 60 * 10**9
    assert f"up to {rounding_ms:g} ms longer than the time since the previous event" in measured.attrs["notes"]
    assert "first at line 4" in measured.attrs["notes"]


@pytest.mark.parametrize("field", ["duration_s", "wait_s"])
def test_a_duration_past_the_rounding_allowed_is_refused(tmp_path, field):
    logged = f"{60 + (ROUNDING_NS + 10**6) / 1e9:.3f}"
    written = (f"2024-01-01T00:11:00Z,checkpoint_written,5,{logged},," if field == "duration_s"
               else f"2024-01-01T00:11:00Z,failure,,,{logged},xid 79")
    _refused(_csv(tmp_path, [RUN[0], RUN[1], written]), 4, field, "6 ms before the previous event")


def test_an_attempt_without_its_first_step_is_noted(tmp_path):
    rows = RUN[:4] + ["2024-01-01T02:35:00Z,step,300,,,", RUN[5]]
    measured = measure_run(read_run(_csv(tmp_path, rows)))
    assert "line 6: an attempt with no first_step" in measured.attrs["notes"]


@pytest.mark.parametrize("command", [["show"], ["predict", "--gpus", "8", "--runs", "100"],
                                     ["replay", "--gpus", "8", "--runs", "100"]])
def test_every_command_says_what_it_did_not_take_at_face_value(tmp_path, command):
    from click.testing import CliRunner

    from relmodel._cli import main

    rows = RUN[:4] + ["2024-01-01T02:35:00Z,checkpoint_written,300,60,,", RUN[5]]
    path = _csv(tmp_path, rows)
    out = CliRunner().invoke(main, ["run", *command, str(path)])
    assert out.exit_code == 0, out.output
    assert "line 6: an attempt with no first_step (initialisation counted as compute)" in out.output
