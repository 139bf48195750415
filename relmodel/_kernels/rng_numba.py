"""Philox4x32-10 (Salmon et al., SC'11) for Numba: counter-based, so any thread
can draw job j's k-th number directly, with no shared state between threads.

Key: (seed, scenario). Counter: (call low, call high, job low, job high), where
`call` counts the Philox calls of one job. Words are held in uint64 so the
32x32 -> 64 bit products are exact.

Two views of a job's stream:

* uniforms (`next_uniform`; pipeline, elastic): each call yields two 53-bit
  uniforms on (0, 1];
* 64-bit words (the timeline kernel, stream `engine.RNG_STREAM`): call c
  yields words 2c = (r0 << 32) | r1 and 2c + 1 = (r2 << 32) | r3, read in
  order. A word is a uniform on (0, 1] (`word_to_uniform`) or feeds the
  ziggurat (`next_exponential`). Words are made in batches (`fill_words`), a
  loop over counters that LLVM turns into SIMD code (8 lanes on AVX-512).
"""

import math

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from . import ziggurat
from ._jit import JIT_OPTIONS

_MASK32 = np.uint64(0xFFFFFFFF)
_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint64(0x9E3779B9)
_W1 = np.uint64(0xBB67AE85)
_S32 = np.uint64(32)
_S5 = np.uint64(5)
_S6 = np.uint64(6)
_TWO26 = 67108864.0
_TWO_M53 = 2.0**-53


_WIDE_VECTORS = '"prefer-vector-width"="512"'


def prefer_wide_vectors(function):
    """Let LLVM vectorise `function`'s loops 512 bits wide where the CPU has
    AVX-512 (8 jobs or calls a vector; its default for such CPUs is 256), which
    speeds the lanes up (docs: whats-new.md, 'Performance history'). The same operations on
    each element, so the same bits at any width. llvmlite takes only attributes
    it knows by name, so the string attribute goes into its set directly (were
    that set to change shape, the kernels keep LLVM's default width)."""
    try:
        set.add(function.attributes, _WIDE_VECTORS)
    except TypeError:
        pass


