"""`relmodel.pipeline`: the public contract, strategies, errors, the command and the example."""

import json
import math
from pathlib import Path

import click
import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner
from hypothesis import assume, given
from hypothesis import strategies as st

import relmodel.pipeline as pl
from relmodel._cli_shared import OneLineErrors
from relmodel._cli import main
from relmodel.pipeline._cli import parse_failures, pipeline

STAGE_BOUND = ("recycle", "drop-pipeline")  # workers stay on their stage


def test_iteration_time_contract():
    t = pl.iteration_time(stages=4, replicas=4, microbatches=8, fwd=1.0, bwd_input=1.0, bwd_weight=1.0,
                          strategy="recycle", failed={0: 1})
    assert t == 33.0  # L = ceil(32 / 3) = 11 = m + p - 1: the fault-free 1F1B period, kept exactly
    assert pl.iteration_time(4, 4, 8, strategy="recycle", failed={}) == 33.0
    assert pl.iteration_time(4, 4, 8, strategy="drop-pipeline", failed={0: 1}) == (11 + 3) * 3.0
    for strategy in pl.RECOVERY_STRATEGIES:
        assert pl.iteration_time(4, 4, 8, strategy=strategy, failed={0: 1}) >= 33.0


@pytest.mark.parametrize("kwargs, parameter", [
    (dict(microbatches=0), "microbatches"), (dict(stages=0), "stages"), (dict(replicas=1.5), "replicas"),
    (dict(fwd=-1.0), "fwd"), (dict(bwd_input=math.nan), "bwd_input"), (dict(bwd_weight=[1.0, 1.0]), "bwd_weight"),
    (dict(fwd=0.0, bwd_input=0.0, bwd_weight=0.0), "fwd"), (dict(strategy="magic"), "strategy"),
    (dict(failed={0: 5}), "failed"), (dict(failed={7: 1}), "failed"), (dict(failed={0: -1}), "failed"),
    (dict(failed=[(9, 0)]), "failed"), (dict(failed=[(0, 0), (0, 0)]), "failed"), (dict(failed="0"), "failed"),
    (dict(order="gpipe"), "order"), (dict(order="zb-h1"), "backward"), (dict(p2p_delay=-1.0), "p2p_delay"),
    (dict(spares=-1), "spares"), (dict(bamboo_slowdown=0.5), "bamboo_slowdown"), (dict(colour="red"), "colour"),
])
def test_invalid_configurations_name_the_parameter(kwargs, parameter):
    args = dict(stages=4, replicas=4, microbatches=8, strategy="recycle", failed={0: 1}) | kwargs
    with pytest.raises(ValueError) as info:
        pl.iteration_time(**args)
    assert str(info.value).startswith(f"{parameter}:") and info.value.parameter == parameter


def test_failure_messages_say_what_is_wrong():
    with pytest.raises(ValueError, match="stage 0: 5 failed workers but only 4 replicas"):
        pl.iteration_time(4, 4, 8, failed={0: 5})
    with pytest.raises(ValueError, match=r"unknown stage 7 \(stages are 0..3\)"):
        pl.iteration_time(4, 4, 8, failed={7: 1})
    with pytest.raises(ValueError, match="unknown strategy 'magic'; use one of recycle"):
        pl.iteration_time(4, 4, 8, strategy="magic")


def test_losing_every_replica_of_a_stage():
    """Zero throughput for the strategies that cannot survive it; the others run."""
    cfg = pl.PipelineConfig(4, 3, 6)
    results = {s: pl.evaluate(cfg, s, {1: 3}) for s in pl.RECOVERY_STRATEGIES}
    for s in ("recycle", "drop-pipeline", "oobleck"):
        assert results[s].period == math.inf and results[s].throughput == 0 and not results[s].survives
    assert results["restart"].fraction_of_ideal == 1.0
    assert results["bamboo"].survives  # stage 0 holds a copy of stage 1 in every pipeline
    assert not results["spare"].survives  # 3 failures, 2 spares
    assert pl.evaluate(cfg, "spare", {1: 3}, pl.StrategyOptions(spares=3)).fraction_of_ideal == 1.0
    assert pl.iteration_time(4, 3, 6, strategy="recycle", failed={1: 3}) == math.inf


