"""The benchmark's peers implement the same model, and its agreement gate bites."""

import sys
import time

import numpy as np
import pytest

import relmodel as rm
from relmodel._bench import check_agreement, measure_peer, measure_relmodel, ratio_estimate
from relmodel._bench.peers import numpy_timelines, simpy_timelines

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


def test_agreement_gate_passes_runs_within_4_standard_errors_of_the_renewal_form():
    check_agreement({"medium": {"numba": run(0.9), "cython": run(0.9), "numpy": run(0.9039)}}, {"medium": 0.9})


@pytest.mark.parametrize("runs, message", [
    ({"numba": run(0.9), "numpy": run(0.9041)}, "numpy ETTR 0.904100 vs the renewal form"),
    ({"numba": run(0.8959)}, "numba ETTR"),
    ({"numba": run(0.9), "cython": run(0.9 + 1e-12)}, "bit-identical"),
    ({"numba": run(0.9), "numpy": run(float("nan"))}, "numpy ETTR"),
    ({"numba": run(0.9), "numpy": run(0.9, float("nan"))}, "numpy ETTR"),
    ({"numba": run(0.9), "numpy": run(0.9001, 0.0)}, "numpy ETTR"),
])
def test_agreement_gate_stops_the_benchmark(runs, message):
    with pytest.raises(SystemExit, match=message):
        check_agreement({"medium": runs}, {"medium": 0.9})


def test_measured_runs_pass_the_gate_and_a_shifted_reference_fails_it():
    """The gate on real measurements: the kernels and the NumPy peer agree with
    the renewal form; the same runs against a reference moved by 6 of their
    standard errors are stopped."""
    sc = rm.Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min",
                     restart_cost="10min", work="7d")
    runs = {"numba": measure_relmodel(sc, 40_000, "numba", 1), "cython": measure_relmodel(sc, 40_000, "cython", None),
            "numpy": measure_peer(numpy_timelines, sc, 40_000)}
    renewal = float(rm.ettr(sc))
    check_agreement({"medium": runs}, {"medium": renewal})
    shift = 6 * max(r["ettr_se"] for r in runs.values())
    with pytest.raises(SystemExit, match="standard errors"):
        check_agreement({"medium": runs}, {"medium": renewal + shift})


def test_a_chunked_peer_runs_every_job_once_with_its_own_stream_per_chunk():
    from relmodel._bench import chunked

    sc = rm.Scenario(n_gpus=4096, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min",
                     restart_cost="10min", work="3d")
    productive, wall, failures = chunked(numpy_timelines, 300)(sc, 1000, 5)
    assert productive.shape == wall.shape == failures.shape == (1000,)
    # Chunks of equal size draw different numbers, and the last, short chunk is the same
    # as a call of that size with its own seed.
    assert not np.array_equal(wall[:300], wall[300:600])
    np.testing.assert_array_equal(wall[900:], numpy_timelines(sc, 100, [5, 3])[1])


@pytest.mark.parametrize("draws", [1, 7])
def test_the_generator_floor_draws_exponentials(draws):
    """The floor counts accepted ziggurat candidates of at least 1: P(X >= 1) =
    e**-1 a draw, less the 2.2% of words it rejects and leaves unresolved (which
    lie above 1 about as often as any draw). Even and odd counts of draws a job."""
    from relmodel._kernels.rng_numba import exponential_generator_limit

    n_jobs = 30_000
    share = exponential_generator_limit(0, 0, n_jobs, draws, 1024).sum() / (n_jobs * draws)
    assert abs(share - 0.978 * np.exp(-1.0)) < 0.01


def test_interleaved_rounds_keep_each_ones_best_and_say_how_many():
    """Numba on one thread and the NumPy peer alternate; a round can only lower a best time."""
    from relmodel._bench import interleaved_rounds

    sc = rm.Scenario(n_gpus=8, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min",
                     restart_cost="10min", work="7d")
    runs = {"numba-1-thread": {"n_jobs": 2000, "seconds": 1e-12},
            "numpy": {"n_jobs": 1000, "chunk": 300, "seconds": 5.0}}
    calls = []

    def peer(sc_, n, seed):
        calls.append(n)
        return numpy_timelines(sc_, n, seed)

    interleaved_rounds(runs, sc, peer, rounds=2)
    assert runs["numba-1-thread"]["seconds"] == 1e-12  # nothing beats it: kept
    assert runs["numpy"]["seconds"] < 5.0
    assert calls == [300, 300, 300, 100] * 2  # the chunking kept, both rounds
    assert runs["numpy"]["interleaved_rounds"] == runs["numba-1-thread"]["interleaved_rounds"] == 2
    runs["numba"] = {"n_jobs": 2000, "seconds": 1e9}
    interleaved_rounds(runs, sc, peer, rounds=1)
    assert runs["numba"]["seconds"] < 1e9 and runs["numba"]["interleaved_rounds"] == 1  # all threads, too


@pytest.mark.parametrize("backend", ["numba", "cython"])
def test_the_first_result_script_runs_and_prints_its_seconds(backend):
    """The script `bench` times in fresh processes (here on the warm cache, as a user's second run)."""
    import subprocess
    import sys

    from relmodel._bench import FIRST_RESULT, SCENARIOS

    code = FIRST_RESULT.format(fields=SCENARIOS["small"][0], backend=backend)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.split()[-1]) > 0


def test_each_bench_step_ticks_on_a_terminal(monkeypatch):
    """The cold first result compiled for half a minute with nothing on the screen."""
    import io
    import subprocess

    from relmodel import _bench, _feedback

    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    monkeypatch.setattr(_feedback, "stderr_is_terminal", lambda: True)
    monkeypatch.setattr(_feedback, "TICK_S", 0.01)

    def fresh_python(code, folder, **env):  # a fresh process that takes until its line has ticked
        ticks, deadline = out.getvalue().count("bench: a first result"), time.monotonic() + 60
        while out.getvalue().count("bench: a first result") < ticks + 3:
            assert time.monotonic() < deadline, "the step's line never ticked"  # fails, never hangs
            time.sleep(0.01)
        return subprocess.CompletedProcess([], 0, stdout="1.5\n")

    monkeypatch.setattr(_bench, "fresh_python", fresh_python)
    assert _bench.first_result_seconds("numba") == dict(cold_s=1.5, warm_s=1.5)
    assert "bench: a first result with numba in a fresh process, on a cold then a warm cache: 00:" in out.getvalue()


def test_a_bench_without_its_simpy_peer_is_refused_before_any_measuring(monkeypatch):
    """In an install without the bench extra, `relmodel bench --quick` measured for a minute, then ended
    in `ModuleNotFoundError: No module named 'simpy'` (exit 70)."""
    from click.testing import CliRunner

    from relmodel import _extras
    from relmodel._cli import main

    real = _extras.available
    monkeypatch.setattr(_extras, "available", lambda module: module != "simpy" and real(module))
    result = CliRunner().invoke(main, ["bench", "--quick"])
    assert result.exit_code == 1, result.output
    assert result.output == "Error: relmodel bench (its SimPy peer) needs simpy: pip install 'relmodel[bench]'\n"
