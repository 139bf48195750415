"""Extreme inputs to relmodel.pipeline: the right number or a named error, never a crash.

Inputs that once crashed the interpreter (a segmentation fault in the list
scheduler or the trace replay) run in a child process, so that a crash fails
the test instead of killing pytest: the child prints one JSON line per probe
and the parent checks each.
"""

import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import relmodel.pipeline as pl
from relmodel.pipeline import _schedule_kernel as kernel
from relmodel.pipeline._config import CLOCK_RESOLUTION, clock_bound
from relmodel.pipeline._runs import LOSS_STEP

# Each probe: name -> code whose last expression is the result. The child reports
# {"value": float} or {"error": class name, "parameter": the PipelineError's parameter}.
CRASH_PROBES = {
    # A B or W too small to move the clock (s + x == s) left the list scheduler with no
    # candidate; it then indexed its chains with -1 and wrote times through garbage indices.
    "tiny bwd_input": "pl.iteration_time(4, 4, 8, 1.0, 1e-300, 1.0, strategy='recycle', failed={0: 1})",
    "tiny bwd_weight": "pl.iteration_time(4, 4, 8, 1.0, 1.0, 1e-300, strategy='recycle', failed={0: 1})",
    "subnormal bwd_weight": "pl.iteration_time(4, 4, 8, 1.0, 1.0, 5e-324, strategy='recycle', failed={0: 1})",
    "huge bwd_input": "pl.iteration_time(4, 4, 8, 1.0, 1e20, 1.0, strategy='recycle', failed={0: 1})",
    "huge bwd_input, bamboo": "pl.iteration_time(4, 4, 8, 1.0, 1e20, 1.0, strategy='bamboo', failed={0: 1})",
    "tiny fwd, bamboo": "pl.iteration_time(4, 4, 8, 1e-300, 1.0, 1.0, strategy='bamboo', failed={})",
    "tiny fwd, huge bwd_input": "pl.iteration_time(4, 4, 8, 1e-300, 1e300, 1.0, strategy='recycle', failed={0: 1})",
    # The same kernel called directly (no validation in front): one worker, a 1.0 task
    # then a 1e-300 one, which ends when it starts in float64.
    "kernel: vanishing task": textwrap.dedent("""\
        start, end, sequence = np.empty(2), np.empty(2), np.empty(2, dtype=np.int64)
        placed = kernel.list_schedule(np.array([1.0, 1e-300]), np.zeros(2), np.zeros(2, dtype=np.int64),
                                      np.zeros(3, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0),
                                      np.array([0, 2]), np.array([0, 1]), np.zeros(2), 1, start, end, sequence)
        placed + start[1] + 10 * end[1]"""),
    # A node number out of range (negative here) made the trace replay write out of bounds.
    "trace: negative node": textwrap.dedent("""\
        trace = pl.Trace(name='x', time=np.array([0.0, 1.0]), add=np.array([True, False]), node=np.array([-3, 0]),
                         node_names=('a',))
        pl.replay_traces(pl.PipelineConfig(2, 2, 2), [trace], n_runs=2)"""),
    # Chains handed to the schedulers index the kernels' arrays unchecked: a task without a
    # worker in a chain made the list scheduler index its per-worker tables with -1.
    "greedy: worker-less task in a chain": textwrap.dedent("""\
        from relmodel.pipeline._graph import build_graph, worker_chains
        from relmodel.pipeline._schedule import greedy
        graph = build_graph(pl.PipelineConfig(2, 1, 2), 1)
        chains = worker_chains(graph, '1f1b')
        chains[0] = np.append(chains[0], graph.step_index[0, 0])  # an optimizer step runs on no worker
        greedy(graph, chains, np.zeros(graph.size))"""),
    "sweep: chain index beyond the tasks": textwrap.dedent("""\
        from relmodel.pipeline._graph import build_graph, worker_chains
        from relmodel.pipeline._schedule import sweep
        graph = build_graph(pl.PipelineConfig(2, 1, 2), 1)
        chains = worker_chains(graph, '1f1b')
        chains[1] = np.append(chains[1], graph.size + 1000)
        sweep(graph, chains)"""),
    "cli: tiny bwd_input": textwrap.dedent("""\
        from click.testing import CliRunner
        from relmodel._cli import main
        result = CliRunner().invoke(main, ['pipeline', '--stages', '4', '--replicas', '4', '--microbatches', '8',
                                           '--failures', '0..2', '--bwd-input', '1e-300'])
        assert result.exit_code == 2 and '--bwd-input:' in result.output, result.output
        result.exit_code"""),
}
CHILD = """\
import json, math, sys
import numpy as np
import relmodel.pipeline as pl
from relmodel.pipeline import _schedule_kernel as kernel
for name, code in json.loads(sys.argv[1]).items():
    *body, last = code.strip().splitlines()
    scope = dict(np=np, pl=pl, kernel=kernel, math=math)
    try:
        exec("\\n".join(body), scope)
        value = eval(last, scope)
        out = {"value": float(value) if isinstance(value, (int, float)) else repr(type(value))}
    except Exception as err:
        out = {"error": type(err).__name__, "parameter": getattr(err, "parameter", None), "message": str(err)}
    print(json.dumps({"probe": name, **out}), flush=True)
"""


