"""A plain, slow reference for relmodel.pipeline's schedules, written apart from relmodel.

Nothing here imports relmodel: the semantics below are restated from ReCycle
(Gandhi et al., 2024; docs: explanations/recycle.md) and the 1F1B / zero-bubble
literature, so an error in the package cannot be copied into its check.
Arithmetic is exact (`fractions.Fraction`; every float converts exactly), so
the reference never rounds: a difference from the package is the package's
rounding or its error, never the reference's.

Semantics of the schedule (`simulate`):

* `replicas` (d) copies of a pipeline of `stages` (p) stages; worker (r, s)
  runs stage s of replica r. Each iteration, every replica pushes
  `microbatches` (m) micro-batches through its pipeline.
* Micro-batch j at stage s has a forward F (fwd[s]), an input-gradient
  backward B (bwd_input[s]) and a weight-gradient backward W (bwd_weight[s]).
  A "fused" backward runs B and W as one task of length B + W; a
  "decoupled" one runs them as two tasks on the same worker.
* Data dependencies: F(j, s) starts no earlier than F(j, s - 1) ends plus
  `p2p_delay`; B(j, s) no earlier than F(j, s) ends and, below the last stage,
  B(j, s + 1) ends plus `p2p_delay`; W(j, s) no earlier than B(j, s) ends.
* Worker order, 1F1B: min(p - s - 1, m) warm-up forwards, then alternately
  the next forward and the oldest outstanding backward, then the remaining
  backwards; each W right after its B. ZB-H1 keeps that F/B order and
  defers stage s's weight gradients by s micro-batches (after B(i) comes
  W(i - s)); the deferred ones run after the last B.
* A worker runs its tasks one at a time in that order, each as soon as the
  previous one ended and its inputs exist.
* Optimizer: iteration k ends with an optimizer step of `optimizer_time`.
  "barrier": one step for the whole model after every task of the iteration;
  "staggered": a step per stage after that stage's tasks (every replica).
  Iteration k + 1's forwards at a stage wait for its step.
* Steady state: the schedule runs `iterations` iterations; completion[k] is
  the end of iteration k's last optimizer step; the period is the mean time
  between completions over the last `measured` iterations (the first ones
  include the pipeline's fill, which is transient).

Closed forms (uniform stages, t = F + B + W; ReCycle's): the fault-free fused
1F1B iteration T0 = (m + p - 1) t; with f_s failed workers at stage s each
survivor runs L_s = ceil(m d / (d - f_s)) micro-batches, so no schedule that
keeps work on its stage beats max_s L_s t_s; ReCycle aims at
max(T0, max_s L_s t_s).

`check_schedule` restates the same rules as conditions on any schedule (one
with re-routed micro-batches included) and lists what a schedule breaks.
"""

from __future__ import annotations

from fractions import Fraction

FORWARD, BACKWARD, WEIGHT = "F", "B", "W"


def worker_order(order: str, p: int, m: int, s: int) -> list[tuple[str, int]]:
    """Stage s's tasks in one iteration, as (kind, micro-batch), W included."""
    warmup = min(p - s - 1, m)
    forwards_and_backwards = [(FORWARD, j) for j in range(warmup)]
    for i in range(m - warmup):
        forwards_and_backwards += [(FORWARD, warmup + i), (BACKWARD, i)]
    forwards_and_backwards += [(BACKWARD, j) for j in range(m - warmup, m)]
    lag = 0 if order == "1f1b" else min(s, m)
    tasks, weights_done = [], 0
    for kind, j in forwards_and_backwards:
        tasks.append((kind, j))
        if kind == BACKWARD and j >= lag:  # W of the micro-batch `lag` behind this B
            tasks.append((WEIGHT, j - lag))
            weights_done += 1
    tasks += [(WEIGHT, j) for j in range(weights_done, m)]
    return tasks


def _per_stage(value, p: int) -> list[Fraction]:
    values = list(value) if isinstance(value, (list, tuple)) else [value] * p
    assert len(values) == p
    return [Fraction(v) for v in values]


