"""Job-log readers: sacct and CSV, folding, grouping, and every malformed row named by its line."""

import contextlib
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relmodel import _fast_csv
from relmodel import _job_logs as logs_module
from relmodel._job_logs import LogError, expand_nodelist, parse_duration_seconds, parse_elapsed, read_log
from relmodel._synthetic_log import synthetic_log
from relmodel._taxonomy import load as load_taxonomy

SACCT = """\
JobID|JobName|State|Start|End|Elapsed|NNodes|AllocTRES|NodeList|Comment
100|train|NODE_FAIL|2024-03-01T00:00:00|2024-03-01T10:00:00|10:00:00|16|cpu=96,gres/gpu=128,node=16|node[001-016]|
100.batch|batch|CANCELLED|2024-03-01T00:00:00|2024-03-01T10:00:00|10:00:00|1|cpu=6|node001|
100.0|python|FAILED|2024-03-01T00:00:00|2024-03-01T10:00:00|10:00:00|16|cpu=96|node[001-016]|
100|train|COMPLETED|2024-03-01T11:00:00|2024-03-02T11:00:00|1-00:00:00|16|cpu=96,gres/gpu=128,node=16|node[017-032]|
101_3|sweep|CANCELLED by 4242|2024-03-01T00:00:00|2024-03-01T01:00:00|01:00:00|1|gres/gpu:a100=4|node040|
102|train|FAILED|2024-03-01T00:00:00|2024-03-01T05:00:00|05:00:00|32|gres/gpu=256|node[100-131]|health_check: xid 79
103|train|PENDING|Unknown|Unknown|00:00:00|1|gres/gpu=8|None assigned|
104|train|CANCELLED by 1|None|2024-03-01T00:10:00|00:00:00|1|gres/gpu=8|None assigned|
105+0|het|COMPLETED|2024-03-01T00:00:00|2024-03-01T02:00:00|02:00:00|2|gres/gpu=16|node[200-201]|
105+1|het|NODE_FAIL|2024-03-01T00:00:00|2024-03-01T02:00:00|02:00:00|1|gres/gpu=8|node202|
106|train|OUT_OF_MEMORY|2024-03-01T00:00:00||00:30:00|1|gres/gpu=8|node300|
"""


def test_sacct_folds_steps_groups_runs_and_classifies():
    log = read_log(SACCT)
    ds = log.dataset
    s = log.summary
    assert s.format == "sacct" and s.rows_read == 11 and s.rows_used == 6
    assert s.rows_folded == 3  # two steps and one het component
    assert s.skipped == {"not finished (PENDING)": 1, "never started": 1}
    assert s.rows_used + s.rows_folded + s.rows_skipped == s.rows_read
    assert list(ds.job_id.values) == ["100", "100", "101_3", "102", "105", "106"]
    assert list(ds.run_id.values) == ["100", "100", "101_3", "102", "105", "106"]
    assert list(ds.state.values) == ["NODE_FAIL", "COMPLETED", "CANCELLED", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY"]
    assert list(ds.infrastructure.values) == [True, False, False, True, True, False]
    assert list(ds.n_gpus.values) == [128, 128, 4, 256, 24, 8]
    assert list(ds.n_nodes.values) == [16, 16, 1, 32, 3, 1]
    np.testing.assert_allclose(ds.runtime_h.values, [10, 24, 1, 5, 2, 0.5])  # End from Elapsed for 106
    assert log.node_lists[0] == tuple(f"node{i:03d}" for i in range(1, 17))
    assert log.node_lists[4] == ("node200", "node201", "node202") and log.has_node_lists
    assert list(ds.line.values) == [2, 5, 6, 7, 10, 12]


def test_a_log_file_with_a_byte_order_mark_reads_as_without(tmp_path):
    path = tmp_path / "log.csv"
    path.write_bytes(b"\xef\xbb\xbf" + SACCT.encode())
    assert read_log(path).dataset.equals(read_log(SACCT).dataset)  # the same data (attrs name the source)


def test_csv_with_nodes_and_n_nodes(tmp_path):
    text = ("job_id,n_nodes,start,end,state,cause,nodes\n"
            '7,2,2024-01-01T00:00:00Z,2024-01-01T06:00:00Z,FAILED,nccl_timeout,"gpu[1-2]"\n'
            "8,1,2024-01-01 00:00:00,2024-01-01 01:30:00,TIMEOUT,,gpu3\n"
            "9,1,1704067200,1704070800,COMPLETED,,\n")
    path = tmp_path / "log.csv"
    path.write_text(text)
    for source in (text, path, str(path)):
        log = read_log(source)
        ds = log.dataset
        assert log.summary.format == "csv" and len(log) == 3
        assert list(ds.infrastructure.values) == [True, False, False]
        assert list(ds.n_gpus.values) == [-1, -1, -1] and list(ds.n_nodes.values) == [2, 1, 1]
        np.testing.assert_allclose(ds.runtime_h.values, [6, 1.5, 1])
        assert log.node_lists[0] == ("gpu1", "gpu2")


def test_nodelist_expansion():
    assert expand_nodelist("node[001-004,007]") == ("node001", "node002", "node003", "node004", "node007")
    assert expand_nodelist("a[8-10],b") == ("a8", "a9", "a10", "b")
    assert expand_nodelist("r[1-2]n[1-2]") == ("r1n1", "r1n2", "r2n1", "r2n2")
    assert expand_nodelist("None assigned") == ()
    for bad in ("node[1-", "node[3-1]", "node[a-b]", "a,,b", "node]1["):
        with pytest.raises(LogError, match="bad node list"):
            expand_nodelist(bad, 9)


CSV_HEADER = "job_id,n_gpus,start,end,state,cause\n"
GOOD = "1,256,2024-01-01T00:00:00,2024-01-01T02:00:00,COMPLETED,\n"
BAD_CSV_ROWS = [
    ("2,256,2024-01-01T00:00:00,2024-01-01T02:00:00,COMPLETED\n", "missing field"),
    ("2,256,2024-01-01T05:00:00,2024-01-01T02:00:00,COMPLETED,\n", "end before start"),
    ("2,256,2024-01-01T00:00:00,2024-01-01T02:00:00,EXPLODED,\n", "unknown state"),
    ("2,256,yesterday,2024-01-01T02:00:00,COMPLETED,\n", "bad time format"),
    ("2,lots,2024-01-01T00:00:00,2024-01-01T02:00:00,COMPLETED,\n", "bad number"),
    ("2,256,2024-01-01T00:00:00,,FAILED,\n", "missing field"),
    (",256,2024-01-01T00:00:00,2024-01-01T02:00:00,FAILED,\n", "missing field"),
    ("2,256,2024-01-01T00:00:00,2024-01-01T02:00:00,COMPLETED,,extra\n", "extra field"),
]


@pytest.mark.parametrize("row, reason", BAD_CSV_ROWS)
def test_bad_csv_row_names_its_line_and_reason(row, reason):
    text = CSV_HEADER + GOOD + GOOD + row + GOOD
    with pytest.raises(LogError) as info:
        read_log(text)
    assert info.value.line == 4 and str(info.value).startswith(f"line 4: {reason}")
    log = read_log(text, errors="skip")
    assert len(log) == 3 and log.summary.rows_read == 4
    assert log.summary.skipped == {f"malformed ({reason})": 1} and log.summary.errors[0].line == 4


SACCT_HEADER = "JobID|State|Start|End|Elapsed|NNodes|AllocTRES\n"
SACCT_GOOD = "1|COMPLETED|2024-01-01T00:00:00|2024-01-01T02:00:00|02:00:00|2|gres/gpu=16\n"
BAD_SACCT_ROWS = [
    ("2|COMPLETED|2024-01-01T00:00:00|2024-01-01T02:00:00|02:00:00|2\n", "missing field"),
    ("2|COMPLETED|2024-01-01T03:00:00|2024-01-01T02:00:00|02:00:00|2|gres/gpu=16\n", "end before start"),
    ("2|ON_FIRE|2024-01-01T00:00:00|2024-01-01T02:00:00|02:00:00|2|gres/gpu=16\n", "unknown state"),
    ("2|COMPLETED|2024-01-01T00:00:00|2024-01-01T02:00:00|2 hours|2|gres/gpu=16\n", "bad time format"),
    ("2|COMPLETED|2024-13-01T00:00:00|2024-01-01T02:00:00|02:00:00|2|gres/gpu=16\n", "bad time format"),
    ("2|COMPLETED|2024-01-01T00:00:00|2024-01-01T02:00:00|02:00:00|two|gres/gpu=16\n", "bad number"),
    ("2|COMPLETED|2024-01-01T00:00:00|2024-01-01T02:00:00|02:00:00|2|gres/gpu=x\n", "bad number"),
    ("abc|COMPLETED|2024-01-01T00:00:00|2024-01-01T02:00:00|02:00:00|2|gres/gpu=16\n", "bad job id"),
    ("2||2024-01-01T00:00:00|2024-01-01T02:00:00|02:00:00|2|gres/gpu=16\n", "missing field"),
]


@pytest.mark.parametrize("row, reason", BAD_SACCT_ROWS)
def test_bad_sacct_row_names_its_line_and_reason(row, reason):
    text = SACCT_HEADER + SACCT_GOOD + row
    with pytest.raises(LogError, match=f"^line 3: {reason}"):
        read_log(text)
    log = read_log(text, errors="skip")
    assert len(log) == 1 and log.summary.rows_skipped == 1


def test_bad_headers_and_empty_logs():
    with pytest.raises(LogError, match="line 1: missing field.*n_gpus or n_nodes"):
        read_log("job_id,start,end,state\n1,a,b,c\n")
    with pytest.raises(LogError, match="line 1: missing field.*'start'"):
        read_log("JobID|State|End\n1|COMPLETED|2024-01-01T00:00:00\n")
    with pytest.raises(LogError, match="empty log"):
        read_log("\n\n")
    with pytest.raises(LogError, match="cannot read"):
        from pathlib import Path

        read_log(Path("/nonexistent/joblog.csv"))


def test_step_without_its_job_is_counted_not_dropped():
    log = read_log(SACCT_HEADER + "9.batch|COMPLETED|2024-01-01T00:00:00|2024-01-01T02:00:00|02:00:00|1|\n")
    assert len(log) == 0 and log.summary.skipped == {"step without its job": 1}


# Fuzz: whatever the text, read_log answers with a JobLog or a LogError, never anything else.

_FIELD = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "1", "128", "-3", "1e9", "99999999999999999999", "2024-01-01T00:00:00", "2024-02-30T00:00:00",
                     "Unknown", "None", "COMPLETED", "NODE_FAIL", "FAILED", "CANCELLED by 7", "RUNNING", "node[1-3]",
                     "node[1-99999999]", "n[1-2]x[3-4]", "[", "]", "1-02:03:04", "99:99:99", "health_check",
                     "gres/gpu=8", "gres/gpu=", "1_2", "1.batch", "1+0", '"a,b"']),
)


