"""The array layer: scenarios to kernel arrays, chunked kernel runs folded in a
fixed order, and the fold to estimates. No job loops here; no labels either
(`simulate` adds them)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np

from ._kernels import backend as get_backend
from ._kernels.layout import (
    BLOCK_SIZE, CATEGORY_COLUMNS, COMPONENT_STATS, J_WALL, LEVEL_COLUMNS, L_WRITES, N_BINS,
    N_CAT_STATS, N_JOB_FIELDS, N_LEVEL_STATS, N_PARAMS, N_STATS, P_CKPT, P_FF_CKPT, P_FF_WAIT, P_INTERVAL, P_N_FULL,
    P_QUEUE, P_QUEUE_EXP, P_REMAINDER, P_RESTART, P_SCALE_FACTOR, P_SHAPE, P_WORK, S_CAPPED, S_EFF, S_EFF_SQ,
    S_FAILURES, S_FAILURES_SQ, S_N, S_PRODUCTIVE, S_PRODUCTIVE_SQ, S_PRODUCTIVE_WALL, S_WALL, S_WALL_SQ, V_COST,
    V_PERSIST, V_RESTART, V_SURVIVES,
)
from ._errors import ParameterError
from ._checks import check_flag, check_integer, check_memory
from ._failures import category_cdf, job_rate_table
from ._level_pattern import NO_LEVELS, failure_free_job, position_levels
from ._scenario import Scenario
from ._units import short_repr

# A first exponential draw this far above the job's cumulative hazard cannot be
# a failure once rounding is accounted for (see the kernels' fast path).
_HAZARD_MARGIN = 1.0 + 1e-9
CHUNK_ITEMS = 256  # work items (blocks of BLOCK_SIZE jobs) per kernel call
# A Numba thread takes about GROUP_ITEMS consecutive work items at once (its
# scratch allocated once for them; the jobs their blocks leave unsettled share
# the lanes), and at least 4 groups where the call has the items. No bit depends on it.
GROUP_ITEMS = 32


def work_groups(n_items: int, n_threads: int) -> int:
    """Groups of consecutive work items that a kernel call's threads share: a multiple of
    the thread count (prange gives each thread as many; the kernel sizes them within one
    item of each other), at least 4 a thread, at most about GROUP_ITEMS items each."""
    threads = max(1, n_threads)
    return threads * max(4, -(-n_items // (threads * GROUP_ITEMS)))


# The random stream, named in every Dataset and store; a change of stream is a new name
# (and a new relmodel version): the same seed gives other numbers.
RNG_STREAM = "relmodel-words-2"
RNG_SCHEME = (
    f"{RNG_STREAM}: Philox4x32-10, key = (seed, scenario index), counter = (call lo, call hi, job lo, job hi); "
    "64-bit words 2c = (r0 << 32) | r1 and 2c + 1 = (r2 << 32) | r3 of call c, read in order; "
    "uniforms (m + 1) / 2**53 from a word's high 53 bits m; exponentials by a 256-layer ziggurat "
    "(Marsaglia and Tsang 2000) on one word, the next ones on its rare rejections"
)
COMPONENTS = ("productive", *COMPONENT_STATS)
_NO_CATEGORIES = (np.zeros(0), np.zeros(0), np.zeros(0))
MAX_JUMP_CYCLE = 1 << 10  # longer cycles step (the kernels scan a cycle's table per failure)
_NO_CYCLE = (np.zeros(0), np.zeros(0, np.int64))


class KernelInputs(NamedTuple):
    """The scenario arrays the timeline kernels take first (``run_blocks``, ``run_jobs``), named, in
    their order: ``kernel.run_jobs(*inputs, seed, ...)``. `Packed` describes each."""

    params: np.ndarray
    rate_cdf: np.ndarray
    rate_value: np.ndarray
    rate_hazard: np.ndarray
    rate_offset: np.ndarray
    cat_cdf: np.ndarray
    cat_restart: np.ndarray
    cat_queue: np.ndarray
    cat_offset: np.ndarray
    lv_mult: np.ndarray
    lv_table: np.ndarray
    lv_offset: np.ndarray
    cyc_value: np.ndarray
    cyc_value_offset: np.ndarray
    cyc_index: np.ndarray
    cyc_index_offset: np.ndarray


@dataclasses.dataclass(frozen=True)
class Packed:
    """Kernel inputs for the points of a scenario grid (rows in scenario index order)."""

    params: np.ndarray  # (n, N_PARAMS)
    rate_cdf: np.ndarray  # flat; rows rate_offset[i]:rate_offset[i+1]
    rate_value: np.ndarray  # failures per hour
    rate_hazard: np.ndarray  # fast-path threshold on the first exponential draw
    rate_offset: np.ndarray  # (n + 1,)
    failure_free_wall: np.ndarray  # (n,)
    # Failure taxonomy: rows cat_offset[i]:cat_offset[i+1]; empty without one.
    cat_cdf: np.ndarray
    cat_restart: np.ndarray  # h
    cat_queue: np.ndarray  # h (mean, when queue waits are exponential)
    cat_offset: np.ndarray  # (n + 1,)
    # Checkpoint levels: rows lv_offset[i]:lv_offset[i+1], fastest first, the
    # scenario's own last; empty for a row with one level that does not persist.
    lv_mult: np.ndarray  # int64: interval / the row's fastest interval
    lv_table: np.ndarray  # (rows, N_LEVEL_PARAMS)
    lv_offset: np.ndarray  # (n + 1,)
    failure_free_levels: np.ndarray  # (n, n_levels, N_LEVEL_STATS): the failure-free job's writes and waits
    # Cycle tables (`level_cycle`) of level rows whose writes never wait: rows
    # cyc_value_offset[i]:cyc_value_offset[i+1] and likewise for cyc_index; empty rows step.
    cyc_value: np.ndarray
    cyc_value_offset: np.ndarray
    cyc_index: np.ndarray
    cyc_index_offset: np.ndarray

    @property
    def n_categories(self) -> int:
        """Columns of the per-category sums: the most categories of any row."""
        return int(np.max(np.diff(self.cat_offset), initial=0))

    @property
    def n_levels(self) -> int:
        """Columns of the per-level sums: the most levels of any row (0: none has levels)."""
        return int(np.max(np.diff(self.lv_offset), initial=0))

    @property
    def has_levels(self) -> np.ndarray:
        """Per row: whether it runs the level path of the kernels."""
        return np.diff(self.lv_offset) > 0

    def kernel_args(self) -> KernelInputs:
        """The kernels' scenario arguments, taken from these fields by name."""
        return KernelInputs(**{name: getattr(self, name) for name in KernelInputs._fields})


