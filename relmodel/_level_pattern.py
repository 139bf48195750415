"""A job's pattern of checkpoint levels: which level each position writes, the kernels'
level table, and the job without failures (its writes, waits and wall).

The failure-free wall is defined here once: `Scenario.failure_free_wall` and the
kernels' inputs both come from `failure_free_job`, whose sums are the kernels' own,
operation for operation (docs: the job model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._errors import ScenarioError
from ._kernels.layout import L_WAIT, L_WRITES, N_LEVEL_PARAMS, N_LEVEL_STATS, V_COST, V_PERSIST, V_RESTART, V_SURVIVES

NO_LEVELS = (np.zeros(0, np.int64), np.zeros((0, N_LEVEL_PARAMS)))  # a row with one level that does not persist
# Positions of the fastest level that `failure_free_levels` steps through one by one
# (only when a persisting write can make the next one wait): about a second.
MAX_WAITING_POSITIONS = 2_000_000
MAX_LEVEL_CYCLE = 1 << 20  # lcm of the level multiples: the pattern of levels repeats after it


def split_work(work, interval):
    """Split work into floor(work / interval) full intervals and the remainder.

    An exact multiple stays one (relative tolerance 1e-9), so "7d" of work at
    "5min" intervals is 2016 full intervals and no remainder, not 2015 and a
    sliver that floating point left over. Arrays broadcast.

    Parameters
    ----------
    work : float or numpy.ndarray
        Work in hours.
    interval : float or numpy.ndarray
        Checkpoint interval in hours.

    Returns
    -------
    n_full : int or numpy.ndarray
        Full intervals (each followed by a checkpoint).
    rest : float or numpy.ndarray
        The final partial interval in hours.
    """
    work, interval = np.broadcast_arrays(np.asarray(work, dtype=float), np.asarray(interval, dtype=float))
    n_full = np.floor(work / interval)
    remainder = work - n_full * interval
    tol = 1e-9 * interval
    # A remainder below -tol: the division rounded up; take one interval back.
    back = (remainder < 0) & (n_full > 0) & (-remainder >= tol)
    n_full = np.where(back, n_full - 1, n_full)
    remainder = np.where(back, work - n_full * interval, remainder)
    # Within tol of 0 or of a whole interval: an exact multiple.
    up = ~back & (interval - remainder < tol)
    n_full = np.where(up, n_full + 1, n_full)
    # (Only after a full interval: with none, the remainder is the whole work, however
    # small beside an interval far beyond it.)
    remainder = np.where(up | (~back & (remainder < tol) & (n_full > 0)), 0.0, remainder)
    if n_full.ndim == 0:
        return int(n_full), float(remainder)
    return n_full, remainder


def level_table(p) -> tuple[np.ndarray, np.ndarray]:
    """The kernels' level table of a scalar scenario: (multiples of the fastest
    interval, (levels, N_LEVEL_PARAMS) parameters), fastest first, the scenario's
    own checkpoint last; empty when it has one level that does not persist."""
    levels = p.level_table()
    if levels is None:
        return NO_LEVELS
    mult = levels["mult"]
    if math.lcm(*mult.tolist()) > MAX_LEVEL_CYCLE:
        raise ScenarioError("fast_checkpoints", f"the level intervals repeat their pattern only every "
                            f"{math.lcm(*mult.tolist())} fastest intervals (at most {MAX_LEVEL_CYCLE}); choose "
                            "intervals that divide one another")
    table = np.zeros((mult.size, N_LEVEL_PARAMS))
    for column, name in ((V_COST, "cost"), (V_RESTART, "restart"), (V_PERSIST, "persist"), (V_SURVIVES, "survives")):
        table[:, column] = levels[name]
    return mult, table


def position_levels(mult: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The level written at each position: the most durable one due there."""
    level = np.zeros(positions.shape, dtype=np.int64)
    for lv in range(1, mult.size):
        level[positions % mult[lv] == 0] = lv
    return level