@st.composite
def csvish_logs(draw):
    header = draw(st.sampled_from(["job_id,n_gpus,start,end,state,cause,nodes", "job_id,n_nodes,start,end,state",
                                   "JobID|State|Start|End|Elapsed|NNodes|AllocTRES|NodeList|Comment",
                                   "JobID|State|Start|Elapsed", "nonsense"]))
    sep = "|" if "|" in header else ","
    width = header.count(sep) + 1
    rows = draw(st.lists(st.lists(_FIELD, min_size=width - 1, max_size=width + 1), max_size=6))
    return "\n".join([header] + [sep.join(r) for r in rows])


@given(st.text(max_size=300))
def test_fuzz_arbitrary_text_only_raises_log_error(text):
    _read_or_log_error(text)


@given(csvish_logs(), st.sampled_from(["auto", "csv", "sacct"]), st.sampled_from(["raise", "skip"]))
def test_fuzz_csvish_lines_only_raise_log_error(text, fmt, errors):
    log = _read_or_log_error(text, format=fmt, errors=errors)
    if log is not None:
        s = log.summary
        assert s.rows_used + s.rows_folded + s.rows_skipped == s.rows_read  # nothing dropped silently


def _read_or_log_error(text, **kw):
    try:
        return read_log(text, **kw)
    except LogError:
        return None


# Real sacct formats: fixtures under tests/data/sacct (see its README), each value worked out here.

DATA = Path(__file__).parent / "data" / "sacct"


def _hours(*seconds):
    return np.array(seconds, dtype=float) / 3600.0


