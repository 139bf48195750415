"""The timeline kernel's plain path in lanes (Numba only): rows with one
exponential failure rate, no failure categories, a fixed queue wait and no
checkpoint levels; the jobs that their first draw does not settle.

LANES jobs of a block run side by side, each on its own stream, one Philox call
(two words) a step: loops over the lanes that LLVM vectorises, the Philox
rounds in one loop and each word's draw and event in another (short bodies,
so the CPU overlaps lanes, where one fused loop would be latency-bound). Every word is an
event, in the same arithmetic as `timeline_numba.simulate_job`: per job the
same words, read in the same order, give the same bits, so the Cython twin,
threads and chunking all agree. The ziggurat runs in the lanes too: the 2.2%
of words its first step rejects (`reject`, a short scalar pass when a half
step has any) leave the lane a tail or a pending wedge test, which its next
word decides against two lines around f (`ziggurat.WEDGE_*`) with no exp.
Only a test the lines leave open (about 1 word in 10,000) stalls the lane,
which then finishes that draw alone (`unstall`): a stall on every rejected word
would cost the large scenario much of its time (docs: whats-new.md,
'Performance history'). A lane
that finishes its job takes the block's next one; the job's fields go to a
buffer that the caller sums in job order.
"""

import numpy as np
from numba import njit

from . import ziggurat
from ._jit import JIT_OPTIONS
from .layout import J_CAPPED, J_CHECKPOINT, J_FAILURES, J_LOST, J_PRODUCTIVE, J_QUEUE, J_RESTART, J_WALL
from .rng_numba import next_exponential, philox_words, split_job, wedge_lines, ziggurat_candidate, ziggurat_rejected

LANES = 32  # a module constant, so LLVM knows the trip count of the lane loops (16 and 64 run slower)

# Lane state: one float64 array, field f of lane l at f * LANES + l (one base
# pointer, so LLVM vectorises without runtime alias checks between fields).
_DONE = 0  # checkpointed intervals
_LOST = 1
_RESTART = 2
_QUEUE = 3
_FAILURES = 4  # also the phase: a draw after the first failure is a restart attempt
_STATUS = 5
_BASE = 6  # the ziggurat's tails passed by the draw under way (R each)
_PEND_X = 7  # a candidate that awaits its wedge test on the lane's next word
_PEND_LAYER = 8  # its layer (read only when a test is left open)
# Its wedge test, y = lower + u * height against f(x), decided by the lines
# around f where they can, in terms of the next word's 53-bit integer m (u =
# (m + 1) / 2**53): m below _ACCEPT_BELOW accepts, m from _REJECT_FROM on
# rejects, between the two the test is open. _REJECT_FROM is at least 1 while
# a test is pending, 0 (a fresh job's zero) when none is.
_ACCEPT_BELOW = 9
_REJECT_FROM = 10
_N_FIELDS = 11

_ZIG_R = ziggurat.R
_S11 = np.uint64(11)

_IDLE = 0.0
_RUNNING = 1.0
_FINISHED = 2.0
_CAPPED = 3.0
_REJECTED = 4.0  # the ziggurat's first step rejected the word: `reject` sets the lane's draw on
_STALLED = 5.0  # a wedge test the lines left open at the step's first word; _STALLED + 1.0 at its second


@njit(inline="always", **JIT_OPTIONS)
def job_fields(state, lane):
    """(done, lost, restart, queue, failures) of the lane's job."""
    return (state[_DONE * LANES + lane], state[_LOST * LANES + lane], state[_RESTART * LANES + lane],
            state[_QUEUE * LANES + lane], state[_FAILURES * LANES + lane])


@njit(inline="always", **JIT_OPTIONS)
def set_job_fields(state, lane, done, lost, restart_time, queue_time, failures, status):
    """Store the lane's job fields and status (`job_fields` reads them)."""
    state[_DONE * LANES + lane] = done
    state[_LOST * LANES + lane] = lost
    state[_RESTART * LANES + lane] = restart_time
    state[_QUEUE * LANES + lane] = queue_time
    state[_FAILURES * LANES + lane] = failures
    state[_STATUS * LANES + lane] = status


