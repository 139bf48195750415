"""One run's timeline under a checkpoint plan, given when its failures strike: in integer nanoseconds.

`walk` is the single mechanism behind `simulate_run` (failures drawn at random:
a record with known truth) and `replay_run` (the failures a record shows,
replayed under another plan). It follows the job model (docs:
user-guide/job-model.md, 'What a job does') with the kernel's semantics:
failures strike during compute, writes, waits for persistence and restarts, at
instants of *runtime* (the clock that stops while the job queues); a failure
loses the work since the latest restorable checkpoint (a write cut short
included), the job waits in the queue, pays its restart and resumes. With a
persist time, a checkpoint is restorable `persist` after its write ends, and a
write waits for the previous one to become restorable (the one-level semantics
of `simulate`).
"""

from __future__ import annotations

import bisect
import dataclasses
import math

import numpy as np

from ._events import NS_PER_H, NS_PER_S

STEP_NS = NS_PER_S  # the steps a walk's events carry: seconds of productive compute
MAX_EVENTS = 1_000_000  # a walk that would log more is a plan with no end (ETTR near 0): stopped, flagged
# A walk logs an event per checkpoint written: a plan with more positions than this is refused
# before its walk, so that what reaches MAX_EVENTS is work redone after failures, not the plan.
MAX_WALK_POSITIONS = MAX_EVENTS // 2


@dataclasses.dataclass(frozen=True)
class CheckpointSchedule:
    """A checkpoint plan in integer nanoseconds.

    Parameters
    ----------
    work : int
        Productive compute the run needs.
    positions : tuple of int
        Compute positions (since the run's start) after which a checkpoint is
        written, increasing; the run ends when its compute reaches `work`.
    write : tuple of int
        Blocking write times, by write attempt (those a failure cuts short
        included; the last repeats).
    wait : tuple of int
        Waits before each write, by write attempt (the last repeats; used
        where `persist` is 0).
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
    levels : tuple of Level, optional
        Checkpoint levels, fastest first, the durable one last (its restart is
        `restart`): position j (1-based) writes the level of the largest
        multiple dividing j, at that level's cost and persist (`write`,
        `wait` and `persist` are then unused). None: one level.
    by_attempt : tuple of tuple of int, optional
        The positions each attempt writes at, by attempt (the last repeats),
        in place of `positions`: a run's own record, whose pace varied from
        attempt to attempt. An attempt reaches `work` and ends the run only
        if it is the last listed or no failure is left to come; the others
        end at a failure. None: every attempt writes at `positions`.
    until : int, optional
        Runtime at which a record that does not reach the run's end stops:
        the walk stops there too, not at `work` (a failure at that instant
        strikes first). None: the walk runs until its compute reaches `work`.
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
    levels: tuple | None = None
    by_attempt: tuple | None = None
    until: int | None = None

    def __post_init__(self):
        if self.by_attempt is not None and self.levels:
            raise ValueError("positions by attempt are a run's own plan, which has one level")

    @staticmethod
    def regular(work: int, interval: int, write: int, **kwargs) -> "CheckpointSchedule":
        """Return the plan of a checkpoint every `interval` of compute.

        There are floor(work / interval) of them, as in the job model.

        Parameters
        ----------
        work : int
            Productive compute needed (ns).
        interval : int
            Compute between checkpoints (ns, > 0).
        write : int
            Each write's blocking time (ns).
        **kwargs
            The other fields of `CheckpointSchedule`.

        Returns
        -------
        CheckpointSchedule
            The plan.
        """
        n_full = work // interval
        positions = tuple(interval * k for k in range(1, n_full + 1))
        return CheckpointSchedule(work=work, positions=positions, write=(write,), **kwargs)


@dataclasses.dataclass(frozen=True)
class Level:
    """One checkpoint level of a plan (durations in ns).

    Parameters
    ----------
    multiple : int
        Written at every position that is a multiple of this (1 for the fastest).
    cost : int
        Its write's blocking time.
    restart : int
        The restart after restoring it (unused for the durable level).
    persist : int
        Time from a write's end until it is restorable.
    survives : float
        Probability that its checkpoints survive a failure (1 for the durable level).
    """

    multiple: int
    cost: int
    restart: int
    persist: int
    survives: float


def _nth(values: tuple, i: int) -> int:
    return values[i] if i < len(values) else values[-1]


@dataclasses.dataclass
class Walk:
    """A walked timeline: its events and its components (ns).

    Parameters
    ----------
    events : list
        Rows (time since the start, kind, step, duration, wait, reason index).
    wall, productive, checkpoint, lost, restart, startup, queue, persist_wait : int
        The components (ns); they add up to `wall`.
    failures : int
        Interruptions (the failure instants consumed).
    capped : bool
        True where the walk stopped at `MAX_EVENTS` before the run's end.
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


