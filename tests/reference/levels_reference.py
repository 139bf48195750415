"""A plain, slow event simulation of multi-level and asynchronous checkpoints.

Written from the level semantics alone (docs:
user-guide/checkpoint-strategies.md, 'Semantics'); nothing here imports
relmodel, so that an error in the package cannot be copied into its check. It
steps one job position by position, one event (a piece of compute, a wait for
persistence, a write, a failure, a restart) at a time.

The model, in short (all times in hours):

* Levels 0..L, fastest first. Levels 0..L-1 are the fast levels given in
  ``sc["levels"]``; level L is the scenario's own checkpoint (interval
  ``checkpoint_interval``, cost ``checkpoint_cost``, restart ``restart_cost``
  or the failure category's, persist ``checkpoint_persist``, survives 1).
* Every interval is a whole multiple m_l of the base interval d0 (level 0's).
  The job has n_full = floor(work / d0) positions (the 1e-9 exact-multiple
  rule of `timeline_reference.split`) and a final remainder of compute with no
  checkpoint after it. Position j writes only level lev(j) = max{l : j % m_l == 0}.
* The path value of position j is val(j) = j d0 + the write costs up to and
  including j's. A failure restores the latest surviving durable checkpoint,
  and "lost" is the path value at the failure minus the restored one.
* Failures are a renewal process on the runtime clock (compute, writes, waits
  for persistence, restarts; not queue waits).
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from .timeline_reference import n_nodes_of, split

# A wait for persistence shorter than this (relative to d0) is float noise in the
# clock: "persist <= interval never waits" holds exactly, not up to an ulp.
WAIT_TOLERANCE = 1e-9

TOTALS = ("wall", "productive", "checkpoint", "lost", "restart", "queue", "persist_wait", "failures")
PER_LEVEL = ("writes", "restores", "level_wait")


class Levels:
    """The levels of one scenario, checked, and the position tables of its job."""

    def __init__(self, sc: dict):
        fast = list(sc.get("levels") or [])
        self.L = len(fast)
        L = self.L
        self.interval = [float(f["interval"]) for f in fast] + [float(sc["checkpoint_interval"])]
        self.cost = [float(f["cost"]) for f in fast] + [float(sc["checkpoint_cost"])]
        # restart[L] is a placeholder: level L restarts for the failure category's restart.
        self.restart = [float(f["restart"]) for f in fast] + [float(sc["restart_cost"])]
        self.persist = [float(f.get("persist", 0.0)) for f in fast] + [float(sc.get("checkpoint_persist", 0.0))]
        self.survives = [float(f.get("survives", 1.0)) for f in fast] + [1.0]

        self.d0 = self.interval[0]
        if not self.d0 > 0:
            raise ValueError("the base interval must be positive")
        self.multiple = []
        for l in range(L + 1):
            ratio = self.interval[l] / self.d0
            m = round(ratio)
            if m < 1 or abs(ratio - m) > 1e-9 * ratio:
                raise ValueError(f"level {l}'s interval {self.interval[l]} is no whole multiple of {self.d0}")
            if l > 0 and m <= self.multiple[-1]:
                raise ValueError("level intervals must increase strictly")
            self.multiple.append(m)
        for l in range(L + 1):
            if not 0.0 <= self.survives[l] <= 1.0:
                raise ValueError("survives must lie in [0, 1]")
            if l > 0 and self.survives[l] < self.survives[l - 1]:
                raise ValueError("survives must not decrease with the level")
            if self.cost[l] < 0 or self.persist[l] < 0 or self.restart[l] < 0:
                raise ValueError("costs, persists and restarts must be >= 0")

        n_full, remainder = split(sc["work"], self.d0)
        self.n_full = n_full
        self.remainder = float(remainder)
        # lev[j] for j = 1..n_full (lev[0] unused); val[j] the path value at position j.
        self.lev = [0] * (n_full + 1)
        self.val = [0.0] * (n_full + 1)
        written = 0.0
        for j in range(1, n_full + 1):
            self.lev[j] = max(l for l in range(L + 1) if j % self.multiple[l] == 0)
            written += self.cost[self.lev[j]]
            self.val[j] = j * self.d0 + written

    def failure_free_checkpoint(self) -> float:
        return sum(self.cost[self.lev[j]] for j in range(1, self.n_full + 1))


class Draws:
    """Every random draw of the simulation, from one numpy PCG64 stream."""

    def __init__(self, sc: dict, rng: np.random.Generator):
        self.rng = rng
        n_nodes = n_nodes_of(sc["n_gpus"], sc["gpus_per_node"])
        self.lam = n_nodes * sc["failure_rate"] / 24.0
        self.shape = float(sc.get("weibull_shape") or 1.0)
        self.exponential_queue = sc.get("queue_wait_distribution", "fixed") == "exponential"
        self.categories = list(sc.get("categories") or [(1.0, sc["restart_cost"], sc["queue_wait"])])
        total = sum(c[0] for c in self.categories)
        self.cumulative = list(np.cumsum([c[0] / total for c in self.categories]))
        self.cumulative[-1] = 1.0

    def time_to_failure(self) -> float:
        """Runtime until the next failure: exponential, or Weibull with the same mean."""
        if self.lam == 0:
            return math.inf
        if self.shape == 1.0:
            return self.rng.exponential(1.0 / self.lam)
        return self.rng.weibull(self.shape) / (self.lam * math.gamma(1.0 + 1.0 / self.shape))

    def category(self) -> tuple[float, float]:
        """(restart, queue) of a failure's category; no draw without a taxonomy."""
        if len(self.categories) == 1:
            _, restart, queue = self.categories[0]
        else:
            u = self.rng.random()
            _, restart, queue = self.categories[bisect.bisect_right(self.cumulative, u)]
        return float(restart), float(queue)

    def queue_wait(self, mean: float) -> float:
        if self.exponential_queue and mean > 0:
            return self.rng.exponential(mean)
        return mean

    def first_surviving_level(self, levels: Levels) -> int:
        """One uniform u in (0, 1]: level l survives iff u <= survives[l]. No draw without fast levels."""
        if levels.L == 0:
            return 0
        u = 1.0 - self.rng.random()  # [0, 1) -> (0, 1]
        for l in range(levels.L + 1):
            if u <= levels.survives[l]:
                return l
        raise AssertionError("level L always survives")