@pytest.fixture(scope="module")
def crash_probes(tmp_path_factory):
    """Every crash probe's outcome, from one child process (rc and the probes it reported)."""
    # Outside the checkout: the child imports the installed relmodel, as pytest does.
    child = subprocess.run([sys.executable, "-c", CHILD, json.dumps(CRASH_PROBES)], capture_output=True, text=True,
                           timeout=600, cwd=tmp_path_factory.mktemp("probes"))
    reports = {r["probe"]: r for r in map(json.loads, child.stdout.splitlines())}
    return child, reports


@pytest.mark.parametrize("probe, parameter", [
    ("tiny bwd_input", "bwd_input"), ("tiny bwd_weight", "bwd_weight"), ("subnormal bwd_weight", "bwd_weight"),
    ("huge bwd_input", "fwd"), ("huge bwd_input, bamboo", "fwd"), ("tiny fwd, bamboo", "fwd"),
    ("tiny fwd, huge bwd_input", "bwd_input"),
])
def test_times_float64_cannot_schedule_are_named_not_crashed(crash_probes, probe, parameter):
    child, reports = crash_probes
    assert probe in reports, f"the child died before {probe!r} (exit {child.returncode}): {child.stderr[-2000:]}"
    assert reports[probe].get("error") == "PipelineError" and reports[probe]["parameter"] == parameter, reports[probe]


def test_the_list_scheduler_places_a_task_too_short_to_move_the_clock(crash_probes):
    child, reports = crash_probes
    probe = "kernel: vanishing task"
    assert probe in reports, f"the child died at {probe!r} (exit {child.returncode}): {child.stderr[-2000:]}"
    # Both tasks placed, the second at 1.0 ending at 1.0 (1 + 1e-300 rounds to 1): 2 + 1 + 10.
    assert reports[probe] == {"probe": probe, "value": 13.0}


@pytest.mark.parametrize("probe, message", [("greedy: worker-less task in a chain", "one worker"),
                                            ("sweep: chain index beyond the tasks", "not a task")])
def test_the_schedulers_refuse_chains_that_would_index_out_of_range(crash_probes, probe, message):
    child, reports = crash_probes
    assert probe in reports, f"the child died at {probe!r} (exit {child.returncode}): {child.stderr[-2000:]}"
    assert reports[probe]["error"] == "ValueError" and message in reports[probe]["message"], reports[probe]


def test_a_trace_with_a_node_out_of_range_is_refused(crash_probes):
    child, reports = crash_probes
    probe = "trace: negative node"
    assert probe in reports, f"the child died at {probe!r} (exit {child.returncode}): {child.stderr[-2000:]}"
    assert reports[probe]["error"] == "NodeTraceError" and "node numbers" in reports[probe]["message"]


def test_the_command_names_the_flag_instead_of_crashing(crash_probes):
    child, reports = crash_probes
    assert reports.get("cli: tiny bwd_input", {}).get("value") == 2.0, (child.returncode, child.stderr[-2000:])
    assert child.returncode == 0, child.stderr[-2000:]


# -- named errors where a number came out wrong or an unnamed exception escaped ------------------


@pytest.mark.parametrize("kwargs, parameter", [
    (dict(fwd=1e308, bwd_input=1e308, bwd_weight=1e308), "fwd"),  # NaN period (inf - inf)
    (dict(p2p_delay=1e308), "p2p_delay"),  # inf: "cannot run"
    (dict(optimizer_time=1e308), "optimizer_time"),
    (dict(fwd=10**400), "fwd"),  # OverflowError
    (dict(stages=2**70), "stages"),  # OverflowError building a time per stage
    (dict(stages=10**5000), "stages"),  # too long to print whole
    (dict(microbatches=1e300), "microbatches"),  # the task count names the largest of its factors
    (dict(bamboo_slowdown=10**400, strategy="bamboo"), "bamboo_slowdown"),
    (dict(bamboo_slowdown=1e308, strategy="bamboo"), "bamboo_slowdown"),  # inf: "cannot run"
    (dict(bamboo_overhead=1e308, strategy="bamboo"), "bamboo_overhead"),
    (dict(bamboo_slowdown=True, strategy="bamboo"), "bamboo_slowdown"),
    (dict(reroute_delay=1e-300, p2p_delay=1.0), "reroute_delay"),
])
def test_extreme_parameters_are_named(kwargs, parameter):
    args = dict(stages=4, replicas=4, microbatches=8, strategy="recycle", failed={0: 1}) | kwargs
    with pytest.raises(pl.PipelineError) as info:
        pl.iteration_time(**args)
    assert info.value.parameter == parameter