def test_recent_slurm_parsable2_with_tres_steps_and_every_kind_of_state():
    log = read_log(DATA / "slurm23_parsable2.txt")
    ds, s = log.dataset, log.summary
    assert s.rows_read == 17 and s.rows_used == 8 and s.rows_folded == 5  # 7001's three steps, 7012's two
    assert s.skipped == {"not finished (PENDING)": 1, "not finished (SUSPENDED)": 1,
                         "resized, the part before a size change (RESIZING)": 1,
                         "revoked, a federation sibling that ran elsewhere (REVOKED)": 1}
    assert not s.errors and not s.notes  # Elapsed equals End - Start on every used row
    assert list(ds.job_id.values) == ["7001", "7002", "7003_4", "7004", "7005", "7006", "7012", "7013"]
    # DEADLINE is a TIMEOUT and BOOT_FAIL a NODE_FAIL (taxonomy aliases); "CANCELLED by 12345" is CANCELLED.
    assert list(ds.state.values) == ["NODE_FAIL", "COMPLETED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "COMPLETED",
                                     "FAILED", "COMPLETED"]
    assert list(ds.infrastructure.values) == [True, False, False, False, True, False, True, False]
    # gres/gpu=16 wins over the typed gres/gpu:a100=16 (not 32); typed-only gres/gpu:h100=8 is 8;
    # a CPU-only allocation is 0 GPUs, not unknown.
    assert list(ds.n_gpus.values) == [16, 8, 1, 32, 64, 16, 16, 0]
    assert list(ds.n_nodes.values) == [2, 1, 1, 4, 8, 2, 2, 1]
    # 3-04:05:06 = 3*86400 + 4*3600 + 5*60 + 6 s; the resized job counts from its last size on.
    np.testing.assert_array_equal(ds.runtime_h.values, _hours(273906, 23400, 2730, 7200, 0, 14400, 10800, 600))
    assert log.node_lists[0] == ("gpu017", "gpu018") and log.node_lists[6] == ("gpu600", "gpu601")


def test_fit_on_the_recent_slurm_fixture_counts_exposure_exactly():
    import relmodel as rm

    result = rm.fit(DATA / "slurm23_parsable2.txt", min_gpus=1)
    # Infrastructure failures of GPU jobs: 7001 (NODE_FAIL), 7005 (BOOT_FAIL), 7012 (FAILED, health_check).
    assert result.n_failures == 3 and result.n_jobs == 7  # 7013 has no GPU
    node_seconds = 2 * 273906 + 23400 + 2730 + 4 * 7200 + 8 * 0 + 2 * 14400 + 2 * 10800
    assert result.node_days == pytest.approx(node_seconds / 86400, rel=1e-14)
    assert result.dataset.attrs["weibull_zero_time_failures"] == 1  # the boot failure had no runtime


def test_old_slurm_p_output_with_alloc_gres_and_trailing_delimiter():
    log = read_log(DATA / "slurm17_p_allocgres.txt")
    ds, s = log.dataset, log.summary
    assert s.rows_read == 8 and s.rows_used == 5 and s.rows_folded == 2
    assert s.skipped == {"not finished (PENDING)": 1}
    assert list(ds.job_id.values) == ["881234", "881240", "881241", "881242", "881243"]
    assert list(ds.state.values) == ["COMPLETED", "NODE_FAIL", "CANCELLED", "FAILED", "TIMEOUT"]
    # AllocGRES is a job total (per-node count times nodes); "(IDX:0-3)" is ignored; empty means no GPU.
    assert list(ds.n_gpus.values) == [8, 4, 1, 0, 8]
    assert list(ds.n_nodes.values) == [2, 1, 1, 1, 2]
    np.testing.assert_array_equal(ds.runtime_h.values, _hours(2 * 86400 + 2 * 3600 + 30 * 60, 17 * 3600 + 45 * 60 + 10,
                                                               42, 300, 86400 + 3))


def test_runtime_across_daylight_saving_changes_comes_from_elapsed():
    log = read_log(DATA / "dst_new_york.txt", errors="skip")
    ds, s = log.dataset, log.summary
    assert list(ds.job_id.values) == ["9101", "9102", "9103", "9104", "9105"]
    # Fall back: 01:40 EDT to 01:10 EST is 30 min, though End is before Start on the clock;
    # 23:00 EDT to 03:00 EST is 5 h, not 4. Spring forward: 01:00 EST to 04:00 EDT is 2 h, not 3.
    # 9104 was suspended 3 of its 10 hours: Elapsed leaves that out.
    np.testing.assert_array_equal(ds.runtime_h.values, [0.5, 5.0, 2.0, 7.0, 2.0])
    assert s.notes == {"runtime from Elapsed, not End - Start (a DST change or suspension)": 4}
    assert str(ds.start.values[0])[:19] == "2023-11-05T01:40:00" and str(ds.end.values[0])[:19] == "2023-11-05T01:10:00"
    # Three hours backwards is more than any DST shift: still malformed, with its line.
    assert s.skipped == {"malformed (end before start)": 1} and s.errors[0].line == 7
    with pytest.raises(LogError, match="^line 7: end before start"):
        read_log(DATA / "dst_new_york.txt")


def test_elapsed_without_start_and_every_elapsed_form():
    log = read_log(DATA / "elapsed_no_start.txt")
    ds, s = log.dataset, log.summary
    assert list(ds.job_id.values) == ["5001", "5002", "5003", "5005"]
    assert s.skipped == {"never started": 1}  # CANCELLED with no Elapsed and no Start column
    np.testing.assert_array_equal(ds.runtime_h.values, _hours(86400, 45 * 60 + 30, 7.25, 12 * 3600 + 34 * 60 + 56))
    assert list(ds.n_gpus.values) == [32, 8, 8, 16] and list(ds.n_nodes.values) == [4, 1, 1, 2]
    assert str(ds.start.values[0])[:19] == "2024-01-31T12:00:00"  # End - Elapsed


def test_caret_delimiter_without_start_or_end():
    log = read_log(DATA / "caret_delimiter.txt")
    ds, s = log.dataset, log.summary
    assert s.format == "sacct" and s.rows_read == 4 and s.rows_folded == 1 and s.skipped == {"never started": 1}
    assert list(ds.job_id.values) == ["31100777_12", "6200001"]
    assert list(ds.n_gpus.values) == [1, 0] and list(ds.n_nodes.values) == [1, 16]
    np.testing.assert_array_equal(ds.runtime_h.values, _hours(19 * 60 + 21, 11 * 86400 + 3 * 3600 + 7 * 60 + 45))
    assert np.isnat(ds.start.values).all() and np.isnat(ds.end.values).all()


@pytest.mark.parametrize("text, seconds", [
    ("1-02:03:04", 93784), ("12-14:16:39", 1088199), ("02:03:04", 7384), ("168:00:00", 604800),
    ("03:04", 184), ("00:07.250", 7.25), ("09:28.052", 568.052), ("1-02", 93600), ("1-02:03", 93780),
    ("00:00:00", 0), ("INVALID", None), ("", None), ("Unknown", None),
])
def test_slurm_durations(text, seconds):
    got = parse_duration_seconds(text, 1)
    assert got == (None if seconds is None else pytest.approx(seconds, abs=1e-9))
    assert parse_elapsed(text, 1) == (None if seconds is None else pytest.approx(seconds / 3600, abs=1e-12))


@pytest.mark.parametrize("text", ["1-24:00:00", "1-02:60:00", "00:60", "01:60:00", "2 hours", "1-2-3", "-01:00:00",
                                  "1:2:3:4", "12"])
def test_bad_durations_name_the_line(text):
    with pytest.raises(LogError, match="^line 4: bad time format: Elapsed"):
        parse_duration_seconds(text, 4)


