"""The memory budget: what a run will allocate is known from its inputs before it
allocates, runs past the budget are refused naming what sets their size, and a grid
runs in blocks of rows, so that its memory does not grow with its histograms."""

import tracemalloc
import warnings

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

import relmodel as rm
from relmodel import _checks, _engine
from relmodel._cli import main
from relmodel._errors import ScenarioError
from relmodel._study import Study, StudyError
from relmodel._sweep import run_study

BASE = dict(failure_rate=6.5e-3, checkpoint_cost=0.1, work=100.0)
# Grids of each kind of row: plain, with failure categories, with checkpoint levels
# (rows of two level widths: a write that persists, and one that does not).
GRIDS = {
    "plain": dict(n_gpus=[8 * i for i in range(1, 41)], checkpoint_interval=[0.25, 0.5, 1.0, 2.0, 4.0]),
    "taxonomy": dict(n_gpus=[8 * i for i in range(1, 41)], checkpoint_interval=[0.5, 1.0], taxonomy="meta-2024"),
    "levels": dict(n_gpus=[8 * i for i in range(1, 41)], checkpoint_interval=[1.0, 2.0],
                   checkpoint_persist=[0.0, 0.5]),
    "fast levels": dict(n_gpus=[8 * i for i in range(1, 41)], checkpoint_interval=[1.0, 2.0],
                        fast_checkpoints=[rm.CheckpointLevel(interval=0.25, cost=0.01, restart=0.05, survives=0.8)]),
}


def _levels(sc) -> int:
    return len(sc.fast_checkpoints) + 1 if sc.fast_checkpoints else int(sc.has_levels)


@pytest.mark.parametrize("row_block", [1, 7])  # a row a block (blocks of either level width), and uneven blocks
@pytest.mark.parametrize("kind", [*GRIDS, "levels, some rows not run"])
def test_a_grid_run_block_by_block_has_the_bits_of_one_block(kind, row_block, monkeypatch):
    fields = GRIDS.get(kind) or {**GRIDS["levels"], "failure_rate": [6.5e-3, 50.0]}  # 50: every job capped
    sc = rm.Scenario(**{**BASE, **fields})
    run = dict(n_jobs=200, seed=3, backend="cython", max_failures=50, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rm.CappedJobsWarning)
        whole = rm.simulate(sc, **run)
        monkeypatch.setattr(_engine, "ROW_BLOCK", row_block)
        blocks = rm.simulate(sc, **run)
    xr.testing.assert_identical(blocks.drop_attrs(), whole.drop_attrs())


