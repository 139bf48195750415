"""Job-log readers: sacct and CSV, folding, grouping, and every malformed row named by its line."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from relmodel.logs import LogError, expand_nodelist, read_log

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