def cases():
    def build(p, d, m, f, b, w, delay):
        return pl.PipelineConfig(p, d, m, fwd=f, bwd_input=b, bwd_weight=w, p2p_delay=delay)
    quarter = st.integers(1, 8).map(lambda k: k / 4)
    return st.integers(1, 5).flatmap(lambda p: st.builds(
        build, st.just(p), st.integers(1, 4), st.integers(1, 8),
        *(st.lists(quarter, min_size=p, max_size=p) for _ in range(3)), st.sampled_from([0.0, 0.25])))


@given(cfg=cases(), data=st.data())
def test_no_strategy_beats_the_work_bound(cfg, data):
    d, p = cfg.replicas, cfg.stages
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=d * p, max_size=d * p))).reshape(d, p)
    assume(not mask.all(axis=0).any())
    t = cfg.stage_time
    m, n_alive = cfg.microbatches, d * p - mask.sum()
    for strategy in pl.RECOVERY_STRATEGIES:
        r = pl.evaluate(cfg, strategy, mask)
        assert r.work_bound == pl.work_bound(cfg, mask)
        if not r.survives:
            continue
        assert r.period >= r.load_bound * (1 - 1e-12)  # the busiest worker of what it runs
        if strategy in STAGE_BOUND:
            assert r.period >= r.work_bound * (1 - 1e-12)
        elif strategy in ("oobleck", "bamboo"):  # they move stages between nodes: the average load bounds them
            assert r.period >= m * d * t.sum() / n_alive * (1 - 1e-12)
        else:  # replaced workers: the fault-free bound
            assert r.period >= m * t.max()
        if strategy == "recycle":  # its plans run its own kind and can beat the configured schedule (docs: "Pipelines under failures")
            assert 0 < r.fraction_of_ideal <= r.ideal_period / r.work_bound * (1 + 1e-12)
        else:
            assert 0 < r.fraction_of_ideal <= 1.0 + 1e-12


@given(cfg=cases(), n=st.integers(0, 6))
def test_strategies_order_as_they_should(cfg, n):
    d, p = cfg.replicas, cfg.stages
    assume(n <= d * p)
    mask = pl.spread_failures(n, d, p)
    r = {s: pl.evaluate(cfg, s, mask) for s in pl.RECOVERY_STRATEGIES}
    if r["drop-pipeline"].survives:
        assert r["recycle"].period <= r["drop-pipeline"].period
        assert r["oobleck"].period <= r["drop-pipeline"].period  # re-forms at least as many whole pipelines
    assert r["restart"].period == r["recycle"].ideal_period
    if n == 0:
        for s in ("recycle", "spare", "drop-pipeline", "oobleck"):
            assert r[s].period == r[s].ideal_period
        assert r["bamboo"].period >= r["bamboo"].ideal_period  # redundancy is never free


def test_bamboo_restarts_without_a_pipeline_with_two_neighbours_down():
    cfg = pl.PipelineConfig(4, 4, 8)
    takeover = pl.evaluate(cfg, "bamboo", [(0, 1)])
    neighbours = pl.evaluate(cfg, "bamboo", [(0, 1), (0, 2)])
    apart = pl.evaluate(cfg, "bamboo", [(0, 1), (1, 2)])
    assert "takeover" in takeover.detail and "restarted" in neighbours.detail
    assert takeover.period == pytest.approx(1.5 * pl.evaluate(cfg, "bamboo").period)
    assert apart.period == takeover.period
    wrap = pl.evaluate(cfg, "bamboo", [(0, 3), (0, 0)])  # the last stage backs up the first
    assert "restarted" in wrap.detail


def test_oobleck_re_forms_pipelines_from_the_surviving_nodes():
    cfg = pl.PipelineConfig(4, 4, 8)
    two_replicas = pl.failure_mask([(0, 0), (1, 1)], 4, 4)
    assert "2 replicas" in pl.evaluate(cfg, "drop-pipeline", two_replicas).detail
    r = pl.evaluate(cfg, "oobleck", two_replicas)  # 14 nodes: three 4-stage pipelines
    assert r.detail.count("4-stage") == 3
    shallow = pl.evaluate(cfg, "oobleck", two_replicas, pl.StrategyOptions(oobleck_min_stages=2))
    assert shallow.period <= r.period  # shorter templates use the leftover nodes
    assert pl._strategies.group_stages(np.array([[1.0, 2.0, 3.0, 4.0]] * 3), 2).tolist() == [[6.0, 4.0]] * 3


