"""One run's timeline under a checkpoint plan, given when its failures strike: in integer nanoseconds.

`walk` is the single mechanism behind `simulate_run` (failures drawn at
random: a record with known truth) and `replay_run` (the failures a record
shows, replayed under another plan). It follows the timeline model of SPEC
section 3 with the kernel's semantics: failures strike during compute, writes,
waits for persistence and restarts, at instants of *runtime* (the clock that
stops while the job queues); a failure loses the work since the latest
restorable checkpoint (a write cut short included), the job waits in the
queue, pays its restart and resumes. With a persist time, a checkpoint is
restorable `persist` after its write ends, and a write waits for the previous
one to become restorable (the one-level semantics of `simulate`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .events import NS_PER_H, NS_PER_S

STEP_NS = NS_PER_S  # the steps a walk's events carry: seconds of productive compute
MAX_EVENTS = 1_000_000  # a walk that would log more is a plan with no end (ETTR near 0): stopped, flagged


@dataclasses.dataclass(frozen=True)
class Plan:
    """A checkpoint plan in integer nanoseconds.

    Parameters
    ----------
    work : int
        Productive compute the run needs.
    positions : tuple of int
        Compute positions (since the run's start) after which a checkpoint is
        written, increasing; the run ends when its compute reaches `work`.
    write : tuple of int
        Blocking write times, by occurrence (the last repeats).
    wait : tuple of int
        Waits before each write, by occurrence (the last repeats; used where
        `persist` is 0).
    persist : int
        Time from a write's end until its checkpoint is restorable (0: at once).
    startup : int
        The first attempt's initialisation.
    restart : tuple of int
        Initialisation after each interruption, by interruption (the last repeats).
    queue : tuple of int
        Queue wait after each interruption, by interruption (the last repeats).
    fallback : tuple of int
        Checkpoints each interruption's restore falls back past the latest
        restorable one, by interruption (0 beyond the tuple): a run's own
        record, where a restore took an older checkpoint.
    """

    work: int
    positions: tuple
    write: tuple
    wait: tuple = (0,)
    persist: int = 0
    startup: int = 0
    restart: tuple = (0,)
    queue: tuple = (0,)
    fallback: tuple = ()

    @staticmethod
    def regular(work: int, interval: int, write: int, **kwargs) -> "Plan":
        """A checkpoint every `interval` of compute (SPEC: floor(work / interval) of them, then the rest)."""
        n_full = work // interval
        return Plan(work=work, positions=tuple(interval * k for k in range(1, n_full + 1)), write=(write,), **kwargs)


def _nth(values: tuple, i: int) -> int:
    return values[i] if i < len(values) else values[-1]


@dataclasses.dataclass
class Walk:
    """A walked timeline: its events (ns since the run's start) and its components (ns).

    ``events`` rows are (time, kind, step, duration_ns, wait_ns, reason_index).
    ``capped`` is True where the walk stopped at `MAX_EVENTS` before the run's end.
    """

    events: list
    wall: int
    productive: int
    checkpoint: int
    lost: int
    restart: int
    startup: int
    queue: int
    persist_wait: int
    failures: int
    capped: bool
    failures_used: int


def walk(plan: Plan, failures, reasons=None) -> Walk:
    """Walk the run's timeline.

    Parameters
    ----------
    plan : Plan
        The plan.
    failures : iterator of int
        Runtime instants (ns since the start, increasing) of the failures;
        it may end (no more failures) or be endless.
    reasons : iterator of int, optional
        An index per failure, carried into its event (the reason).

    Returns
    -------
    Walk
    """
    positions, work = plan.positions, plan.work
    events = []
    t = r = 0  # wall clock and runtime
    value = compute = 0  # the current path: compute and writes since the start; compute alone
    stack = [(0, 0, 0, -1)]  # restorable-or-pending checkpoints on the path: (value, compute, durable runtime, step)
    n_done = 0  # checkpoints on the path (the next is positions[n_done])
    writes = 0
    lost = restart = startup = queue = wait_total = 0
    n_fail = 0
    cut_wait = 0  # a wait for persistence that the failure cut short (logged with it)
    fail = next(failures, None)
    events.append((0, "attempt_start", -1, 0, 0, -1))
    attempt_init = plan.startup
    first_attempt = True
    capped = False
    while True:
        if len(events) > MAX_EVENTS:
            capped = True
            break
        # Initialisation of this attempt.
        if fail is not None and fail < r + attempt_init:
            spent = fail - r
        else:
            spent = None
        if spent is None:
            r += attempt_init
            t += attempt_init
            if first_attempt:
                startup += attempt_init
            else:
                restart += attempt_init
            events.append((t, "first_step", compute // STEP_NS, 0, 0, -1))
            # Compute, wait, write until the end or a failure.
            while True:
                target = positions[n_done] if n_done < len(positions) else work
                span = target - compute
                if fail is not None and fail < r + span:
                    value += fail - r
                    compute += fail - r
                    t += fail - r
                    r = fail
                    break
                r += span
                t += span
                value += span
                compute = target
                if n_done >= len(positions):
                    events.append((t, "run_end", compute // STEP_NS, 0, 0, -1))
                    return Walk(events, t, compute, value - compute, lost, restart, startup, queue, wait_total,
                                n_fail, False, n_fail)
                # Wait for the previous write to become restorable, then write.
                w = max(stack[-1][2] - r, 0) if plan.persist else _nth(plan.wait, writes)
                if fail is not None and fail < r + w:
                    cut_wait = fail - r
                    wait_total += cut_wait
                    t += cut_wait
                    r = fail
                    break
                r += w
                t += w
                wait_total += w
                d = _nth(plan.write, writes)
                if fail is not None and fail < r + d:
                    cut_wait = w  # the wait before a write cut short: logged with the failure too
                    value += fail - r
                    t += fail - r
                    r = fail
                    break
                r += d
                t += d
                value += d
                writes += 1
                n_done += 1
                stack.append((value, compute, r + plan.persist, compute // STEP_NS))
                events.append((t, "checkpoint_written", compute // STEP_NS, d, w, -1))
        else:
            r += spent
            t += spent
            if first_attempt:
                startup += spent
            else:
                restart += spent
        # A failure at runtime r: restore the latest restorable checkpoint.
        reason = next(reasons, -1) if reasons is not None else -1
        events.append((t, "failure", -1, 0, cut_wait, reason))
        cut_wait = 0
        n_fail += 1
        while stack[-1][2] > r:  # pending writes are lost
            stack.pop()
        back = plan.fallback[n_fail - 1] if n_fail <= len(plan.fallback) else 0
        del stack[max(len(stack) - back, 1):]
        lost += value - stack[-1][0]
        value, compute = stack[-1][0], stack[-1][1]
        n_done = sum(1 for _ in range(len(stack) - 1))
        q = _nth(plan.queue, n_fail - 1)
        t += q
        queue += q
        events.append((t, "attempt_start", -1, 0, 0, -1))
        events.append((t, "checkpoint_restored", max(stack[-1][3], 0), 0, 0, -1))
        attempt_init = _nth(plan.restart, n_fail - 1)
        first_attempt = False
        fail = next(failures, None)
        if fail is not None and fail < r:
            raise ValueError("failure instants must increase")
    return Walk(events, t, compute, value - compute, lost, restart, startup, queue, wait_total, n_fail, capped, n_fail)


def exponential_failures(rng: np.random.Generator, mean_ns: float, start: int = 0):
    """Endless failure instants after `start` (runtime ns), exponential gaps of mean `mean_ns`."""
    at = start
    while True:
        gap = rng.standard_exponential() * mean_ns
        at += max(int(round(gap)), 1) if math.isfinite(gap) else 2**62
        yield at


def hours_to_ns(hours: float) -> int:
    """Hours as whole nanoseconds (rounded)."""
    return int(round(float(hours) * NS_PER_H))
