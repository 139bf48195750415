"""The event-driven cluster simulator, one policy at a time.

Events: job arrivals, completions, node failures and repairs, queue time-outs,
and with `reoptimize_every` a periodic tick. After each the policy places jobs:

* elastic / fixed-batch: every running job gets GPUs (and batch sizes) from
  the dynamic program, and so do waiting jobs: with admission="first-fit"
  those, in arrival order, whose minimums still fit beside the running jobs'
  minimums; with admission="optimizer" the program itself chooses, a waiting
  job's options including zero GPUs. A job whose (GPUs, batch) changes pauses
  for `pause` (save, reshard, reload) holding its new GPUs;
* fifo: jobs start in arrival order on their submitted GPUs and batch, never
  rescaled (head-of-line blocking in the queue).

A job that is not placed when it arrives is dropped, or with
unplaceable="queue" waits, for at most `max_wait` after its submission (then it
is dropped). Every job writes a checkpoint after each
`checkpoint_interval` of compute (costing `checkpoint_cost`), and a
reconfiguration saves its state too. When a node fails, a job that held GPUs
there either shrinks onto its surviving GPUs and continues (elastic and
fixed-batch, if it keeps a feasible GPU count) after a pause, or (fifo, or too
few survivors) loses the work since its last checkpoint, goes back to the head
of the queue (never dropped) and pays `restart_cost` when it starts again.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import warnings
from array import array
from collections import deque

import numpy as np

from .._checks import check_choice
from .._display import key_value_table
from .._errors import ParameterError
from .._units import format_hours
from ._allocate import PrefixSolver
from ._config import ClusterConfig
from ._jobs import JobError, Options, OptionsTable
from ._nodes import FailureProcess, Placement, node_sizes

CLUSTER_POLICIES = ("elastic", "fixed-batch", "fifo")
OUTCOMES = ("completed", "dropped", "rejected", "unfinished", "not submitted")
COMPLETED, DROPPED, REJECTED, UNFINISHED, NOT_SUBMITTED = range(5)
DRAIN_FACTOR = 100  # the run stops this many arrival windows (>= 24 h) after the last arrival
MAX_TICKS = 100_000  # periodic re-optimisations a run may take (each one re-solves the allocation)
MAX_NODE_FAILURES = 10_000  # node failures a run may take (each re-solves the allocation: ~10 ms)
# Event kinds, in the order simultaneous events are handled: GPUs come back before they are asked for,
# and a job whose waiting time runs out at t may still start at t.
_COMPLETE, _REPAIR, _FAIL, _ARRIVE, _TICK, _TIMEOUT = range(6)
# Overhead at the start of a job's configuration (an "epoch").
_NONE, _RESTART, _FAILURE_PAUSE, _PAUSE = range(4)
_PROGRESS_EVERY = 4096  # arrivals between calls of a run's progress callback


class UnfinishedJobsWarning(UserWarning):
    """The run stopped (at `until`, or at its drain limit) with jobs still running or queued."""


@dataclasses.dataclass
class PolicyRun:
    """What one policy did with one workload.

    Per job, counters, the allocated GPUs over time and the event log (time,
    event, job or node, GPUs, batch).

    Parameters
    ----------
    policy : str
        The policy.
    outcome : numpy.ndarray
        Each job's outcome (one of `OUTCOMES`).
    submit : numpy.ndarray
        Submission time of each job (h).
    start : numpy.ndarray
        Start time of each job (h).
    end : numpy.ndarray
        End time of each job (h).
    rejected : list
        Invalid jobs and why.
    alloc_times : numpy.ndarray
        Times at which the allocation changed (h).
    alloc_gpus : numpy.ndarray
        GPUs allocated from each of those times.
    counters : dict
        Event counts (failures, restarts, resizes, ...).
    events : list
        The event log (empty from ``run_policy(..., keep_events=False)``).
    end_time : float
        When the simulation stopped (h).
    """

    policy: str
    outcome: np.ndarray  # codes into OUTCOMES
    submit: np.ndarray  # h
    start: np.ndarray  # first start, h (NaN: never started)
    end: np.ndarray  # completion, h (NaN: not completed)
    rejected: list  # (job index, reason)
    alloc_times: np.ndarray  # change points of the GPUs held by jobs
    alloc_gpus: np.ndarray
    counters: dict
    events: list
    end_time: float

    @property
    def jct(self) -> np.ndarray:
        """Job completion time of each job (end - submit, h); NaN where it did not finish."""
        return self.end - self.submit

    def _outcome_counts(self) -> dict:
        return {name: int(np.sum(self.outcome == code)) for code, name in enumerate(OUTCOMES)}

    def __repr__(self) -> str:
        # The event log runs to thousands of entries: a summary, not the dataclass dump.
        counts = ", ".join(f"{n} {name}" for name, n in self._outcome_counts().items() if n)
        jct = self.jct
        mean = f", mean JCT {np.nanmean(jct):.4g} h" if np.isfinite(jct).any() else ""
        return f"PolicyRun({self.policy!r}: {len(self.outcome)} jobs ({counts}){mean}, until {self.end_time:.4g} h)"

    def _repr_html_(self) -> str:
        jct = self.jct
        rows = [("policy", self.policy), ("jobs", len(self.outcome)),
                *((f"jobs {name}", n) for name, n in self._outcome_counts().items()),
                ("mean JCT (h)", f"{np.nanmean(jct):.4g}" if np.isfinite(jct).any() else "none finished"),
                ("simulated until (h)", f"{self.end_time:.4g}"),
                *((name, value) for name, value in self.counters.items()), ("events logged", len(self.events))]
        return key_value_table("PolicyRun", rows)


class _Epoch:
    """A job's current configuration: GPUs, batch, rate, and its progress clock."""

    __slots__ = ("gpus", "batch", "rate", "begin", "ready", "overhead", "done0", "version", "struck")

    def __init__(self, gpus, batch, rate, begin, ready, overhead, done0, version):
        self.gpus, self.batch, self.rate = gpus, batch, rate
        self.begin, self.ready, self.overhead, self.done0, self.version = begin, ready, overhead, done0, version
        self.struck = False


