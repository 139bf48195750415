"""Every result object reads well in a notebook: a one-line repr of a few figures
(not a dataclass dump of its arrays and event log) and an HTML table."""

import html
import re

import pytest

import relmodel as rm
import relmodel.elastic as el
from relmodel._synthetic_log import synthetic_log


def _plan():
    return rm.plan(n_gpus=16384, failure_rate=6.5e-3, checkpoint_cost="5min", restart_cost="10min", work="14d",
                   target_ettr=0.8, n_jobs=500)


def _fit():
    return rm.fit(synthetic_log(500, failure_rate=6.5e-3, seed=5).to_csv())


def _checkpoint_plan():
    fast = rm.CheckpointLevel(interval="10min", cost="5s", restart="3min", persist="30s", survives=0.85)
    return rm.plan_checkpoints(rm.Scenario(n_gpus=16384, failure_rate=3.8e-3, work="54d", checkpoint_interval="1h",
                                           checkpoint_cost="30s", checkpoint_persist="5min", restart_cost="10min",
                                           fast_checkpoints=[fast]), n_jobs=500)


def _allocation():
    jobs = el.synthetic_workload(16, "8h", seed=3).jobs[:4]
    return el.allocate(jobs, 32)


def _policy_run():
    _, runs = el.simulate_cluster(el.synthetic_workload(16, "8h", seed=3), ["elastic"], return_runs=True,
                                  failure_rate=1.0, seed=3)
    return runs[0]


# One entry per result class a user gets back: every property below runs over all of them.
RESULTS = {"Plan": _plan, "FitResult": _fit, "Allocation": _allocation, "PolicyRun": _policy_run,
           "CheckpointPlan": _checkpoint_plan}


@pytest.fixture(scope="module", params=sorted(RESULTS))
def result(request):
    return request.param, RESULTS[request.param]()


def test_repr_is_one_short_line(result):
    name, obj = result
    text = repr(obj)
    assert text.startswith(f"{name}(") and "\n" not in text and len(text) < 250, text
    assert "array(" not in text and "np.float" not in text


def test_html_is_a_captioned_table_of_escaped_cells(result):
    name, obj = result
    table = obj._repr_html_()
    assert table.startswith(f"<table><caption>{name}") and table.endswith("</table>")
    cells = re.findall(r"<t[dh]>(.*?)</t[dh]>", table)
    assert cells and all("<" not in html.unescape(c) or "&lt;" in c for c in cells)
