"""Every figure answers the question its command asks: drawn from the command's
inputs (work, interval, target, job size), lines that cannot hide each other,
units on every axis, plain ticks, and the fixed parameters in a caption."""

import re

import matplotlib
import numpy as np
import pytest
import xarray as xr
from matplotlib.text import Text

import relmodel as rm
from relmodel.plot import plan_figure, scenario_caption, study_figure

matplotlib.use("Agg")

JOB = dict(n_gpus=16384, failure_rate=6.5e-3, checkpoint_cost="5min", restart_cost="10min")
QUICK = dict(n_sim=3, n_jobs=300)  # the simulated points: few and small


def all_text(fig) -> str:
    return "\n".join(t.get_text() for t in fig.findobj(Text))


def labelled(ax, prefix):
    """The lines of `ax` whose legend label starts with `prefix`."""
    return [line for line in ax.get_lines() if line.get_label().startswith(prefix)]


def rendered(fig) -> np.ndarray:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())


@pytest.fixture(scope="module")
def plans():
    """Plans of a 14-day and a 54-day run, current interval 1 h, target 0.9."""
    return {work: rm.plan(work=work, checkpoint_interval=1.0, target_ettr=0.9, n_jobs=500, **JOB)
            for work in ("14d", "54d")}


@pytest.fixture(scope="module")
def plan_figures(plans):
    return {work: plan_figure(p, **QUICK) for work, p in plans.items()}


def test_plan_figure_differs_with_work(plan_figures):
    short, long = (plan_figures[w].axes[0] for w in ("14d", "54d"))
    renewal_short, renewal_long = (labelled(ax, "renewal")[0].get_ydata() for ax in (short, long))
    assert not np.array_equal(renewal_short, renewal_long)  # the curves are computed for each work
    assert "14d of work" in short.get_title() and "54d of work" in long.get_title()
    assert "(exact form)" in short.get_title()  # the plan's text gives the simulated mean: say which this is
    assert "work 14d" in all_text(plan_figures["14d"]) and "work 54d" in all_text(plan_figures["54d"])
    a, b = rendered(plan_figures["14d"]), rendered(plan_figures["54d"])
    assert a.shape == b.shape and np.any(a != b)


def test_plan_figure_marks_target_current_interval_and_job(plans, plan_figures):
    fig = plan_figures["54d"]
    left, right = fig.axes[0], fig.axes[1]
    for ax in (left, right):
        (target,) = labelled(ax, "target ETTR")
        assert np.allclose(target.get_ydata(), 0.9)
    (current,) = labelled(left, "current interval")
    assert np.allclose(current.get_xdata(), 1.0) and "1h" in current.get_label()
    (job,) = labelled(right, "this job")
    assert np.allclose(job.get_xdata(), 16384)
    assert job.get_ydata()[0] == pytest.approx(plans["54d"].ettr, rel=1e-6)
    (largest,) = labelled(right, "largest job")
    assert np.allclose(largest.get_xdata(), plans["54d"].target.max_gpus)


def test_plan_figure_keeps_the_old_call_and_takes_keywords():
    sc = rm.Scenario(work="14d", checkpoint_interval=1.0, **JOB)
    fig = plan_figure(sc, **QUICK)  # the plain call: a Scenario, nothing marked
    assert not labelled(fig.axes[0], "target") and not labelled(fig.axes[0], "current")
    fig = plan_figure(sc, target_ettr=0.8, current_interval=2.0, **QUICK)
    assert np.allclose(labelled(fig.axes[0], "target")[0].get_ydata(), 0.8)
    assert np.allclose(labelled(fig.axes[0], "current")[0].get_xdata(), 2.0)


def test_optima_are_distinct_markers_on_the_curve(plan_figures):
    ax = plan_figures["14d"].axes[0]
    optima = [labelled(ax, f"{m} optimum")[0] for m in ("young", "daly", "exact")]
    assert len({line.get_marker() for line in optima}) == 3
    # where they coincide, the larger hollow markers still show around the smaller ones
    sizes = [line.get_markersize() for line in optima]
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 3
    for line in optima:
        assert re.search(r"\d+(\.\d+)?min: 0\.\d{4}", line.get_label())  # the values are in the legend