def _one_row(columns: dict) -> str:
    base = {"JobID": "1", "State": "COMPLETED", "Start": "2024-01-01T00:00:00", "End": "2024-01-01T01:00:00",
            "Elapsed": "01:00:00"}
    base.update(columns)
    return "|".join(base) + "\n" + "|".join(base.values()) + "\n"


@pytest.mark.parametrize("column, value, gpus", [
    ("AllocTRES", "gres/gpu=4", 4),
    ("AllocTRES", "gres/gpu:a100=8", 8),
    ("AllocTRES", "billing=128,cpu=96,gres/gpu=8,mem=500G,node=2", 8),
    ("AllocTRES", "cpu=8,gres/gpu=2,gres/gpu:a100=2", 2),
    ("AllocTRES", "cpu=8,gres/gpu:a100=2,gres/gpu:a40=1", 3),
    ("AllocTRES", "cpu=8,gres/gpumem=40960,gres/gpuutil=50,mem=4G", 0),
    ("AllocTRES", "cpu=8,mem=4G,node=1", 0),
    ("AllocGRES", "gpu:2", 2),
    ("AllocGRES", "gpu:a100:2(IDX:0,1)", 2),
    ("AllocGRES", "mps:100,gpu:a100:2(S:0),shard:50", 2),
    ("AllocGRES", "gpu:a100:1,gpu:a40:2", 3),
    ("AllocGRES", "gpu", 1),
    ("AllocGRES", "gres/gpu=8", 8),
    ("ReqTRES", "billing=8,cpu=8,gres/gpu=4,node=1", 4),
    ("NGPUs", "16", 16),
])
def test_gpu_counts_from_every_gpu_column(column, value, gpus):
    assert read_log(_one_row({column: value})).dataset.n_gpus.values.tolist() == [gpus]


def test_allocation_wins_over_request_and_reqgres_is_not_read():
    text = _one_row({"AllocTRES": "cpu=8,gres/gpu=8,node=1", "ReqTRES": "cpu=8,gres/gpu=4,node=1"})
    assert read_log(text).dataset.n_gpus.values.tolist() == [8]
    assert read_log(_one_row({"ReqGRES": "gpu:4", "NNodes": "2"})).dataset.n_gpus.values.tolist() == [-1]


@pytest.mark.parametrize("columns, nodes", [
    ({"AllocNodes": "4", "NNodes": "4"}, 4),
    ({"AllocNodes": "0", "NNodes": "3"}, 3),  # AllocNodes 0: never allocated, so no answer
    ({"AllocTRES": "cpu=16,gres/gpu=16,node=2"}, 2),
    ({"NodeList": "n[1-5]"}, 5),
])
def test_node_counts(columns, nodes):
    assert read_log(_one_row(columns)).dataset.n_nodes.values.tolist() == [nodes]


@pytest.mark.parametrize("state, reason", [
    ("RUNNING", "not finished (RUNNING)"), ("REQUEUE_HOLD", "not finished (REQUEUE_HOLD)"),
    ("RESIZING", "resized, the part before a size change (RESIZING)"),
    ("REVOKED", "revoked, a federation sibling that ran elsewhere (REVOKED)"),
    ("SPECIAL_EXIT", "special exit, held for requeue (SPECIAL_EXIT)"),
    ("SUSPENDED", "not finished (SUSPENDED)"),
])
def test_states_that_end_no_attempt_are_counted_by_reason(state, reason):
    # Their other fields are not read: a pending job may have no times and a node range.
    text = _one_row({"State": state, "Start": "Unknown", "End": "Unknown", "NNodes": "2-4"})
    log = read_log(text)
    assert len(log) == 0 and log.summary.skipped == {reason: 1}


@pytest.mark.parametrize("state, canonical, infrastructure", [
    ("CANCELLED by 12345", "CANCELLED", False), ("DEADLINE", "TIMEOUT", False), ("BOOT_FAIL", "NODE_FAIL", True),
    ("OUT_OF_MEMORY", "OUT_OF_MEMORY", False), ("PREEMPTED", "PREEMPTED", False),
])
def test_end_states_and_their_aliases(state, canonical, infrastructure):
    ds = read_log(_one_row({"State": state})).dataset
    assert ds.state.values.tolist() == [canonical] and ds.infrastructure.values.tolist() == [infrastructure]


@pytest.mark.parametrize("columns, reason", [
    ({"State": "EXPLODED"}, "unknown state"),
    ({"Elapsed": "1-25:00:00"}, "bad time format"),
    ({"Elapsed": "03:00:00"}, "elapsed longer than end - start"),  # 3 h in a 1 h window: more than DST
    ({"Elapsed": "", "End": ""}, "missing field"),
    ({"ElapsedRaw": "abc", "Elapsed": ""}, "bad number"),
    ({"AllocNodes": "two"}, "bad number"),
    ({"AllocGRES": "gpu:a100:lots"}, "bad number"),
    ({"JobID": "1.2.3"}, "bad job id"),
])
def test_malformed_sacct_fields_name_the_line(columns, reason):
    text = _one_row(columns)
    with pytest.raises(LogError, match=f"^line 2: {reason}"):
        read_log(text)
    log = read_log(text, errors="skip")
    assert len(log) == 0 and log.summary.skipped == {f"malformed ({reason})": 1}


def test_header_without_any_runtime_is_refused():
    with pytest.raises(LogError, match="^line 1: missing field.*no Elapsed or ElapsedRaw.*'end'"):
        read_log("JobID|State|Start\n1|COMPLETED|2024-01-01T00:00:00\n")
    log = read_log("JobID|State|ElapsedRaw\n1|COMPLETED|5400\n")  # ElapsedRaw alone is enough
    assert log.dataset.runtime_h.values.tolist() == [1.5]


def test_het_job_requeued_is_two_attempts_and_het_steps_fold():
    text = ("JobID|State|Start|End|Elapsed|NNodes|AllocTRES\n"
            "300+0|NODE_FAIL|2024-01-01T00:00:00|2024-01-01T02:00:00|02:00:00|2|gres/gpu=16\n"
            "300+1|NODE_FAIL|2024-01-01T00:00:00|2024-01-01T02:00:00|02:00:00|1|gres/gpu=8\n"
            "300+0.0|FAILED|2024-01-01T00:00:00|2024-01-01T02:00:00|02:00:00|2|\n"
            "300+0|COMPLETED|2024-01-01T03:00:00|2024-01-01T04:00:00|01:00:00|2|gres/gpu=16\n"
            "300+1|COMPLETED|2024-01-01T03:00:00|2024-01-01T04:00:00|01:00:00|1|gres/gpu=8\n")
    log = read_log(text)
    ds = log.dataset
    assert ds.job_id.values.tolist() == ["300", "300"] and ds.state.values.tolist() == ["NODE_FAIL", "COMPLETED"]
    assert ds.n_gpus.values.tolist() == [24, 24] and ds.n_nodes.values.tolist() == [3, 3]
    assert ds.runtime_h.values.tolist() == [2.0, 1.0] and log.summary.rows_folded == 3