@njit(inline="always", **JIT_OPTIONS)
def event(x, done, lost, restart_time, queue_time, failures, mean_ttf, segment, n_full, remainder, restart, queue,
          max_failures):
    """A running job's next draw x (a standard exponential), branch free: the
    first draw places its first failure; every later one is a restart attempt
    that fails (a failure) or succeeds and places the next failure.
    Returns (done, lost, restart, queue, failures, status)."""
    t = mean_ttf * x
    in_restart = failures != 0.0
    failed_restart = in_restart and t < restart
    restart_time = restart_time + (t if failed_restart else restart) if in_restart else restart_time
    t = t - restart if in_restart else t
    left = n_full - done
    k = np.floor(t / segment)
    beyond = k >= left
    t = t - (left if beyond else k) * segment
    finished = not failed_restart and beyond and t >= remainder
    done = done if failed_restart else (n_full if beyond else done + k)
    compute_failure = not failed_restart and not finished
    lost = lost + max(t, 0.0) if compute_failure else lost
    failure = failed_restart or compute_failure
    failures = failures + 1.0 if failure else failures
    capped = failure and failures >= max_failures
    queue_time = queue_time + queue if failure and not capped else queue_time
    status = _FINISHED if finished else (_CAPPED if capped else _RUNNING)
    return done, lost, restart_time, queue_time, failures, status


@njit(inline="always", **JIT_OPTIONS)
def reject(state, lane, w):
    """The lane's word w failed the ziggurat's first step: the tail (R more,
    a fresh candidate on the next word) or its wedge test, set up for the next word."""
    x, _, layer = ziggurat_candidate(w)
    if layer == 0:
        state[_BASE * LANES + lane] += _ZIG_R
    else:
        accept_below, reject_from = wedge_lines(x, layer)
        state[_PEND_X * LANES + lane] = x
        state[_PEND_LAYER * LANES + lane] = float(np.int64(layer))
        state[_ACCEPT_BELOW * LANES + lane] = accept_below
        state[_REJECT_FROM * LANES + lane] = max(reject_from, 1.0)
    state[_STATUS * LANES + lane] = _RUNNING


@njit(inline="always", **JIT_OPTIONS)
def lane_words(calls, jobs, words, k0, k1):
    """Each lane's next Philox call: its two words in words[lane] and words[LANES + lane]."""
    for lane in range(LANES):
        job = jobs[lane]
        w0, w1 = philox_words(calls[lane], job & np.uint64(0xFFFFFFFF), job >> np.uint64(32), k0, k1)
        words[lane] = w0
        words[LANES + lane] = w1


@njit(**JIT_OPTIONS)
def step(state, calls, jobs, words, k0, k1, mean_ttf, segment, n_full, remainder, restart, queue, max_failures):
    """One Philox call per lane, then its two words as events of the running lanes."""
    lane_words(calls, jobs, words, k0, k1)
    for half in range(2):
        n_rejected = 0
        for lane in range(LANES):
            done, lost, restart_time, queue_time, failures = job_fields(state, lane)
            status = state[_STATUS * LANES + lane]
            running = status == _RUNNING
            w = words[half * LANES + lane]
            candidate, accepted, _ = ziggurat_candidate(w)
            # A pending candidate's wedge test on this word, by the lines around f.
            in_wedge = state[_REJECT_FROM * LANES + lane] > 0.0
            m = float(np.int64(w >> _S11))
            below = m < state[_ACCEPT_BELOW * LANES + lane]
            open_test = in_wedge and not below and not m >= state[_REJECT_FROM * LANES + lane]
            drawn = below if in_wedge else accepted
            rejected = running and not in_wedge and not accepted
            n_rejected += rejected
            base = state[_BASE * LANES + lane]
            x = base + (state[_PEND_X * LANES + lane] if in_wedge else candidate)
            go = running and drawn
            done_, lost_, restart_, queue_, failures_, status_ = event(
                x, done, lost, restart_time, queue_time, failures, mean_ttf, segment, n_full, remainder, restart, queue,
                max_failures)
            state[_DONE * LANES + lane] = done_ if go else done
            state[_LOST * LANES + lane] = lost_ if go else lost
            state[_RESTART * LANES + lane] = restart_ if go else restart_time
            state[_QUEUE * LANES + lane] = queue_ if go else queue_time
            state[_FAILURES * LANES + lane] = failures_ if go else failures
            state[_STATUS * LANES + lane] = status_ if go else (
                (_STALLED + half if open_test else (_REJECTED if rejected else _RUNNING)) if running else status)
            # A decided wedge test ends the pending candidate; a drawn exponential, the tails.
            decided = running and in_wedge and not open_test
            state[_REJECT_FROM * LANES + lane] = 0.0 if decided else state[_REJECT_FROM * LANES + lane]
            state[_BASE * LANES + lane] = 0.0 if go else base
        if n_rejected:
            for lane in range(LANES):
                if state[_STATUS * LANES + lane] == _REJECTED:
                    reject(state, lane, words[half * LANES + lane])
    for lane in range(LANES):
        calls[lane] += np.uint64(1) if state[_STATUS * LANES + lane] == _RUNNING else np.uint64(0)


