"""Every trainer-log format against every other: each log, laid out as its framework prints it (the
samples of the per-format tests), is recognised by its own reader and by no other, and `format="auto"`
reads it as that format; the trainer-events CSV and garbage are recognised by none."""

import pytest

from relmodel.record import TRAINER_FORMATS, RunRecordError, read_run
import test_trainer_log_hf_trainer as hf_trainer
import test_trainer_log_history as history
import test_trainer_log_lightning as lightning
import test_trainer_log_megatron as megatron
import test_trainer_log_torchtitan as torchtitan

SAMPLES = {
    "torchtitan": [torchtitan.FIRST, torchtitan.SECOND],
    "megatron": [megatron.FIRST, megatron.SECOND],
    "hf_trainer": [hf_trainer.FIRST, hf_trainer.SECOND],
    "lightning": [lightning.FIRST, lightning.SECOND],
    "history": [history.WANDB, history.MLFLOW],
}
NONE_OF_THEM = [
    ["time,event,step,duration_s,wait_s,reason", "2024-01-01T00:00:00Z,attempt_start,,,,"],
    ['{"time": "2024-01-01T00:00:00Z", "event": "attempt_start"}'],
    ["garbage", "", "step 1 of 2", "Traceback (most recent call last):", "RuntimeError: CUDA error: x"],
    [],
]


def test_every_format_has_samples():
    assert set(SAMPLES) == set(TRAINER_FORMATS)


@pytest.mark.parametrize("reader", sorted(TRAINER_FORMATS))
@pytest.mark.parametrize("written_by", sorted(SAMPLES))
def test_a_log_is_recognised_by_its_own_reader_only(reader, written_by):
    detect = TRAINER_FORMATS[reader].detect
    for lines in SAMPLES[written_by]:
        assert detect(lines) == (reader == written_by)


@pytest.mark.parametrize("reader", sorted(TRAINER_FORMATS))
@pytest.mark.parametrize("lines", NONE_OF_THEM)
def test_no_reader_claims_the_events_file_or_garbage(reader, lines):
    assert not TRAINER_FORMATS[reader].detect(lines)


@pytest.mark.parametrize("written_by", sorted(SAMPLES))
def test_auto_reads_each_log_as_its_format(tmp_path, written_by):
    path = tmp_path / "attempt.out"
    path.write_text("\n".join(SAMPLES[written_by][0]) + "\n")
    record = read_run(path, format="auto")
    assert any(key.startswith(f"{written_by} log lines") for key in record.summary.skipped)


# A step printed garbled in each format's own step line: (sample, the text in its one step line, what it becomes).
GARBLED_STEPS = {
    "torchtitan": (torchtitan.FIRST, "step: 10", "step: 1O"),
    "megatron": (megatron.FIRST, "     200/", "     2OO/"),
    "hf_trainer": (hf_trainer.SECOND, "global step 2000", "global step 2O00"),
    "lightning": (lightning.FIRST, "global step 2000", "global step 2k"),
}


@pytest.mark.parametrize("fmt", sorted(GARBLED_STEPS))
def test_a_garbled_step_is_refused_naming_its_line_and_field(tmp_path, fmt):
    sample, printed, garbled = GARBLED_STEPS[fmt]
    (at,) = [k for k, line in enumerate(sample) if printed in line]
    lines = [*sample[:at], sample[at].replace(printed, garbled), *sample[at + 1:]]
    path = tmp_path / "slurm-1.out"
    path.write_text("\n".join(lines) + "\n")
    bad = garbled.split()[-1].rstrip("/")
    with pytest.raises(RunRecordError, match=f"'{bad}' is not a step number") as info:
        read_run(path, format=fmt)
    assert (info.value.line, info.value.field) == (at + 1, "step")


def test_a_file_of_no_format_is_refused_naming_every_format(tmp_path):
    path = tmp_path / "attempt.out"
    path.write_text("\n".join(NONE_OF_THEM[2]) + "\n")
    with pytest.raises(RunRecordError, match="not a record relmodel reads") as info:
        read_run(path)
    assert all(f"format {name!r}" in str(info.value) for name in TRAINER_FORMATS)


@pytest.mark.parametrize("written_by", ["megatron", "torchtitan"])
def test_a_byte_order_mark_and_carriage_returns_change_nothing(tmp_path, written_by):
    """A log is read from its bytes: a byte-order mark is dropped, and CRLF lines are the same lines."""
    import xarray as xr

    lines = SAMPLES[written_by][0]
    plain, marked, crlf = (tmp_path / name for name in ("plain.out", "marked.out", "crlf.out"))
    plain.write_bytes(("\n".join(lines) + "\n").encode())
    marked.write_bytes(b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode())
    crlf.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    expected = read_run(plain).events.drop_vars("file").drop_attrs()
    for path in (marked, crlf):
        xr.testing.assert_identical(read_run(path).events.drop_vars("file").drop_attrs(), expected)


def test_a_log_that_is_not_utf8_is_refused_naming_its_line(tmp_path):
    path = tmp_path / "attempt.out"
    path.write_bytes(("\n".join(megatron.FIRST[:5]) + "\n").encode() + b"caf\xe9\n")
    with pytest.raises(RunRecordError, match="line 6: not UTF-8"):
        read_run(path)