@pytest.mark.parametrize("keep_jobs", [False, True])
@pytest.mark.parametrize("kind", GRIDS)
def test_the_memory_a_run_is_said_to_need_covers_what_it_takes(kind, keep_jobs):
    sc = rm.Scenario(**{**BASE, **GRIDS[kind]})
    n_jobs = 64
    rm.simulate(next(sc.points()), n_jobs=n_jobs, backend="cython", progress=False)  # imports done
    tracemalloc.start()
    try:
        rm.simulate(sc, n_jobs=n_jobs, backend="cython", keep_jobs=keep_jobs, progress=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    said = _engine.run_memory(sc.size, n_jobs, len(sc.taxonomy or ()), keep_jobs, _levels(sc))
    assert peak <= said <= 4 * peak, (peak, said)


def test_a_grid_takes_the_memory_of_a_block_of_rows_not_of_every_histogram(monkeypatch):
    monkeypatch.setattr(_engine, "ROW_BLOCK", 64)
    small = rm.Scenario(**{**BASE, **GRIDS["plain"]})
    large = rm.Scenario(**{**BASE, "n_gpus": [8 * i for i in range(1, 401)],
                           "checkpoint_interval": [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]})
    peaks = []
    for sc in (small, large):
        tracemalloc.start()
        try:
            rm.simulate(sc, n_jobs=1, backend="cython", progress=False)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    histograms = (large.size - small.size) * 8 * (_engine.N_BINS + 1)
    assert peaks[1] - peaks[0] < histograms / 4, (peaks, histograms)


@pytest.mark.parametrize("text, size", [("8GiB", 8 * 2**30), ("512MB", 512 * 10**6), ("1.5g", 1_500_000_000),
                                        ("2 MiB", 2 * 2**20), (3 * 2**20, 3 * 2**20)])
def test_memory_sizes_read_as_people_write_them(text, size):
    assert _checks.parse_memory_size("budget", text) == size


def test_a_percentage_is_of_the_machine_memory():
    total = _checks.physical_memory()
    assert _checks.parse_memory_size("budget", "25%") == int(0.25 * total)


@pytest.mark.parametrize("text", ["", "8XB", "-1GiB", "nan", "0", "1000", "0%", "150%", "GiB", True])
def test_a_memory_size_that_is_not_one_is_refused_naming_the_parameter(text):
    with pytest.raises(ScenarioError, match="^budget: "):
        _checks.parse_memory_size("budget", text)


def test_the_default_budget_is_half_the_machine(monkeypatch):
    monkeypatch.delenv(_checks.MEMORY_BUDGET_ENV, raising=False)
    budget, source = _checks.memory_budget()
    assert budget == int(_checks.physical_memory() * 0.5)
    assert "--memory-budget" in source and _checks.MEMORY_BUDGET_ENV in source


def test_a_run_past_the_budget_is_refused_before_it_starts_naming_the_budget(monkeypatch):
    monkeypatch.setenv(_checks.MEMORY_BUDGET_ENV, "64MiB")
    sc = rm.Scenario(**{**BASE, "n_gpus": list(range(8, 8 * 201, 8)), "checkpoint_interval": [0.5, 1.0]})
    with pytest.raises(ScenarioError, match="^keep_jobs: .* over the memory budget of 64 MiB "
                                            r"\(RELMODEL_MEMORY_BUDGET\)"):
        rm.simulate(sc, n_jobs=100_000, keep_jobs=True, progress=False)
    # Without keep_jobs the same run needs a block of rows in flight and the estimates: it fits.
    assert _engine.run_memory(sc.size, 100_000, 0, False) < 64 * 2**20


def test_a_budget_in_the_environment_that_is_not_a_size_is_named(monkeypatch):
    monkeypatch.setenv(_checks.MEMORY_BUDGET_ENV, "lots")
    with pytest.raises(ScenarioError, match="^RELMODEL_MEMORY_BUDGET: must be a memory size"):
        rm.simulate(rm.Scenario(n_gpus=8, checkpoint_interval=1.0, **BASE), n_jobs=100, progress=False)


def test_memory_budget_flag_refuses_a_grid_naming_flag_and_need(monkeypatch):
    monkeypatch.delenv(_checks.MEMORY_BUDGET_ENV, raising=False)
    gpus = ",".join(str(8 * i) for i in range(1, 1001))
    intervals = ",".join(f"{i}min" for i in range(1, 301))
    result = CliRunner().invoke(main, ["simulate", "--gpus", gpus, "--checkpoint-interval", intervals,
                                       "--n-jobs", "100", "--json", "--quiet", "--memory-budget", "256MiB"])
    assert result.exit_code == 2, result.output
    assert "--gpus x --checkpoint-interval: " in result.output
    assert "over the memory budget of 256 MiB (--memory-budget)" in result.output
    assert _checks._budget_set == []  # the command's budget ends with it


@pytest.mark.parametrize("value", ["lots", "0", "12"])
def test_memory_budget_flag_that_is_not_a_size_is_refused_naming_it(value):
    result = CliRunner().invoke(main, ["plan", "--gpus", "8", "--failure-rate", "1e-3", "--memory-budget", value])
    assert result.exit_code == 2
    assert result.output.startswith("Error: --memory-budget: ")


def test_every_command_takes_a_memory_budget():
    def leaves(group, path):
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                yield from leaves(command, path + [name])
            else:
                yield path + [name], command

    missing = [" ".join(path) for path, command in leaves(main, [])
               if "--memory-budget" not in [o for p in command.params for o in p.opts]]
    assert not missing


def _study(**run):
    fixed = dict(n_gpus=4096, checkpoint_cost=0.1, restart_cost=0.2, work=100.0)
    sweep = dict(failure_rate=list(np.linspace(1e-3, 1e-2, 64)), checkpoint_interval=list(np.linspace(0.5, 4, 64)))
    return Study(fixed=fixed, sweep=sweep, **{"n_jobs": 1, "seed": 1, **run})


def test_a_study_chunk_past_the_budget_is_refused_before_the_store_is_made(tmp_path, monkeypatch):
    monkeypatch.setenv(_checks.MEMORY_BUDGET_ENV, "16MiB")
    with pytest.raises(StudyError, match=r"^chunk_points: a chunk of 4096 grid points: .* over the memory "
                                         r"budget of 16 MiB"):
        run_study(_study(chunk_points=4096), tmp_path / "s.zarr", progress=False)
    assert not (tmp_path / "s.zarr").exists()


def test_a_study_of_too_many_chunks_is_refused_naming_the_sweep(tmp_path, monkeypatch):
    monkeypatch.setenv(_checks.MEMORY_BUDGET_ENV, "32MiB")  # 4096 chunks of one point: 64 MiB of bookkeeping
    with pytest.raises(StudyError, match=r"^sweep: 4096 grid points in chunks of 1: the bookkeeping of 4096 "
                                         "chunks would need 64 MiB"):
        run_study(_study(chunk_points=1), tmp_path / "s.zarr", progress=False)
    assert not (tmp_path / "s.zarr").exists()


def test_a_study_that_would_not_fit_on_its_disk_is_refused_naming_the_path(tmp_path, monkeypatch):
    import errno
    import shutil

    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda path: real(path)._replace(free=2**16))
    with pytest.raises(OSError) as caught:
        run_study(_study(), tmp_path / "s.zarr", progress=False)
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(tmp_path / "s.zarr")
    assert "4096 grid points need up to" in str(caught.value) and "64 KiB is free there" in str(caught.value)
    assert not (tmp_path / "s.zarr").exists()


