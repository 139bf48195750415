"""The plain path in lanes (`_kernels.lanes_numba`) gives every job the bits of
the one-job path (`simulate_job`, and the Cython twin), over the whole valid
space of the rows it takes: one exponential rate, no categories, a fixed queue,
no levels (the jobs that the first word does not settle)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relmodel as rm
from relmodel._kernels import lanes_numba, rng_numba, timeline_numba, ziggurat
from relmodel._kernels.layout import (
    BLOCK_SIZE,
    J_CAPPED,
    N_JOB_FIELDS,
    P_CKPT,
    P_INTERVAL,
    P_N_FULL,
    P_QUEUE,
    P_QUEUE_EXP,
    P_REMAINDER,
    P_RESTART,
    P_SHAPE,
    P_WORK,
)
from relmodel._engine import pack, run
from relmodel.testing.strategies import scenarios


def takes_lanes(packed) -> bool:
    """The row goes to the lanes (the condition in `run_blocks`)."""
    return (packed.rate_value.size == 1 and packed.rate_value[0] > 0.0 and packed.n_categories == 0
            and packed.n_levels == 0 and packed.params[0, P_SHAPE] == 1.0 and packed.params[0, P_QUEUE_EXP] == 0.0)


def lane_jobs(packed, first, n, seed, max_failures):
    p = packed.params[0]
    out = np.full((n, J_CAPPED + 1), np.nan)
    lanes_numba.run_block(p[P_WORK], p[P_INTERVAL], p[P_CKPT], p[P_RESTART], p[P_QUEUE], p[P_N_FULL],
                          p[P_REMAINDER], packed.rate_value[0], np.uint64(seed), np.uint64(0),
                          np.arange(first, first + n), max_failures, out)
    return out


def one_job_path(packed, n, seed, max_failures):
    """Per-job fields from `run_jobs` (one job at a time, no lanes)."""
    return run(packed, n, seed, "numba", keep_jobs=True, max_failures=max_failures).jobs[0, :, :J_CAPPED + 1]


plain = scenarios(laws=("exponential",), queue_wait_distributions=("fixed",), extreme=True)


@settings(max_examples=60)
@given(sc=plain, seed=st.integers(0, 2**32 - 1), n=st.integers(1, 200), max_failures=st.sampled_from([1, 2, 7, 5000]))
def test_each_job_in_lanes_has_the_bits_of_the_one_job_path(sc, seed, n, max_failures):
    packed = pack(sc)
    if packed.rate_value[0] == 0.0:
        return  # no failures: such a row settles all its jobs and never reaches the lanes
    reference = one_job_path(packed, n, seed, max_failures)
    got = lane_jobs(packed, 0, n, seed, max_failures)
    assert np.array_equal(got, reference, equal_nan=True)


@settings(max_examples=25)
@given(sc=plain, seed=st.integers(0, 2**32 - 1), max_failures=st.sampled_from([3, 100, 100_000]))
def test_the_kernels_sums_with_lanes_are_the_cython_twins(sc, seed, max_failures):
    packed = pack(sc)
    a = run(packed, 2 * BLOCK_SIZE + 17, seed, "numba", max_failures=max_failures)
    b = run(packed, 2 * BLOCK_SIZE + 17, seed, "cython", max_failures=max_failures)
    assert np.array_equal(a.stats, b.stats) and np.array_equal(a.hist, b.hist)


@pytest.mark.parametrize("n_gpus", [1024, 16384])
def test_the_reference_scenarios_go_to_the_lanes_and_agree(n_gpus):
    sc = rm.Scenario(n_gpus=n_gpus, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min",
                     restart_cost="10min", work="7d", queue_wait="3min")
    packed = pack(sc)
    assert takes_lanes(packed)
    n, first = 300, 5_000_000_000  # job numbers past 2**32: both words of the counter's job half
    reference = np.empty((1, n, N_JOB_FIELDS))
    timeline_numba.run_jobs(*packed.kernel_args(), np.uint64(11), np.zeros(1, np.uint64), np.int64(first),
                            np.int64(100_000), reference, np.empty((1, n, 0, 4)), np.empty((1, n, 0, 3)))
    assert np.array_equal(lane_jobs(packed, first, n, 11, 100_000), reference[0, :, :J_CAPPED + 1])
    a, b = run(packed, 3000, 2, "numba"), run(packed, 3000, 2, "cython")
    assert np.array_equal(a.stats, b.stats) and np.array_equal(a.hist, b.hist)


def ziggurat_branches(words):
    """(tails, wedge tests the lines around f leave open) as the ziggurat reads these words in order."""
    tails = open_tests = 0
    pos = 0
    while pos < words.size - 1:
        w = int(words[pos])
        layer, m = w & 0xFF, w >> 11
        pos += 1
        if m < int(ziggurat.ACCEPT[layer]):
            continue
        if layer == 0:
            tails += 1
            continue
        x = m * ziggurat.WIDTH[layer]
        u = ((int(words[pos]) >> 11) + 1) * 2.0**-53
        pos += 1
        lower = ziggurat.DENSITY[layer]
        y = lower + u * (ziggurat.DENSITY[layer + 1] - lower)
        slope = ziggurat.WEDGE_SLOPE[layer]
        below, above = ziggurat.WEDGE_BELOW[layer] - slope * x, ziggurat.WEDGE_ABOVE[layer] - slope * x
        open_tests += not y < below and not y >= above
    return tails, open_tests


def test_jobs_that_meet_the_ziggurats_tail_and_an_open_wedge_test_in_lanes():
    """The lanes resolve the ziggurat's rare branches (a tail, a wedge test that
    needs exp) as the one-job path does: jobs picked for having both early on."""
    sc = rm.Scenario(n_gpus=16384, failure_rate=6.5e-3, checkpoint_interval="1h", checkpoint_cost="5min",
                     restart_cost="10min", work="14d")
    packed = pack(sc)
    seed, words, xs = 5, np.empty(64, np.uint64), np.empty(0)
    picked = []
    for job in range(200_000):
        rng_numba.job_draws(seed, 0, job, words, xs)
        tails, open_tests = ziggurat_branches(words)
        if tails and open_tests:
            picked.append(job)
        if len(picked) == 3:
            break
    assert len(picked) == 3
    for job in picked:
        reference = np.empty((1, 1, N_JOB_FIELDS))
        timeline_numba.run_jobs(*packed.kernel_args(), np.uint64(seed), np.zeros(1, np.uint64), np.int64(job),
                                np.int64(10**6), reference, np.empty((1, 1, 0, 4)), np.empty((1, 1, 0, 3)))
        assert np.array_equal(lane_jobs(packed, job, 1, seed, 10**6)[0], reference[0, 0, :J_CAPPED + 1])
