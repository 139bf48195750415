"""Scenarios without checkpoint levels give the very bits relmodel 0.2.0 gave,
which has no levels (numbers it recorded), on both backends."""

import json
from pathlib import Path

import pytest

import relmodel as rm

RECORD = json.loads((Path(__file__).parent / "data" / "no_levels_bits.json").read_text())
TAXONOMY = (rm.FailureCategory("a", 0.7, "5min", "2min"), rm.FailureCategory("b", 0.3, "30min", "10min"))
SCENARIOS = {
    "plain": dict(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min",
                  restart_cost="10min", work="7d"),
    "taxonomy-exp-queue": dict(n_gpus=4096, failure_rate=1e-2, checkpoint_interval="30min", checkpoint_cost="2min",
                               work="3d", queue_wait_distribution="exponential", taxonomy=TAXONOMY),
    "weibull-lemons": dict(n_gpus=2048, failure_rate=8e-3, checkpoint_interval="2h", checkpoint_cost="3min",
                           restart_cost="15min", work="5d", weibull_shape=0.7),
    "lemons": dict(n_gpus=512, failure_rate=8e-3, checkpoint_interval="45min", checkpoint_cost="1min",
                   restart_cost="5min", work="10d", lemon_fraction=0.02, lemon_rate_factor=20),
}


@pytest.mark.parametrize("backend", ["numba", "cython"])
@pytest.mark.parametrize("name", SCENARIOS)
def test_no_levels_gives_the_bits_of_before(name, backend):
    sc = rm.Scenario(**SCENARIOS[name], checkpoint_persist=0, fast_checkpoints=())
    ds = rm.simulate(sc, n_jobs=RECORD["n_jobs"], seed=RECORD["seed"], backend=backend)
    recorded = RECORD["results"][name]
    for variable, values in recorded.items():
        now = [float(x).hex() for x in ds[variable].values.ravel()[:len(values)]]
        assert now == values, (name, variable)
    assert float(ds.time_mean.sel(component="persist_wait")) == 0.0