def test_a_default_chunk_holds_at_most_2_16_points_however_few_the_jobs():
    from relmodel._study import default_chunk_points

    assert default_chunk_points(1) == 2**16
    assert default_chunk_points(100_000) == 40


@pytest.mark.parametrize("args, need", [
    (["--stages", "1024", "--replicas", "1", "--microbatches", "1", "--memory-budget", "8MiB"],
     "grouping 1024 stages into 1024 (Oobleck's templates) would need 16 MiB"),
    (["--stages", "1000", "--replicas", "100", "--microbatches", "4", "--strategies", "recycle",
      "--memory-budget", "1GiB"], "the 7200000 tasks of a schedule would need 1.72 GiB"),
])
def test_a_pipeline_past_the_budget_is_refused_before_any_strategy_runs(args, need, monkeypatch):
    monkeypatch.delenv(_checks.MEMORY_BUDGET_ENV, raising=False)
    monkeypatch.setattr(_checks, "physical_memory", lambda: 16 * 2**30)
    result = CliRunner().invoke(main, ["pipeline", "--quiet", *args])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"Error: --stages: {need} of memory, over the memory budget")


def test_the_exact_interval_search_over_a_wide_lemon_mixture_takes_bounded_memory(monkeypatch):
    from relmodel import _closed_form

    # 2**12 job rates at each of 1024 candidate intervals: 32 MiB a temporary, at once.
    sc = rm.Scenario(n_gpus=8 * 2**16, failure_rate=1e-9, lemon_fraction=0.5, lemon_rate_factor=1e6,
                     checkpoint_cost=1.0, restart_cost=1.0, work=4800.0, checkpoint_interval=1.0)
    rate = np.geomspace(1e-6, 1.0, 2**12)
    log_mass = np.full(rate.size, -np.log(rate.size))
    intervals = np.geomspace(0.01, 100.0, 1024)
    monkeypatch.setattr(_closed_form, "_MIXTURE_ELEMENTS", 2**16)  # 0.5 MiB a temporary
    tracemalloc.start()
    try:
        best = _closed_form._least_wall(intervals, log_mass, rate, sc)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, peak
    monkeypatch.setattr(_closed_form, "_MIXTURE_ELEMENTS", 2**40)  # the whole table at once
    assert _closed_form._least_wall(intervals, log_mass, rate, sc) == best