def test_plan_figure_units_ticks_and_caption(plan_figures):
    fig = plan_figures["14d"]
    left, right = fig.axes[0], fig.axes[1]
    assert left.get_xlabel() == "checkpoint interval (h)"
    assert "GPUs" in right.get_xlabel()
    assert any("(h)" in ax.get_ylabel() for ax in fig.axes)  # the MTTF twin axis
    fig.canvas.draw()
    for ax in fig.axes:
        for label in ax.get_xticklabels() + ax.get_yticklabels():
            assert not re.search(r"\\times|x10|\^|e\+", label.get_text()), label.get_text()
    text = all_text(fig)
    for fixed in ("work 14d", "failure rate 0.0065 per node-day", "checkpoint write 5min", "restart 10min",
                  "8 GPUs/node"):
        assert fixed in text


@pytest.fixture(scope="module")
def study():
    sc = rm.Scenario(n_gpus=[512, 2048, 8192], checkpoint_interval=[0.25, 0.5, 1.0, 2.0, 3.0], work="7d",
                     failure_rate=6.5e-3, checkpoint_cost="5min", restart_cost="10min")
    return rm.simulate(sc, n_jobs=300, seed=1)


def test_study_heat_map_is_readable(study):
    fig = study_figure(study)
    heat = fig.axes[0]
    assert heat.get_xlabel() == "n_gpus (GPUs)" and heat.get_ylabel() == "checkpoint_interval (h)"
    fig.canvas.draw()
    ticks = [t.get_text() for ax in fig.axes for t in ax.get_xticklabels() + ax.get_yticklabels()]
    assert {"512", "2048", "3", "0.25"} <= set(ticks)  # plain numbers
    for tick in ticks:
        assert not re.search(r"\\times|x10|\^|e\+|mathdefault", tick), tick
    cells = {(round(t.get_position()[0]), round(t.get_position()[1])): t.get_text() for t in heat.texts}
    values = study.ettr.transpose("checkpoint_interval", "n_gpus").values
    assert len(cells) == values.size
    for (row, col), value in np.ndenumerate(values):
        assert cells[(col, row)] == f"{value:.2f}"
    assert "(h)" in fig.axes[1].get_ylabel() and "GPUs" in fig.axes[1].get_xlabel()  # the optimum panel
    text = all_text(fig)
    for fixed in ("failure_rate 0.0065 per node-day", "work 7d", "checkpoint_cost 5min", "restart_cost 10min",
                  "gpus_per_node 8 GPUs/node"):
        assert fixed in text


def test_study_figure_names_the_first_value_of_an_axis_not_shown():
    sc = rm.Scenario(n_gpus=[512, 1024], checkpoint_interval=[0.5, 1.0], failure_rate=[6.5e-3, 2.34e-3],
                     work="2d", checkpoint_cost="5min", restart_cost="10min")
    fig = study_figure(rm.simulate(sc, n_jobs=200, seed=0), x="n_gpus", y="checkpoint_interval")
    assert "failure_rate 0.0065 per node-day (first of its sweep)" in all_text(fig)


@pytest.fixture(scope="module")
def pipeline_table():
    import relmodel.pipeline as pl

    return pl.throughput_table(pl.PipelineConfig(4, 4, 8), range(5))


def test_pipeline_legend_lists_only_drawn_lines_and_none_hides_another(pipeline_table):
    from relmodel.pipeline._plot import throughput_figure

    ax = throughput_figure(pipeline_table).axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    for text in ax.get_legend().get_texts():
        line = lines[text.get_text()]
        assert np.isfinite(np.asarray(line.get_ydata(), float)).any()
    strategies = [str(s) for s in pipeline_table.strategy.values]
    drawn = [np.column_stack([lines[s].get_xdata(), lines[s].get_ydata()]) for s in strategies]
    for i in range(len(drawn)):
        for j in range(i):  # coinciding values are drawn at distinct places
            assert not np.array_equal(drawn[i], drawn[j]), (strategies[i], strategies[j])
    restart, recycle = lines["restart"], lines["recycle"]
    assert restart.get_zorder() > recycle.get_zorder() and restart.get_linestyle() != recycle.get_linestyle()