def pack(sc: Scenario) -> Packed:
    return pack_points(sc.points())


def pack_points(points) -> Packed:
    """Kernel inputs for scalar scenarios, one row each, in the order given."""
    rows, cdfs, values, hazards, cats, levels, ff_walls, ff_levels, cycles = [], [], [], [], [], [], [], [], []
    for p in points:
        shape = p.weibull_shape
        scale_factor = 1.0 / math.gamma(1.0 + 1.0 / shape)
        queue_exp = p.queue_wait_distribution == "exponential" and p.queue_wait > 0
        free = failure_free_job(p)
        mult, table, base, n_full, remainder = free.mult, free.table, free.base, free.n_full, free.remainder
        ff_ckpt, ff_level, ff_wait = free.checkpoint, free.level_stats, free.wait
        if mult.size:
            written = ff_level[:, L_WRITES] > 0
            ckpt = float(table[written, V_COST].max(initial=0.0))  # the longest write a job must get through
        else:
            ckpt = p.checkpoint_cost
        row = np.zeros(N_PARAMS)
        row[[P_INTERVAL, P_CKPT, P_RESTART, P_QUEUE, P_WORK, P_N_FULL, P_REMAINDER, P_SHAPE,
             P_SCALE_FACTOR, P_QUEUE_EXP, P_FF_CKPT, P_FF_WAIT]] = (
            base, ckpt, p.restart_cost, p.queue_wait, p.work,
            n_full, remainder, shape, scale_factor, float(queue_exp), ff_ckpt, ff_wait)
        rows.append(row)
        ff_walls.append(free.wall)
        ff_levels.append(ff_level)
        levels.append((mult, table))
        cycles.append(level_cycle(base, mult, table) if mult.size else _NO_CYCLE)
        cdf, lam = job_rate_table(p.n_nodes, p.failure_rate, p.lemon_fraction, p.lemon_rate_factor)
        # The failure-free runtime (compute, writes and waits; no queue without failures).
        # inf past float64: no fast path; times no failures, NaN on a row never simulated (beyond_float_range)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            runtime = ff_walls[-1] if mult.size else (
                n_full * (p.checkpoint_interval + p.checkpoint_cost) + remainder if n_full else remainder)
            hazard = (runtime * lam / scale_factor) ** shape  # cumulative hazard over the job
        cdfs.append(cdf)
        values.append(lam)
        hazards.append(hazard * _HAZARD_MARGIN)
        taxonomy = p.taxonomy
        cats.append(_NO_CATEGORIES if taxonomy is None else (
            category_cdf(taxonomy), np.array([c.restart_cost for c in taxonomy]),
            np.array([c.queue_wait for c in taxonomy])))
    params = np.ascontiguousarray(rows, dtype=np.float64).reshape(-1, N_PARAMS)
    n_levels = max((m.size for m, _ in levels), default=0)
    ff_level_stats = np.zeros((len(rows), n_levels, N_LEVEL_STATS))
    for i, ff in enumerate(ff_levels):
        if ff is not None:
            ff_level_stats[i, :ff.shape[0]] = ff
    return Packed(
        params=params,
        rate_cdf=np.concatenate(cdfs),
        rate_value=np.concatenate(values),
        rate_hazard=np.concatenate(hazards),
        rate_offset=np.concatenate([[0], np.cumsum([len(c) for c in cdfs])]).astype(np.int64),
        failure_free_wall=np.array(ff_walls, dtype=np.float64),
        cat_cdf=np.concatenate([c[0] for c in cats]) if cats else np.zeros(0),
        cat_restart=np.concatenate([c[1] for c in cats]) if cats else np.zeros(0),
        cat_queue=np.concatenate([c[2] for c in cats]) if cats else np.zeros(0),
        cat_offset=np.concatenate([[0], np.cumsum([len(c[0]) for c in cats])]).astype(np.int64),
        lv_mult=np.concatenate([m for m, _ in levels]).astype(np.int64) if levels else NO_LEVELS[0],
        lv_table=np.ascontiguousarray(np.concatenate([t for _, t in levels])) if levels else NO_LEVELS[1],
        lv_offset=np.concatenate([[0], np.cumsum([m.size for m, _ in levels])]).astype(np.int64),
        failure_free_levels=ff_level_stats,
        cyc_value=np.concatenate([c[0] for c in cycles]) if cycles else _NO_CYCLE[0],
        cyc_value_offset=np.concatenate([[0], np.cumsum([c[0].size for c in cycles])]).astype(np.int64),
        cyc_index=np.concatenate([c[1] for c in cycles]).astype(np.int64) if cycles else _NO_CYCLE[1],
        cyc_index_offset=np.concatenate([[0], np.cumsum([c[1].size for c in cycles])]).astype(np.int64),
    )


def level_cycle(base: float, mult: np.ndarray, table: np.ndarray):
    """The cycle tables the kernels jump with from one failure to the next, or
    empty ones (then they step position by position) where a write can wait
    for the previous one of its level to persist, or the cycle is long or
    passes float64's range.

    Over one cycle of M positions (M = lcm of the multiples; the pattern of
    levels repeats after it): value[r] = the path value, compute and writes,
    at offset r = 0..M, summed in position order; index = for each level the
    last offset <= r of it (0: none), then for each level the count of its
    offsets 1..r, each (levels, M + 1), flattened.
    """
    cycle = math.lcm(*mult.tolist())
    if cycle > MAX_JUMP_CYCLE or np.any(table[:, V_PERSIST] > mult * base):
        return _NO_CYCLE
    offsets = np.arange(cycle + 1)
    level = position_levels(mult, offsets)
    value = np.zeros(cycle + 1)
    with np.errstate(over="ignore"):  # a cycle past float64 has no table to jump with: it steps
        for r in range(1, cycle + 1):  # sequential, so the sums are the ones the tables promise
            value[r] = value[r - 1] + base + table[level[r], V_COST]
    if not np.isfinite(value[-1]):
        return _NO_CYCLE
    last = np.zeros((mult.size, cycle + 1), np.int64)
    count = np.zeros((mult.size, cycle + 1), np.int64)
    for lv in range(mult.size):
        mine = (level == lv) & (offsets > 0)
        last[lv] = np.maximum.accumulate(np.where(mine, offsets, 0))
        count[lv] = np.cumsum(mine)
    return value, np.concatenate([last.ravel(), count.ravel()])