def test_times_near_the_limits_give_the_exact_schedule():
    """Uniform times of 2**-1000 or 2**900 keep every ratio at 1: the schedule is the
    one of unit times, scaled exactly (33 = m + p - 1 with L = 11 re-routed)."""
    for scale in (2.0 ** -1000, 2.0 ** 900):
        assert pl.iteration_time(4, 4, 8, scale, scale, scale, failed={0: 1}) == 33 * 3 * scale / 3


def test_the_resolution_limit_is_where_the_docs_say():
    cfg = pl.PipelineConfig(4, 4, 8)
    smallest = CLOCK_RESOLUTION * clock_bound(cfg.replace(bwd_weight=0.0))
    assert pl.PipelineConfig(4, 4, 8, bwd_weight=smallest * 1.01).bwd_weight[0] == smallest * 1.01
    with pytest.raises(pl.PipelineError, match="bwd_weight: .* too small"):
        pl.PipelineConfig(4, 4, 8, bwd_weight=smallest * 0.5)
    assert smallest < 1e-10  # ratios up to 1e10 pass at this size


@pytest.mark.parametrize("call, parameter", [
    (lambda: pl.fault_free(pl.PipelineConfig(4, 2, 4), n_iterations=3, n_measured=-2), "n_measured"),  # not a period of -10.5
    (lambda: pl.fault_free(pl.PipelineConfig(4, 2, 4), n_iterations=0), "n_iterations"),  # IndexError
    (lambda: pl.bamboo_schedule(pl.PipelineConfig(4, 2, 4), n_iterations=10**9), "stages"),  # too many tasks
    (lambda: pl.failure_set("stacked", -1, 2, 2), "n_failures"),  # not a mask of one failure
    (lambda: pl.failure_set("stacked", 1, 2, 2, stage=7), "stage"),  # IndexError
    (lambda: pl.failure_set("everywhere", 1, 2, 2), "placement"),  # not read as "stacked"
    (lambda: pl.RunModel(failure_rate=10**400), "failure_rate"),  # OverflowError
    (lambda: pl.RunModel(duration=10**400), "duration"),  # OverflowError
    (lambda: pl.simulate_runs(pl.PipelineConfig(2, 2, 2), pl.RunModel(duration="1d"), n_runs=2,
                              options=pl.StrategyOptions(spares=10**21)), "spares"),  # a Numba typing error
    (lambda: pl.simulate_runs(pl.PipelineConfig(2, 2, 2), pl.RunModel(duration="1d", time_unit=5e-324),
                              n_runs=2), "time_unit"),  # NaN fractions
])
def test_other_public_functions_name_the_parameter(call, parameter):
    with pytest.raises(pl.PipelineError) as info:
        call()
    assert info.value.parameter == parameter


@pytest.mark.parametrize("fields, message", [
    (dict(time=[0.0, math.nan], add=[True, False], node=[0, 0]), "times"),  # replayed as an overflow
    (dict(time=[1.0, 0.0], add=[True, True], node=[0, 0]), "times"),  # NaN fractions
    (dict(time=[0.0, 1.0], add=[True], node=[0, 0]), "one length"),
    (dict(time=[0.0, 1.0], add=[True, False], node=[5, 0]), "node numbers"),
    (dict(time=[0.0, 1.0], add=[True, False], node=[0.5, 0]), "node numbers"),
    (dict(time=["start", 1.0], add=[True, False], node=[0, 0]), "numbers"),
])
def test_malformed_traces_are_refused(fields, message):
    with pytest.raises(pl.NodeTraceError, match=message):
        pl.Trace(name="x", node_names=("a",), **fields)


def test_a_trace_holds_read_only_arrays():
    trace = pl.Trace(name="x", time=[0.0, 1.0], add=[1, 0], node=[0, 0], node_names=("a",))
    assert trace.add.dtype == bool and trace.node.dtype == np.int64
    with pytest.raises(ValueError):
        trace.node[0] = -3  # the replay kernel indexes with these


def test_step_counts_beyond_2_to_63_are_not_cast_to_garbage():
    """A tiny time unit makes steps per hour huge; flooring the step count (the step in
    flight lost at a failure) went through int64 and came back as garbage."""
    rate = 1e100  # steps per hour
    ev_time = np.array([[1.0]])
    progress = np.empty(1)
    kernel.integrate_runs(ev_time, np.array([1]), np.array([0]), 2.0, np.array([rate, rate]),
                          np.array([0, LOSS_STEP]), np.zeros(2), np.zeros(2), math.inf, progress)
    assert progress[0] == pytest.approx(2 * rate, rel=1e-15)