def test_pipeline_aim_line_left_out_when_it_is_nowhere_finite(pipeline_table):
    from relmodel.pipeline._plot import throughput_figure

    table = pipeline_table.assign(recycle_target=pipeline_table.recycle_target * 0 + np.inf)
    table.attrs = dict(pipeline_table.attrs, ideal_period=np.inf)
    ax = throughput_figure(table).axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert not any("aim" in label for label in labels)
    assert not any("aim" in line.get_label() for line in ax.get_lines())


def test_pipeline_legend_says_which_strategy_memory_rules_out():
    """Bamboo, ruled out by the budget, says why in the legend rather than drawing a bare line at 0."""
    import relmodel.pipeline as pl
    from relmodel.pipeline._plot import throughput_figure

    table = pl.throughput_table(pl.PipelineConfig(4, 4, 8, memory=pl.StageMemory(16, (10.0,) * 4, 1.0)), range(3))
    labels = [t.get_text() for t in throughput_figure(table).axes[0].get_legend().get_texts()]
    assert "bamboo (ruled out by memory)" in labels and "recycle" in labels


def write_trace(path, nodes: int):
    """A node trace of `nodes` nodes that join, one leaves and comes back."""
    rows = [f"{1000 * i},add,node{i}" for i in range(nodes)]
    rows += [f"{3_600_000},remove,node0", f"{7_200_000},add,node0", f"{36_000_000},remove,node1"]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_trace_panel_says_when_the_trace_has_too_few_nodes(tmp_path):
    import relmodel.pipeline as pl
    from relmodel.pipeline._plot import throughput_figure

    cfg = pl.PipelineConfig(2, 2, 4)  # 4 workers
    model = pl.RunModel(time_unit="1ms")
    few = write_trace(tmp_path / "few.csv", 3)
    enough = write_trace(tmp_path / "enough.csv", 6)
    replayed = pl.replay_traces(cfg, [few, enough], model, n_runs=2, seed=0)
    fig = throughput_figure(pl.throughput_table(cfg, range(3)), replayed)
    panel = fig.axes[1]
    note = "\n".join(t.get_text() for t in panel.texts)
    assert "few: never has the 4 nodes the run needs (at most 3)" in note
    assert re.search(r"enough: at most 6 nodes for 4 workers; workers down \d+% of the time", note)
    assert "time unit" in all_text(fig) and "restart 10min" in all_text(fig)  # the fixed parameters


def test_elastic_load_sweep_units_ticks_and_caption():
    from relmodel.elastic._plot import load_sweep_figure

    rates, policies = [1.0, 4.0, 16.0, 64.0], ["elastic", "fixed-batch", "fifo"]
    completed = np.array([[10, 10, 10], [10, 10, 8], [10, 10, 7], [5, 5, 4]])
    sweep = xr.Dataset({"completed": (("arrival_rate", "policy"), completed),
                        "submitted": (("arrival_rate", "policy"), np.full((4, 3), 10)),
                        "jct_mean": (("arrival_rate", "policy"), np.linspace(0.3, 3, 12).reshape(4, 3))},
                       coords={"arrival_rate": rates, "policy": policies},
                       attrs={"n_gpus": 64, "arrival_window": "6h", "objective": "throughput"})
    fig = load_sweep_figure(sweep)
    fig.canvas.draw()
    for ax in fig.axes:
        assert "(" in ax.get_xlabel() and "(" in ax.get_ylabel()
        for label in ax.get_xticklabels() + ax.get_yticklabels():
            assert not re.search(r"\\times|x10|\^|mathdefault", label.get_text()), label.get_text()
    left = fig.axes[0]
    elastic, fixed = labelled(left, "elastic")[0], labelled(left, "fixed-batch")[0]
    assert np.array_equal(elastic.get_ydata(), fixed.get_ydata())  # they coincide here ...
    assert elastic.get_marker() != fixed.get_marker() and elastic.get_markersize() > fixed.get_markersize()
    assert elastic.get_linewidth() > fixed.get_linewidth()  # ... and both still show
    assert "64 GPUs" in all_text(fig) and "arrivals over 6h" in all_text(fig)


