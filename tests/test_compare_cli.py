"""`relmodel compare`: a grid's closed forms beside its simulation, as a table, JSON, a Dataset and
a figure, with the flags of `relmodel simulate`."""

import json
import math

import matplotlib
import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner
from matplotlib.image import imread
from matplotlib.text import Text

import relmodel as rm
from relmodel._cli import main, simulate_command
from relmodel._cli_shared import table_cell
from relmodel.plot import compare_figure

matplotlib.use("Agg")

GRID = ["--gpus", "1024,16384", "--work", "2d", "--checkpoint-cost", "5min", "--restart-cost", "10min",
        "--n-jobs", "2000", "--seed", "7", "--backend", "cython"]
SCENARIO = dict(n_gpus=[1024, 16384], work="2d", checkpoint_cost="5min", restart_cost="10min",
                failure_rate=6.5e-3, checkpoint_interval="1h")
RUN = dict(n_jobs=2000, seed=7, backend="cython")
WEIBULL = ["--gpus", "1024", "--work", "2d", "--weibull-shape", "0.7", "--n-jobs", "1000", "--backend", "cython"]


def invoke(*args):
    return CliRunner().invoke(main, ["compare", *args])


@pytest.fixture(scope="module")
def grid_json():
    result = invoke(*GRID, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_numbers_are_the_closed_forms_and_the_simulation_of_the_same_seed(grid_json):
    sc = rm.Scenario(**SCENARIO)
    with pytest.warns(rm.ClosedFormWarning, match="linear ETTR is off"):
        linear = np.asarray(rm.ettr(sc, method="linear"))
    renewal = np.asarray(rm.ettr(sc, method="renewal"))
    sim = rm.simulate(sc, **RUN)
    rows = grid_json["rows"]
    assert [row["n_gpus"] for row in rows] == [1024, 16384]
    for i, row in enumerate(rows):
        assert row["ettr_linear"] == pytest.approx(linear[i], rel=1e-12)
        assert row["ettr_renewal"] == pytest.approx(renewal[i], rel=1e-12)
        assert row["ettr_sim"] == float(sim.ettr[i]) and row["ettr_se"] == float(sim.ettr_se[i])
        assert row["z_renewal"] == pytest.approx((row["ettr_sim"] - renewal[i]) / row["ettr_se"], rel=1e-9)
        assert row["linear_rel_error"] == pytest.approx((linear[i] - renewal[i]) / renewal[i], rel=1e-9)
        assert row["renewal_exact"] is True
    # At 16,384 GPUs the linear form is over 2 % off: the flag and the verdict say so.
    assert [row["linear_valid"] for row in rows] == [True, False]
    assert grid_json["verdict"]["linear_off"] == 1 and "n_gpus=16384" in grid_json["verdict"]["text"]


def test_the_table_prints_the_json_s_numbers_and_a_verdict(grid_json):
    result = invoke(*GRID)
    assert result.exit_code == 0, result.output
    header, *lines, verdict = result.stdout.splitlines()
    rows = grid_json["rows"]
    assert header.split() == list(rows[0]) and len(lines) == len(rows)
    for row, line in zip(rows, lines):
        assert line.split() == [table_cell(k, v) for k, v in row.items()]
    assert verdict == f"verdict: {grid_json['verdict']['text']}"
    assert "within 3 standard errors of the renewal form at 2 of 2 points" in verdict
    assert "linear form off by more than 2% (or undefined) at 1 of 2 points" in verdict


def test_every_number_of_the_json_has_a_unit(grid_json):
    units = grid_json["units"]

    def numbers(value, path):
        if isinstance(value, dict):
            for key, item in value.items():
                yield from numbers(item, f"{path}.{key}" if path else key)
        elif isinstance(value, list):
            for item in value:
                yield from numbers(item, f"{path}.*")
        elif isinstance(value, (int, float)) or value is None:  # (bools are ints; null is a NaN)
            yield path

    paths = set(numbers({k: v for k, v in grid_json.items() if k != "units"}, ""))
    assert "rows.*.ettr_sim" in paths and "verdict.points" in paths
    assert paths <= set(units), sorted(paths - set(units))


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_out_round_trips_the_dataset_of_compare(tmp_path, suffix):
    out = tmp_path / f"compare{suffix}"
    result = invoke(*GRID, "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == f"wrote {out}"
    expected = rm.compare(rm.Scenario(**SCENARIO), **RUN)
    with xr.open_dataset(out, engine="h5netcdf" if suffix == ".nc" else "zarr") as written:
        assert set(written.data_vars) == set(expected.data_vars)
        for name in expected.data_vars:
            np.testing.assert_array_equal(written[name].values, expected[name].values)
    again = invoke(*GRID, "--out", str(out))  # as simulate: a relmodel output is replaced only with --overwrite
    assert again.exit_code == 2 and "--out" in again.output and "--overwrite" in again.output
    assert invoke(*GRID, "--out", str(out), "--overwrite").exit_code == 0


def test_plot_writes_a_figure(tmp_path):
    plot = tmp_path / "compare.png"
    result = invoke(*GRID, "--plot", str(plot))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == f"wrote {plot}"
    image = imread(plot)
    assert image.shape[0] > 200 and np.ptp(image) > 0


def test_the_figure_draws_each_closed_form_and_the_simulated_points_against_the_axis():
    ds = rm.compare(rm.Scenario(**SCENARIO), **RUN)
    ax = compare_figure(ds).axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    np.testing.assert_array_equal(lines["renewal closed form"].get_ydata(), ds.ettr_renewal.values)
    np.testing.assert_array_equal(lines["linear closed form"].get_ydata(), ds.ettr_linear.values)
    np.testing.assert_array_equal(lines["renewal closed form"].get_xdata(), [1024, 16384])
    assert ax.get_xlabel() == "n_gpus (GPUs)" and ax.get_ylabel() == "ETTR (productive / wall-clock)"
    assert "simulated (95%)" in ax.get_legend_handles_labels()[1]
    text = "\n".join(t.get_text() for t in ax.figure.findobj(Text))
    assert "work 2d" in text and "2000 jobs a point" in text  # the caption names what is fixed


def test_the_figure_of_a_choice_axis_marks_each_category_without_lines_between():
    ds = rm.compare(rm.Scenario(**{**SCENARIO, "n_gpus": 4096, "queue_wait": "30min",
                                   "queue_wait_distribution": ["fixed", "exponential"]}), **{**RUN, "n_jobs": 500})
    ax = compare_figure(ds).axes[0]
    ax.figure.canvas.draw()
    assert [label.get_text() for label in ax.get_xticklabels()] == ["fixed", "exponential"]
    for form in ("renewal closed form", "linear closed form"):
        line = next(line for line in ax.get_lines() if line.get_label() == form)
        assert line.get_linestyle() == "None" and line.get_marker() not in (None, "None", "")


def test_the_figure_of_one_point_puts_each_form_against_the_diagonal():
    ds = rm.compare(rm.Scenario(**{**SCENARIO, "n_gpus": 4096}), **RUN)
    ax = compare_figure(ds).axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert f"renewal closed form: {float(ds.ettr_renewal):.4f}" in labels
    assert f"linear closed form: {float(ds.ettr_linear):.4f}" in labels
    diagonal = next(line for line in ax.get_lines() if line.get_label() == "closed form = simulation")
    np.testing.assert_array_equal(diagonal.get_xdata(), diagonal.get_ydata())


def test_non_exponential_failures_show_the_renewal_form_as_not_applying():
    result = invoke(*WEIBULL, "--quiet")
    assert result.exit_code == 0, result.output
    header, line, verdict = result.stdout.splitlines()
    cells = dict(zip(header.split(), line.split()))
    assert cells["ettr_renewal"] == "n/a" and cells["z_renewal"] == "n/a" and cells["renewal_exact"] == "False"
    assert "renewal form n/a at 1 of 1 point" in verdict
    row = json.loads(invoke(*WEIBULL, "--json").stdout)["rows"][0]
    expected = rm.compare(rm.Scenario(**{**SCENARIO, "n_gpus": 1024, "weibull_shape": 0.7}), n_jobs=1000,
                          backend="cython")
    assert math.isnan(float(expected.ettr_renewal)) and row["ettr_renewal"] is None
    assert row["ettr_sim"] == float(expected.ettr_sim)
    assert row["linear_rel_error"] == pytest.approx(float(expected.linear_rel_error), rel=1e-12)


def test_quiet_prints_only_the_result(tmp_path, monkeypatch):
    from relmodel import _feedback as feedback

    monkeypatch.setattr(feedback, "stderr_is_terminal", lambda: True)  # where the bar and notes would show
    plot = tmp_path / "compare.png"
    loud = invoke(*GRID, "--plot", str(plot))
    assert loud.exit_code == 0 and "drawing" in loud.stderr
    result = invoke(*GRID, "--plot", str(plot), "--quiet")
    assert result.exit_code == 0, result.output
    assert result.stderr == "" and result.stdout == loud.stdout
    lines = result.stdout.splitlines()
    assert len(lines) == 5 and lines[0].startswith("n_gpus") and lines[-2].startswith("verdict: ")


@pytest.mark.parametrize("args, flag", [
    (["--n-jobs", "0"], "--n-jobs"), (["--out", "x.csv"], "--out"), (["--plot", "x.notanimage"], "--plot"),
    (["--checkpoint-cost", "5"], "--checkpoint-cost"), (["--threads", "0"], "--threads"),
    (["--threads", "999"], "--threads"),  # refused by the run itself, not by the option's type
])
def test_bad_input_exits_2_naming_the_flag(args, flag):
    result = invoke("--gpus", "1024", *args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {flag}")


def test_a_grid_where_no_job_can_finish_is_refused_as_simulate_refuses_it():
    args = ["--gpus", "4096", "--failure-rate", "50"]
    result = invoke(*args)
    assert result.exit_code == 2
    assert result.output == CliRunner().invoke(main, ["simulate", *args]).output
    assert "No job can finish" in result.output and "--failure-rate" in result.output


def test_compare_takes_every_flag_of_simulate():
    compare_command = main.commands["compare"]
    by_name = {param.name: param for param in compare_command.params}
    for param in simulate_command.params:
        twin = by_name[param.name]
        assert (twin.opts, twin.secondary_opts, twin.default, twin.help) == (
            param.opts, param.secondary_opts, param.default, param.help), param.name
    assert set(by_name) - {p.name for p in simulate_command.params} == {"plot"}