class _Queue:
    """Waiting jobs in order, with membership and removal in O(1): a removed job's
    entry stays in the deque, stale (its ticket no longer the job's), until it is
    skipped at the head or the deque is rebuilt."""

    def __init__(self):
        self._entries: deque[tuple[int, int]] = deque()  # (job, ticket)
        self._ticket: dict[int, int] = {}
        self._issued = 0

    def __len__(self) -> int:
        return len(self._ticket)

    def __contains__(self, i) -> bool:
        return i in self._ticket

    def __iter__(self):
        return (i for i, ticket in self._entries if self._ticket.get(i) == ticket)

    def _ticket_for(self, i) -> int:
        self._issued += 1
        self._ticket[i] = self._issued
        return self._issued

    def append(self, i):
        self._entries.append((i, self._ticket_for(i)))

    def push_front(self, jobs):
        """Put `jobs`, in their order, ahead of every waiting job."""
        self._entries.extendleft((i, self._ticket_for(i)) for i in reversed(jobs))

    def head(self) -> int:
        entries = self._entries
        while self._ticket.get(entries[0][0]) != entries[0][1]:
            entries.popleft()
        return entries[0][0]

    def popleft(self) -> int:
        i = self.head()
        self._entries.popleft()
        del self._ticket[i]
        return i

    def remove(self, i):
        del self._ticket[i]
        entries = self._entries
        while entries and self._ticket.get(entries[-1][0]) != entries[-1][1]:  # most often the job just queued
            entries.pop()
        if len(entries) > 2 * len(self._ticket) + 64:  # mostly stale: rebuild
            self._entries = deque(e for e in entries if self._ticket.get(e[0]) == e[1])