def test_steps_of_a_skipped_job_fold_into_it_not_into_the_unknown():
    text = ("JobID|State|Start|End|Elapsed\n"
            "8|RUNNING|2024-01-01T00:00:00|Unknown|01:00:00\n"
            "8.batch|RUNNING|2024-01-01T00:00:00|Unknown|01:00:00\n")
    s = read_log(text).summary
    assert s.skipped == {"not finished (RUNNING)": 1} and s.rows_folded == 1


def test_node_lists_are_held_once_per_node_and_read_as_tuples():
    """A log names each node once however many jobs ran on it; `node_lists` reads as a tuple of tuples."""
    text = ("job_id,n_gpus,start,end,state,nodes\n"
            "1,16,2024-01-01T00:00:00,2024-01-01T01:00:00,COMPLETED,\"gpu[01-02]\"\n"
            "2,8,2024-01-01T00:00:00,2024-01-01T01:00:00,NODE_FAIL,gpu02\n"
            "3,8,2024-01-01T00:00:00,2024-01-01T01:00:00,COMPLETED,\n"
            "4,24,2024-01-01T00:00:00,2024-01-01T01:00:00,COMPLETED,\"gpu[02-03],cpu1\"\n")
    lists = read_log(text, "csv").node_lists
    expected = (("gpu01", "gpu02"), ("gpu02",), (), ("gpu02", "gpu03", "cpu1"))
    assert lists == expected and tuple(lists) == expected and len(lists) == 4
    assert lists[-1] == expected[-1] and lists[1:3] == expected[1:3]
    assert sorted(lists.names) == ["cpu1", "gpu01", "gpu02", "gpu03"]  # gpu02 once, for three jobs
    assert lists.ids.size == 6 and list(lists.offsets) == [0, 2, 3, 3, 6]
    with pytest.raises(IndexError):
        lists[4]
    assert "4 jobs" in repr(lists) and "4 distinct nodes" in repr(lists)


def test_a_bracketed_node_list_splits_as_the_character_reader_did():
    """The regular-expression split of well-formed lists, and the errors of malformed ones."""
    assert expand_nodelist("a[1-2],b[07-08,10],c3,d[1,3]x") == ("a1", "a2", "b07", "b08", "b10", "c3", "d1x", "d3x")
    for bad in ("a[1-2", "a[[1]]", "a[1]],b", "a[1],,b"):
        with pytest.raises(LogError, match="bad node list"):
            expand_nodelist(bad)


# Reading by columns (the first path of read_log) and line by line (`_read_lines`, which names a
# malformed row) give the same JobLog, arrays and summary alike, on every log the first accepts;
# it declines a log with a malformed row, and reads every other one written plainly.

TAX = load_taxonomy("meta-2024")
_T0 = 1_709_251_200  # 2024-03-01T00:00:00Z
_END_STATES = ["COMPLETED", "FAILED", "NODE_FAIL", "CANCELLED", "CANCELLED by 4242", "TIMEOUT", "OUT_OF_MEMORY",
               "PREEMPTED", "BOOT_FAIL", "DEADLINE", "completed", " FAILED ", "node_fail"]
_OTHER_STATES = ["RUNNING", "PENDING", "SUSPENDED", "REQUEUE_HOLD", "RESIZING", "REVOKED", "SPECIAL_EXIT"]
_NODE_LISTS = ["node[001-004]", "node[001-004,007]", "n1,n2", "r[1-2]n[1-2]", "gpu17", " gpu18 ", "None assigned",
               "", "(null)", "a[8-10],b"]
_CAUSES = ["", "health_check: xid 79", "nccl_timeout", " exit code 1 ", "job #5, requeued"]
_MISSING_TIMES = ["Unknown", "None", "", "(null)", "n/a", "NaN", "null", "NA"]  # every one of MISSING_TOKENS


def _stamp(seconds: int, form: int) -> str:
    from datetime import datetime, timezone

    text = datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return [text, text.replace("T", " "), text + "Z", str(seconds), f"{seconds}.5", text + "+00:00"][form]


def _duration(seconds: int, form: int) -> str:
    days, rest = divmod(seconds, 86400)
    hms = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    if form == 1 and seconds < 3600:
        return f"{seconds // 60:02d}:{seconds % 60:02d}"  # MM:SS
    if form == 2 and seconds < 3600:
        return f"{seconds // 60:02d}:{seconds % 60:02d}.250"  # MM:SS.mmm (runtime then differs: fine)
    return f"{days}-{hms}" if days else hms


@st.composite
def _timing(draw, plain: bool):
    """(start, end, elapsed, elapsed_raw) texts of one row: mostly coherent, with DST shifts,
    suspensions, missing fields and every written form."""
    start = _T0 + draw(st.integers(0, 40 * 86400))
    runtime = draw(st.sampled_from([0, 1, 59, 61, 3599, 3600, 7200, 86399, 90061, 3 * 86400 + 5]))
    shift = draw(st.sampled_from([0, 0, 0, -3600, -1800, 3600, -7200]))  # DST or clock trouble
    suspended = draw(st.sampled_from([0, 0, 600]))
    form = draw(st.integers(0, 2 if plain else 5))
    texts = [_stamp(start, form), _stamp(start + runtime + suspended + shift, form),
             _duration(runtime, draw(st.integers(0, 2))), str(runtime)]
    for k in range(4):
        if draw(st.integers(0, 9)) == 0:
            texts[k] = draw(st.sampled_from(_MISSING_TIMES + (["INVALID"] if k == 2 else [])))
    return texts


_SACCT_OPTIONAL = ["Start", "End", "Elapsed", "ElapsedRaw", "NNodes", "AllocNodes", "AllocTRES", "AllocGRES",
                   "ReqTRES", "NGPUs", "NodeList", "Comment", "AdminComment", "Reason", "JobName", "Partition"]