def walk(plan: CheckpointSchedule, failures, reasons=None, survival=None) -> Walk:
    """Walk the run's timeline.

    Parameters
    ----------
    plan : CheckpointSchedule
        The plan.
    failures : iterator of int
        Runtime instants (ns since the start, increasing) of the failures;
        it may end (no more failures) or be endless.
    reasons : iterator of int, optional
        An index per failure, carried into its event (the reason).
    survival : iterator of float, optional
        With fast levels, one uniform per failure (restarts' included): the
        levels whose `survives` is below it are lost, as in `simulate`.

    Returns
    -------
    Walk
        The events and components.
    """
    run = _Walker(plan, failures, reasons, survival)
    while len(run.events) <= MAX_EVENTS:
        if run.initialise() and run.progress() or run.stopped():
            return run.result(capped=False)
        run.failure()
        if run.r >= run.until:
            return run.result(capped=False)
    return run.result(capped=True)


class _Walker:
    """A run walked under a plan, attempt by attempt: its clocks, the work on its path (with the
    checkpoints it could restore), the events logged and the components so far (ns)."""

    def __init__(self, plan: CheckpointSchedule, failures, reasons, survival):
        levels = plan.levels
        self.plan, self.levels = plan, levels
        self.top = len(levels) - 1 if levels else 0  # the durable level
        self.longest_persist = max(x.persist for x in levels) if levels else plan.persist
        if self.top and survival is None:
            raise ValueError("a plan with fast levels needs the survival draws")
        self.failures, self.reasons, self.survival = failures, reasons, survival
        self.events = []
        self.t = self.r = 0  # wall clock and runtime
        self.value = self.compute = 0  # the current path: compute and writes since the start; compute alone
        # Checkpoints on the path, restorable or pending, by position:
        # (value, compute, durable at, position, level, step).
        self.stack = [(0, 0, 0, 0, self.top, 0)]
        self.n_done = 0  # positions done on the path (the next is positions[n_done])
        self.attempted = 0  # writes begun (a failure may cut them short)
        self.lost = self.restart = self.startup = self.queue = self.wait_total = 0
        self.n_fail = 0
        self.cut_wait = 0  # a wait for persistence that the failure cut short (logged with it)
        self.fail = next(failures, None)  # the next failure's runtime instant (None: no more)
        self.until = math.inf if plan.until is None else plan.until
        self.events.append((0, "attempt_start", -1, 0, 0, -1))
        self.attempt_init = plan.startup
        self.attempt = 0  # attempts begun before this one

    def result(self, capped: bool) -> Walk:
        return Walk(self.events, self.t, self.compute, self.value - self.compute, self.lost, self.restart,
                    self.startup, self.queue, self.wait_total, self.n_fail, capped)

    def initialise(self) -> bool:
        """The attempt's startup, or its restart after a failure: whether it reaches its first step."""
        fail = self.fail if self.fail is not None and self.fail < self.until else self.until
        spent = fail - self.r if fail < self.r + self.attempt_init else self.attempt_init
        self.r += spent
        self.t += spent
        if self.attempt == 0:
            self.startup += spent
        else:
            self.restart += spent
        if spent < self.attempt_init:
            return False
        self.events.append((self.t, "first_step", self.compute // STEP_NS, 0, 0, -1))
        return True

    def progress(self) -> bool:
        """Compute, wait and write until the run's end (True) or a failure (False).

        Each stretch spends its span, or the runtime left before the failure where that is less: the
        stretch is then cut short. It loops once per checkpoint, so it keeps the walk's state in locals
        and stores them back when it stops.
        """
        plan, levels, stack, events = self.plan, self.levels, self.stack, self.events
        positions, may_end = self._positions()
        fail = self.fail if self.fail is not None and self.fail < self.until else self.until
        t, r, value, compute, n_done = self.t, self.r, self.value, self.compute, self.n_done
        attempted, wait_total = self.attempted, self.wait_total
        ended = False
        while True:
            target = positions[n_done] if n_done < len(positions) else plan.work if may_end else math.inf
            span = target - compute
            spent = fail - r if fail < r + span else span
            r, t, value, compute = r + spent, t + spent, value + spent, compute + spent
            if spent < span:
                break
            if n_done >= len(positions):
                events.append((t, "run_end", compute // STEP_NS, 0, 0, -1))
                ended = True
                break
            # Wait for the previous write of this level to become restorable, then write.
            level = _level_of(n_done + 1, levels)
            persist = levels[level].persist if levels else plan.persist
            if persist or levels:
                wait = max(next((e[2] for e in reversed(stack) if e[4] == level), 0) - r, 0)
            else:
                wait = _nth(plan.wait, attempted)
            cost = levels[level].cost if levels else _nth(plan.write, attempted)
            attempted += 1
            spent = fail - r if fail < r + wait else wait
            r, t, wait_total = r + spent, t + spent, wait_total + spent
            if spent < wait:
                self.cut_wait = spent
                break
            spent = fail - r if fail < r + cost else cost
            r, t, value = r + spent, t + spent, value + spent
            if spent < cost:
                self.cut_wait = wait  # the wait before a write cut short: logged with the failure too
                break
            n_done += 1
            stack.append((value, compute, r + persist, n_done, level, compute // STEP_NS))
            events.append((t, "checkpoint_written", compute // STEP_NS, cost, wait, -1))
        self.t, self.r, self.value, self.compute, self.n_done = t, r, value, compute, n_done
        self.attempted, self.wait_total = attempted, wait_total
        return ended

    def stopped(self) -> bool:
        """Whether the walk stands at the record's end with no failure there to strike first."""
        return self.r >= self.until and (self.fail is None or self.fail > self.r)

    def _positions(self) -> tuple:
        """Where this attempt writes, and whether it may end the run."""
        by_attempt, unbounded = self.plan.by_attempt, self.until == math.inf
        if by_attempt is None:
            return self.plan.positions, unbounded
        last = len(by_attempt) - 1
        return by_attempt[min(self.attempt, last)], unbounded and (self.attempt >= last or self.fail is None)

    def failure(self):
        """A failure at runtime r: the latest checkpoint left is restored after the queue, and the next attempt
        starts."""
        reason = next(self.reasons, -1) if self.reasons is not None else -1
        self.events.append((self.t, "failure", -1, 0, self.cut_wait, reason))
        self.cut_wait = 0
        self.n_fail += 1
        restored = self._restore()
        queue = _nth(self.plan.queue, self.n_fail - 1)
        self.t += queue
        self.queue += queue
        self.events.append((self.t, "attempt_start", -1, 0, 0, -1))
        self.events.append((self.t, "checkpoint_restored", restored[5], 0, 0, -1))
        level = restored[4]
        self.attempt_init = self.levels[level].restart if level < self.top else _nth(self.plan.restart, self.n_fail - 1)
        self.attempt += 1
        if self.plan.by_attempt is not None:  # the new attempt writes at its own positions, from the restored on
            self.n_done = bisect.bisect_left(self._positions()[0], self.compute)
        self.fail = next(self.failures, None)
        if self.fail is not None and self.fail < self.r:
            raise ValueError("failure instants must increase")

    def _restore(self) -> tuple:
        """Back to the latest checkpoint the failure leaves (pending writes are lost, the levels below the
        survival draw too), less the plan's fallback: the work since is lost."""
        stack, r, levels = self.stack, self.r, self.levels
        lowest = 0
        if self.top:
            u = next(self.survival)
            while u > levels[lowest].survives:
                lowest += 1
        k = len(stack) - 1
        while k > 0 and not (stack[k][2] <= r and stack[k][4] >= lowest):
            k -= 1
        # Below it, writes still pending are lost too (only those within the longest persist of now);
        # older ones, and lost levels' ones, are never restored again (a newer, as durable one is above).
        j = k - 1
        while j > 0 and stack[j][2] > r - self.longest_persist:
            if stack[j][2] > r:
                del stack[j]
                k -= 1
            j -= 1
        fallback = self.plan.fallback
        k = max(k - (fallback[self.n_fail - 1] if self.n_fail <= len(fallback) else 0), 0)
        del stack[k + 1:]
        restored = stack[-1]
        self.lost += self.value - restored[0]
        self.value, self.compute, self.n_done = restored[0], restored[1], restored[3]
        return restored


def _level_of(position: int, levels) -> int:
    """The level position (1-based) writes: the slowest whose multiple divides it."""
    if not levels:
        return 0
    level = 0
    for k in range(len(levels) - 1, 0, -1):
        if position % levels[k].multiple == 0:
            level = k
            break
    return level


def exponential_failures(rng: np.random.Generator, mean_ns: float, start: int = 0):
    """Yield endless failure instants after `start`, at exponential gaps.

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator.
    mean_ns : float
        Mean gap (ns of runtime).
    start : int, default 0
        Runtime (ns) after which they come.

    Yields
    ------
    int
        Runtime instants (ns), increasing.
    """
    at = start
    while True:
        gap = rng.standard_exponential() * mean_ns
        at += max(int(round(gap)), 1) if math.isfinite(gap) else 2**62
        yield at


def hours_to_ns(hours: float) -> int:
    """Return hours as whole nanoseconds (rounded).

    Parameters
    ----------
    hours : float
        A duration in hours.

    Returns
    -------
    int
        Nanoseconds.
    """
    return int(round(float(hours) * NS_PER_H))