class _Simulation:
    def __init__(self, jobs, policy: str, cfg: ClusterConfig, keep_events: bool = True, on_arrivals=None):
        self.jobs, self.policy, self.cfg = jobs, policy, cfg
        self.resizable = policy != "fifo"
        self.optimizer_admits = self.resizable and cfg.admission == "optimizer"
        n = len(jobs)
        self.outcome = np.full(n, NOT_SUBMITTED, dtype=np.int8)
        self.submit = np.array([float(j.submit_time) if _finite(j.submit_time) else np.nan for j in jobs])
        self.start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.done = np.zeros(n)  # samples saved, for jobs not running
        self.rejected = []
        self.table = OptionsTable(cfg.n_gpus, policy)
        self.options: list[Options | None] = [None] * n
        self.solver = PrefixSolver(cfg.objective)
        self.epochs: dict[int, _Epoch] = {}
        # Kept as epochs change, not summed over them on every event: GPUs held, and minimums of the jobs admitted.
        self.held = self.minimums = 0
        # Each job's option as the solver's pool index (-1: none, or unknown): a job picked again is left alone.
        self.running_option = np.full(n, -1, dtype=np.int64)
        self.waiting = _Queue()
        self.restart_due: set[int] = set()
        self.place = Placement(node_sizes(cfg.n_gpus, cfg.gpus_per_node))
        self.failures = FailureProcess(cfg.n_nodes, cfg.failure_rate, cfg.seed, cfg.failures)
        self.heap, self.seq, self.now = [], 0, 0.0
        self.keep_events, self.on_arrivals = keep_events, on_arrivals
        self.events = []
        self.alloc_times, self.alloc_gpus = array("d", [0.0]), array("q", [0])
        self.counters = dict.fromkeys(
            ("rescales", "shrinks", "restarts", "job_interruptions", "node_failures", "timeouts"), 0)
        self.counters.update(dict.fromkeys(
            ("gpu_hours_lost_failures", "gpu_hours_redone", "gpu_hours_restart", "gpu_hours_paused"), 0.0))
        self.cycle = cfg.checkpoint_interval + cfg.checkpoint_cost

    # -- the event queue -------------------------------------------------
    def push(self, t, kind, a, b=0):
        heapq.heappush(self.heap, (float(t), kind, self.seq, a, b))
        self.seq += 1

    def log(self, what, who, gpus=0, batch=0):
        if self.keep_events:
            self.events.append((self.now, what, who, gpus, batch))

    def _check_failures(self, hours: float):
        """Refuse up front a run whose nodes fail more than MAX_NODE_FAILURES times over `hours`
        (each failure re-solves the allocation): the least it will run, the arrivals' window."""
        cycle = self.failures.mean_up_h + self.cfg.repair_time  # a node's up time and repair, on average
        failures = self.cfg.n_nodes * hours / cycle if math.isfinite(cycle) and cycle > 0 else 0.0
        if failures > MAX_NODE_FAILURES:
            raise ParameterError("failure_rate", f"{self.cfg.n_nodes} nodes failing every "
                                                 f"{format_hours(self.failures.mean_up_h)} (and back after "
                                                 f"{format_hours(self.cfg.repair_time)}) fail some {failures:.3g} "
                                                 f"times over {format_hours(hours)} of arrivals (limit "
                                                 f"{MAX_NODE_FAILURES:,}); choose a lower failure rate or a "
                                                 "shorter run")

    def _check_ticks(self, ticks: float):
        if ticks > MAX_TICKS:
            raise ParameterError("reoptimize_every", f"every {format_hours(self.cfg.reoptimize_every)} makes more "
                                                     f"than {MAX_TICKS:,} re-optimisations in this run; choose a "
                                                     "longer interval")

    def arrivals(self) -> tuple[np.ndarray, np.ndarray]:
        """Jobs in order of arrival (submission time, NaN as 0, then index) and their arrival times (>= 0)."""
        key = np.nan_to_num(self.submit, nan=0.0)
        order = np.argsort(key, kind="stable")
        key = key[order]
        return order, np.where(key > 0.0, key, 0.0)

    def next_event(self, arrival_t: float):
        """(t, kind, a, b) of the next event: the heap's first, or the next arrival, at
        `arrival_t` (inf: none left; the caller knows its job); None when neither is left.
        Arrivals stay out of the heap: they come sorted, and a million would slow every push."""
        heap = self.heap
        if heap:
            top = heap[0]
            if top[0] < arrival_t or (top[0] == arrival_t and top[1] < _ARRIVE):
                t, kind, _, a, b = heapq.heappop(heap)
                return t, kind, a, b
        return None if arrival_t == math.inf else (arrival_t, _ARRIVE, None, 0)

    def run(self) -> PolicyRun:
        order, arrive_at = self.arrivals()
        finite = self.submit[np.isfinite(self.submit)]
        last = finite.max() if finite.size else 0.0
        for t, node in self.failures.first_failures():
            self.push(t, _FAIL, node)
        horizon = self.cfg.until if self.cfg.until is not None else last + DRAIN_FACTOR * max(last, 24.0)
        self._check_failures(min(horizon, last) if self.cfg.until is None else horizon)
        if self.cfg.reoptimize_every is not None:
            # Each tick re-solves the allocation: a tiny interval would run on for hours, silently.
            # Refused up front when the arrivals alone need too many; else stopped when the run does.
            self._check_ticks(last / self.cfg.reoptimize_every)
            self.push(self.cfg.reoptimize_every, _TICK, 0)
        ticks = 0
        arrived = 0
        arrival_t = float(arrive_at[0]) if order.size else math.inf
        while True:
            event = self.next_event(arrival_t)
            if event is None or event[0] > horizon:
                break
            t, kind, a, b = event
            if kind == _ARRIVE:
                a = int(order[arrived])
                arrived += 1
                arrival_t = float(arrive_at[arrived]) if arrived < order.size else math.inf
                if self.on_arrivals is not None and arrived % _PROGRESS_EVERY == 0:
                    self.on_arrivals(_PROGRESS_EVERY)
            elif kind == _COMPLETE and (a not in self.epochs or self.epochs[a].version != b):
                continue  # superseded by a reconfiguration
            self.now = t
            arrival, changed = None, True
            if kind == _ARRIVE:
                arrival, changed = self.arrive(a), False
            elif kind == _COMPLETE:
                self.complete(a)
            elif kind == _FAIL:
                changed = self.fail(a)
            elif kind == _REPAIR:
                self.repair(a)
            elif kind == _TICK:
                ticks += 1
                self._check_ticks(ticks)
                self.push(t + self.cfg.reoptimize_every, _TICK, 0)
            else:
                changed = self.time_out(a)
            self.schedule(arrival, changed)
            if self.held != self.alloc_gpus[-1]:
                self.alloc_times.append(t)
                self.alloc_gpus.append(self.held)
            if arrived == order.size and not self.epochs and not self.waiting:
                break
        if self.on_arrivals is not None:  # the rest, arrived or past the horizon
            self.on_arrivals(order.size - arrived // _PROGRESS_EVERY * _PROGRESS_EVERY)
        self.finish(horizon)
        return PolicyRun(self.policy, self.outcome, self.submit, self.start, self.end, self.rejected,
                         np.array(self.alloc_times), np.array(self.alloc_gpus, dtype=np.int64), self.counters,
                         self.events, self.now)

    def finish(self, horizon):
        left = [i for i in self.epochs] + list(self.waiting)
        if left:
            self.now = horizon
            for i in list(self.epochs):
                self.close(i, self.now)
            self.outcome[left] = UNFINISHED
            warnings.warn(f"{self.policy}: stopped at {self.now:.4g} h with {len(left)} job(s) unfinished",
                          UnfinishedJobsWarning, stacklevel=4)

    # -- jobs entering and leaving the cluster ----------------------------
    def enter(self, i, ep):
        """Job i's new epoch, replacing its last one if it has one."""
        old = self.epochs.get(i)
        if old is None:
            self.minimums += self.options[i].as_lists()[0][0]
        else:
            self.held -= old.gpus
        self.held += ep.gpus
        self.epochs[i] = ep

    def leave(self, i) -> _Epoch:
        ep = self.epochs.pop(i)
        self.minimums -= self.options[i].as_lists()[0][0]
        self.held -= ep.gpus
        self.running_option[i] = -1
        return ep

    # -- event handlers --------------------------------------------------
    def arrive(self, i) -> int | None:
        job = self.jobs[i]
        try:
            self.options[i] = self.table.options(job)
        except JobError as err:
            self.outcome[i] = REJECTED
            self.rejected.append((i, str(err)))
            self.log("reject", job.job_id)
            return None
        self.outcome[i] = UNFINISHED
        self.log("submit", job.job_id)
        return i

    def complete(self, i):
        self.close(i, self.now)
        ep = self.leave(i)
        self.place.release(i)
        self.outcome[i] = COMPLETED
        self.end[i] = self.now
        self.log("complete", self.jobs[i].job_id, ep.gpus, ep.batch)

    def fail(self, node) -> bool:
        if not self.place.up[node]:
            return False  # an explicit failure of a node already down
        self.counters["node_failures"] += 1
        self.log("node-fail", node)
        lost = self.place.fail(node)
        self.push(self.now + self.cfg.repair_time, _REPAIR, node)
        evicted = []
        for i in sorted(lost):
            ep = self.epochs[i]
            self.counters["job_interruptions"] += 1
            survivors = ep.gpus - lost[i]
            if self.resizable and survivors >= self.options[i].gpus[0]:
                self.close(i, self.now)
                self.counters["shrinks"] += 1
                self.held -= lost[i]
                self.running_option[i] = -1
                ep.gpus, ep.struck = survivors, True
                self.log("shrink", self.jobs[i].job_id, survivors, ep.batch)
            else:
                self.evict(i, ep)
                evicted.append(i)
        self.waiting.push_front(evicted)
        return True

    def evict(self, i, ep):
        """Back to the last checkpoint: the work since then is redone on the next start."""
        self.account_overhead(ep, self.now)
        e = max(0.0, self.now - ep.ready)
        k = math.floor(e / self.cycle)  # checkpoints completed in this epoch
        redo = ep.gpus * (e - k * self.cycle)
        self.counters["gpu_hours_redone"] += redo
        self.counters["gpu_hours_lost_failures"] += redo
        self.counters["restarts"] += 1
        self.done[i] = ep.done0 + ep.rate * k * self.cfg.checkpoint_interval
        self.place.release(i)
        self.leave(i)
        self.restart_due.add(i)
        self.log("evict", self.jobs[i].job_id)

    def time_out(self, i) -> bool:
        """Drop job i if it is still waiting for its first start."""
        if i not in self.waiting or np.isfinite(self.start[i]):
            return False
        self.waiting.remove(i)
        self.outcome[i] = DROPPED
        self.counters["timeouts"] += 1
        self.log("time-out", self.jobs[i].job_id)
        return False

    def repair(self, node):
        self.place.repair(node)
        self.log("node-repair", node)
        t = self.failures.next_failure(node, self.now)
        if math.isfinite(t):
            self.push(t, _FAIL, node)

    # -- progress of a configuration ---------------------------------------
    def close(self, i, t):
        """Bring job i's progress to time t and account its overhead so far;
        the epoch then restarts its clock at t (no overhead, no compute yet), as
        it does after a reconfiguration, which saves the job's state."""
        ep = self.epochs[i]
        self.account_overhead(ep, t)
        e = max(0.0, t - ep.ready)
        full = math.floor(e / self.cycle)
        compute = full * self.cfg.checkpoint_interval + min(e - full * self.cycle, self.cfg.checkpoint_interval)
        ep.done0 = min(self.jobs[i].work, ep.done0 + ep.rate * compute)
        ep.begin = ep.ready = t
        ep.overhead = _NONE

    def account_overhead(self, ep, t):
        """GPU time of the epoch's restart or pause elapsed by t: lost to failures
        (restarts, pauses of struck jobs) or spent rescaling."""
        spent = max(0.0, min(t, ep.ready) - ep.begin) * ep.gpus
        if ep.overhead == _PAUSE:
            self.counters["gpu_hours_paused"] += spent
        elif ep.overhead != _NONE:
            self.counters["gpu_hours_restart"] += spent
            self.counters["gpu_hours_lost_failures"] += spent

    def start_epoch(self, i, gpus, batch, rate, overhead):
        old = self.epochs.get(i)
        done0 = old.done0 if old else self.done[i]
        length = {_NONE: 0.0, _RESTART: self.cfg.restart_cost}.get(overhead, self.cfg.pause)
        version = old.version + 1 if old else 0
        ep = _Epoch(gpus, batch, rate, self.now, self.now + length, overhead, done0, version)
        self.enter(i, ep)
        if np.isnan(self.start[i]):
            self.start[i] = self.now
        # Wall time for the remaining compute: checkpoints after each full interval, none after the last.
        y = (self.jobs[i].work - done0) / rate
        k = max(0, math.ceil(y / self.cfg.checkpoint_interval) - 1)
        self.push(ep.ready + k * self.cycle + (y - k * self.cfg.checkpoint_interval), _COMPLETE, i, version)

    # -- placement ---------------------------------------------------------
    def fits(self, i) -> bool:
        need = self.options[i].as_lists()[0][0]
        if not self.resizable:
            return need <= self.place.total_free
        return need + self.minimums <= self.place.capacity

    def schedule(self, arrival, changed):
        if self.optimizer_admits:
            if arrival is not None:
                self.waiting.append(arrival)
            if changed or self.waiting:
                self.reallocate(set(), admit=True)
            if arrival is not None and arrival in self.waiting:
                self.wait_or_drop(arrival)
            return
        admitted = []
        while self.waiting and self.fits(self.waiting.head()):
            admitted.append(self.admit(self.waiting.popleft()))
        if arrival is not None:
            if not self.waiting and self.fits(arrival):
                admitted.append(self.admit(arrival))
            elif self.cfg.max_wait > 0:
                self.waiting.append(arrival)
                self.wait_or_drop(arrival)
            else:  # as wait_or_drop would, without queueing it first
                self.drop(arrival)
        if self.resizable and (changed or admitted):
            self.reallocate(set(admitted))

    def wait_or_drop(self, i):
        """Job i, just arrived, found no room: it waits at most `max_wait`."""
        if self.cfg.max_wait > 0:
            self.log("queue", self.jobs[i].job_id)
            if math.isfinite(self.cfg.max_wait):
                self.push(self.submit[i] + self.cfg.max_wait, _TIMEOUT, i)
        else:
            self.waiting.remove(i)
            self.drop(i)

    def drop(self, i):
        self.outcome[i] = DROPPED
        self.log("drop", self.jobs[i].job_id)

    def admit(self, i) -> int:
        overhead = _RESTART if i in self.restart_due else _NONE
        self.restart_due.discard(i)
        if self.resizable:  # GPUs come from the next reallocation
            self.enter(i, _Epoch(0, 0, 0.0, self.now, self.now, overhead, self.done[i], -1))
            return i
        opts = self.options[i]
        self.place.acquire(i, int(opts.gpus[0]))
        self.start_epoch(i, int(opts.gpus[0]), int(opts.batch[0]), float(opts.throughput[0]) * 3600.0, overhead)
        self.log("start", self.jobs[i].job_id, int(opts.gpus[0]), int(opts.batch[0]))
        return i

    def reallocate(self, new: set, admit: bool = False):
        """Re-solve the allocation of the running jobs (and the newly admitted
        ones, `new`); with `admit`, waiting jobs take part with a zero-GPU option
        and those given GPUs start."""
        waiting = set(self.waiting) if admit else set()
        order = sorted(set(self.epochs) | waiting)
        options = [self.options[i].or_wait() if i in waiting else self.options[i] for i in order]
        chosen, total = self.solver.solve(options, self.place.capacity)
        if total == -np.inf:  # admission keeps the minimums within capacity
            raise RuntimeError("allocation: the running jobs' minimums exceed the GPUs up")
        pooled = self.solver.pooled
        plan = []
        # Only jobs picked otherwise than they run are looked at: the rest stay as they are.
        for p in np.flatnonzero(pooled != self.running_option[order]).tolist():
            i, opts, k = order[p], options[p], int(chosen[p])
            gpus, batch, throughput = opts.as_lists()
            g, b = gpus[k], batch[k]
            if g == 0:
                continue  # left waiting
            if i in waiting:
                self.waiting.remove(i)
                new.add(self.admit(i))
            ep = self.epochs[i]
            if i in new or ep.struck or (g, b) != (ep.gpus, ep.batch):
                plan.append((i, g, b, throughput[k] * 3600.0))
            self.running_option[i] = pooled[p]  # (a job admitted from the queue chose among other options)
        for i, g, _, _ in plan:  # shrink first, so the growing jobs find the GPUs
            held = self.place.gpus_of(i)
            if g < held:
                self.place.release(i, held - g)
        for i, g, b, rate in plan:
            held = self.place.gpus_of(i)
            if g > held:
                self.place.acquire(i, g - held)
            ep = self.epochs[i]
            if i in new:
                overhead, what = ep.overhead, "start"
            else:
                self.close(i, self.now)
                overhead, what = (_FAILURE_PAUSE, "resume") if ep.struck else (_PAUSE, "rescale")
                self.counters["rescales"] += what == "rescale"
            self.start_epoch(i, g, b, rate, overhead)
            self.log(what, self.jobs[i].job_id, g, b)


def _finite(x) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def run_policy(jobs, policy: str, config: ClusterConfig, *, keep_events: bool = True,
               on_arrivals=None) -> PolicyRun:
    """Simulate `jobs` under one policy.

    Parameters
    ----------
    jobs : Workload or sequence of Job
        The jobs.
    policy : str
        One of `CLUSTER_POLICIES`.
    config : ClusterConfig
        The cluster and its rules.
    keep_events : bool, default True
        Keep the event log (``PolicyRun.events``; several entries a job). False:
        an empty log, and the memory it takes on a large trace saved.
    on_arrivals : callable, optional
        Called now and then with the number of jobs that arrived since its last
        call (to drive a progress bar); the calls add up to the number of jobs.

    Returns
    -------
    PolicyRun
        What happened.
    """
    check_choice("policy", policy, CLUSTER_POLICIES, ParameterError)
    return _Simulation(tuple(jobs), policy, config, keep_events, on_arrivals).run()