@st.composite
def _sacct_row(draw, header, jobs, plain):
    job = draw(st.sampled_from(jobs))
    kind = draw(st.integers(0, 9))
    job_id = (job if kind < 5 else f"{job}_{draw(st.integers(0, 40))}" if kind == 5 else f"{job}_[1-3]" if kind == 6
              else f"{job}+{draw(st.integers(0, 2))}")
    if draw(st.integers(0, 2)) == 0:  # a step
        job_id += draw(st.sampled_from([".batch", ".extern", ".0", ".1", ".0+1"]))
    start, end, elapsed, raw = draw(_timing(plain))
    values = {
        "jobid": job_id, "jobidraw": job_id, "state": draw(st.sampled_from(_END_STATES * 3 + _OTHER_STATES)),
        "start": start, "end": end, "elapsed": elapsed, "elapsedraw": raw,
        "nnodes": draw(st.sampled_from(["1", "2", "16", "0", ""])), "allocnodes": draw(st.sampled_from(["4", "0", ""])),
        "alloctres": draw(st.sampled_from(["cpu=96,gres/gpu=128,node=16", "gres/gpu:a100=4", "cpu=8,mem=4G,node=1",
                                           "cpu=8,gres/gpu=2,gres/gpu:a100=2", "", "billing=8,gres/gpu:h100=8"])),
        "allocgres": draw(st.sampled_from(["gpu:2", "gpu:a100:2(IDX:0,1)", "", "mps:100,gpu:1", "gpu", "gres/gpu=8"])),
        "reqtres": draw(st.sampled_from(["cpu=8,gres/gpu=4,node=1", "", "cpu=1"])),
        "ngpus": draw(st.sampled_from(["8", "", "0"])), "nodelist": draw(st.sampled_from(_NODE_LISTS)),
        "comment": draw(st.sampled_from(_CAUSES)), "admincomment": draw(st.sampled_from(_CAUSES)),
        "reason": draw(st.sampled_from(_CAUSES)), "jobname": "train", "partition": "gpu",
    }
    if not plain and draw(st.integers(0, 5)) == 0:  # a malformed field
        name = draw(st.sampled_from(sorted(values)))
        values[name] = draw(st.sampled_from(["x", "2024-13-01T00:00:00", "1-25:00:00", "node[3-1]", "EXPLODED",
                                             "gres/gpu=x", "-1", "1.2.3"]))
    return [values[h.lower()] for h in header]


@st.composite
def sacct_texts(draw, plain=True):
    """A sacct log: any header the reader takes, jobs with steps, array tasks, het components and
    requeues, every state, time and resource form; with `plain` False, malformed fields too."""
    optional = draw(st.lists(st.sampled_from(_SACCT_OPTIONAL), unique=True))
    header = draw(st.permutations([draw(st.sampled_from(["JobID", "JobIDRaw", "jobid"])), "State"] + optional))
    if not plain and draw(st.booleans()):
        header = header + ["Elapsed"] if "Elapsed" not in header else header
    jobs = [str(j) for j in draw(st.lists(st.integers(100, 112), min_size=1, max_size=6, unique=True))]
    rows = draw(st.lists(_sacct_row(header, jobs, plain), max_size=30))
    sep = draw(st.sampled_from(["|", "|", "^|^"]))
    lines = [sep.join(header)] + [sep.join(r) for r in rows]
    return _decorate(draw, lines, sep)


def _decorate(draw, lines, sep):
    """Blank lines, comment lines before the header, CRLF, a trailing separator-free tail."""
    for _ in range(draw(st.integers(0, 3))):
        lines.insert(draw(st.integers(1, len(lines))), draw(st.sampled_from(["", "   ", "\t"])))
    if draw(st.booleans()):
        lines = [draw(st.sampled_from(["# sacct -P", "", "  # a note"]))] + lines
    newline = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    return newline.join(lines) + draw(st.sampled_from([newline, "", newline + newline]))


@st.composite
def csv_texts(draw, plain=True):
    """A CSV log: any header the reader takes (n_gpus and/or n_nodes, optional cause and nodes,
    extra columns), quoted fields as csv.writer writes them, comment lines; with `plain` False,
    malformed fields too."""
    sizes = draw(st.sampled_from([["n_gpus"], ["n_nodes"], ["n_gpus", "n_nodes"]]))
    optional = draw(st.lists(st.sampled_from(["cause", "nodes", "partition"]), unique=True))
    header = draw(st.permutations(["job_id", "start", "end", "state"] + sizes + optional))
    rows = []
    for _ in range(draw(st.integers(0, 30))):
        start, end, _, _ = draw(_timing(plain))
        base = draw(st.integers(100, 110))
        values = {"job_id": draw(st.sampled_from([str(base), f"{base}+{draw(st.integers(0, 2))}", f"{base}.1",
                                                  f" {base}_3 ", f"{base}.0+1"])),
                  "start": start, "end": end, "state": draw(st.sampled_from(_END_STATES * 3 + _OTHER_STATES)),
                  "n_gpus": draw(st.sampled_from(["8", "256", "", "0"])),
                  "n_nodes": draw(st.sampled_from(["1", "32", ""])),
                  "cause": draw(st.sampled_from(_CAUSES)), "nodes": draw(st.sampled_from(_NODE_LISTS)),
                  "partition": "gpu"}
        if not plain and draw(st.integers(0, 5)) == 0:
            name = draw(st.sampled_from(sorted(values)))
            values[name] = draw(st.sampled_from(["x", "2024-02-30T00:00:00", "node[a-b]", "EXPLODED", "-1", '"a"b']))
        rows.append([values[h] for h in header])
    lines = [",".join(header)] + [_csv_line(r) for r in rows]
    for _ in range(draw(st.integers(0, 2))):
        lines.insert(draw(st.integers(1, len(lines))), draw(st.sampled_from(["# a comment, with commas,,", "  #x"])))
    return _decorate(draw, lines, ",")


def _csv_line(fields):
    import csv
    import io

    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(fields)
    return out.getvalue()


def _same_log(a, b):
    """The two JobLogs are the same: every array (values and dtypes), the summary, the node lists."""
    da, db = a.dataset, b.dataset
    assert list(da.data_vars) == list(db.data_vars) and da.attrs == db.attrs
    for name in da.data_vars:
        x, y = da[name].values, db[name].values
        assert x.dtype == y.dtype, name
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f") or (x.dtype.kind == "M" and np.array_equal(
            np.isnat(x), np.isnat(y)) and (x[~np.isnat(x)] == y[~np.isnat(y)]).all()), name
    assert a.summary.to_dict() == b.summary.to_dict()
    assert list(a.summary.skipped) == list(b.summary.skipped) and list(a.summary.notes) == list(b.summary.notes)
    assert list(a.node_lists.names) == list(b.node_lists.names)
    assert np.array_equal(a.node_lists.ids, b.node_lists.ids) and a.node_lists.ids.dtype == b.node_lists.ids.dtype
    assert np.array_equal(a.node_lists.offsets, b.node_lists.offsets)


@contextlib.contextmanager
def _blocks_of(size):
    with mock.patch.object(_fast_csv, "BLOCK_BYTES", size):
        yield


