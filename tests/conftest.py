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

SLOW_SAMPLE = 4  # slow tests run by default (and in CI): a fixed, bounded sample


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="run every slow statistical test")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    slow = [item for item in items if "slow" in item.keywords]
    step = max(1, len(slow) // SLOW_SAMPLE)
    keep = {id(item) for item in slow[::step][:SLOW_SAMPLE]}
    for item in slow:
        if id(item) not in keep:
            item.add_marker(pytest.mark.skip(reason="slow; sampled out (use --run-slow for all)"))


@pytest.fixture(scope="session", autouse=True)
def warm_kernels():
    """Compile (or load) the Numba kernels once per session, not inside a test's timing."""
    import relmodel as rm

    rm.simulate(rm.Scenario(n_gpus=8, failure_rate=1.0, checkpoint_interval=1, work=2), n_jobs=8)
