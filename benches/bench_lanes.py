"""Where a lane step of the timeline kernel spends its time (a script, not a test: it asserts nothing).

    python benches/bench_lanes.py [--steps 100000] [--repeats 3]

`_kernels.lanes_numba.step` on LANES running jobs that never finish (so every
word is an event), in ns per word (one word per event), beside its parts each
timed alone: the Philox4x32-10 calls (two words a call, SIMD across the
lanes), the ziggurat's first step on each word, and the event arithmetic with
its state loads and stores. One thread, best of `--repeats`. The step also
runs the rest of the ziggurat in the lanes (the wedge tests by lines, the
tails) and selects which lanes go on: the parts add up to less than the step.

Then the lane design's ceiling: the same step with every word the ziggurat's
first step rejects (2.2%) simply dropped, so no tails, wedge tests or stalls
(a wrong distribution: a bound, not a kernel), beside the NumPy peer's cost a
failure event on the large reference scenario (`relmodel bench`'s peer, at its
chunking there, one thread). Their quotient bounds the large scenario's ratio
for any kernel built as lanes on this stream, before its per-job costs.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np
from numba import njit

from relmodel import Scenario
from relmodel._bench import SCENARIOS, chunked
from relmodel._bench.peers import numpy_timelines

from relmodel._kernels import lanes_numba as lanes
from relmodel._kernels.rng_numba import philox_words, ziggurat_candidate

N = lanes.LANES
# A job that never ends (n_full 1e12 intervals, no cap): every draw is an event.
ARGS = (np.uint64(0), np.uint64(1), 1.8, 1.0833, 1e12, 0.0, 0.1666, 0.0, 1e18)


@njit
def whole_step(n, state, calls, jobs, words):
    for _ in range(n):
        lanes.step(state, calls, jobs, words, *ARGS)
        for lane in range(N):  # a wedge test the lines left open (1 word in 10,000): skip the draw, go on
            if state[lanes._STATUS * N + lane] >= lanes._STALLED:
                state[lanes._REJECT_FROM * N + lane] = 0.0
                state[lanes._STATUS * N + lane] = lanes._RUNNING
                calls[lane] += np.uint64(1)


@njit
def accepted_only_step(state, calls, jobs, words, k0, k1, mean_ttf, segment, n_full, remainder, restart, queue,
                       max_failures):
    """`lanes.step` with the ziggurat's rejected words dropped (the ceiling: see the module's doc)."""
    lanes.lane_words(calls, jobs, words, k0, k1)
    for half in range(2):
        for lane in range(N):
            done, lost, restart_time, queue_time, failures = lanes.job_fields(state, lane)
            status = state[lanes._STATUS * N + lane]
            x, accepted, _ = ziggurat_candidate(words[half * N + lane])
            go = status == lanes._RUNNING and accepted
            d, lo, r, q, f, s = lanes.event(x, done, lost, restart_time, queue_time, failures, mean_ttf, segment,
                                            n_full, remainder, restart, queue, max_failures)
            lanes.set_job_fields(state, lane, d if go else done, lo if go else lost, r if go else restart_time,
                                 q if go else queue_time, f if go else failures, s if go else status)
    for lane in range(N):
        calls[lane] += np.uint64(1) if state[lanes._STATUS * N + lane] == lanes._RUNNING else np.uint64(0)


@njit
def accepted_only(n, state, calls, jobs, words):
    for _ in range(n):
        accepted_only_step(state, calls, jobs, words, *ARGS)


@njit
def philox_only(n, state, calls, jobs, words):
    for _ in range(n):
        for lane in range(N):
            job = jobs[lane]
            w0, w1 = philox_words(calls[lane], job & np.uint64(0xFFFFFFFF), job >> np.uint64(32), ARGS[0], ARGS[1])
            words[lane] = w0
            words[N + lane] = w1
        for lane in range(N):
            calls[lane] += np.uint64(1)


@njit
def ziggurat_only(n, state, calls, jobs, words):
    for _ in range(n):
        for half in range(2):
            for lane in range(N):
                x, accepted, _ = ziggurat_candidate(words[half * N + lane] + np.uint64(lane))
                state[lane] += x if accepted else 0.0


@njit
def events_only(n, state, calls, jobs, words):
    for _ in range(n):
        for _half in range(2):
            for lane in range(N):
                done, lost, restart = state[lane], state[N + lane], state[2 * N + lane]
                queue, failures = state[3 * N + lane], state[4 * N + lane]
                running = state[5 * N + lane] == lanes._RUNNING
                d, lo, r, q, f, status = lanes.event(0.3 + lane * 0.01, done, lost, restart, queue, failures,
                                                     1.8, 1.0833, 1e12, 0.0, 0.1666, 0.0, 1e18)
                keep = running
                state[lane] = d if keep else done
                state[N + lane] = lo if keep else lost
                state[2 * N + lane] = r if keep else restart
                state[3 * N + lane] = q if keep else queue
                state[4 * N + lane] = f if keep else failures
                state[5 * N + lane] = status if keep else state[5 * N + lane]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    numba.set_num_threads(1)

    def fresh():
        state = np.zeros(lanes._N_FIELDS * N)
        state[lanes._STATUS * N:(lanes._STATUS + 1) * N] = lanes._RUNNING
        return state, np.zeros(N, np.uint64), np.arange(N, dtype=np.uint64), np.arange(2 * N, dtype=np.uint64)

    print(f"{N} lanes, {args.steps} steps ({2 * N * args.steps:,} words), one thread, best of {args.repeats}")
    ns = {}
    for name, run in (("whole step", whole_step), ("Philox calls", philox_only), ("ziggurat first step", ziggurat_only),
                      ("event arithmetic", events_only), ("accepted words only", accepted_only)):
        ns[name] = time_words(run, args, fresh)
        print(f"  {name:22s} {ns[name]:6.2f} ns a word")
    peer_ns = numpy_peer_ns_per_event(args.repeats)
    print(f"NumPy peer, large scenario: {peer_ns:.2f} ns a failure event; the ratio to it at most "
          f"{peer_ns / ns['accepted words only']:.2f} for lanes on this stream (the ceiling), "
          f"{peer_ns / ns['whole step']:.2f} at the whole step's speed, both before per-job costs")


def time_words(run, args, fresh):
    """ns a word of `run` over args.steps steps, best of args.repeats."""
    run(10, *fresh())  # compile
    best = np.inf
    for _ in range(args.repeats):
        buffers = fresh()
        start = time.perf_counter()
        run(args.steps, *buffers)
        best = min(best, time.perf_counter() - start)
    return best / (2 * N * args.steps) * 1e9


def numpy_peer_ns_per_event(repeats, n_jobs=20_000, chunk=20_000):
    """The NumPy peer's ns a failure event on the large reference scenario, best of `repeats`."""
    sc = Scenario(**SCENARIOS["large"][0])
    best, events = np.inf, 0.0
    for _ in range(repeats + 1):
        start = time.perf_counter()
        _, _, failures = chunked(numpy_timelines, chunk)(sc, n_jobs, 0)
        best = min(best, time.perf_counter() - start)
        events = float(failures.sum())
    return best / events * 1e9


if __name__ == "__main__":
    main()