def _both_paths(source, fmt="auto", block=1 << 24):
    """(by columns or None, line by line: the JobLog or the LogError)."""
    try:
        by_lines = logs_module._read_lines(source, fmt, TAX, "raise")
    except LogError as err:
        by_lines = err
    with _blocks_of(block):
        by_columns = logs_module._read_columns(source, fmt, TAX, False)
    return by_columns, by_lines


def _check_alike(text, fmt, block, plain):
    by_columns, by_lines = _both_paths(text, fmt, block)
    if isinstance(by_lines, LogError):
        assert by_columns is None  # a malformed row: the columns decline, the lines name it
        return
    if plain:
        assert by_columns is not None, "a log written plainly was left to the line-by-line reader"
    if by_columns is not None:
        _same_log(by_columns, by_lines)


@settings(max_examples=150)
@given(sacct_texts(), st.sampled_from(["auto", "sacct"]), st.sampled_from([64, 1 << 24]))
def test_sacct_logs_read_alike_by_columns_and_by_lines(text, fmt, block):
    _check_alike(text, fmt, block, plain=True)


@settings(max_examples=150)
@given(csv_texts(), st.sampled_from(["auto", "csv"]), st.sampled_from([64, 1 << 24]))
def test_csv_logs_read_alike_by_columns_and_by_lines(text, fmt, block):
    _check_alike(text, fmt, block, plain=True)


@settings(max_examples=100)
@given(st.one_of(sacct_texts(plain=False), csv_texts(plain=False)), st.sampled_from(["auto", "csv", "sacct"]),
       st.sampled_from([64, 1 << 24]))
def test_logs_with_malformed_fields_are_declined_or_read_alike(text, fmt, block):
    _check_alike(text, fmt, block, plain=False)


@settings(max_examples=100)
@given(csvish_logs(), st.sampled_from(["auto", "csv", "sacct"]))
def test_fuzzed_logs_are_declined_or_read_alike(text, fmt):
    _check_alike(text, fmt, 1 << 24, plain=False)


@settings(max_examples=20)
@given(st.integers(1, 60), st.integers(0, 2**16), st.sampled_from(["csv", "sacct"]), st.sampled_from([256, 1 << 24]))
def test_synthetic_logs_read_alike_and_plainly(n_jobs, seed, fmt, block):
    text = synthetic_log(n_jobs, failure_rate=0.05, seed=seed, n_nodes=64, array_prob=0.3).text(fmt)
    _check_alike(text, fmt, block, plain=True)


def test_het_components_steps_and_requeues_merge_alike():
    text = ("JobID|State|Start|End|Elapsed|NNodes|AllocTRES|NodeList\n"
            "300+0|NODE_FAIL|2024-01-01T00:00:00|2024-01-01T02:00:00|02:00:00|2|gres/gpu=16|None assigned\n"
            "300+1|FAILED|2024-01-01T00:00:00|2024-01-01T03:00:00|03:00:00|1|gres/gpu=8|n9\n"
            "300+0.0|FAILED|2024-01-01T00:00:00|2024-01-01T02:00:00|02:00:00|2||n[1-2]\n"
            "300+0|COMPLETED|2024-01-01T03:00:00|2024-01-01T04:00:00|01:00:00|2|gres/gpu=16|n[3-4]\n"
            "300+1|COMPLETED|2024-01-01T03:00:00|2024-01-01T04:00:00|01:00:00|1||n5\n"
            "300+0|COMPLETED|2024-01-01T05:00:00|2024-01-01T06:00:00|01:00:00|2|gres/gpu=16|n[3-4]\n"
            "301.batch|COMPLETED|2024-01-01T05:00:00|2024-01-01T06:00:00|01:00:00|2||n7\n")
    by_columns, by_lines = _both_paths(text)
    _same_log(by_columns, by_lines)
    assert by_columns.dataset.job_id.values.tolist() == ["300", "300", "300"]
    assert by_columns.node_lists[0] == ("n1", "n2", "n9")  # its list from the step, then the component's


def test_a_file_with_bom_crlf_and_latin1_bytes_reads_alike_and_names_the_lines(tmp_path):
    path = tmp_path / "log.txt"
    text = SACCT.replace("health_check: xid 79", "health_check: xid 79 caf\xe9").replace("\n", "\r\n")
    extra = b"107|x|COMPLETED|2024-03-01T00:00:00|2024-03-01T00:30:00|00:30:00|1|gres/gpu=8|n1|\xff\r\n"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("latin-1") + extra)
    by_columns, by_lines = _both_paths(path)
    _same_log(by_columns, by_lines)
    assert by_columns.summary.notes == {"bytes that are not UTF-8, read as U+FFFD (line 7 and 1 more)": 2}
    assert "line 7 and 1 more" in str(by_columns.summary) and by_columns.dataset.cause.values[3].endswith("\ufffd")


@pytest.mark.parametrize("row, reason", BAD_CSV_ROWS)
def test_a_malformed_csv_row_is_left_to_the_line_reader_which_names_it(row, reason):
    text = CSV_HEADER + GOOD * 50 + row + GOOD
    assert logs_module._read_columns(text, "auto", TAX, False) is None
    with pytest.raises(LogError, match=f"^line 52: {reason}"):
        read_log(text)


@pytest.mark.parametrize("row, reason", BAD_SACCT_ROWS)
def test_a_malformed_sacct_row_is_left_to_the_line_reader_which_names_it(row, reason):
    text = SACCT_HEADER + SACCT_GOOD * 50 + row + SACCT_GOOD
    with _blocks_of(256):  # over several blocks
        assert logs_module._read_columns(text, "auto", TAX, False) is None
        with pytest.raises(LogError, match=f"^line 52: {reason}"):
            read_log(text)
        log = read_log(text, errors="skip")
    assert len(log) == 51 and log.summary.errors[0].line == 52


@pytest.mark.parametrize("line", ['1,8,2024-01-01T00:00:00,2024-01-01T01:00:00,COMPLETED,"a ""quoted"" cause"',
                                  '1,8,2024-01-01T00:00:00,2024-01-01T01:00:00,COMPLETED, "spaced"',
                                  "1,8,2024-01-01T00:00:00,2024-01-01T01:00:00,COMPLETED,a\rb",
                                  "1,8,2024-01-01T00:00:00,2024-01-01T01:00:00,COMPLETED,nul\0"])
def test_quoting_and_bytes_the_columns_cannot_vouch_for_go_line_by_line(line):
    text = CSV_HEADER + GOOD + line + "\n"
    assert logs_module._read_columns(text, "auto", TAX, False) is None
    _same_log(read_log(text, errors="skip"), logs_module._read_lines(text, "auto", TAX, "skip"))


def test_a_large_log_shows_a_progress_bar_when_asked(tmp_path, capsys):
    path = tmp_path / "log.csv"
    path.write_text(CSV_HEADER + GOOD * 200)
    with _blocks_of(1024):
        quiet = read_log(path, progress=False)
        assert capsys.readouterr().err == ""
        shown = read_log(path, progress=True)
    assert "reading log" in capsys.readouterr().err and len(shown) == len(quiet) == 200