def test_oobleck_templates_shorter_than_the_pipeline_carry_their_own_memory():
    """Under a budget that lets a 3-stage template fit, Oobleck raised 'memory: needs one
    entry per stage (3), got 4' (each template kept the 4-stage memory)."""
    cfg = pl.PipelineConfig(4, 4, 8, memory=pl.StageMemory(24, (10.0,) * 4, 1.0))
    r = pl.evaluate(cfg, "oobleck", {0: 1}, pl.StrategyOptions(oobleck_min_stages=2))
    assert r.detail == "4-stage x 9 + 4-stage x 9 + 4-stage x 9 + 3-stage x 5" and r.period == 36.0
    grouped = pl._strategies.group_memory(cfg, 3)
    assert sorted(grouped.static) == [10.0, 10.0, 20.0] and sorted(grouped.activation) == [1.0, 1.0, 2.0]
    assert grouped.budget == 24


def test_recycle_adapts_no_job_that_cannot_run_fault_free():
    """Budget 3, no static bytes, one unit of activation a micro-batch: 1F1B holds 4 at
    stage 0, so nothing runs fault-free; ReCycle gave 42 with one failure (fraction 0.786
    of an ideal that cannot run), 43 with two: throughput rose from zero when a worker failed."""
    cfg = pl.PipelineConfig(4, 4, 8, memory=pl.StageMemory(3, (0.0,) * 4, 1.0))
    for failed in ({}, {0: 1}, {0: 1, 1: 1}):
        r = pl.evaluate(cfg, "recycle", failed)
        assert r.period == math.inf and r.memory_limited and "fault-free schedule does not fit" in r.detail
    assert pl._runs.recycle_period(cfg, pl.StrategyOptions(), (1, 0, 0, 0)) == math.inf  # the runs' path too
    fits = cfg.replace(memory=pl.StageMemory(4, (0.0,) * 4, 1.0))
    assert pl.evaluate(fits, "recycle", {0: 1}).period < math.inf


@given(stages=st.integers(2, 4), replicas=st.integers(2, 3), microbatches=st.integers(1, 6),
       activation=st.lists(st.floats(0.1, 3.0), min_size=4, max_size=4), room=st.floats(0.5, 3.0),
       strategy=st.sampled_from(pl.RECOVERY_STRATEGIES), data=st.data())
def test_no_strategy_runs_after_a_failure_where_nothing_runs_fault_free(stages, replicas, microbatches, activation,
                                                                        room, strategy, data):
    """Budgets from below one micro-batch a stage to roomy: wherever a strategy cannot run
    fault-free (period inf), it cannot run with workers down either."""
    activation = tuple(activation[:stages])
    cfg = pl.PipelineConfig(stages, replicas, microbatches,
                            memory=pl.StageMemory(room * max(activation) * min(stages, microbatches), (0.0,) * stages,
                                                  activation))
    options = pl.StrategyOptions(method="heuristic")
    failed = data.draw(st.lists(st.tuples(st.integers(0, replicas - 1), st.integers(0, stages - 1)), min_size=1,
                                max_size=2, unique=True))
    if pl.evaluate(cfg, strategy, None, options).period == math.inf:
        assert pl.evaluate(cfg, strategy, pl.failure_mask(failed, replicas, stages), options).period == math.inf


@given(stages=st.integers(2, 6), replicas=st.integers(1, 5), microbatches=st.integers(1, 12),
       strategy=st.sampled_from(["restart", "spare", "drop-pipeline", "oobleck"]), budgeted=st.booleans(),
       activation=st.lists(st.floats(0.1, 3.0), min_size=6, max_size=6), room=st.floats(0.5, 6.0),
       spares=st.integers(0, 3), data=st.data())