def simulate(stages: int, replicas: int, microbatches: int, fwd, bwd_input, bwd_weight, *, order: str = "1f1b",
             backward: str = "fused", optimizer: str = "barrier", p2p_delay=0.0, optimizer_time=0.0,
             iterations: int = 6, measured: int = 3) -> dict:
    """The fault-free schedule, by a list simulation (see the module docstring).

    Returns a dict: `times` {(k, r, j, s, kind): (start, end)} as Fractions
    (kind "B" is the fused backward when `backward` is "fused", and there is
    no "W" then), `completion` [Fraction per iteration] and `period`
    (a Fraction).
    """
    p, d, m, K = stages, replicas, microbatches, iterations
    f, b, w = (_per_stage(x, p) for x in (fwd, bwd_input, bwd_weight))
    delay, step_time = Fraction(p2p_delay), Fraction(optimizer_time)
    fused = backward == "fused"
    length = {FORWARD: f, BACKWARD: [b[s] + w[s] for s in range(p)] if fused else b, WEIGHT: w}
    queue = {}
    for r in range(d):
        for s in range(p):
            queue[r, s] = [(k, kind, j) for k in range(K) for kind, j in worker_order(order, p, m, s)
                           if not (fused and kind == WEIGHT)]
    position = {worker: 0 for worker in queue}
    free = {worker: Fraction(0) for worker in queue}
    times = {}
    step_end = {}  # (k, s) -> end of the optimizer step iteration k's stage s waits for

    def ready(k, r, j, s, kind):
        """When the task's inputs exist, or None while one is missing."""
        needs = []
        if kind == FORWARD:
            if s > 0:
                needs.append(((k, r, j, s - 1, FORWARD), delay))
            if k > 0:
                if (k - 1, s) not in step_end:
                    return None
                needs.append((None, step_end[k - 1, s]))
        elif kind == BACKWARD:
            needs.append(((k, r, j, s, FORWARD), 0))
            if s < p - 1:
                needs.append(((k, r, j, s + 1, BACKWARD), delay))
        else:
            needs.append(((k, r, j, s, BACKWARD), 0))
        at = Fraction(0)
        for task, extra in needs:
            if task is None:
                at = max(at, extra)
                continue
            if task not in times:
                return None
            at = max(at, times[task][1] + extra)
        return at

    last_kind = BACKWARD if fused else WEIGHT
    remaining = sum(len(q) for q in queue.values())
    while remaining:
        moved = False
        for worker, tasks in queue.items():
            r, s = worker
            while position[worker] < len(tasks):
                k, kind, j = tasks[position[worker]]
                at = ready(k, r, j, s, kind)
                if at is None:
                    break
                start = max(at, free[worker])
                end = start + length[kind][s]
                times[k, r, j, s, kind] = (start, end)
                free[worker] = end
                position[worker] += 1
                remaining -= 1
                moved = True
        for k in range(K):  # optimizer steps whose inputs have all ended
            for s in range(p):
                waited = range(p) if optimizer == "barrier" else [s]
                ends = [times.get((k, r, j, s2, last_kind)) for r in range(d) for j in range(m) for s2 in waited]
                if (k, s) not in step_end and None not in ends:
                    step_end[k, s] = max(end for _, end in ends) + step_time
                    moved = True
        assert moved, "the reference schedule deadlocked"
    completion = [max(step_end[k, s] for s in range(p)) for k in range(K)]
    n = min(measured, K - 1)
    period = (completion[-1] - completion[-1 - n]) / n if n else completion[0]
    return {"times": times, "completion": completion, "period": period}


# -- ReCycle's closed forms -------------------------------------------------------------


def fault_free_1f1b(m: int, p: int, t) -> Fraction:
    """T0 = (m + p - 1) t: fused 1F1B, uniform stages, no delays or optimizer time."""
    return (m + p - 1) * Fraction(t)


