"""The benchmark's peers implement the same model, and its agreement gate bites."""

import numpy as np
import pytest

import relmodel as rm
from relmodel.bench import check_agreement, ratio_estimate
from relmodel.bench.peers import numpy_timelines, simpy_timelines

pytest.importorskip("simpy")


@pytest.mark.parametrize("peer, n_jobs", [(numpy_timelines, 200_000), (simpy_timelines, 400)])
@pytest.mark.parametrize("gpus", [64, 4096])
def test_peers_agree_with_the_renewal_form(peer, n_jobs, gpus):
    sc = rm.Scenario(n_gpus=gpus, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min",
                     restart_cost="10min", queue_wait="15min", work="3d")
    productive, wall, failures = peer(sc, n_jobs, seed=3)
    ettr, se = ratio_estimate(productive, wall)
    assert abs(ettr - rm.ettr(sc)) < 4 * se
    assert np.all(wall >= sc.failure_free_wall) and failures.dtype.kind == "i"


def run(ettr, se=1e-3):
    return {"ettr": ettr, "ettr_se": se}


def test_agreement_gate():
    check_agreement({"medium": {"numba": run(0.9), "cython": run(0.9), "numpy": run(0.902)}})
    with pytest.raises(SystemExit, match="numpy ETTR"):
        check_agreement({"medium": {"numba": run(0.9), "numpy": run(0.95)}})
    with pytest.raises(SystemExit, match="bit-identical"):
        check_agreement({"medium": {"numba": run(0.9), "cython": run(0.9 + 1e-12)}})