def test_no_baseline_gains_throughput_when_another_worker_fails(stages, replicas, microbatches, strategy, budgeted,
                                                               activation, room, spares, data):
    """A failure set and one that adds workers to it, with or without a budget: the larger
    set's throughput is never higher. ReCycle is not held to this: its plans run its own
    kind, whose free order can beat the configured schedule (fractions above 1), and a
    worker down changes the re-routing, so its heuristic can land nearer the bound (3 x 5
    x 5 under a budget: 30 with four workers down, 29 with five; auto finds 29 for both).
    Nor is Bamboo: by its model, dropping a pipeline can beat a takeover at 1.5x, so a
    second failure in a stage can raise it."""
    activation = tuple(activation[:stages])
    memory = pl.StageMemory(room * max(activation) * min(stages, microbatches), (0.0,) * stages, activation)
    cfg = pl.PipelineConfig(stages, replicas, microbatches, memory=memory if budgeted else None)
    options = pl.StrategyOptions(spares=spares)
    failed = data.draw(st.lists(st.tuples(st.integers(0, replicas - 1), st.integers(0, stages - 1)), min_size=1,
                                max_size=6, unique=True))
    fewer = failed[:data.draw(st.integers(0, len(failed) - 1))]
    before = pl.evaluate(cfg, strategy, pl.failure_mask(fewer, replicas, stages) if fewer else None, options)
    after = pl.evaluate(cfg, strategy, pl.failure_mask(failed, replicas, stages), options)
    assert after.period >= before.period, (before.detail, after.detail)


@given(stages=st.integers(2, 5), replicas=st.integers(1, 3), microbatches=st.integers(1, 8),
       static=st.lists(st.floats(0.0, 10.0), min_size=5, max_size=5),
       activation=st.lists(st.floats(0.1, 3.0), min_size=5, max_size=5), slack=st.floats(0.0, 100.0),
       min_stages=st.integers(1, 5), failed_stage=st.integers(0, 4))
def test_oobleck_plans_within_any_budget_and_a_roomy_budget_changes_nothing(stages, replicas, microbatches, static,
                                                                          activation, slack, min_stages,
                                                                          failed_stage):
    """Over budgets from where one micro-batch per stage just fits to unlimited, and any
    smallest template: a plan or 'cannot run' (inf), never an error; with memory to spare
    for everything the plan is the one without a budget."""
    static, activation = tuple(static[:stages]), tuple(activation[:stages])
    budget = sum(static) + sum(activation) * stages * microbatches * replicas + slack  # any grouping fits
    base = pl.PipelineConfig(stages, replicas, microbatches)
    failed = {failed_stage % stages: 1}
    options = pl.StrategyOptions(oobleck_min_stages=min_stages)
    tight = max(s + a for s, a in zip(static, activation)) + slack / 10
    for cap in (tight, budget):
        cfg = base.replace(memory=pl.StageMemory(cap, static, activation))
        r = pl.evaluate(cfg, "oobleck", failed, options)
        assert r.period > 0
    roomy = pl.evaluate(base.replace(memory=pl.StageMemory(budget, static, activation)), "oobleck", failed, options)
    free = pl.evaluate(base, "oobleck", failed, options)
    assert roomy.period == free.period and roomy.detail == free.detail


@given(stages=st.integers(2, 5), replicas=st.integers(1, 4), microbatches=st.integers(1, 8),
       times=st.lists(st.sampled_from([0.0, 0.25, 1.0, 1.5, 3.0]), min_size=15, max_size=15),
       budget=st.one_of(st.none(), st.floats(1.0, 40.0)), data=st.data())
def test_oobleck_deals_micro_batches_as_a_scan_of_every_pipeline_would(stages, replicas, microbatches, times, budget,
                                                                       data):
    """Oobleck's dealing (a heap) against the plain rule: each micro-batch to the pipeline whose period
    grows least, the first on a tie; templates of two sizes, with or without a memory budget."""
    from relmodel.pipeline import _strategies as strategies

    fwd, bwd, wgt = times[:stages], times[5:5 + stages], times[10:10 + stages]
    assume(all(f + b + w > 0 for f, b, w in zip(fwd, bwd, wgt)))
    memory = None if budget is None else pl.StageMemory(budget, (1.0,) * stages, (0.5,) * stages)
    cfg = pl.PipelineConfig(stages, replicas, microbatches, fwd=fwd, bwd_input=bwd, bwd_weight=wgt, memory=memory)
    small = data.draw(st.integers(1, stages))
    sizes = [min(small + 1, stages)] * data.draw(st.integers(0, 3)) + [small] * data.draw(st.integers(1, 3))
    templates = {k: (tuple(map(tuple, strategies.group_stages(cfg.times, k).T)),
                     None if memory is None else strategies.group_memory(cfg, k)) for k in set(sizes)}
    pipelines = [templates[k] for k in sizes]
    total = microbatches * replicas
    batches, periods = [0] * len(pipelines), [0.0] * len(pipelines)
    for _ in range(total):
        trial = [strategies._single_pipeline_period(cfg, t, mb + 1, mem) for (t, mem), mb in zip(pipelines, batches)]
        i = trial.index(min(trial))
        batches[i] += 1
        periods[i] = trial[i]
    assert strategies._split_batch(cfg, pipelines, total) == (max(periods), batches)