def simulate_job(levels: Levels, draws: Draws, max_failures: int = 10**6) -> dict:
    """One job's timeline. Returns its totals and per-level lists."""
    L = levels.L
    d0, n_full = levels.d0, levels.n_full
    val, lev = levels.val, levels.lev

    now = 0.0  # the runtime clock
    next_failure = draws.time_to_failure()  # clock time of the next failure
    pos = 0  # last position written on the current path
    latest_pos = [0] * (L + 1)  # latest durable checkpoint of each level (0 = the job start)
    pending_pos = [None] * (L + 1)  # at most one write per level waiting to become durable
    pending_at = [math.inf] * (L + 1)  # ... and the clock time it does

    t = dict.fromkeys(TOTALS, 0.0)
    writes, restores, level_wait = [0] * (L + 1), [0] * (L + 1), [0.0] * (L + 1)

    def make_durable(l: int, clock: float) -> None:
        """A pending write of level l whose durable time has come moves into latest."""
        if pending_pos[l] is not None and pending_at[l] <= clock:
            latest_pos[l] = pending_pos[l]
            pending_pos[l], pending_at[l] = None, math.inf

    def fail(path_value: float) -> None:
        """A failure at clock time next_failure, with the path value there; then queue and restart."""
        nonlocal now, next_failure, pos
        now = next_failure
        for l in range(L + 1):  # pending writes durable by now survive the failure, the rest are dropped
            make_durable(l, now)
            pending_pos[l], pending_at[l] = None, math.inf
        while True:
            t["failures"] += 1
            if t["failures"] > max_failures:
                raise RuntimeError(f"more than {max_failures} failures in one job")
            category_restart, category_queue = draws.category()
            l_min = draws.first_surviving_level(levels)
            # The latest restorable checkpoint; ties (e.g. the job start) go to the most durable level.
            b = max(range(l_min, L + 1), key=lambda l: (latest_pos[l], l))
            for l in range(l_min):
                latest_pos[l] = 0
            t["lost"] += path_value - val[latest_pos[b]]
            pos = latest_pos[b]
            path_value = val[pos]
            restores[b] += 1
            t["queue"] += draws.queue_wait(category_queue)
            restart = levels.restart[b] if b < L else category_restart
            next_failure = now + draws.time_to_failure()  # fresh renewal from the failure
            if next_failure - now < restart:  # a failure during the restart: again
                t["restart"] += next_failure - now
                now = next_failure
                continue
            t["restart"] += restart
            now += restart
            return

    while True:
        # 1. Compute the next piece.
        piece = d0 if pos < n_full else levels.remainder
        if next_failure < now + piece:
            fail(val[pos] + (next_failure - now))
            continue
        now += piece
        if pos == n_full:
            break  # the last piece ran through: finished
        # 2. The write at position j of level l.
        j = pos + 1
        l = lev[j]
        # 2a. Wait for the previous write of level l to become durable.
        if pending_pos[l] is not None and pending_at[l] - now > WAIT_TOLERANCE * d0:
            if next_failure < pending_at[l]:
                waited = next_failure - now
                t["persist_wait"] += waited
                level_wait[l] += waited
                fail(val[pos] + d0)  # waiting adds nothing to the path value
                continue
            waited = pending_at[l] - now
            t["persist_wait"] += waited
            level_wait[l] += waited
            now = pending_at[l]
        if pending_pos[l] is not None:  # durable now (at most a rounding error early)
            latest_pos[l] = pending_pos[l]
            pending_pos[l], pending_at[l] = None, math.inf
        # 2b. The blocking write.
        cost = levels.cost[l]
        if next_failure < now + cost:
            fail(val[pos] + d0 + (next_failure - now))  # the write in flight is dropped
            continue
        now += cost
        writes[l] += 1
        pos = j
        # 2c. Durable at once, or pending.
        if levels.persist[l] == 0:
            latest_pos[l] = j
        else:
            pending_pos[l], pending_at[l] = j, now + levels.persist[l]

    # 4. Accounting. The wall is the clock plus the queue waits; productive and
    # checkpoint are what the finished path holds (compute and writes).
    t["wall"] = now + t["queue"]
    t["productive"] = n_full * d0 + levels.remainder
    t["checkpoint"] = val[n_full] - n_full * d0
    return {"totals": t, "writes": writes, "restores": restores, "level_wait": level_wait}