def test_fit_plot_has_units():
    from relmodel._synthetic_log import synthetic_log

    fig = rm.fit(synthetic_log(3000, failure_rate=6.5e-3, seed=5).to_csv()).plot()
    ax = fig.axes[0]
    assert ax.get_xlabel() == "job size (GPUs)" and ax.get_ylabel() == "MTTF of the job (h)"
    fig.canvas.draw()
    for label in ax.get_xticklabels() + ax.get_yticklabels():
        assert not re.search(r"\\times|\^|mathdefault", label.get_text()), label.get_text()


def test_relmodel_plan_plot_draws_the_command_s_own_plan(tmp_path):
    # Through the command: the same flags but --work give different figures.
    from click.testing import CliRunner
    from matplotlib.image import imread

    from relmodel._cli import main

    images = {}
    for work in ("14d", "54d"):
        path = tmp_path / f"plan-{work}.png"
        result = CliRunner().invoke(main, ["plan", "--gpus", "16384", "--work", work, "--checkpoint-interval", "1h",
                                           "--checkpoint-cost", "5min", "--restart-cost", "10min",
                                           "--target-ettr", "0.9", "--n-jobs", "200", "--quiet", "--plot", str(path)])
        assert result.exit_code == 0, result.output
        images[work] = imread(path)
    assert images["14d"].shape != images["54d"].shape or not np.array_equal(images["14d"], images["54d"])


def test_study_figure_refuses_one_axis_twice():
    """`sweep --x n_gpus --y n_gpus` is refused naming `y`, not numpy's "axes don't match array"."""
    sc = rm.Scenario(n_gpus=[512, 1024], checkpoint_interval=[0.5, 1.0], failure_rate=6.5e-3, work="2d",
                     checkpoint_cost="5min", restart_cost="10min")
    with pytest.raises(rm._errors.ParameterError, match="y: must be another sweep axis than x"):
        study_figure(rm.simulate(sc, n_jobs=100, seed=0), x="n_gpus", y="n_gpus")


def test_the_caption_names_the_persist_and_every_fast_level():
    """The plan-with-strategies figure's caption names a write's persist (not 'checkpoint write 30s'
    alone) and its in-memory level."""
    sc = rm.Scenario(n_gpus=16384, failure_rate=3.8e-3, work="54d", checkpoint_interval="1h", checkpoint_cost="30s",
                     checkpoint_persist="5min", restart_cost="10min",
                     fast_checkpoints=(rm.CheckpointLevel(interval="10min", cost="5s", restart="3min", persist="30s",
                                                          survives=0.85),))
    caption = scenario_caption(sc)
    assert "checkpoint write 30s + 5min to persist" in caption
    assert "fast level 0: write 5s + 30s to persist, restart 3min, survives 85%" in caption
    assert "to persist" not in scenario_caption(sc.sweep(checkpoint_persist=0, fast_checkpoints=None))


def test_the_strategy_bars_start_at_zero():
    """They started at 0.67 on a plan whose ETTRs ran 0.73 to 0.92, which made blocking look a quarter
    as good as multilevel rather than four fifths."""
    from relmodel.plot import strategies_panel

    sc = rm.Scenario(n_gpus=16384, failure_rate=3.8e-3, work="54d", checkpoint_interval="1h", checkpoint_cost="30s",
                     checkpoint_persist="5min", restart_cost="10min",
                     fast_checkpoints=(rm.CheckpointLevel(interval="10min", cost="5s", restart="3min", persist="30s",
                                                          survives=0.85),))
    ax = strategies_panel(rm.plan(sc, n_jobs=500))
    low, high = ax.get_ylim()
    assert low == 0.0 and high >= 1.0
    assert all(bar.get_y() == 0.0 for bar in ax.patches)