def failure_free_levels(n_full: int, base: float, mult: np.ndarray, table: np.ndarray):
    """The failure-free job of a level row: (its checkpoint time, per-level stats
    (levels, N_LEVEL_STATS) with writes and waits, its total wait).

    Waits, when a persisting write can make the next one of its level wait,
    are stepped through with the kernels' own clock operations, so a job
    without failures gives the same bits here as there.
    """
    n_levels = mult.size
    stats = np.zeros((n_levels, N_LEVEL_STATS))
    cycle = math.lcm(*mult.tolist())
    full, part = divmod(n_full, cycle)
    per_cycle = np.bincount(position_levels(mult, np.arange(1, cycle + 1)), minlength=n_levels)
    writes = full * per_cycle + np.bincount(position_levels(mult, np.arange(1, part + 1)), minlength=n_levels)
    stats[:, L_WRITES] = writes
    ckpt = 0.0
    with np.errstate(over="ignore"):  # writes past float64 in all: inf, and `beyond_float_range` flags the row
        for lv in range(n_levels):  # the checkpoint time the kernels give every finished job
            ckpt += float(writes[lv]) * table[lv, V_COST]
    can_wait = table[:, V_PERSIST] > mult * base  # the kernels' test: else writes of a level are an interval apart
    if not can_wait.any():
        return ckpt, stats, 0.0
    if n_full > MAX_WAITING_POSITIONS:
        raise ScenarioError("checkpoint_persist", f"persisting longer than a level's interval makes writes wait; "
                            f"that is modelled for up to {MAX_WAITING_POSITIONS} positions of the fastest level "
                            f"(this job has {n_full})")
    now = wait_total = 0.0
    durable_at = np.full(n_levels, -1.0)
    with np.errstate(over="ignore"):  # a clock past float64 reads inf, as the kernels' would: flagged as above
        for lv in position_levels(mult, np.arange(1, n_full + 1)).tolist():
            now = now + base
            if durable_at[lv] > now and can_wait[lv]:
                wait = durable_at[lv] - now
                wait_total += wait
                stats[lv, L_WAIT] += wait
                now = durable_at[lv]
            now = now + table[lv, V_COST]
            durable_at[lv] = now + table[lv, V_PERSIST]
    return ckpt, stats, wait_total


@dataclass(frozen=True)
class FailureFreeJob:
    """A scalar scenario's job without failures, as the kernels run it.

    Parameters
    ----------
    base : float
        The fastest interval (h): the first fast level's, else the scenario's.
    n_full : int
        Full intervals of `base`, each followed by a write.
    remainder : float
        The final partial interval (h).
    mult : numpy.ndarray
        Each level's interval in multiples of `base` (empty: one level that does not persist).
    table : numpy.ndarray
        The levels' parameters, (levels, N_LEVEL_PARAMS).
    checkpoint : float
        Time spent writing (h).
    level_stats : numpy.ndarray or None
        Writes and waits per level, (levels, N_LEVEL_STATS); None without levels.
    wait : float
        Time spent waiting for a level's previous write to persist (h).
    wall : float
        Work, writes and waits (h): the failure-free wall.
    """

    base: float
    n_full: int
    remainder: float
    mult: np.ndarray
    table: np.ndarray
    checkpoint: float
    level_stats: np.ndarray | None
    wait: float
    wall: float


def failure_free_job(p) -> FailureFreeJob:
    """The job of scalar scenario `p` without failures (`FailureFreeJob`)."""
    mult, table = level_table(p)
    base = p.fast_checkpoints[0].interval if p.fast_checkpoints else p.checkpoint_interval
    n_full, remainder = split_work(p.work, base)
    if mult.size:
        checkpoint, stats, wait = failure_free_levels(n_full, base, mult, table)
    else:
        checkpoint, stats, wait = n_full * p.checkpoint_cost, None, 0.0
    # The same operations, in the same order, as the kernels' wall of a job without failures.
    wall = p.work + checkpoint + 0.0 + 0.0 + 0.0 + wait
    return FailureFreeJob(base, n_full, remainder, mult, table, checkpoint, stats, wait, wall)