@dataclasses.dataclass
class Totals:
    """Folded kernel output per scenario row."""

    stats: np.ndarray  # (n, N_STATS) sums, folded in block order
    hist: np.ndarray | None  # (n, N_BINS + 1) counts; None once read (`estimate` by blocks)
    jobs: np.ndarray | None  # (n, n_jobs, N_JOB_FIELDS) when kept
    cat_stats: np.ndarray  # (n, n_categories, N_CAT_STATS) sums, folded in block order
    cat_jobs: np.ndarray | None  # (n, n_jobs, n_categories, N_CAT_STATS) when kept
    level_stats: np.ndarray  # (n, n_levels, N_LEVEL_STATS) sums, folded in block order
    level_jobs: np.ndarray | None  # (n, n_jobs, n_levels, N_LEVEL_STATS) when kept
    backend: str = ""  # the kernel that ran: "numba", "cython", or "cython then numba" (`BackgroundCompile`)


# Jobs per scenario point: 2**40 (10^12) is days of kernel time per point, so more
# is a typing mistake (2**64) rather than a run; the job counter has room for 2**64.
MAX_JOBS = 2**40
DEFAULT_MAX_FAILURES = 100_000


def check_run_args(n_jobs, seed, max_failures) -> tuple[int, int, int]:
    """(n_jobs, seed, max_failures) as Python ints, or a ScenarioError naming the bad one."""
    return (check_integer("n_jobs", n_jobs, 1, MAX_JOBS), check_integer("seed", seed, 0, 2**32 - 1),
            check_integer("max_failures", max_failures, 1, 2**62))


# float64 values a run holds per row of a block in flight (kernel inputs, sums,
# histogram, estimates), per row of its result (estimates, as summarised, joined and
# labelled: three copies), and per kept job (the job fields and the integer copies
# simulate makes). A block's histograms and their quantile scratch: twice its values.
_ROW_VALUES = N_PARAMS + N_STATS + (N_BINS + 1) + 64
_RESULT_VALUES = 3 * (N_STATS + 16)
_JOB_VALUES = N_JOB_FIELDS + 2


def run_memory(n_rows: int, n_jobs: int, n_categories: int, keep_jobs: bool, n_levels: int = 0) -> int:
    """Bytes a run of `n_rows` scenario rows allocates at its peak (`estimate`): a block
    of rows in flight, every row's estimates, and every kept job.

    Parameters
    ----------
    n_rows, n_jobs : int
        Scenario rows, and jobs per row.
    n_categories, n_levels : int
        Failure categories and checkpoint levels of a row.
    keep_jobs : bool
        Whether every job is kept (all rows then run as one block).

    Returns
    -------
    int
        Bytes.
    """
    extra = n_categories * N_CAT_STATS + n_levels * N_LEVEL_STATS
    in_flight = n_rows if keep_jobs else min(n_rows, ROW_BLOCK)
    need = 8 * (2 * in_flight * (_ROW_VALUES + extra) + n_rows * (_RESULT_VALUES + 3 * extra)
                + 2 * CHUNK_ITEMS * (N_BINS + 1))  # a kernel call's histograms, and their sum
    if keep_jobs:
        need += 8 * n_rows * n_jobs * (_JOB_VALUES + extra)
    return need


def check_run_memory(n_rows: int, n_jobs: int, n_categories: int, keep_jobs: bool, n_levels: int = 0,
                     per_row: int = 0):
    """Refuse up front a run that would pass the memory budget (`run_memory`, plus `per_row`
    bytes a row the caller keeps beside it), naming what to change."""
    need = run_memory(n_rows, n_jobs, n_categories, keep_jobs, n_levels) + n_rows * per_row
    if keep_jobs:
        check_memory("keep_jobs", need, f"{n_jobs} jobs x {n_rows} scenario point(s) kept job by job")
    check_memory("scenario", need, f"the estimates of {n_rows} scenario points (a study, `relmodel sweep`, "
                                   "writes them chunk by chunk to disk)")


def row_extents(sc: Scenario) -> tuple[int, int]:
    """(failure categories, checkpoint levels) of a row of grid `sc`, known before it is packed."""
    return len(sc.taxonomy or ()), len(sc.fast_checkpoints) + 1 if sc.fast_checkpoints else int(sc.has_levels)


def check_grid_memory(sc: Scenario, n_jobs: int, keep_jobs: bool = False, per_row: int = 0):
    """`check_run_memory` for the grid `sc`, before any of it is packed."""
    n_categories, n_levels = row_extents(sc)
    check_run_memory(sc.size, n_jobs, n_categories, keep_jobs, n_levels, per_row)


def check_threads(n_threads) -> int | None:
    """None (Numba's setting), or a thread count Numba has."""
    if n_threads is None:
        return None
    import numba

    return check_integer("n_threads", n_threads, 1, numba.config.NUMBA_NUM_THREADS)


@contextmanager
def numba_threads(n_threads):
    """Run with `n_threads` Numba threads (None: as configured); results do not depend on it."""
    n_threads = check_threads(n_threads)
    if n_threads is None:
        yield
        return
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(n_threads)
    try:
        yield
    finally:
        numba.set_num_threads(before)


# P(a job finishes under max_failures) below which its row is not simulated.
CERTAINTY = 1e-6