def test_read_log_reads_by_columns_when_it_can():
    with mock.patch.object(logs_module, "_read_lines", side_effect=AssertionError("read line by line")):
        assert len(read_log(SACCT)) == 6
        assert len(read_log(DATA / "slurm17_p_allocgres.txt")) == 5


def test_iso_times_read_in_bulk_as_one_at_a_time():
    values = ["2024-02-29T23:59:59", "2023-02-29T00:00:00", "2024-01-01 00:00:00", "2024-01-01T00:00:00Z",
              "0001-01-01T00:00:00", "9999-12-31T23:59:59", "0000-01-01T00:00:00", "2024-01-01T24:00:00",
              "2024-1-01T00:00:00", "2024-01-01T00:00:60", " 2024-01-01T00:00:00", "2024-01-01x00:00:00",
              "2024-01-01T00:00:00z", "１２３４-01-01T00:00:00", "1900-03-01T12:34:56", ""]
    seconds, plain = _fast_csv.iso_seconds(np.array(values, dtype=object))
    for value, s, ok in zip(values, seconds, plain):
        if ok:
            assert s == logs_module.parse_time(value, 1, "x"), value
    assert plain.tolist() == [True, False, True, True, True, True, False, False, False, False, False, False, False,
                              False, True, False]


@given(st.lists(st.text(alphabet="0123456789 +-._e", max_size=18)))
def test_whole_numbers_read_in_bulk_as_int_does(texts):
    numbers, ok = _fast_csv.whole_numbers(np.array(texts, dtype=object))
    for text, number, read in zip(texts, numbers, ok):
        assert read == (text.isdigit() and len(text) <= 15)
        if read:
            assert number == int(text)


_RANGE_ITEM = st.builds(lambda a, n, pad, dash: (f"{a:0{pad}d}" + (f"-{a + n:0{pad}d}" if dash else "")),
                        st.integers(0, 120), st.integers(-2, 40), st.integers(0, 4), st.booleans())
_NODE_LIST_PART = st.one_of(
    st.builds(lambda prefix, items: f"{prefix}[{','.join(items)}]", st.sampled_from(["node", "gpu-a", "", "n0", "r1n"]),
              st.lists(_RANGE_ITEM, min_size=1, max_size=5)),
    st.sampled_from(["n1", "n01", "node001", "b", "x y", "a]", "[", "node[1-2]x", "r[1-2]n[3-4]", "n[ 1]", "n[1-]"]))


@given(st.lists(st.lists(_NODE_LIST_PART, min_size=1, max_size=4).map(",".join)
                | st.sampled_from(["None assigned", "", " n[1-3] ", "(null)", "n[1-99999999]",
                                   "n[1-600000],m[1-600000]"]),
                max_size=8))
def test_node_lists_expand_in_bulk_as_one_at_a_time(texts):
    keys = logs_module._NodeKeys()
    for text, got in zip(texts, keys.expand(texts)):
        try:
            expected = expand_nodelist(text)
        except LogError:
            expected = None
        assert (None if got is None else tuple(keys.name(int(k)) for k in got)) == expected, text


@pytest.mark.parametrize("text", ["00:21:29", "1-02:03:04", "12-14:16:39", "100-00:00:00", "1000-00:00:00", "99:59:59",
                                  "00:60:00", "1-24:00:00", "03:04", "00:07.250", "INVALID", "", " 00:00:01",
                                  "1-2:03:04", "168:00:00", "00:00:00", "1-02", "١-02:03:04", "-1-02:03:04"])
def test_durations_read_in_bulk_as_one_at_a_time(text):
    seconds, bad = logs_module._durations(np.array([text], dtype=object))
    try:
        expected = parse_duration_seconds(text, 1)
    except LogError:
        assert bad[0]
        return
    assert not bad[0] and (seconds[0] == expected or (expected is None and np.isnan(seconds[0])))


def test_plain_durations_and_job_ids_are_read_in_bulk():
    with mock.patch.object(logs_module, "_floats", side_effect=AssertionError("read one at a time")):
        seconds, _ = logs_module._durations(np.array(["00:21:29", "1-02:03:04", "12-14:16:39"], dtype=object))
        assert seconds.tolist() == [1289, 93784, 1088199]
    plain, steps = logs_module._plain_job_ids(np.array(["1234", "1234.batch", "12_3.0", "12+1", "1.2.3"], dtype=object))
    assert plain.tolist() == [True, True, True, False, False] and steps.tolist()[:3] == [False, True, True]


def test_a_file_whose_lines_end_in_a_carriage_return_reads_as_a_text_file_does(tmp_path):
    """A file reads as Python's text files do (a CR alone ends a line); text given as a string
    ends its lines only at line feeds."""
    path = tmp_path / "log.txt"
    path.write_bytes(b"JobID|State|Start|End|Elapsed\r1|COMPLETED|2024-01-01T00:00:00|2024-01-01T01:00:00|01:00:00\r\r"
                     b"2|FAILED|2024-01-01T00:00:00|2024-01-01T02:00:00|02:00:00\r\n")
    with _blocks_of(40):
        by_columns, by_lines = _both_paths(path)
    _same_log(by_columns, by_lines)
    assert by_columns.dataset.line.values.tolist() == [2, 4]


def test_a_row_with_a_hash_after_a_leading_space_is_a_row_not_a_comment():
    text = ('job_id,start,end,state,n_gpus,cause\n 100 ,2024-01-01T00:00:00,2024-01-01T01:00:00,COMPLETED,8,"job #5, '
            're"\n#100,x\n  # 101,y\n')
    by_columns, by_lines = _both_paths(text)
    _same_log(by_columns, by_lines)
    assert by_columns.summary.rows_read == 1 and by_columns.dataset.cause.values.tolist() == ["job #5, re"]



@pytest.mark.parametrize("shift, fine", [(0, True), (-1800, True), (-3600, True), (-3601, False), (-7200, False)])
def test_end_minus_start_may_fall_short_of_elapsed_by_the_dst_slack_alike(shift, fine):
    """Up to an hour short (a DST change) is noted; more is malformed, on both paths."""
    end = 1_704_067_200 + 3 * 3600 + shift
    text = SACCT_HEADER + SACCT_GOOD * 3 + ("2|FAILED|2024-01-01T00:00:00|" + _stamp(end, 0)
                                          + "|03:00:00|2|gres/gpu=16\n") + SACCT_GOOD
    by_columns, by_lines = _both_paths(text)
    assert (by_columns is not None) == fine and isinstance(by_lines, LogError) != fine
    if fine:
        _same_log(by_columns, by_lines)
