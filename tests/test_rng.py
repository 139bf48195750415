"""Philox4x32-10: known answers, uniformity, and streams keyed by construction."""

import numpy as np
import pytest
from numba import njit
from scipy import stats

from relmodel._kernels import _timeline_cy as cy
from relmodel._kernels import rng_numba as nb

U = np.uint64

# Random123's known-answer vectors: (counter, key) -> output.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("counter, key, expected", KNOWN_ANSWERS)
def test_known_answers_both_backends(counter, key, expected):
    numba_out = nb.philox4x32_10(*(U(c) for c in counter), *(U(k) for k in key))
    assert tuple(int(x) for x in numba_out) == expected
    assert cy.philox(*counter, *key) == expected


def draw(module, seed, scenario, job, first, n):
    out = np.empty(n)
    module.uniforms(seed, scenario, job, first, out)
    return out


def test_uniforms_identical_across_backends_and_offsets():
    for seed, scenario, job in [(0, 0, 0), (7, 3, 2**40 + 5), (2**32 - 1, 2**32 - 1, 2**62)]:
        a = draw(nb, seed, scenario, job, 0, 1001)
        assert np.array_equal(a, draw(cy, seed, scenario, job, 0, 1001))
        # Any starting draw gives the same numbers: no hidden stream state.
        assert np.array_equal(a[333:], draw(nb, seed, scenario, job, 333, 1001 - 333))
        assert np.array_equal(a[333:], draw(cy, seed, scenario, job, 333, 1001 - 333))


def test_uniform_layout_is_the_documented_counter():
    """Uniforms 2c and 2c+1 of (seed, scenario, job) come from counter (c lo, c hi, job lo, job hi)."""
    seed, scenario, job, call = 11, 5, 2**33 + 9, 2**32 + 3
    words = nb.philox4x32_10(U(call & 0xFFFFFFFF), U(call >> 32), U(job & 0xFFFFFFFF), U(job >> 32),
                             U(seed), U(scenario))
    expected = [((int(a) >> 5) * 2**26 + (int(b) >> 6) + 1) / 2**53 for a, b in (words[:2], words[2:])]
    assert list(draw(nb, seed, scenario, job, 2 * call, 2)) == expected


def test_uniforms_pass_ks_and_stay_in_open_closed_unit_interval():
    u = draw(nb, 123, 0, 0, 0, 200_000)
    assert u.min() > 0.0 and u.max() <= 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    # Across jobs (first draw of each job) too: the kernel's most common use.
    firsts = np.array([draw(nb, 123, 0, j, 0, 1)[0] for j in range(5000)])
    assert stats.kstest(firsts, "uniform").pvalue > 1e-3
    assert stats.kstest(-np.log(u), "expon").pvalue > 1e-3


def test_distinct_keys_give_distinct_streams():
    """Distinct (seed, scenario) are distinct Philox keys and distinct (job, draw)
    distinct counters; a keyed bijection cannot repeat. Check no collision anyway."""
    streams = [draw(nb, s, c, j, 0, 64) for s in (0, 1) for c in (0, 1, 2**31) for j in (0, 1, 2**32)]
    values = np.concatenate(streams)
    assert np.unique(values).size == values.size


# ---- the timeline kernel's stream: 64-bit words, ziggurat exponentials

def job_draws(module, seed, scenario, job, n_words, n_exponentials):
    words, xs = np.empty(n_words, dtype=np.uint64), np.empty(n_exponentials)
    module.job_draws(seed, scenario, job, words, xs)
    return words, xs