def failure_free_stretches(packed: Packed) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row: (the slowest job failure rate per hour, the longest piece of compute
    with its checkpoint write (and a durable segment with its persistence, times
    the share of failures that fall back to it), the shortest restart, the
    failure-free runtime), in hours.

    A job must get through each such stretch without a failure, so at rate lam a
    stretch L takes e^(lam L) attempts on average (exponential failures).
    """
    p = packed.params
    with np.errstate(over="ignore"):  # a write near the float limit: inf, as long as any stretch can be
        segment = np.where(p[:, P_N_FULL] > 0, p[:, P_INTERVAL] + p[:, P_CKPT], 0.0)
        longest = np.maximum(segment, p[:, P_REMAINDER])
        runtime = p[:, P_N_FULL] * segment + p[:, P_REMAINDER]
    restart = p[:, P_RESTART].copy()
    for row in np.flatnonzero(np.diff(packed.cat_offset)):
        restart[row] = packed.cat_restart[packed.cat_offset[row]:packed.cat_offset[row + 1]].min()
    # With levels: the pieces are the fastest interval and a write (P_CKPT holds the largest
    # written), a restore may restart from a fast level, and the runtime includes waits.
    runtime = np.where(packed.has_levels, packed.failure_free_wall, runtime)
    for row in np.flatnonzero(packed.has_levels):
        table = packed.lv_table[packed.lv_offset[row]:packed.lv_offset[row + 1]]
        restart[row] = min(restart[row], table[:-1, V_RESTART].min(initial=np.inf))
        # A failure falls back to the durable level when no fast level survives it (always, without
        # one): those failures alone come at lam * deep, and a job gets past a durable checkpoint only
        # through its segment (the compute to it, its write and its persistence) with none of them
        # between (or by running to its end free of them). So the stretch counts deep times its length.
        mult = packed.lv_mult[packed.lv_offset[row]:packed.lv_offset[row + 1]]
        deep = 1.0 - table[-2, V_SURVIVES] if table.shape[0] > 1 else 1.0
        with np.errstate(over="ignore"):  # a durable segment past float64: inf, the stretch it is
            durable = mult[-1] * p[row, P_INTERVAL] + table[-1, V_COST] + table[-1, V_PERSIST]
        if deep > 0:  # else no failure falls back that far (and 0 * inf is no stretch)
            longest[row] = max(longest[row], deep * min(durable, runtime[row]))
    lam = np.minimum.reduceat(packed.rate_value, packed.rate_offset[:-1])
    return lam, longest, restart, runtime


def certainly_capped(packed: Packed, max_failures: int) -> np.ndarray:
    """Rows whose every job would hit `max_failures`: not worth simulating.

    On exponential failures at rate lam a job gets through a failure-free
    stretch of runtime L after Geometric(e^(-lam L)) attempts, each failure but
    the last one counted, so it finishes under the cap with probability at most
    max_failures * e^(-lam L). Two such stretches bound it
    (`failure_free_stretches`): the longest piece of compute, and a restart,
    which a job avoids only by never failing (probability e^(-lam T) over its
    failure-free runtime T). Rows where a bound is below CERTAINTY (at the
    slowest rate of a lemon mixture) are such rows: simulating them costs
    n_jobs * max_failures events and buys only truncated times. Weibull rows
    are always simulated.
    """
    lam, longest, restart, runtime = failure_free_stretches(packed)
    log_cap = math.log(max_failures / CERTAINTY)
    with np.errstate(invalid="ignore", over="ignore"):  # 0 * inf (no failures, an endless stretch): NaN, not capped
        through_compute = lam * longest > log_cap
        through_restarts = (lam * restart > log_cap + math.log(2.0)) & (lam * runtime > math.log(2.0 / CERTAINTY))
    return (packed.params[:, P_SHAPE] == 1.0) & (through_compute | through_restarts)


def beyond_float_range(packed: Packed) -> np.ndarray:
    """Rows whose job timeline float64 cannot hold: not simulated (NaN estimates, no job capped).

    A row is beyond the range when its failure-free wall, or the cost of one
    failure (a piece of compute with its checkpoint write, then the longest
    queue wait and restart), passes float64's largest value (about 1.8e308 h).
    The kernels sum each job's times as deviations from the failure-free job,
    which there read inf - inf.

    Parameters
    ----------
    packed : Packed
        The kernel inputs (`pack`).

    Returns
    -------
    numpy.ndarray
        bool per row.
    """
    p = packed.params
    restart, queue = p[:, P_RESTART].copy(), p[:, P_QUEUE].copy()
    for row in np.flatnonzero(np.diff(packed.cat_offset)):
        rows = slice(packed.cat_offset[row], packed.cat_offset[row + 1])
        restart[row], queue[row] = packed.cat_restart[rows].max(), packed.cat_queue[rows].max()
    for row in np.flatnonzero(packed.has_levels):
        restart[row] = max(restart[row], packed.lv_table[packed.lv_offset[row]:packed.lv_offset[row + 1],
                                                         V_RESTART].max())
    with np.errstate(over="ignore"):
        one_failure = p[:, P_INTERVAL] + p[:, P_CKPT] + restart + queue
    return ~(np.isfinite(packed.failure_free_wall) & np.isfinite(one_failure))


# Backend "auto": the Cython twin (no JIT, serial, bit for bit the Numba kernel) for
# runs of up to this many events (jobs plus expected failures): about as long serial
# as importing Numba and loading its cached kernels takes. Longer runs take Numba
# (parallel). While Numba's cache is cold (a compile takes a minute or so; docs:
# benchmarks.md), a longer run starts on the twin, compiles Numba in a background
# thread (the twin's loop releases the GIL) and goes on with Numba from the first
# chunk after the compile: the same bits, and no wait with nothing done.
AUTO_CYTHON_EVENTS = 3e7
_NUMBA_MODULE = "relmodel._kernels.timeline_numba"
_NUMBA_ENTRY_POINTS = ("run_blocks", "run_jobs")


def expected_events(packed: Packed, n_jobs: int, max_failures: int = DEFAULT_MAX_FAILURES) -> float:
    """Kernel work of a run: jobs plus their expected failures (exponential failures,
    at each row's fastest job rate, so an upper estimate for lemon mixtures).

    Parameters
    ----------
    packed : the kernel inputs.
    n_jobs : jobs per row.
    max_failures : the cap on failures per job.

    Returns
    -------
    float
        Events in all; rows `certainly_capped` count max_failures a job.
    """
    p = packed.params
    lam = np.maximum.reduceat(packed.rate_value, packed.rate_offset[:-1])
    per_job = expected_failures(lam, p[:, P_N_FULL], p[:, P_INTERVAL], p[:, P_CKPT], p[:, P_REMAINDER],
                                p[:, P_RESTART])
    per_job = np.minimum(np.nan_to_num(per_job, nan=max_failures, posinf=max_failures), max_failures)
    return float(n_jobs * np.sum(1.0 + per_job + stepped_positions(packed)))


def stepped_positions(packed: Packed) -> np.ndarray:
    """Checkpoint positions a job steps through one by one, per row: every position of the
    fastest level in level rows without cycle tables (`level_cycle`); 0 in rows that jump
    from one failure to the next.

    Parameters
    ----------
    packed : the kernel inputs.

    Returns
    -------
    numpy.ndarray
        Positions per job, by row (float64).
    """
    stepping = packed.has_levels & (np.diff(packed.cyc_value_offset) == 0)
    return np.where(stepping, packed.params[:, P_N_FULL], 0.0)


def expected_failures(rate, n_full, interval, checkpoint_cost, remainder, restart):
    """Return the expected failures of a job with exponential failures (arrays broadcast).

    Each of `n_full` pieces of `interval` + `checkpoint_cost` hours, and the
    final `remainder`, is retried until it runs through: e^(rate x) - 1 failed
    attempts on a piece of x hours; restarts of `restart` hours that fail too
    multiply that by e^(rate restart).

    Parameters
    ----------
    rate : float or numpy.ndarray
        Job failures per hour.
    n_full : float or numpy.ndarray
        Full intervals of work.
    interval, checkpoint_cost, remainder, restart : float or numpy.ndarray
        Hours.

    Returns
    -------
    numpy.ndarray
        Failures per job; inf where they overflow, 0 without failures.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        # No full piece adds none, however long its write (0 * inf would read NaN, then 0 in all).
        full = np.where(n_full > 0, n_full * np.expm1(rate * (interval + checkpoint_cost)), 0.0)
        per_piece = full + np.expm1(rate * remainder)
        return np.where(per_piece > 0, per_piece * np.exp(rate * restart), 0.0)


def numba_ready() -> bool:
    """Whether the Numba timeline kernels run without compiling (compiled in this
    process, or in the cache). Imports Numba (quick), not the kernels.

    Returns
    -------
    bool
    """
    from ._feedback import kernels_cached

    return kernels_cached(_NUMBA_MODULE, _NUMBA_ENTRY_POINTS[:1])


def cython_available() -> bool:
    """Whether the Cython twin is built (it is in every install from source or wheel).

    Returns
    -------
    bool
    """
    try:
        get_backend("cython")
    except ImportError:
        return False
    return True


def resolve_backend(backend: str, packed: Packed, n_jobs: int, max_failures: int = DEFAULT_MAX_FAILURES,
                    keep_jobs: bool = False) -> str:
    """The kernel backend a run starts on: `backend` itself, or for "auto" the faster
    to answer of the two (they give the same bits, so only the time differs).

    "auto" takes the Cython twin for runs of up to AUTO_CYTHON_EVENTS events
    (`expected_events`) and while Numba's cache is cold (`run` then switches to
    Numba once a background compile ends); otherwise Numba.

    Parameters
    ----------
    backend : "numba", "cython" or "auto".
    packed : the kernel inputs of the run.
    n_jobs : jobs per row.
    max_failures : the cap on failures per job.
    keep_jobs : whether the run keeps every job (its cost grows alike on both).

    Returns
    -------
    str
        "numba" or "cython".
    """
    if backend != "auto":
        return backend
    if not cython_available():
        return "numba"
    events = expected_events(packed, n_jobs, max_failures)
    if events <= AUTO_CYTHON_EVENTS:
        return "cython"
    return "numba" if numba_ready() else "cython"


class BackgroundCompile:
    """The Numba timeline kernels compiled (or loaded) in a daemon thread; `ready`
    says when they can run. A failed compile leaves the run on the Cython twin."""

    def __init__(self):
        import threading

        self._done = threading.Event()
        self.error = None
        threading.Thread(target=self._compile, name="relmodel-numba-compile", daemon=True).start()

    def _compile(self):
        try:
            get_backend("numba")
        except Exception as err:  # noqa: BLE001 - reported by `ready`'s caller, never raised in the thread
            self.error = err
        finally:
            self._done.set()

    def ready(self) -> bool:
        """Whether the compile has ended without an error."""
        return self._done.is_set() and self.error is None


_background: list[BackgroundCompile] = []  # the process's one background compile, once started


def background_compile() -> BackgroundCompile:
    """The process's background compile of the Numba kernels: started (with a note) on the first call,
    the same one after, so that the runs of a plan or a study share it."""
    if not _background:
        from ._feedback import note

        note("compiling relmodel's simulation kernels in the background (about a minute, once: they are cached); "
             "running on the Cython twin meanwhile, the same bits")
        _background.append(BackgroundCompile())
    return _background[0]


def run(packed: Packed, n_jobs: int, seed: int, backend: str = "numba", *, scenario_keys=None,
        max_failures: int = DEFAULT_MAX_FAILURES, keep_jobs: bool = False, n_threads=None, progress=None,
        chunk_items: int = CHUNK_ITEMS) -> Totals:
    """Simulate n_jobs jobs of every row of `packed`, folded in a fixed order.

    Rows `certainly_capped` are not simulated (unless keep_jobs): their jobs
    all count as capped and their sums stay 0 (no job, so NaN estimates).
    Rows `beyond_float_range` are not simulated either, no job counted as
    capped (their kept jobs, with keep_jobs, are the kernels' raw times). The
    first Numba run of a process whose cache is cold says it is compiling (one
    line on stderr, on a terminal: `relmodel._feedback.announce_compile`).

    Parameters
    ----------
    packed : Packed
        The kernel inputs (`pack`).
    n_jobs : int
        Jobs per row.
    seed : int
        The seed; the same bits whatever the backend, threads or chunking.
    backend : str
        "numba", "cython" or "auto" (`resolve_backend`).
    scenario_keys : array of int, optional
        Keys of the rows' random streams (default 0..n-1); a sub-grid run with
        its global indices gives the same bits as the whole grid.
    max_failures : int
        A job stops (and counts as capped) at this many failures.
    keep_jobs : bool
        Also return every job's fields.
    n_threads : int, optional
        Numba threads for the call.
    progress : callable, optional
        Called with the number of jobs finished after each chunk; chunks are
        then made small enough for some 100 calls (the bits do not depend on it).
    chunk_items : int
        Work items (blocks of BLOCK_SIZE jobs) per kernel call.

    Returns
    -------
    Totals
    """
    n_jobs, seed, max_failures = check_run_args(n_jobs, seed, max_failures)
    keep_jobs = check_flag("keep_jobs", keep_jobs)
    backend, kernel, compiling = _start_backend(backend, packed, n_jobs, max_failures, keep_jobs)
    n_rows = packed.params.shape[0]
    check_run_memory(n_rows, n_jobs, packed.n_categories, keep_jobs, packed.n_levels)
    args = packed.kernel_args() + (np.uint64(seed), _stream_keys(scenario_keys, n_rows))
    n_blocks = -(-n_jobs // BLOCK_SIZE)
    sums = _Sums(n_rows, packed.n_categories, packed.n_levels, chunk_items)
    hopeless = np.zeros(n_rows, dtype=bool) if keep_jobs else certainly_capped(packed, max_failures)
    sums.stats[hopeless, S_CAPPED] = n_jobs
    skipped = hopeless | beyond_float_range(packed)
    todo = np.flatnonzero(~skipped)
    if progress is not None and skipped.any():
        progress(int(skipped.sum()) * n_jobs)
    if progress is not None and chunk_items == CHUNK_ITEMS:
        chunk_items = _moving_chunk_items(backend, n_threads, todo.size * n_blocks)
    ran = []  # the backends that ran chunks, in order
    with numba_threads(n_threads if backend == "numba" or compiling else None):
        for start in range(0, todo.size * n_blocks, chunk_items):
            if compiling is not None and compiling.ready():  # the same bits from here on, in parallel
                backend, kernel, compiling = "numba", get_backend("numba"), None
            if not ran or ran[-1] != backend:
                ran.append(backend)
            item = np.arange(start, min(start + chunk_items, todo.size * n_blocks), dtype=np.int64)
            row_index, block = np.divmod(item, n_blocks)
            sums.run_chunk(kernel, args, todo, row_index, block, n_jobs, max_failures, kernel_threads(backend))
            if progress is not None:
                progress(int(np.minimum(n_jobs - block * BLOCK_SIZE, BLOCK_SIZE).sum()))
        jobs = cat_jobs = level_jobs = None
        if keep_jobs:
            jobs = np.empty((n_rows, n_jobs, N_JOB_FIELDS))
            cat_jobs = np.empty((n_rows, n_jobs, packed.n_categories, N_CAT_STATS))
            level_jobs = np.empty((n_rows, n_jobs, packed.n_levels, N_LEVEL_STATS))
            kernel.run_jobs(*args, np.int64(0), np.int64(max_failures), jobs, cat_jobs, level_jobs)
    return Totals(stats=sums.stats, hist=sums.hist, jobs=jobs, cat_stats=sums.cat_stats, cat_jobs=cat_jobs,
                  level_stats=sums.level_stats, level_jobs=level_jobs, backend=" then ".join(ran) or backend)


def _start_backend(backend: str, packed: Packed, n_jobs: int, max_failures: int, keep_jobs: bool):
    """(backend, its kernel module, the Numba kernels compiling in the background or None)."""
    requested = backend
    backend = resolve_backend(backend, packed, n_jobs, max_failures, keep_jobs)
    compiling = None
    if requested == "auto" and backend == "cython" and not keep_jobs and (
            expected_events(packed, n_jobs, max_failures) > AUTO_CYTHON_EVENTS):
        compiling = background_compile()
    if backend == "numba":
        from ._feedback import announce_compile, note_once
        from ._kernels import how_to_build_twin, source_checkout

        if requested == "auto" and source_checkout() is not None and not cython_available():
            note_once(f"relmodel runs from its source checkout, where the Cython twin is not built, so Numba "
                      f"compiles first; {how_to_build_twin()}")
        announce_compile(_NUMBA_MODULE, _NUMBA_ENTRY_POINTS if keep_jobs else _NUMBA_ENTRY_POINTS[:1],
                         "simulation kernels")
    return backend, get_backend(backend), compiling  # after the note: the Numba kernel compiles at import


def _stream_keys(scenario_keys, n_rows: int) -> np.ndarray:
    """The rows' random-stream keys as uint64 (default 0..n_rows-1), checked."""
    keys = np.arange(n_rows, dtype=np.uint64) if scenario_keys is None else np.asarray(scenario_keys)
    if keys.shape != (n_rows,) or keys.dtype.kind not in "iu" or keys.min() < 0 or keys.max() >= 2**32:
        raise ParameterError("scenario_keys", f"need {n_rows} integers in [0, 2**32) (got {scenario_keys!r})")
    return keys.astype(np.uint64)


def _moving_chunk_items(backend: str, n_threads, n_items: int) -> int:
    """Chunks for a bar that moves: ~100 of them, each still a work item per thread."""
    threads = 1
    if backend == "numba":
        import numba

        threads = numba.get_num_threads() if n_threads is None else n_threads
    return int(min(CHUNK_ITEMS, max(threads, -(-n_items // 100))))


class _Sums:
    """A run's sums by row, and the buffers a kernel call fills before they are folded in."""

    def __init__(self, n_rows: int, n_cat: int, n_lv: int, chunk_items: int):
        self.stats = np.zeros((n_rows, N_STATS))
        self.hist = np.zeros((n_rows, N_BINS + 1), dtype=np.int64)
        self.cat_stats = np.zeros((n_rows, n_cat, N_CAT_STATS))
        self.level_stats = np.zeros((n_rows, n_lv, N_LEVEL_STATS))
        self.chunk_stats = np.empty((chunk_items, N_STATS))
        self.chunk_cat = np.empty((chunk_items, n_cat, N_CAT_STATS))
        self.chunk_level = np.empty((chunk_items, n_lv, N_LEVEL_STATS))

    def run_chunk(self, kernel, args, todo, row_index, block, n_jobs: int, max_failures: int, threads: int):
        """Run one chunk of work items (blocks `block` of rows `todo[row_index]`) and fold its sums in."""
        row, m = todo[row_index], row_index.size
        item_hist, hist_rows, chunk_hist = chunk_histograms(row_index, todo, threads)
        kernel.run_blocks(*args, row, block, n_jobs, max_failures, self.chunk_stats[:m], item_hist, chunk_hist,
                          self.chunk_cat[:m], self.chunk_level[:m], work_groups(m, threads))
        # Sums in item order, so each row's blocks are added in block order whatever
        # the chunking; counts are integers, so any order will do.
        np.add.at(self.stats, row, self.chunk_stats[:m])
        if self.cat_stats.shape[1]:
            np.add.at(self.cat_stats, row, self.chunk_cat[:m])
        if self.level_stats.shape[1]:
            np.add.at(self.level_stats, row, self.chunk_level[:m])
        np.add.at(self.hist, hist_rows, chunk_hist.sum(axis=0))


def chunk_histograms(row_index: np.ndarray, todo: np.ndarray, threads: int):
    """Histograms a kernel call counts its jobs into: (item_hist, hist_rows, zeroed counts).

    Item i counts into counts[thread, item_hist[i]], and slot s of the counts
    belongs to scenario row hist_rows[s]. One slot per thread and row of the
    chunk (its rows are consecutive in `todo`) when that is the smaller: a
    chunk of few rows and many jobs, the common run, then zeroes and hands back
    a few histograms instead of one per item. Otherwise one slot per item,
    with thread index 0 (items never share a slot, so threads
    never do). Counts are integers: who adds them, in what order, does not matter.
    """
    rows = row_index[-1] - row_index[0] + 1
    if threads * rows <= row_index.size:
        item_hist = row_index - row_index[0]
        return item_hist, todo[row_index[0]:row_index[-1] + 1], np.zeros((threads, rows, N_BINS + 1), np.int64)
    return (np.arange(row_index.size, dtype=np.int64), todo[row_index],
            np.zeros((1, row_index.size, N_BINS + 1), np.int64))


def kernel_threads(backend: str) -> int:
    """Threads a kernel call may run on: Numba's current count, or 1 (the serial Cython twin)."""
    if backend != "numba":
        return 1
    import numba

    return numba.get_num_threads()


def _mean_var(total, total_sq, n):
    # n = 0 for rows not simulated: NaN; squares past float64 (waits near its limit): inf or NaN.
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mean = total / n
        var = np.maximum(total_sq - total * mean, 0.0) / (n - 1)
    return mean, var


def histogram_quantiles(hist: np.ndarray, levels) -> np.ndarray:
    """Quantiles of y in (0, 1] from counts in N_BINS equal bins plus an atom at y = 1.

    Linear within a bin; returns shape (n, len(levels)).
    """
    counts = hist.astype(np.float64)
    cum = np.cumsum(counts, axis=1)
    total = cum[:, -1:]
    out = np.empty((hist.shape[0], len(levels)))
    for j, level in enumerate(levels):
        target = level * total
        # The first bin reaching the target; for level 0, the first bin with a count (the least
        # y seen lies in it), not bin 0 whatever it holds: y = 0 would be an infinite wall.
        reached = np.where(target > 0, cum < target, cum <= 0)
        b = np.minimum(reached.sum(axis=1), N_BINS)
        rows = np.arange(hist.shape[0])
        before = np.where(b > 0, cum[rows, np.maximum(b - 1, 0)], 0.0)
        inside = counts[rows, b]
        with np.errstate(invalid="ignore", divide="ignore"):
            frac = np.where(inside > 0, (target[:, 0] - before) / inside, 0.0)
        out[:, j] = np.where(b == N_BINS, 1.0, (b + np.clip(frac, 0.0, 1.0)) / N_BINS)
    return out


_QUANTILE_ROWS = 64


def wall_quantiles(totals: Totals, packed: Packed, quantiles) -> np.ndarray:
    """Wall-time quantiles per row, shape (n_rows, len(quantiles)).

    A row without a capped job reads its quantiles from the histogram of
    failure-free wall / wall (linear within a bin). A capped job's wall is
    truncated, and there the histogram's bins (equal in failure-free wall /
    wall) are far too coarse for walls many times the failure-free one: a row
    with a capped job gets the exact quantiles of its jobs' (truncated) walls
    where the jobs are kept (`numpy.quantile`, linear interpolation), else NaN
    (`n_capped` > 0 flags it). So does a quantile in the histogram's first
    bin, walls past N_BINS failure-free walls, which has no upper edge.

    Parameters
    ----------
    totals : Totals
        The run's folded output (`run`); its `jobs` where they were kept.
    packed : Packed
        The kernel inputs the run took.
    quantiles : sequence of float
        Levels in [0, 1].

    Returns
    -------
    numpy.ndarray
        Hours; NaN where no job was simulated, or where a job was capped and the jobs were not kept.
    """
    n = totals.stats[:, S_N]
    levels = [1.0 - q for q in quantiles]
    # A few rows at a time: the temporaries stay small enough to be reused, not mapped afresh each time.
    y = np.concatenate([histogram_quantiles(totals.hist[i:i + _QUANTILE_ROWS], levels)
                        for i in range(0, len(n), _QUANTILE_ROWS)] or [np.empty((0, len(levels)))])
    y[n <= 0] = np.nan
    with np.errstate(divide="ignore"):
        out = packed.failure_free_wall[:, None] / y
    # Beyond the histogram: a capped row, or a quantile in its first bin (walls past N_BINS
    # failure-free walls, with no upper edge to interpolate from).
    beyond = (totals.stats[:, S_CAPPED] > 0)[:, None] | (y < 1.0 / N_BINS)
    out[beyond] = np.nan
    rows = beyond.any(axis=1)
    if totals.jobs is not None and rows.any():
        exact = np.quantile(totals.jobs[rows, :, J_WALL], quantiles, axis=1).T
        out[rows] = np.where(beyond[rows], exact, out[rows])
    return out


# Rows packed, run and summarised at a time when jobs are not kept: a grid's
# histograms and packing then take this many rows' memory (16 MiB of histograms),
# whatever its size. The bits do not depend on it (each row has its own stream).
ROW_BLOCK = 1024


def estimate(points, n_jobs: int, seed: int, backend: str, *, scenario_keys=None, quantiles=(0.05, 0.5, 0.95),
             max_failures: int = DEFAULT_MAX_FAILURES, keep_jobs: bool = False, n_threads=None,
             progress=None) -> tuple[Totals, dict[str, np.ndarray]]:
    """The one path from scalar scenarios to estimates: packed, simulated (`run`) and
    summarised (`summarize`), ROW_BLOCK rows at a time unless jobs are kept.
    `simulate`, the command line's streamed table and a study's chunks all go through it.

    Parameters
    ----------
    points : iterable of Scenario
        Scalar scenarios, one row each.
    n_jobs, seed, backend
        As for `run`.
    scenario_keys : sequence of int, optional
        Each point's index in its grid (its random stream's key); default 0, 1, ...
    quantiles : tuple of float, default (0.05, 0.5, 0.95)
        The wall-time quantiles to estimate.
    max_failures, keep_jobs, n_threads, progress
        As for `run`.

    Returns
    -------
    totals : Totals
        The folded kernel output; where the rows ran in more than one block,
        their sums only (no histograms: `summarize` has read them).
    estimates : dict of str to numpy.ndarray
        `summarize`'s estimates, one row a point.
    """
    points = iter(points)
    keys = None if scenario_keys is None else np.asarray(scenario_keys)
    parts, start = [], 0
    while (block := list(itertools.islice(points, None if keep_jobs else ROW_BLOCK))) or not parts:
        packed = pack_points(block)
        stop = start + len(block)
        totals = run(packed, n_jobs, seed, backend,
                     scenario_keys=np.arange(start, stop) if keys is None else keys[start:stop],
                     max_failures=max_failures, keep_jobs=keep_jobs, n_threads=n_threads, progress=progress)
        est = summarize(totals, packed, quantiles)
        parts.append((totals if keep_jobs else dataclasses.replace(totals, hist=None), est))  # histograms read
        start = stop
    if keys is not None and keys.shape != (start,):
        raise ParameterError("scenario_keys", f"need {start} integers in [0, 2**32), one a point "
                                              f"(got {short_repr(scenario_keys)})")
    return parts[0] if len(parts) == 1 else _joined(parts)


def _joined(parts: list[tuple[Totals, dict]]) -> tuple[Totals, dict[str, np.ndarray]]:
    """A run's blocks as one run: sums and estimates in row order, the level dim
    as wide as one run would make it (a narrower block's extra levels: no writes)."""
    n_levels = max(t.level_stats.shape[1] for t, _ in parts)

    def widened(a, fill):
        extra = np.broadcast_to(fill, (a.shape[0], n_levels - a.shape[1], *a.shape[2:]))
        return np.concatenate([a, extra], axis=1)

    by_level = {f"{c.name}_by_level" for c in LEVEL_COLUMNS}
    with np.errstate(invalid="ignore", divide="ignore"):  # as `summarize`: 0 / n, NaN where no job ran
        est = {name: np.concatenate([widened(e[name], 0.0 / t.stats[:, S_N, None]) if name in by_level else e[name]
                                     for t, e in parts]) for name in parts[0][1]}
    ran = []
    for t, _ in parts:
        ran += [b for b in t.backend.split(" then ") if not ran or ran[-1] != b]
    totals = Totals(stats=np.concatenate([t.stats for t, _ in parts]), hist=None, jobs=None,
                    cat_stats=np.concatenate([t.cat_stats for t, _ in parts]), cat_jobs=None,
                    level_stats=np.concatenate([widened(t.level_stats, 0.0) for t, _ in parts]),
                    level_jobs=None, backend=" then ".join(ran))
    return totals, est


def summarize(totals: Totals, packed: Packed, quantiles=(0.05, 0.5, 0.95)) -> dict[str, np.ndarray]:
    """Estimates per row: ETTR both ways with standard errors, wall quantiles, breakdown."""
    s = totals.stats
    n = s[:, S_N]
    work = packed.params[:, P_WORK]
    ffw = packed.failure_free_wall
    # Wall, productive and eff are sums of deviations from the failure-free job.
    d_wall, var_wall = _mean_var(s[:, S_WALL], s[:, S_WALL_SQ], n)
    d_prod, var_prod = _mean_var(s[:, S_PRODUCTIVE], s[:, S_PRODUCTIVE_SQ], n)
    d_eff, var_eff = _mean_var(s[:, S_EFF], s[:, S_EFF_SQ], n)
    fail, var_fail = _mean_var(s[:, S_FAILURES], s[:, S_FAILURES_SQ], n)
    # Deviations of about -work (capped jobs that did little) can round a hair below 0.
    wall, prod = ffw + d_wall, np.maximum(work + d_prod, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = (s[:, S_PRODUCTIVE_WALL] - s[:, S_PRODUCTIVE] * d_wall) / (n - 1)
        ratio = prod / wall
        # Delta method for a ratio of means.
        ratio_var = np.maximum(var_prod - 2 * ratio * cov + ratio**2 * var_wall, 0.0)
        ratio_se = np.sqrt(ratio_var / n) / wall
    with np.errstate(invalid="ignore", divide="ignore"):
        by_category = {f"{c.name}_by_category": totals.cat_stats[:, :, col] / n[:, None]
                       for col, c in enumerate(CATEGORY_COLUMNS)}
        breakdown = [s[:, k] / n for k in COMPONENT_STATS.values()]
        by_level = {f"{c.name}_by_level": totals.level_stats[:, :, col] / n[:, None]
                    for col, c in enumerate(LEVEL_COLUMNS)}
    by_category["unproductive_by_category"] = (
        by_category["lost_by_category"] + by_category["restart_by_category"] + by_category["queue_by_category"])
    return {
        **by_category,
        **by_level,
        "ettr": ratio,
        "ettr_se": ratio_se,
        "ettr_job_mean": np.clip(work / ffw + d_eff, 0.0, 1.0),
        "ettr_job_mean_se": np.sqrt(var_eff / n),
        "wall_mean": wall,
        "wall_se": np.sqrt(var_wall / n),
        "wall_quantile": wall_quantiles(totals, packed, quantiles),
        "failures_mean": fail,
        "failures_se": np.sqrt(var_fail / n),
        "time_mean": np.stack([prod] + breakdown, axis=1),
        "n_capped": s[:, S_CAPPED].astype(np.int64),
    }