def survivor_load(m: int, d: int, failed_at_stage: int) -> int:
    """L_s = ceil(m d / (d - f_s)): micro-batches on each survivor of a stage (None: no survivor)."""
    alive = d - failed_at_stage
    return None if alive <= 0 else -(-(m * d) // alive)


def work_bound(m: int, d: int, failed_per_stage, stage_time) -> Fraction:
    """max_s L_s t_s: the busiest survivor's work per iteration (None when a stage has no survivor)."""
    loads = [survivor_load(m, d, f) for f in failed_per_stage]
    if any(load is None for load in loads):
        return None
    return max(load * Fraction(t) for load, t in zip(loads, stage_time))


def recycle_aim(t0, bound) -> Fraction:
    """ReCycle's aim: max(T0, max_s L_s t_s)."""
    return max(Fraction(t0), Fraction(bound))


def average_load_bound(m: int, d: int, stage_time, live_workers: int) -> Fraction:
    """m d sum_s t_s / live workers: no schedule on that many workers does better,
    wherever it puts the stages."""
    return m * d * sum(Fraction(t) for t in stage_time) / live_workers


# -- any schedule against the rules ---------------------------------------------------


def check_schedule(stages: int, replicas: int, microbatches: int, iterations: int, fwd, bwd_input, bwd_weight,
                   tasks, *, backward: str, optimizer: str, p2p_delay=0.0, reroute_delay=0.0, optimizer_time=0.0,
                   failed=()) -> list[str]:
    """What a schedule breaks of the rules above (an empty list: nothing).

    `tasks`: (k, r, j, s, kind, worker, start, end) for every task, with
    `worker` the (replica, stage) that ran it; a re-routed task runs on
    another replica's worker of its stage, its inputs then cross replicas
    with `reroute_delay`. `failed` lists (replica, stage) workers that must
    run nothing. Times are the schedule's float64 numbers and are compared
    as float64 sums (end == start + length, start >= end + delay), the way any
    float64 schedule computes them: exact reals would flag its rounding.

    Checked: every task present once, with its length; data dependencies
    with their delays; a worker runs one task at a time, only tasks of its
    own stage, and never when failed; no survivor runs more than
    L_s = ceil(m d / (d - f_s)) micro-batches of an iteration; iteration
    k + 1's forwards at a stage start after iteration k's last backward there
    (every stage's, with a barrier) plus the optimizer step.
    """
    p, d, m, K = stages, replicas, microbatches, iterations
    f, b, w = (list(x) if isinstance(x, (list, tuple)) else [x] * p for x in (fwd, bwd_input, bwd_weight))
    fused = backward == "fused"
    length = {FORWARD: f, BACKWARD: [b[s] + w[s] for s in range(p)] if fused else b, WEIGHT: w}
    problems = []
    by_key = {}
    for k, r, j, s, kind, worker, start, end in tasks:
        key = (k, r, j, s, kind)
        if key in by_key:
            problems.append(f"{key} scheduled twice")
        by_key[key] = (worker, float(start), float(end))
        if float(start) + float(length[kind][s]) != float(end):
            problems.append(f"{key} lasts {end - start!r}, not {length[kind][s]!r}")
        if worker[1] != s:
            problems.append(f"{key} runs on {worker}, not on a stage-{s} worker")
        if worker in set(failed):
            problems.append(f"{key} runs on failed worker {worker}")
    kinds = (FORWARD, BACKWARD) if fused else (FORWARD, BACKWARD, WEIGHT)
    expected = {(k, r, j, s, kind) for k in range(K) for r in range(d) for j in range(m) for s in range(p)
                for kind in kinds}
    if set(by_key) != expected:
        problems.append(f"{len(expected - set(by_key))} tasks missing, {len(set(by_key) - expected)} unknown")
        return problems

    def link(a, b_):
        return 0.0 if a == b_ else (float(p2p_delay) if a[0] == b_[0] else float(reroute_delay))

    for (k, r, j, s, kind), (worker, start, _) in by_key.items():
        inputs = []
        if kind == FORWARD and s > 0:
            inputs.append((k, r, j, s - 1, FORWARD))
        if kind == BACKWARD:
            inputs.append((k, r, j, s, FORWARD))
            if s < p - 1:
                inputs.append((k, r, j, s + 1, BACKWARD))
        if kind == WEIGHT:
            inputs.append((k, r, j, s, BACKWARD))
        for source in inputs:
            source_worker, _, source_end = by_key[source]
            if start < source_end + link(source_worker, worker):
                problems.append(f"{(k, r, j, s, kind)} starts at {start!r} before its input {source} is there")
    runs = {}
    for key, (worker, start, end) in by_key.items():
        runs.setdefault(worker, []).append((start, end, key))
    for worker, items in runs.items():
        items.sort()
        for (_, end_a, a), (start_b, _, b_) in zip(items, items[1:]):
            if start_b < end_a:
                problems.append(f"{worker} runs {a} and {b_} at once")
        failed_here = sum(1 for x in failed if x[1] == worker[1])
        load = survivor_load(m, d, failed_here)
        for k in range(K):
            count = len({key[1:3] for _, _, key in items if key[0] == k})
            if load is None or count > load:
                problems.append(f"{worker} runs {count} micro-batches of iteration {k}, over L_s = {load}")
    last = WEIGHT if not fused else BACKWARD
    for k in range(K - 1):
        for s in range(p):
            stages_waited = range(p) if optimizer == "barrier" else [s]
            done = max(by_key[k, r, j, s2, last][2] for r in range(d) for j in range(m) for s2 in stages_waited)
            first = min(by_key[k + 1, r, j, s, FORWARD][1] for r in range(d) for j in range(m))
            if first < done + float(optimizer_time):
                problems.append(f"iteration {k + 1} starts at stage {s} before iteration {k}'s optimizer step")
    return problems