def test_words_are_the_documented_philox_words_across_batches():
    """Word 2c is (r0 << 32) | r1 and word 2c + 1 is (r2 << 32) | r3 of call c,
    whatever batch (`rng_numba.BATCH`) the kernel makes it in."""
    seed, scenario, job = 11, 5, 2**33 + 9
    words, _ = job_draws(nb, seed, scenario, job, 3 * nb.BATCH + 5, 0)
    for c in range(len(words) // 2):
        r = [int(x) for x in nb.philox4x32_10(U(c), U(0), U(job & 0xFFFFFFFF), U(job >> 32), U(seed), U(scenario))]
        assert (int(words[2 * c]), int(words[2 * c + 1])) == ((r[0] << 32) | r[1], (r[2] << 32) | r[3])


@pytest.mark.parametrize("seed, scenario, job", [(0, 0, 0), (7, 3, 2**40 + 5), (2**32 - 1, 2**32 - 1, 2**62)])
def test_words_and_exponentials_are_identical_across_backends(seed, scenario, job):
    """20,000 exponentials take the ziggurat's rare paths (tail and wedge) some
    440 times: they too must agree to the bit."""
    a = job_draws(nb, seed, scenario, job, 1000, 20_000)
    b = job_draws(cy, seed, scenario, job, 1000, 20_000)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_ziggurat_layers_have_equal_area():
    from relmodel._kernels import ziggurat as z

    x, f = z.EDGES, z.DENSITY
    areas = x[1:z.N_LAYERS] * (f[2:] - f[1:z.N_LAYERS])
    base = z.R * np.exp(-z.R) + np.exp(-z.R)  # base rectangle and the tail beyond R
    assert np.allclose(areas, z.V, rtol=2e-12, atol=0) and abs(base - z.V) < 1e-15
    assert x[z.N_LAYERS] == 0.0 and np.all(np.diff(x[1:]) < 0)
    assert np.all(z.ACCEPT[1:] < 2**53) and z.ACCEPT[z.N_LAYERS - 1] == 0


def test_the_first_step_accepts_the_share_the_docs_give():
    """97.8% of words are accepted at once (the module docs, the job model page and lane
    costs rest on it): from the tables exactly, and counted on real words."""
    from relmodel._kernels import ziggurat as z

    assert abs((z.ACCEPT / 2.0**53).mean() - 0.978) < 5e-4
    words, _ = job_draws(nb, 5, 1, 3, 200_000, 0)
    layer, m = words & U(0xFF), words >> U(11)
    assert abs((m < z.ACCEPT[layer]).mean() - 0.978) < 2e-3


@njit
def _read_in_batches(batch, seed, scenario, job, words, xs):
    """`job_draws` with a batch of any size (the lanes read one call, two words, at a time)."""
    lo, hi = nb.split_job(job)
    for n in range(words.size):
        words[n], _ = nb.next_word(batch, n, lo, hi, U(seed), U(scenario))
    pos = 0
    for n in range(xs.size):
        xs[n], pos = nb.next_exponential(batch, pos, lo, hi, U(seed), U(scenario))


@pytest.mark.parametrize("size", [2, 4, 64])
def test_a_batch_of_any_size_reads_the_same_words_and_exponentials(size):
    seed, scenario, job = 3, 9, 2**35 + 1
    expected = job_draws(nb, seed, scenario, job, 300, 5_000)
    words, xs = np.empty(300, dtype=np.uint64), np.empty(5_000)
    _read_in_batches(np.empty(size, dtype=np.uint64), seed, scenario, job, words, xs)
    assert np.array_equal(words, expected[0]) and np.array_equal(xs, expected[1])


def test_ziggurat_exponentials_have_the_exponential_law_tail_included():
    _, xs = job_draws(nb, 123, 0, 0, 0, 400_000)
    assert xs.min() >= 0.0 and stats.kstest(xs, "expon").pvalue > 1e-3
    assert abs(xs.mean() - 1.0) < 5 / np.sqrt(xs.size) and abs(xs.var() - 1.0) < 10 / np.sqrt(xs.size)
    # Beyond R (7.697) every draw comes from the tail path: its count is Poisson(n e^-R) ~ 181.
    from relmodel._kernels.ziggurat import R

    beyond = int((xs > R).sum())
    expected = xs.size * np.exp(-R)
    assert abs(beyond - expected) < 5 * np.sqrt(expected)
    assert stats.kstest(xs[xs > R] - R, "expon").pvalue > 1e-3  # memoryless past R
    # The wedges: the uppermost layers' points, near 0, where the density bends most.
    assert stats.kstest(xs[xs < 0.1], stats.truncexpon(0.1).cdf).pvalue > 1e-3


def test_exp_neg_is_exp_to_half_an_ulp_and_the_same_in_both_backends():
    x = np.concatenate([np.linspace(0.0, 16.0, 20_001), [R_ for R_ in (7.69711747013104972, 1e-300, 5e-324)]])
    numba_values = np.array([nb.exp_neg(v) for v in x])
    cython_values = np.empty_like(x)
    cy.exp_neg_values(x, cython_values)
    assert np.array_equal(numba_values, cython_values)
    assert np.max(np.abs(numba_values / np.exp(-x) - 1.0)) < 5e-16


def test_the_wedge_lines_decide_as_the_exact_test_where_it_is_closest():
    """`wedge_test` (the lines around f first, exp only between them) against
    `wedge_accepts` (exp always): in every layer, candidates across the wedge,
    and deciding words at the lines' bounds and at the exact crossover, where
    y = f(x), one unit either side."""
    from relmodel._kernels import ziggurat

    checked = 0
    for layer in range(1, 256):
        lo, hi = int(ziggurat.ACCEPT[layer]), 2**53 - 1  # candidates the first step rejects
        for m_x in np.linspace(lo, hi, 7).astype(np.int64):
            x = float(m_x) * ziggurat.WIDTH[layer]
            accept_below, reject_from = nb.wedge_lines(x, U(layer))
            lower, upper = ziggurat.DENSITY[layer], ziggurat.DENSITY[layer + 1]
            crossover = (np.exp(-x) - lower) / (upper - lower) * 2.0**53 - 1.0
            for centre in (accept_below, reject_from, crossover):
                for m in range(int(centre) - 2, int(centre) + 3):
                    if 0 <= m < 2**53:
                        w = U((m << 11) | layer)
                        assert nb.wedge_test(x, U(layer), w) == nb.wedge_accepts(x, U(layer), w), (layer, x, m)
                        checked += 1
    assert checked > 15_000


@pytest.mark.parametrize("bound", [1e-9, 0.003, 0.045, 0.69])
def test_the_settling_pass_keeps_exactly_the_jobs_whose_first_exponential_is_below_bound(bound):
    """`timeline_numba.unsettled_jobs` decides in SIMD passes (words 0 and 1, the
    wedge, word 2, the scalar ziggurat past that); the reference is each job's
    first exponential as the one-job path draws it. 200,000 jobs meet every
    pass: 4,419 rejected first words, 2,161 failed wedge tests, 39 word 2s rejected."""
    from relmodel._kernels.timeline_numba import unsettled_jobs

    seed, n, first = 77, 200_000, 3 * 2**32 - 1000  # job numbers across a counter word
    words, xs = np.empty(1, np.uint64), np.empty(1)
    first_draws = np.empty(n)
    for i in range(n):
        nb.job_draws(seed, 4, first + i, words, xs)
        first_draws[i] = xs[0]
    todo = np.empty(n, np.int64)
    # Scratch larger than needed, as the kernel passes it; its spare words must not matter.
    scratch = np.full(4 * n + 64, 2**64 - 1, np.uint64), np.ones(2 * n + 5, np.uint8), np.ones(2 * n + 5, np.int64)
    count = unsettled_jobs(first, n, bound, U(seed), U(4), todo, *scratch)
    assert np.array_equal(todo[:count], first + np.flatnonzero(first_draws < bound))


def test_kernels_that_draw_words_ask_llvm_for_512_bit_vectors():
    """`prefer_wide_vectors`: a function the Philox intrinsic is emitted into carries the attribute
    (LLVM's default on AVX-512 CPUs is 256 bits; 512 is faster: docs: whats-new.md, 'Performance history')."""

    @njit
    def draw(n):
        total = U(0)
        for i in range(n):
            w0, w1 = nb.philox_words(U(i), U(1), U(0), U(7), U(3))
            total ^= w0 ^ w1
        return total

    draw(4)
    assert '"prefer-vector-width"="512"' in draw.inspect_llvm(draw.signatures[0])
