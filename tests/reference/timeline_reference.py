"""Plain, slow references for the timeline model, written apart from relmodel.

Nothing here imports relmodel: each function restates the semantics of the job
model (docs: user-guide/job-model.md) from first principles, so that an error
in the package cannot be copied into its check.

Semantics (all times in hours, rates per hour of runtime of the whole job):

* A job needs `work` of productive time. It computes in intervals of
  `interval`; after each full interval it writes a checkpoint of `ckpt`. The
  final partial interval (possibly empty) has no checkpoint. A remainder within
  1e-9 of an interval (relative) counts as a full one, and one within 1e-9 of
  zero after a full interval as none: "7d at 5min" is 2016 intervals, the
  package's documented rounding rule for float durations. Work shorter than
  one interval is one partial piece, however short.
* Failures form a renewal process on the job's runtime clock (compute,
  checkpoint writes and restarts; not queue waits). Exponential inter-failure
  times have mean 1/lam; Weibull ones of shape k have the same mean.
* A failure loses everything since the last completed checkpoint (a partly
  written checkpoint included), then the job waits `queue` (fixed, or
  exponential with that mean), then restarts for `restart`; a failure during
  the restart starts the queue and the restart again. With a taxonomy, each
  failure (also one during a restart) draws its kind by share, which sets the
  queue wait and the restart after it.
* Lemon nodes: each of the job's n_nodes nodes is a lemon with probability f,
  failing `factor` times as often as a healthy node; the healthy rate is set
  so the average node fails at `failure_rate` per day.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np

mpmath.mp.dps = 40  # 40 digits: far beyond float64, so the reference's own rounding never matters


def n_nodes_of(n_gpus: int, gpus_per_node: int) -> int:
    return (n_gpus + gpus_per_node - 1) // gpus_per_node


def mttf_hours(n_gpus: int, failure_rate: float, gpus_per_node: int = 8) -> float:
    """1 / (job failures per hour), exactly in rationals, then rounded once."""
    rate = Fraction(failure_rate)
    if rate == 0:
        return math.inf
    return float(Fraction(24) / (n_nodes_of(n_gpus, gpus_per_node) * rate))


def linear_ettr(lam: float, interval: float, ckpt: float, restart: float, queue: float) -> float:
    """The first-order Meta form in rationals; NaN where its numerator is <= 0."""
    lam, dt, w, u0, q = (Fraction(x) for x in (lam, interval, ckpt, restart, queue))
    numerator = 1 - lam * (u0 + dt / 2)
    if numerator <= 0:
        return math.nan
    return float(numerator / (1 + w / dt) / (1 + lam * q))


def split(work: float, interval: float) -> tuple[int, Fraction]:
    """Full intervals and remainder, exactly, with the 1e-9 exact-multiple rule."""
    w, dt = Fraction(work), Fraction(interval)
    n_full = math.floor(w / dt)
    remainder = w - n_full * dt
    if dt - remainder < dt * Fraction(1, 10**9):
        n_full, remainder = n_full + 1, Fraction(0)
    elif n_full > 0 and remainder < dt * Fraction(1, 10**9):  # rounding of n_full * dt, not the whole work
        remainder = Fraction(0)
    return n_full, remainder


def restart_phase(lam, categories) -> mpmath.mpf:
    """Expected time from a failure until compute resumes, R*.

    After a failure of kind c the job waits q_c, then runs min(T, u_c) of
    restart; with probability P(T < u_c) = 1 - e^(-lam u_c) it fails again and
    the phase starts over with a fresh kind. Renewal at each failure:
    R* = sum_c s_c (q_c + E[min(T, u_c)] + P(T < u_c) R*), solved for R*.
    `categories` is a list of (share, restart, queue).
    """
    lam = mpmath.mpf(lam)
    spent = completes = mpmath.mpf(0)
    for share, restart, queue in categories:
        share, restart, queue = (mpmath.mpf(x) for x in (share, restart, queue))
        mean_min = restart if lam == 0 else (1 - mpmath.exp(-lam * restart)) / lam
        spent += share * (queue + mean_min)
        completes += share * mpmath.exp(-lam * restart)
    return spent / completes


def piece_time(lam, length, r_star) -> mpmath.mpf:
    """Expected wall time to get through `length` of runtime without a failure.

    The number of failed attempts N is geometric: P(N = n) = (1 - p)^n p with
    p = e^(-lam length); a failed attempt runs E[T | T < length] and is followed
    by a restart phase. Summed: E[N] (E[T | T < length] + R*) + length.
    """
    lam, length = mpmath.mpf(lam), mpmath.mpf(length)
    if lam == 0 or length == 0:
        return length
    # p = e^(-lam length); (1 - p) / p = e^(lam length) - 1, kept exact for tiny lam length.
    failed_attempts = mpmath.expm1(lam * length)
    truncated_mean = 1 / lam - length / failed_attempts
    return failed_attempts * (truncated_mean + r_star) + length


def lemon_rates(n_nodes: int, failure_rate: float, fraction: float, factor: float):
    """[(probability, job rate per hour)] for every number of lemon nodes, 0 to n_nodes.

    No tail is left out: E[wall] of a job with many lemons grows like e^(rate * work),
    so a count of negligible probability can carry the expectation.
    """
    per_node = mpmath.mpf(failure_rate) / 24
    if fraction == 0 or factor == 1 or failure_rate == 0:
        return [(mpmath.mpf(1), n_nodes * per_node)]
    f = mpmath.mpf(fraction)
    healthy = per_node / (1 - f + f * factor)
    out, mass = [], (1 - f) ** n_nodes
    for k in range(n_nodes + 1):
        out.append((mass, healthy * ((n_nodes - k) + factor * k)))
        mass = mass * (n_nodes - k) / (k + 1) * f / (1 - f)
    return out


def binomial_log_pmf(k: int, n: int, p: float) -> float:
    """log P(X = k) for X ~ Binomial(n, p), by the definition in 40-digit arithmetic."""
    p = mpmath.mpf(p)
    return float(mpmath.log(mpmath.binomial(n, k)) + k * mpmath.log(p) + (n - k) * mpmath.log1p(-p))


def renewal_wall(lam, interval, work, ckpt, categories) -> mpmath.mpf:
    """E[wall] for exponential failures at rate lam: the sum over the pieces."""
    n_full, remainder = split(work, interval)
    r_star = restart_phase(lam, categories)
    full = piece_time(lam, mpmath.mpf(interval) + mpmath.mpf(ckpt), r_star)
    last = piece_time(lam, mpmath.mpf(remainder.numerator) / remainder.denominator, r_star)
    return n_full * full + last


def renewal_ettr(sc: dict, interval: float | None = None) -> float:
    """work / E[wall] over the job rates (lemon mixture), exponential failures.

    `sc` holds the scenario fields as plain numbers (hours, per node-day) and
    optionally `categories`: [(share, restart, queue)].
    """
    categories = sc.get("categories") or [(1.0, sc["restart_cost"], sc["queue_wait"])]
    interval = sc["checkpoint_interval"] if interval is None else interval
    rates = lemon_rates(n_nodes_of(sc["n_gpus"], sc["gpus_per_node"]), sc["failure_rate"],
                        sc.get("lemon_fraction", 0.0), sc.get("lemon_rate_factor", 1.0))
    total = sum(prob for prob, _ in rates)
    wall = sum(prob * renewal_wall(rate, interval, sc["work"], sc["checkpoint_cost"], categories)
               for prob, rate in rates) / total
    return float(mpmath.mpf(sc["work"]) / wall)


def best_checkpoint_count(sc: dict, max_count: int) -> tuple[int, float]:
    """(k, ETTR) maximising the renewal ETTR over every checkpoint count 0..max_count.

    With k checkpoints the best interval is just past work / (k + 1) (a longer one
    in the same count only makes each piece longer), where the job runs k full
    intervals and a last piece of the same length; evaluated here at that limit.
    """
    categories = sc.get("categories") or [(1.0, sc["restart_cost"], sc["queue_wait"])]
    rates = lemon_rates(n_nodes_of(sc["n_gpus"], sc["gpus_per_node"]), sc["failure_rate"],
                        sc.get("lemon_fraction", 0.0), sc.get("lemon_rate_factor", 1.0))
    work, ckpt = mpmath.mpf(sc["work"]), mpmath.mpf(sc["checkpoint_cost"])
    best = None
    for k in range(max_count + 1):
        piece = work / (k + 1)
        wall = sum(prob * (k * piece_time(rate, piece + ckpt, restart_phase(rate, categories))
                           + piece_time(rate, piece, restart_phase(rate, categories)))
                   for prob, rate in rates)
        if best is None or wall < best[1]:
            best = (k, wall)
    total = sum(prob for prob, _ in rates)
    return best[0], float(work * total / best[1])


# ---- a plain event simulation of one job ------------------------------------------

def simulate_jobs(sc: dict, n_jobs: int, seed: int) -> dict:
    """Mean wall, failures and time breakdown of `n_jobs` jobs, one event at a time.

    numpy's PCG64 (not the package's Philox stream): the check is statistical.
    Returns the per-job arrays of wall, productive, checkpoint, lost, restart,
    queue and failures.
    """
    rng = np.random.default_rng(seed)
    n_nodes = n_nodes_of(sc["n_gpus"], sc["gpus_per_node"])
    categories = sc.get("categories") or [(1.0, sc["restart_cost"], sc["queue_wait"])]
    shares = np.array([c[0] for c in categories])
    rates = lemon_rates(n_nodes, sc["failure_rate"], sc.get("lemon_fraction", 0.0), sc.get("lemon_rate_factor", 1.0))
    rate_prob = np.array([float(p) for p, _ in rates])
    rate_value = np.array([float(r) for _, r in rates])
    shape = sc.get("weibull_shape", 1.0)
    n_full, remainder = split(sc["work"], sc["checkpoint_interval"])
    pieces = [(sc["checkpoint_interval"], sc["checkpoint_cost"])] * n_full + [(float(remainder), 0.0)]
    out = {name: np.zeros(n_jobs) for name in ("wall", "productive", "checkpoint", "lost", "restart", "queue",
                                               "failures")}
    for j in range(n_jobs):
        lam = rng.choice(rate_value, p=rate_prob / rate_prob.sum())

        def time_to_failure():
            if lam == 0:
                return math.inf
            if shape == 1.0:
                return rng.exponential(1 / lam)
            return rng.weibull(shape) / (lam * math.gamma(1 + 1 / shape))

        totals = dict.fromkeys(out, 0.0)
        next_failure = time_to_failure()  # runtime left until the next failure
        for compute, write in pieces:
            while True:
                need = compute + write
                if next_failure >= need:
                    next_failure -= need
                    totals["productive"] += compute
                    totals["checkpoint"] += write
                    break
                totals["lost"] += next_failure
                totals["failures"] += 1
                while True:  # queue, then a restart that may fail in turn
                    share, restart, queue = categories[rng.choice(len(categories), p=shares / shares.sum())]
                    wait = rng.exponential(queue) if sc.get("queue_wait_distribution") == "exponential" else queue
                    totals["queue"] += wait
                    next_failure = time_to_failure()
                    if next_failure >= restart:
                        totals["restart"] += restart
                        next_failure -= restart
                        break
                    totals["restart"] += next_failure
                    totals["failures"] += 1
        totals["wall"] = sum(totals[c] for c in ("productive", "checkpoint", "lost", "restart", "queue"))
        for name, value in totals.items():
            out[name][j] = value
    return out