def test_throughput_table_is_labelled():
    cfg = pl.PipelineConfig(4, 4, 8)
    ds = pl.throughput_table(cfg, range(4))
    assert set(ds.dims) == {"strategy", "n_failures", "stage"} and all(d in ds.coords for d in ds.dims)
    for name, var in ds.data_vars.items():
        assert "long_name" in var.attrs, name
    assert ds.attrs["relmodel_version"] and ds.attrs["ideal_period"] == 33.0
    assert float(ds.fraction_of_ideal.sel(strategy="recycle", n_failures=1)) == 1.0
    assert ds.failed_stages.sum("stage").values.tolist() == [0, 1, 2, 3]
    assert float(ds.recycle_target.sel(n_failures=0)) == 33.0


def test_schedule_dataset():
    cfg = pl.PipelineConfig(3, 2, 5)
    ds = pl.schedule_dataset(pl.fault_free(cfg), cfg)
    np.testing.assert_allclose(ds.bubble_fraction, 2 / 7)
    assert float(ds.period) == 21.0 and ds.busy.dims == ("replica", "stage")


# -- the command -----------------------------------------------------------------------------


def command_group():
    """The registered `relmodel` group when the command is there; else one like it."""
    if "pipeline" in main.commands:
        return main

    @click.group(cls=OneLineErrors)
    def group():
        pass
    group.add_command(pipeline)
    return group


def invoke(*args):
    return CliRunner().invoke(command_group(), ["pipeline", *args])


def test_cli_prints_a_table():
    result = invoke("--stages", "4", "--replicas", "4", "--microbatches", "8", "--failures", "0..2")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "fault-free period T0 = 33" in lines[0]
    header = lines[2].split()
    assert header[:2] == ["failed", "recycle"] and "bamboo" in header
    assert lines[4].split()[:2] == ["1", "1.0000"]


def test_cli_rows_printed_as_they_come_are_the_whole_tables_rows():
    # The text table streams a row a failure count (the first result comes before the planner compiles);
    # --quiet prints it whole at the end: the same text, and the same as format_steady_state of the whole table.
    args = ("--model", "gpt3-1.3b", "--gpu", "a100-80gb", "--stages", "4", "--replicas", "3", "--microbatches", "4",
            "--failures", "0,1,3,11")
    streamed, whole = invoke(*args), invoke(*args, "--quiet")
    assert streamed.exit_code == 0 and whole.exit_code == 0, streamed.output + whole.output
    assert streamed.output == whole.output
    assert [line.split()[0] for line in streamed.output.splitlines()[3:7]] == ["0", "1", "3", "11"]


def test_cli_with_a_model_speaks_seconds():
    """--model sizes the task times in seconds: the table says so, and a --time-unit other than 1 s is refused."""
    args = ("--model", "gpt3-1.3b", "--gpu", "a100-80gb", "--stages", "2", "--replicas", "2", "--microbatches", "2",
            "--failures", "0..1")
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].endswith(" s") and "time units" not in result.output.splitlines()[0]
    plain = invoke("--stages", "2", "--replicas", "2", "--microbatches", "2", "--failures", "0..1")
    assert plain.output.splitlines()[0].endswith("(time units)")
    trace = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "spot-traces" / "p3-trace.csv"
    refused = invoke(*args, "--trace", str(trace), "--time-unit", "1min")
    assert refused.exit_code == 2 and "--time-unit" in refused.output and "seconds" in refused.output


