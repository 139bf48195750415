"""The synthetic log generator: deterministic, both formats, what it plants is in the log."""

import collections

import numpy as np
import pytest

from relmodel._job_logs import read_log
from relmodel._synthetic_log import synthetic_log


def test_same_seed_same_log_and_different_seed_differs():
    a = synthetic_log(2000, failure_rate=6.5e-3, seed=5)
    b = synthetic_log(2000, failure_rate=6.5e-3, seed=5)
    c = synthetic_log(2000, failure_rate=6.5e-3, seed=6)
    assert a.to_csv() == b.to_csv() and a.to_sacct() == b.to_sacct()
    assert a.to_csv() != c.to_csv()


def test_the_log_has_every_kind_of_row():
    log = synthetic_log(20000, failure_rate=6.5e-3, seed=0)
    states = collections.Counter(log.rows["state"])
    assert set(states) == {"COMPLETED", "FAILED", "NODE_FAIL", "PREEMPTED", "REQUEUED", "TIMEOUT", "CANCELLED",
                           "OUT_OF_MEMORY"}
    ids = collections.Counter(log.rows["job_id"])
    assert max(ids.values()) > 1  # requeue chains
    assert any("_" in j for j in ids)  # array tasks
    assert (log.rows["start"] < 0).any()  # cancelled while pending
    sizes = np.bincount(np.log2(log.rows["n_gpus"]).astype(int))
    assert sizes[0] > sizes[-1] * 10  # many small, few large
    assert log.truth["infrastructure_failures"] > 100


def test_both_formats_read_back_to_the_same_jobs(tmp_path):
    log = synthetic_log(3000, failure_rate=6.5e-3, seed=2, lemon_nodes=2)
    csv_log = read_log(log.to_csv(tmp_path / "a.csv"))
    sacct_log = read_log(log.to_sacct(tmp_path / "a.sacct"))
    assert (tmp_path / "a.csv").read_text() == log.to_csv()
    a, b = csv_log.dataset, sacct_log.dataset
    assert len(csv_log) == len(sacct_log) == int((log.rows["start"] >= 0).sum())
    for name in ("job_id", "runtime_h", "state", "infrastructure", "n_gpus"):
        np.testing.assert_array_equal(a[name].values, b[name].values)
    assert csv_log.node_lists == sacct_log.node_lists
    assert sacct_log.summary.rows_folded > len(sacct_log)  # the .batch/.extern/.0 steps were folded
    assert int(a.infrastructure.sum()) == log.truth["infrastructure_failures"]
    i = int(np.argmax(log.rows["n_nodes"] * (log.rows["start"] >= 0)))
    assert list(csv_log.node_lists[int(np.flatnonzero(a.line.values == i + 2)[0])]) == log.node_names(i)


def test_format_argument_writes_text(tmp_path):
    path = tmp_path / "x.sacct"
    text = synthetic_log(200, failure_rate=0.01, seed=1, format="sacct", path=path)
    assert text.startswith("JobID|") and path.read_text() == text
    with pytest.raises(ValueError, match="format"):
        synthetic_log(10, failure_rate=0.01, seed=1, format="xml")
    with pytest.raises(ValueError, match="failure_rate"):
        synthetic_log(10, failure_rate=-1, seed=1)