@intrinsic
def _philox4x32_10_inline(typingctx, c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 emitted straight into the caller's LLVM IR, rounds written
    out: LLVM then vectorises a caller's loop over counters or jobs (vpmuludq
    for the 32 x 32 -> 64 bit products). As a called function, inlined or not
    at LLVM's discretion, it stays a scalar call inside big kernels."""
    sig = types.UniTuple(types.uint64, 4)(types.uint64, types.uint64, types.uint64, types.uint64,
                                          types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        prefer_wide_vectors(builder.function)
        i64 = ir.IntType(64)
        mask, s32, m0, m1, w0, w1 = (ir.Constant(i64, int(c)) for c in (_MASK32, _S32, _M0, _M1, _W0, _W1))
        x0, x1, x2, x3, key0, key1 = (builder.and_(a, mask) for a in args)
        # Only the low 32 bits of each word matter until the end: the products'
        # low halves go on unmasked and each multiplicand is masked, which
        # vpmuludq does for free (it reads the low 32 bits). 20% fewer vector ops.
        for round_ in range(10):
            if round_:
                key0 = builder.and_(builder.add(key0, w0), mask)
                key1 = builder.and_(builder.add(key1, w1), mask)
            p0 = builder.mul(m0, builder.and_(x0, mask))
            p1 = builder.mul(m1, builder.and_(x2, mask))
            x0, x1, x2, x3 = (
                builder.xor(builder.xor(builder.lshr(p1, s32), x1), key0),
                p1,
                builder.xor(builder.xor(builder.lshr(p0, s32), x3), key1),
                p0,
            )
        x0, x1, x2, x3 = (builder.and_(a, mask) for a in (x0, x1, x2, x3))
        return context.make_tuple(builder, signature.return_type, (x0, x1, x2, x3))

    return sig, codegen


@njit(**JIT_OPTIONS)
def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Ten Philox rounds on counter (c0..c3) with key (k0, k1); uint64 words < 2**32."""
    return _philox4x32_10_inline(np.uint64(c0), np.uint64(c1), np.uint64(c2), np.uint64(c3),
                                 np.uint64(k0), np.uint64(k1))


@njit(**JIT_OPTIONS)
def words_to_uniform(a, b):
    """27 high bits of a and 26 of b -> x in [0, 2**53); returns (x + 1) / 2**53 in (0, 1]."""
    # Through int64: exact (< 2**27) and far cheaper on x86 than uint64 -> float64.
    return (float(np.int64(a >> _S5)) * _TWO26 + float(np.int64(b >> _S6)) + 1.0) * _TWO_M53


@njit(**JIT_OPTIONS)
def next_uniform(k0, k1, job_lo, job_hi, n_drawn, spare):
    """The job's uniform number `n_drawn`; returns (u, n_drawn + 1, spare)."""
    if n_drawn & 1:
        return spare, n_drawn + 1, spare
    call = np.uint64(n_drawn >> 1)
    r0, r1, r2, r3 = philox4x32_10(call & _MASK32, call >> _S32, job_lo, job_hi, k0, k1)
    return words_to_uniform(r0, r1), n_drawn + 1, words_to_uniform(r2, r3)


_S11 = np.uint64(11)
_LAYER = np.uint64(0xFF)
_ZIG_WIDTH = ziggurat.WIDTH
_ZIG_ACCEPT = ziggurat.ACCEPT
_ZIG_DENSITY = ziggurat.DENSITY
_ZIG_R = ziggurat.R
_WEDGE_SLOPE = ziggurat.WEDGE_SLOPE
_WEDGE_ABOVE = ziggurat.WEDGE_ABOVE
_WEDGE_BELOW = ziggurat.WEDGE_BELOW
_TWO53 = 2.0**53
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 in two parts (Cody and Waite): k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_INV_FACTORIAL = ziggurat.INV_FACTORIAL
BATCH = 16  # words made at once per job: 8 Philox calls, 8 lanes of 64 bits in an AVX-512 register


@njit(inline="always", **JIT_OPTIONS)
def philox_words(call, job_lo, job_hi, k0, k1):
    """The two 64-bit words of one Philox call: (r0 << 32) | r1 and (r2 << 32) | r3."""
    r0, r1, r2, r3 = _philox4x32_10_inline(call & _MASK32, call >> _S32, job_lo, job_hi, k0, k1)
    return (r0 << _S32) | r1, (r2 << _S32) | r3


@njit(inline="always", **JIT_OPTIONS)
def word_to_uniform(w):
    """The high 53 bits of w as (m + 1) / 2**53, on (0, 1]."""
    return (float(np.int64(w >> _S11)) + 1.0) * _TWO_M53


@njit(inline="always", **JIT_OPTIONS)
def fill_words(words, first_call, job_lo, job_hi, k0, k1):
    """words[:] = the job's words 2 * first_call onward, the even ones in the
    first half and the odd ones in the second (two plain store streams, which
    LLVM vectorises better than one interleaved stream; `next_word` reads them so)."""
    half = words.size >> 1
    for i in range(half):
        w0, w1 = philox_words(first_call + np.uint64(i), job_lo, job_hi, k0, k1)
        words[i] = w0
        words[half + i] = w1


@njit(inline="always", **JIT_OPTIONS)
def first_words(word0, word1, look, first_job, k0, k1, bound):
    """word0[i], word1[i] = words 0 and 1 of job first_job + i (one Philox call
    each, SIMD across jobs); look[i] = 0 where word 0 alone makes the job's
    first exponential at least `bound` (the ziggurat's first step accepts it), else 1."""
    zero = np.uint64(0)
    for i in range(word0.size):
        job = np.uint64(first_job + i)
        w0, w1 = philox_words(zero, job & _MASK32, job >> _S32, k0, k1)
        word0[i] = w0
        word1[i] = w1
        x, accepted, _ = ziggurat_candidate(w0)
        look[i] = not (accepted and x >= bound)


@njit(inline="always", **JIT_OPTIONS)
def next_word(words, pos, job_lo, job_hi, k0, k1):
    """Word `pos` of a job, from batches of words.size words (a power of two, at
    least 2; `fill_words`, refilled when pos enters a new batch). Returns (word, pos + 1)."""
    i = pos & (words.size - 1)
    if i == 0:
        fill_words(words, np.uint64(pos >> 1), job_lo, job_hi, k0, k1)
    return words[(i >> 1) + (i & 1) * (words.size >> 1)], pos + 1


@njit(inline="always", **JIT_OPTIONS)
def exp_neg(x):
    """exp(-x) for 0 <= x <= 16 to 4e-16 relative, in plain arithmetic: no libm
    call (which would cost the hot loop its registers), no loop (which stops LLVM
    from vectorising around it), the same operations in both backends."""
    k = math.floor(x * _LOG2E + 0.5)
    r = (k * _LN2_HI - x) + k * _LN2_LO  # -x = -k ln 2 + r, |r| <= ln(2) / 2
    # Taylor series of exp(r) to r**12 / 12! (truncation below 2e-16), by Horner.
    p = _INV_FACTORIAL[12]
    p = p * r + _INV_FACTORIAL[11]
    p = p * r + _INV_FACTORIAL[10]
    p = p * r + _INV_FACTORIAL[9]
    p = p * r + _INV_FACTORIAL[8]
    p = p * r + _INV_FACTORIAL[7]
    p = p * r + _INV_FACTORIAL[6]
    p = p * r + _INV_FACTORIAL[5]
    p = p * r + _INV_FACTORIAL[4]
    p = p * r + _INV_FACTORIAL[3]
    p = p * r + _INV_FACTORIAL[2]
    p = p * r + _INV_FACTORIAL[1]
    p = p * r + _INV_FACTORIAL[0]
    return p / float(np.int64(1) << np.int64(k))


@njit(inline="always", **JIT_OPTIONS)
def ziggurat_candidate(w):
    """(x, accepted, layer) of the ziggurat's first step on word w."""
    layer = w & _LAYER
    m = w >> _S11
    return float(np.int64(m)) * _ZIG_WIDTH[layer], m < _ZIG_ACCEPT[layer], layer


@njit(inline="always", **JIT_OPTIONS)
def next_exponential(words, pos, job_lo, job_hi, k0, k1):
    """The job's next standard exponential from word `pos` on, by the 256-layer
    ziggurat (`ziggurat`): 97.8% of words are accepted at once; the others go on
    in `ziggurat_rejected`. Returns (x, pos after the words used)."""
    w, pos = next_word(words, pos, job_lo, job_hi, k0, k1)
    x, accepted, layer = ziggurat_candidate(w)
    if accepted:
        return x, pos
    return ziggurat_rejected(x, layer, words, pos, job_lo, job_hi, k0, k1)


@njit(inline="always", **JIT_OPTIONS)
def wedge_accepts(x, layer, w):
    """The ziggurat's wedge test: candidate x of layer `layer` (>= 1) is taken if
    word w's uniform point in the layer's height falls below f(x) (the exact test;
    `wedge_lines` decides most of them first with no exp)."""
    lower = _ZIG_DENSITY[layer]
    return lower + word_to_uniform(w) * (_ZIG_DENSITY[layer + 1] - lower) < exp_neg(x)


@njit(inline="always", **JIT_OPTIONS)
def wedge_lines(x, layer):
    """The wedge test of candidate x (layer >= 1) by the two lines around f
    (`ziggurat.WEDGE_*`), as bounds on the deciding word's 53-bit integer m
    (w >> 11, its uniform (m + 1) / 2**53): m below the first accepts, m from
    the second on rejects, in between only `wedge_accepts` decides (about 1
    word in 10,000). The lines' 1e-12 margin dwarfs every rounding here (under
    1e-15 of the test's y), so the decisions are `wedge_accepts`' own."""
    lower = _ZIG_DENSITY[layer]
    height = _ZIG_DENSITY[layer + 1] - lower
    slope = _WEDGE_SLOPE[layer]
    accept_below = np.floor((_WEDGE_BELOW[layer] - slope * x - lower) / height * _TWO53) - 4.0
    reject_from = np.ceil((_WEDGE_ABOVE[layer] - slope * x - lower) / height * _TWO53) + 4.0
    return accept_below, reject_from


@njit(inline="always", **JIT_OPTIONS)
def wedge_test(x, layer, w):
    """`wedge_accepts`' decision, by the lines first (`wedge_lines`): the exp only where they leave it open."""
    accept_below, reject_from = wedge_lines(x, layer)
    m = float(np.int64(w >> _S11))
    return m < accept_below or (m < reject_from and wedge_accepts(x, layer, w))


@njit(**JIT_OPTIONS)
def ziggurat_rejected(x, layer, words, pos, job_lo, job_hi, k0, k1, base=0.0):
    """The exponential whose first candidate (x, layer) the ziggurat's first
    step rejected, from the job's words `pos` on: the tail (layer 0: R plus a
    fresh exponential) or the wedge test (the next word decides against f),
    then fresh candidates until one is accepted. `base`: the tails already
    passed (R each) by a draw resumed midway (`lanes_numba`). Returns (x, pos
    after the words used)."""
    while True:
        if layer == 0:
            base += _ZIG_R
        else:
            w, pos = next_word(words, pos, job_lo, job_hi, k0, k1)
            if wedge_test(x, layer, w):
                return base + x, pos
        w, pos = next_word(words, pos, job_lo, job_hi, k0, k1)
        x, accepted, layer = ziggurat_candidate(w)
        if accepted:
            return base + x, pos


@njit(inline="always", **JIT_OPTIONS)
def next_uniform_draw(words, pos, job_lo, job_hi, k0, k1):
    """The job's draw `pos` as a uniform on (0, 1]. Returns (u, pos + 1)."""
    w, pos = next_word(words, pos, job_lo, job_hi, k0, k1)
    return word_to_uniform(w), pos


@njit(**JIT_OPTIONS)
def split_job(job):
    j = np.uint64(job)
    return j & _MASK32, j >> _S32


# Lazily compiled (no signature): tests and benchmarks only, kept off the simulate start-up path.
@njit(parallel=True, **JIT_OPTIONS)
def uniforms(seed, scenario, job, first, out):
    """out[i] = uniform number first + i of (seed, scenario, job); for tests and streams."""
    k0 = np.uint64(seed)
    k1 = np.uint64(scenario)
    job_lo, job_hi = split_job(np.int64(job))
    for i in prange(out.size):
        u, _, spare = next_uniform(k0, k1, job_lo, job_hi, (first + i) & ~1, 0.0)
        out[i] = spare if (first + i) & 1 else u


@njit(**JIT_OPTIONS)
def job_draws(seed, scenario, job, words, xs):
    """words[:] = the first words of (seed, scenario, job), and xs[:] = the
    exponentials drawn from word 0 on, as the timeline kernel reads them; for tests."""
    k0 = np.uint64(seed)
    k1 = np.uint64(scenario)
    job_lo, job_hi = split_job(np.int64(job))
    batch = np.empty(BATCH, np.uint64)
    for n in range(words.size):
        words[n], _ = next_word(batch, n, job_lo, job_hi, k0, k1)
    pos = 0
    for n in range(xs.size):
        xs[n], pos = next_exponential(batch, pos, job_lo, job_hi, k0, k1)


@njit(parallel=True, **JIT_OPTIONS)
def exponential_generator_limit(seed, scenario, n_jobs, draws_per_job, block_size):
    """A floor of the generator: per job, the ceil(draws_per_job / 2) Philox calls
    its draws need and the ziggurat's first step on each word (the table
    lookups, the candidate's conversion and product), SIMD across the jobs of a
    block. Each accepted candidate is looked at once: counted where it is at
    least 1, an integer count that stays in vector registers (a float sum per
    job cannot, and would add more to the floor than the draw itself). The 2.2%
    of words that the ziggurat rejects are not resolved (that would only add
    time), so no kernel drawing these exponentials from this stream is
    faster. Returns each block's count."""
    k0 = np.uint64(seed)
    k1 = np.uint64(scenario)
    n_blocks = (n_jobs + block_size - 1) // block_size
    n_calls = (draws_per_job + 1) // 2
    counts = np.zeros(n_blocks, np.int64)
    for b in prange(n_blocks):
        first = b * block_size
        n = min(n_jobs, first + block_size) - first
        count = 0
        for call in range(n_calls):
            c = np.uint64(call)
            if 2 * call + 1 < draws_per_job:
                for i in range(n):
                    job = np.uint64(first + i)
                    w0, w1 = philox_words(c, job & _MASK32, job >> _S32, k0, k1)
                    x0, ok0, _ = ziggurat_candidate(w0)
                    x1, ok1, _ = ziggurat_candidate(w1)
                    count += (ok0 and x0 >= 1.0) + (ok1 and x1 >= 1.0)
            else:  # the last call of an odd count: its second word is not a draw
                for i in range(n):
                    job = np.uint64(first + i)
                    w0, _ = philox_words(c, job & _MASK32, job >> _S32, k0, k1)
                    x0, ok0, _ = ziggurat_candidate(w0)
                    count += ok0 and x0 >= 1.0
        counts[b] = count
    return counts