def simulate_levels(sc: dict, n_jobs: int, seed: int, max_failures: int = 10**6) -> dict[str, np.ndarray]:
    """`n_jobs` independent jobs of scenario `sc` (plain numbers; see the module docstring).

    numpy's PCG64 from `seed` (not the package's stream): the check is statistical.
    Returns per-job arrays wall, productive, checkpoint, lost, restart, queue,
    persist_wait, failures, and per-level arrays writes, restores, level_wait of
    shape (n_jobs, L + 1), level L being the scenario's own checkpoint.
    """
    if sc.get("lemon_fraction", 0.0) and sc.get("lemon_rate_factor", 1.0) != 1.0:
        raise ValueError("the levels reference has no lemon nodes")
    levels = Levels(sc)
    draws = Draws(sc, np.random.default_rng(seed))
    out = {name: np.zeros(n_jobs) for name in TOTALS}
    out.update({name: np.zeros((n_jobs, levels.L + 1)) for name in PER_LEVEL})
    for i in range(n_jobs):
        job = simulate_job(levels, draws, max_failures)
        for name in TOTALS:
            out[name][i] = job["totals"][name]
        for name in PER_LEVEL:
            out[name][i] = job[name]
    out["failures"] = out["failures"].astype(np.int64)
    out["writes"] = out["writes"].astype(np.int64)
    out["restores"] = out["restores"].astype(np.int64)
    return out


def failure_free_wall(sc: dict) -> float:
    """work + the write costs of every position: the wall of a job that never fails (and never waits)."""
    levels = Levels(sc)
    return float(sc["work"]) + levels.failure_free_checkpoint()