def test_cli_json_plot_and_netcdf(tmp_path):
    png, nc = tmp_path / "t.png", tmp_path / "t.nc"
    result = invoke("--stages", "4", "--replicas", "2", "--microbatches", "4", "--failures", "0,1,8",
                    "--fwd", "1,1,2,1", "--json", "--plot", str(png), "--out", str(nc))
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [r["n_failures"] for r in data["rows"]] == [0, 1, 8]
    assert data["rows"][2]["throughput"]["recycle"] == 0.0 and data["rows"][2]["period"]["recycle"] is None
    assert data["config"]["fwd"] == [1.0, 1.0, 2.0, 1.0]
    assert png.stat().st_size > 10_000
    assert xr.open_dataset(nc, engine="h5netcdf").sizes["n_failures"] == 3


def test_cli_runs_a_short_monte_carlo():
    result = invoke("--stages", "2", "--replicas", "2", "--microbatches", "2", "--failures", "1",
                    "--run-duration", "2d", "--failure-rate", "0.5", "--runs", "20", "--strategies", "recycle,spare")
    assert result.exit_code == 0, result.output
    assert "Monte Carlo runs" in result.output and "spare" in result.output.splitlines()[-1]


@pytest.mark.parametrize("args, flag", [
    (["--microbatches", "0"], "--microbatches"), (["--fwd", "-1"], "--fwd"), (["--fwd", "one"], "--fwd"),
    (["--bwd-weight", "1,2"], "--bwd-weight"), (["--strategies", "magic"], "--strategies"),
    (["--failures", "4..1"], "--failures"), (["--failures", "x"], "--failures"),
    (["--failures", "99"], "--failures"), (["--order", "zb-h1"], "--backward"),
    (["--run-duration", "3 fortnights"], "--run-duration"), (["--out", "x.csv"], "--out"),
    (["--trace", "/nonexistent/trace.csv"], "--trace"), (["--spares", "-2"], "--spares"),
    # Flags that act only with another one are refused without it, not silently ignored
    (["--runs", "3"], "--runs"), (["--mfu", "nan"], "--mfu"), (["--tensor-parallel", "-1"], "--tensor-parallel"),
    (["--gpu", "h100"], "--gpu"), (["--failure-rate", "1"], "--failure-rate"),
    (["--run-duration", "1d", "--runs", "18446744073709551616"], "--runs"),
    (["--run-duration", "1d", "--runs", "0"], "--runs"),
    # An empty list is given, not left out: refused, never read as 1 for every stage
    (["--fwd", ""], "--fwd"), (["--bwd-input", ""], "--bwd-input"), (["--bwd-weight", ""], "--bwd-weight"),
])
def test_cli_errors_are_one_line_naming_the_flag(args, flag):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and flag in lines[0], result.output


def test_parse_failures():
    assert parse_failures("0..4") == [0, 1, 2, 3, 4]
    assert parse_failures("3") == [0, 1, 2, 3]
    assert parse_failures("4, 0,2") == [0, 2, 4]


def test_a_value_given_twice_is_refused_not_collapsed():
    """`--failures 0,1,1` became 0,1 silently; `--strategies recycle,recycle` ended in a TypeError (exit 70)
    half-way through its table."""
    with pytest.raises(click.UsageError, match="--failures: 1 is given twice"):
        parse_failures("0,1,1")
    cfg = pl.PipelineConfig(stages=2, replicas=2, microbatches=4)
    with pytest.raises(pl.PipelineError, match="n_failures: 1 is given twice"):
        pl.throughput_table(cfg, n_failures=[0, 1, 1])
    for call in (lambda s: pl.throughput_table(cfg, strategies=s), lambda s: pl.simulate_runs(cfg, strategies=s)):
        with pytest.raises(pl.PipelineError, match="strategies: 'recycle' is given twice"):
            call(["recycle", "spare", "recycle"])
    result = CliRunner().invoke(pipeline, ["--stages", "2", "--replicas", "2", "--microbatches", "4",
                                           "--strategies", "recycle,recycle"])
    assert result.exit_code == 2 and "--strategies: 'recycle' is given twice" in result.output, result.output


