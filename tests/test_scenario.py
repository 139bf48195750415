"""Scenario, units and grids; every invalid input names its parameter."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import relmodel as rm
from relmodel._scenario import split_work

BASE = dict(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h", work="7d")


@pytest.mark.parametrize("text, hours", [
    ("90s", 90 / 3600), ("5min", 5 / 60), ("2h", 2.0), ("1.5d", 36.0), ("1w", 168.0), ("3", 3.0),
    (" 2.5 hours ", 2.5), ("1e1min", 10 / 60), (4, 4.0), (0.25, 0.25),
])
def test_durations(text, hours):
    assert rm.to_hours(text) == pytest.approx(hours, rel=1e-15)


def test_scenario_converts_units_and_is_immutable():
    sc = rm.Scenario(**BASE, checkpoint_cost="5min", restart_cost="10min")
    assert (sc.checkpoint_interval, sc.work, sc.checkpoint_cost) == (1.0, 168.0, 5 / 60)
    assert sc.n_nodes == 128 and sc.mttf == pytest.approx(24 / (128 * 6.5e-3))
    with pytest.raises(AttributeError):
        sc.work = 1.0


INVALID = [
    ("failure_rate", -1e-3), ("failure_rate", math.nan), ("failure_rate", math.inf),
    ("checkpoint_interval", 0), ("checkpoint_interval", "0s"), ("checkpoint_interval", -1),
    ("checkpoint_cost", "5m"), ("checkpoint_cost", "5 parsecs"), ("checkpoint_cost", "fast"),
    ("restart_cost", -0.1), ("restart_cost", math.nan), ("queue_wait", math.inf), ("work", 0),
    ("work", "-3d"), ("n_gpus", 0), ("n_gpus", 2.5), ("n_gpus", True), ("gpus_per_node", 0),
    ("weibull_shape", 0), ("weibull_shape", -1.0), ("lemon_fraction", 1.5),
    ("lemon_rate_factor", -2), ("queue_wait_distribution", "gamma"), ("n_gpus", [8, 8]),
    ("checkpoint_interval", []),
]


@pytest.mark.parametrize("name, value", INVALID)
def test_invalid_values_raise_naming_the_parameter(name, value):
    with pytest.raises(ValueError, match=f"^{name}: ") as info:
        rm.Scenario(**{**BASE, name: value})
    assert info.value.parameter == name


@given(name=st.sampled_from(["failure_rate", "checkpoint_cost", "restart_cost", "queue_wait"]),
       value=st.one_of(st.floats(max_value=-1e-300), st.just(math.nan), st.just(-math.inf)))
def test_negative_or_nan_costs_always_rejected(name, value):
    with pytest.raises(ValueError, match=name):
        rm.Scenario(**{**BASE, name: value})


def test_grid_is_the_outer_product_in_field_order():
    sc = rm.Scenario(**{**BASE, "checkpoint_interval": ["30min", "1h", "2h"], "n_gpus": [8, 16]})
    assert sc.dims == ("n_gpus", "checkpoint_interval") and sc.shape == (2, 3) and sc.size == 6
    points = list(sc.points())
    assert [(p.n_gpus, p.checkpoint_interval) for p in points] == [
        (8, 0.5), (8, 1.0), (8, 2.0), (16, 0.5), (16, 1.0), (16, 2.0)]
    cols = sc.columns()
    assert np.array_equal(cols["checkpoint_interval"], [0.5, 1, 2, 0.5, 1, 2])
    assert np.all(cols["work"] == 168.0)
    assert rm.Scenario(**{**BASE, "n_gpus": np.array([8, 16])}).dims == ("n_gpus",)


def test_mapping_is_a_scenario_too():
    ds = rm.simulate({**BASE, "n_gpus": [8, 16]}, n_jobs=16)
    assert ds.sizes["n_gpus"] == 2
    with pytest.raises(ValueError, match="^gpus: not a Scenario field"):
        rm.simulate({**BASE, "gpus": 8}, n_jobs=16)


@pytest.mark.parametrize("work, interval, expected", [
    (168.0, 1.0, (168, 0.0)), (168.0, 5 / 60, (2016, 0.0)), (0.3, 0.1, (3, 0.0)),
    (1.0, 0.3, (3, 0.1)), (0.5, 1.0, (0, 0.5)), (2.0, 2.0, (1, 0.0)),
])
def test_split_work_counts_exact_multiples_as_full_intervals(work, interval, expected):
    n_full, remainder = split_work(work, interval)
    assert n_full == expected[0] and remainder == pytest.approx(expected[1], abs=1e-12)


@given(work=st.floats(1e-3, 1e5), interval=st.floats(1e-3, 1e3))
def test_split_work_is_a_partition(work, interval):
    n_full, remainder = split_work(work, interval)
    assert n_full >= 0 and 0 <= remainder < interval
    assert n_full * interval + remainder == pytest.approx(work, rel=1e-9)


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_jobs=0), "n_jobs"), (dict(n_jobs=1.5), "n_jobs"), (dict(seed=-1), "seed"),
    (dict(seed=2**32), "seed"), (dict(backend="fortran"), "backend"), (dict(max_failures=0), "max_failures"),
    (dict(n_threads=0), "n_threads"),
])
def test_simulate_rejects_bad_run_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rm.simulate(rm.Scenario(**BASE), **{"n_jobs": 10, **kwargs})


@pytest.fixture
def checks(monkeypatch):
    """Count the checks of Scenario field values, by field, wherever a module calls the check."""
    import sys
    from collections import Counter

    import relmodel._cli  # noqa: F401  (its modules too)
    from relmodel._checks import check_number as real
    from relmodel._deprecation import MOVED_MODULES

    counted = Counter()

    def counting(name, value, *, kind):
        counted[name] += 1
        return real(name, value, kind=kind)

    for name, module in list(sys.modules.items()):
        if name in MOVED_MODULES:  # an old path's module serves names only with a warning
            continue
        if name.split(".")[0] == "relmodel" and getattr(module, "check_number", None) is real:
            monkeypatch.setattr(module, "check_number", counting)
    return counted


def test_each_value_is_checked_once_when_the_scenario_is_built(checks):
    sc = rm.Scenario(n_gpus=[8, 16, 32], failure_rate=1.0, checkpoint_interval=["30min", "1h"], work="10h")
    assert checks["n_gpus"] == 3 and checks["checkpoint_interval"] == 2 and checks["work"] == 1, checks
    built = dict(checks)
    points = list(sc.points())  # the grid's points are not checked again
    assert points[3] == sc.point((1, 1)) and (points[3].n_gpus, points[3].checkpoint_interval) == (16, 1.0)
    assert not points[3].is_grid and points[3].work == 10.0
    assert dict(checks) == built
    rm.simulate(sc, n_jobs=64, backend="cython")
    rm.ettr(sc, "renewal")
    rm.optimal_interval(sc, "exact")
    rm.compare(sc, n_jobs=64, backend="cython")
    assert dict(checks) == built


def test_the_command_line_checks_each_value_once(checks):
    from click.testing import CliRunner

    from relmodel._cli import main

    result = CliRunner().invoke(main, ["simulate", "--gpus", "8,16", "--checkpoint-interval", "30min,1h,2h",
                                       "--n-jobs", "64", "--backend", "cython", "--quiet"])
    assert result.exit_code == 0, result.output
    assert checks["n_gpus"] == 2 and checks["checkpoint_interval"] == 3 and checks["work"] == 1, checks
