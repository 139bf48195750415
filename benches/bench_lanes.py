"""Where a lane step of the timeline kernel spends its time (a script, not a test: it asserts nothing).

    python benches/bench_lanes.py [--steps 100000] [--repeats 3]

`_kernels.lanes_numba.step` on LANES running jobs that never finish (so every
word is an event), in ns per word (one word per event), beside its parts each
timed alone: the Philox4x32-10 calls (two words a call, SIMD across the
lanes), the ziggurat's first step on each word, and the event arithmetic with
its state loads and stores. One thread, best of `--repeats`. The step also
runs the rest of the ziggurat in the lanes (the wedge tests by lines, the
tails) and selects which lanes go on: the parts add up to less than the step.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np
from numba import njit

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
    for name, run in (("whole step", whole_step), ("Philox calls", philox_only), ("ziggurat first step", ziggurat_only),
                      ("event arithmetic", events_only)):
        run(10, *fresh())  # compile
        best = np.inf
        for _ in range(args.repeats):
            buffers = fresh()
            start = time.perf_counter()
            run(args.steps, *buffers)
            best = min(best, time.perf_counter() - start)
        print(f"  {name:22s} {best / (2 * N * args.steps) * 1e9:6.2f} ns a word")


if __name__ == "__main__":
    main()
