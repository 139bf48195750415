import os
import tempfile

import pytest
from hypothesis import HealthCheck, settings

# JIT compilation would trip hypothesis deadlines; CI runs derandomised.
settings.register_profile(
    "ci", deadline=None, derandomize=True, database=None, max_examples=25, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("thorough", deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(tempfile.gettempdir(), "relmodel-numba-cache"))
# Child Pythons import the installed relmodel, as pytest and users do: never the
# checkout's source tree from their working folder (which lacks the compiled twin).
os.environ["PYTHONSAFEPATH"] = "1"

# Slow tests (statistical ones, the longest exact searches) run by default (and in CI)
# only in this fixed sample: one or two of each statistical family, seconds
# together (all of them: --run-slow, minutes more).
SLOW_SAMPLE = (
    "tests/test_agreement.py::test_agreement_many_scenarios_and_seeds[0]",
    "tests/test_agreement.py::test_agreement_many_scenarios_and_seeds[3]",
    "tests/test_fit.py::test_weibull_intervals_cover_the_truth_at_the_nominal_rate[0.7-2.0-100-3.0]",
    "tests/test_fit.py::test_weibull_intervals_cover_the_truth_at_the_nominal_rate[2.0-10000.0-100-1.0]",
    "tests/test_pipeline_runs.py::test_outage_share_and_failure_count_agree_with_the_rates",
    "tests/test_pipeline_runs.py::test_restart_loses_what_a_first_order_model_says",
    "tests/test_checkpoint_plan.py::test_multilevel_search_finds_the_brute_force_optimum[fields1]",
    "tests/test_checkpoint_plan.py::test_the_planner_finds_durable_writes_that_wait_beside_fast_levels[persist of an hour]",
    "tests/reference/test_pipeline_planner.py::test_exact_planner_on_every_configuration_up_to_4x4x8[3-2]",
    "tests/reference/test_pipeline_planner.py::test_exact_planner_on_every_configuration_up_to_4x4x8[4-2]",
)


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="run every slow statistical test")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    slow = {item.nodeid: item for item in items if "slow" in item.keywords}
    # A renamed test must not drop out of the sample unnoticed: a name whose file was
    # collected whole (no test ids, -k or -m given) must be there.
    files = {item.nodeid.split("::")[0] for item in items}
    missing = [name for name in SLOW_SAMPLE if name.split("::")[0] in files and name not in slow]
    whole_files = not (any("::" in arg for arg in config.args) or config.getoption("keyword")
                       or config.getoption("markexpr"))
    if missing and whole_files:
        raise pytest.UsageError(f"tests/conftest.py SLOW_SAMPLE names tests that do not exist: {missing}")
    for name, item in slow.items():
        if name not in SLOW_SAMPLE:
            item.add_marker(pytest.mark.skip(reason="slow; not in the CI sample (use --run-slow for all)"))


@pytest.fixture(scope="session", autouse=True)
def warm_kernels():
    """Compile (or load) the Numba kernels once per session, not inside a test's timing."""
    import relmodel as rm

    rm.simulate(rm.Scenario(n_gpus=8, failure_rate=1.0, checkpoint_interval=1, work=2), n_jobs=8, backend="numba")