@njit(inline="always", **JIT_OPTIONS)
def unstall(state, calls, jobs, words, lane, pair, k0, k1, mean_ttf, segment, n_full, remainder, restart, queue,
            max_failures):
    """A lane stalled on a wedge test that the lines left open: that draw
    (`rng_numba.ziggurat_rejected` from the pending candidate, its tails and
    the deciding word, with the step's two words in `pair`, a batch of one
    call, then further calls one at a time), and draws after it until the lane
    is back at a call's first word."""
    job_lo, job_hi = split_job(jobs[lane])
    half = 1 if state[_STATUS * LANES + lane] == _STALLED + 1.0 else 0
    pair[0] = words[lane]
    pair[1] = words[LANES + lane]
    x, pos = ziggurat_rejected(state[_PEND_X * LANES + lane], np.uint64(state[_PEND_LAYER * LANES + lane]), pair,
                               np.int64(2 * calls[lane]) + half, job_lo, job_hi, k0, k1,
                               state[_BASE * LANES + lane])
    state[_REJECT_FROM * LANES + lane] = 0.0
    state[_BASE * LANES + lane] = 0.0
    done, lost, restart_time, queue_time, failures = job_fields(state, lane)
    while True:
        done, lost, restart_time, queue_time, failures, status = event(
            x, done, lost, restart_time, queue_time, failures, mean_ttf, segment, n_full, remainder, restart, queue,
            max_failures)
        if status != _RUNNING or pos % 2 == 0:
            break
        x, pos = next_exponential(pair, pos, job_lo, job_hi, k0, k1)
    set_job_fields(state, lane, done, lost, restart_time, queue_time, failures, status)
    calls[lane] = np.uint64(pos >> 1)


@njit(**JIT_OPTIONS)
def run_block(work, interval, ckpt, restart, queue, n_full, remainder, rate, k0, k1, todo, max_failures, out):
    """out[i, J_WALL..J_CAPPED] = (wall, productive, checkpoint, lost, restart,
    queue, failures, capped) of job todo[i], as `simulate_job` gives them."""
    mean_ttf = 1.0 / rate
    segment = interval + ckpt
    max_f = float(max_failures)
    state = np.zeros(_N_FIELDS * LANES)
    counters = np.zeros(4 * LANES + 2, np.uint64)  # one allocation: each costs as much as ~20 settled jobs
    calls, jobs = counters[:LANES], counters[LANES:2 * LANES]
    words, pair = counters[2 * LANES:4 * LANES], counters[4 * LANES:]
    indices = np.zeros(2 * LANES, np.int64)
    lane_job, over = indices[:LANES], indices[LANES:]  # the lane's index in todo; the lanes whose job is over
    n_block = todo.size
    next_job = 0
    running = 0
    for lane in range(min(LANES, n_block)):
        jobs[lane] = np.uint64(todo[lane])
        lane_job[lane] = lane
        state[_STATUS * LANES + lane] = _RUNNING
        next_job += 1
        running += 1
    while running > 0:
        step(state, calls, jobs, words, k0, k1, mean_ttf, segment, n_full, remainder, restart, queue, max_f)
        # The lanes whose job ended or stalled, listed with no branch a lane (which lanes end is random).
        n_over = 0
        for lane in range(LANES):
            over[n_over] = lane
            status = state[_STATUS * LANES + lane]
            n_over += status != _RUNNING and status != _IDLE
        for c in range(n_over):
            lane = over[c]
            status = state[_STATUS * LANES + lane]
            if status >= _STALLED:
                unstall(state, calls, jobs, words, lane, pair, k0, k1, mean_ttf, segment, n_full, remainder, restart,
                        queue, max_f)
                status = state[_STATUS * LANES + lane]
                if status == _RUNNING:
                    continue
            # The job is over (`simulate_job`'s closing arithmetic); the lane takes the next one.
            row = out[lane_job[lane]]
            finished = status == _FINISHED
            done = n_full if finished else state[_DONE * LANES + lane]
            productive = work if finished else done * interval
            checkpoint = done * ckpt
            lost = state[_LOST * LANES + lane]
            restart_time = state[_RESTART * LANES + lane]
            queue_time = state[_QUEUE * LANES + lane]
            row[J_WALL] = productive + checkpoint + lost + restart_time + queue_time
            row[J_PRODUCTIVE] = productive
            row[J_CHECKPOINT] = checkpoint
            row[J_LOST] = lost
            row[J_RESTART] = restart_time
            row[J_QUEUE] = queue_time
            row[J_FAILURES] = state[_FAILURES * LANES + lane]
            row[J_CAPPED] = 0.0 if finished else 1.0
            for field in range(_N_FIELDS):
                state[field * LANES + lane] = 0.0
            calls[lane] = np.uint64(0)
            if next_job < n_block:
                jobs[lane] = np.uint64(todo[next_job])
                lane_job[lane] = next_job
                state[_STATUS * LANES + lane] = _RUNNING
                next_job += 1
            else:
                running -= 1
