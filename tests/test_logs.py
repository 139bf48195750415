"""Job-log readers: sacct and CSV, folding, grouping, and every malformed row named by its line."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from relmodel.logs import LogError, expand_nodelist, parse_duration_seconds, parse_elapsed, read_log

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