@pytest.mark.parametrize("text", ["100000000000", "0..99999999999999999999999", "1,2,10000000000000"])
def test_parse_failures_refuses_more_failures_than_workers_before_building_the_list(text):
    """0..10**23 raised OverflowError and 10**11 MemoryError while building the list."""
    with pytest.raises(click.UsageError, match="--failures: .* failed workers but only 16 workers"):
        parse_failures(text, most=16)
    with pytest.raises(click.UsageError, match="--failures"):
        parse_failures(text)  # more than any configuration has


def test_throughput_table_checks_a_range_before_walking_it():
    with pytest.raises(pl.PipelineError, match="n_failures: ~1e15 failures but only 4 workers"):
        pl.throughput_table(pl.PipelineConfig(2, 2, 2), range(10**15 + 1))


# -- the example -------------------------------------------------------------------------------


def test_cli_table_is_all_fractions_and_says_what_steady_state_means():
    result = invoke("--stages", "4", "--replicas", "4", "--microbatches", "8", "--failures", "0..3")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = lines[2].split()
    assert header[-3:] == ["aim", "max", "L"]
    assert "work" not in lines[2] and "restart*" in header and "spare*" in header
    for line in lines[3:7]:
        cells = line.split()
        fractions = [float(c) for c in cells[1:-1]]  # strategies and the aim
        assert all(0.0 <= x <= 1.0 for x in fractions), line
    assert lines[4].split()[-2:] == ["1.0000", "11"]  # ceil(32 / 3) = m + p - 1: the aim is T0
    assert lines[6].split()[3] == "0.0000"  # spare: 3 down, 2 spares
    text = " ".join(result.output.split())
    assert "steady state once recovered" in text and "--run-duration" in text and "2 hot spares" in text
    assert "detection + replacement + restart + rework" in text


def test_recycle_summary_counts_the_grid():
    ds = pl.recycle_check(stages=(2, 4), replicas=(2, 4), microbatches=(4, 8), n_failures=(1, 2))
    s = pl.recycle_summary(ds)
    assert s["points"] == int(ds.ratio.notnull().sum()) and s["fits"] == s["below_edge"] + s["at_edge"]
    assert s["below_edge_within"] == s["below_edge"] > 0
    ran = ds.period.notnull()
    assert bool((ds.period >= ds.lower_bound * (1 - 1e-12)).where(ran, True).all())  # a proven bound
    assert len(s["misses"]) == s["fits"] - s["fits_within"]
    assert all(m["ratio"] > 1.02 for m in s["misses"])


@pytest.mark.parametrize("args, flag", [
    (("--stages", "1000", "--replicas", "64", "--microbatches", "64"), "--stages"),
    (("--replicas", "100000"), "--replicas"),
    (("--microbatches", "10000000"), "--microbatches"),
])
def test_oversized_schedule_is_refused_naming_the_flag_that_made_it_so(args, flag):
    """The product of the three sizes is over the limit: the largest of them, the one typed, is named."""
    result = invoke(*args, "--failures", "1")
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: {flag}: ") and "tasks per schedule" in result.output
    assert len(result.output.splitlines()) == 1


def test_a_pipeline_deeper_than_the_planners_take_is_refused_at_once():
    """20,000 stages ran past 300 s: ReCycle's planner and Oobleck's templates grow as the cube of the depth."""
    result = invoke("--stages", "20000", "--replicas", "2", "--microbatches", "4")
    assert result.exit_code == 2
    assert result.output.startswith("Error: --stages: must be at most 1024 (got 20000): ReCycle's planner")
    with pytest.raises(pl.PipelineError, match="stages: must be at most 1024"):
        pl.PipelineConfig(stages=1025, replicas=1, microbatches=1, fwd=1.0, bwd_input=1.0, bwd_weight=1.0)


def test_a_model_whose_times_leave_the_float_range_names_mfu():
    """A GPU preset's peak rate is fixed: --mfu scales it, and is the flag named (there is no --peak-flops)."""
    result = invoke("--model", "gpt3-175b", "--mfu", "1e-320", "--failures", "1")
    assert result.exit_code == 2
    assert result.output.startswith("Error: --mfu: gives stage times outside float64's range")


def test_the_help_says_what_durations_it_takes():
    """The help says bare numbers are refused (not that they are hours)."""
    result = invoke("--help")
    assert "a bare number other than 0 is refused" in " ".join(result.output.split())
    assert "--run-duration: 2 has no unit" in invoke("--run-duration", "2").output
