"""Task graphs of hybrid-parallel pipeline training, as flat arrays.

`d` replicas of a `p`-stage pipeline, `m` micro-batches per replica per
iteration. Every (iteration k, replica r, micro-batch j, stage s) has three
task slots: F (forward), B (input gradient) and W (weight gradient). With a
fused backward, B carries B + W and W is a zero-length placeholder that
occupies no worker, so indices never depend on the options. Optional
redundant-forward tasks (Bamboo) and the optimizer steps come after them.

Dependencies: F(s-1) -> F(s) and B(s+1) -> B(s) across workers (plus a
point-to-point delay, or the re-routing delay between replicas), F -> B and
B -> W on one worker, W -> the stage's optimizer step, and that step -> every
task of the stage's next iteration. With a global barrier the step waits for
every W of every stage.

Which worker runs (r, j, s) is `executor[r, j, s]` (worker index r' * p + s);
re-routing changes it. A worker's order is a chain of task indices.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

F, B, W = 0, 1, 2
KIND_NAMES = ("F", "B", "W", "R", "step", "barrier")
R_KIND, STEP_KIND, BARRIER_KIND = 3, 4, 5


@dataclass(frozen=True)
class TaskGraph:
    """Flat task arrays of `n_iterations` iterations (see the module docstring)."""

    duration: np.ndarray  # float64 (n,)
    worker: np.ndarray  # int64 (n,); -1: occupies no worker
    kind: np.ndarray  # int8 (n,): 0 F, 1 B, 2 W, 3 R, 4 optimizer step, 5 barrier
    pred_ptr: np.ndarray  # int64 (n + 1,)
    pred_idx: np.ndarray  # int64
    pred_delay: np.ndarray  # float64
    step_index: np.ndarray  # int64 (K, p): the optimizer step of (iteration, stage)
    n_iterations: int
    shape: tuple  # (d, m, p)
    redundant_base: int  # first redundant-forward task, or -1

    @property
    def size(self) -> int:
        return self.duration.size

    def task(self, k, r, j, s, t):
        """Index of task t (F, B or W) of iteration k, replica r, micro-batch j, stage s."""
        d, m, p = self.shape
        return ((((k * d + r) * m + j) * p + s) * 3) + t

    def redundant(self, k, r, j, s):
        d, m, p = self.shape
        return self.redundant_base + ((k * d + r) * m + j) * p + s


def task_index(shape, k, r, j, s, t):
    """Vectorised `TaskGraph.task` (arrays broadcast)."""
    d, m, p = shape
    return ((((k * d + r) * m + j) * p + s) * 3) + t


def csr(n: int, src: np.ndarray, dst: np.ndarray, delay: np.ndarray):
    """Predecessor lists in CSR form from edge arrays (stable in edge order)."""
    from ._schedule_kernel import csr_lists  # compiled on first use: importing the package stays light

    return csr_lists(n, np.ascontiguousarray(src, dtype=np.int64), np.ascontiguousarray(dst, dtype=np.int64),
                     np.ascontiguousarray(delay, dtype=np.float64))


def build_graph(cfg, n_iterations: int, *, executor=None, split=None, redundant=None, staggered=None) -> TaskGraph:
    """The task graph of `cfg` (a `PipelineConfig`) over `n_iterations` iterations.

    executor : int (d, m, p) worker running each (replica, micro-batch, stage);
        default: its own replica's worker.
    split : bool (d, m, p), B and W as separate tasks; default from `cfg.backward`.
    redundant : float (p,) durations of a redundant forward after each F (Bamboo), or None.
    staggered : per-stage optimizer steps (True) or a global barrier; default from `cfg.optimizer`.
    """
    d, m, p, K = cfg.replicas, cfg.microbatches, cfg.stages, n_iterations
    shape = (d, m, p)
    if executor is None:
        executor = default_executor(d, m, p)
    if split is None:
        split = np.full(shape, cfg.backward == "decoupled")
    if staggered is None:
        staggered = cfg.optimizer == "staggered"
    n_comp = K * d * m * p * 3
    n_red = K * d * m * p if redundant is not None else 0
    step_base = n_comp + n_red
    barrier_base = step_base + K * p
    n = barrier_base + (0 if staggered else K)

    k, r, j, s = (a.ravel() for a in np.meshgrid(np.arange(K), np.arange(d), np.arange(m), np.arange(p), indexing="ij"))
    ex = executor[r, j, s]
    sp = split[r, j, s]
    fb = task_index(shape, k, r, j, s, 0)  # F of each (k, r, j, s); B = +1, W = +2

    duration = np.zeros(n)
    worker = np.full(n, -1, dtype=np.int64)
    kind = np.empty(n, dtype=np.int8)
    fwd, bwd_input, bwd_weight = cfg.times
    duration[fb] = fwd[s]
    duration[fb + 1] = bwd_input[s] + np.where(sp, 0.0, bwd_weight[s])
    duration[fb + 2] = np.where(sp, bwd_weight[s], 0.0)
    worker[fb] = ex
    worker[fb + 1] = ex
    worker[fb + 2] = np.where(sp, ex, -1)
    kind[fb], kind[fb + 1], kind[fb + 2] = F, B, W
    kind[step_base:barrier_base] = STEP_KIND
    kind[barrier_base:] = BARRIER_KIND
    duration[step_base:barrier_base] = cfg.optimizer_time

    def link(a, b):
        same_replica = (a // p) == (b // p)
        return np.where(a == b, 0.0, np.where(same_replica, cfg.p2p_delay, cfg.reroute_delay))

    src, dst, dly = [], [], []

    def edges(a, b, delay=0.0):
        src.append(np.asarray(a, dtype=np.int64).ravel())
        dst.append(np.asarray(b, dtype=np.int64).ravel())
        dly.append(np.broadcast_to(np.asarray(delay, dtype=np.float64), np.shape(a)).ravel())

    up = s > 0  # F(s-1) -> F(s); stage s +- 1 is 3 indices away
    edges(fb[up] - 3, fb[up], link(executor[r[up], j[up], s[up] - 1], ex[up]))
    down = s < p - 1  # B(s+1) -> B(s)
    edges(fb[down] + 3 + B, fb[down] + B, link(executor[r[down], j[down], s[down] + 1], ex[down]))
    edges(fb, fb + B)
    edges(fb + B, fb + W)
    later = k > 0
    step = step_base + k * p + s
    edges(step[later] - p, fb[later])  # the stage's previous step -> F
    finals = [fb + 2]
    if redundant is not None:
        red = n_comp + ((k * d + r) * m + j) * p + s
        duration[red] = np.asarray(redundant, dtype=float)[s]
        worker[red] = ex
        kind[red] = R_KIND
        edges(fb, red)
        finals.append(red)
    for t in finals:
        if staggered:
            edges(t, step)
        else:
            edges(t, barrier_base + k)
    if not staggered:
        kk, ss = np.meshgrid(np.arange(K), np.arange(p), indexing="ij")
        edges(barrier_base + kk.ravel(), step_base + kk.ravel() * p + ss.ravel())

    ptr, idx, delay = csr(n, np.concatenate(src), np.concatenate(dst), np.concatenate(dly))
    return TaskGraph(duration=duration, worker=worker, kind=kind, pred_ptr=ptr, pred_idx=idx, pred_delay=delay,
                     step_index=(step_base + np.arange(K * p)).reshape(K, p), n_iterations=K, shape=shape,
                     redundant_base=n_comp if redundant is not None else -1)


def cross_stage_edges(graph: TaskGraph) -> tuple[np.ndarray, np.ndarray]:
    """(edge_dst, cross): each predecessor edge's task, and whether the edge joins two stages (its delay
    then follows the workers: point-to-point within a replica, re-routing across)."""
    d, m, p = graph.shape
    edge_dst = np.repeat(np.arange(graph.size), np.diff(graph.pred_ptr))
    stage = np.where(graph.worker >= 0, graph.worker % p, -1)
    src, dst = stage[graph.pred_idx], stage[edge_dst]
    return edge_dst, (src >= 0) & (dst >= 0) & (src != dst)


def executor_workers(graph: TaskGraph, executor: np.ndarray) -> np.ndarray:
    """Each task's worker when `executor` runs each (replica, micro-batch, stage) (-1 where `graph`'s task
    occupies no worker): task (k, r, j, s, t) is (r, j, s) = i // 3 modulo d m p (a graph without
    redundant forwards)."""
    worker = np.full(graph.size, -1, dtype=np.int64)
    tasks = np.flatnonzero(graph.worker >= 0)
    worker[tasks] = executor.ravel()[(tasks // 3) % executor.size]
    return worker


def default_executor(d: int, m: int, p: int) -> np.ndarray:
    r, _, s = np.meshgrid(np.arange(d), np.arange(m), np.arange(p), indexing="ij")
    return (r * p + s).astype(np.int64)


# -- static orders ----------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def stage_order(order: str, p: int, m: int, s: int) -> tuple[np.ndarray, np.ndarray]:
    """(task type, micro-batch) of stage s's tasks in one iteration, in order.

    1F1B: min(p - s - 1, m) warm-up forwards, then F/B pairs, then the
    remaining backwards; each W right after its B. ZB-H1: the same F and B
    order, with stage s's W passes deferred by s micro-batches (the stages
    keep p micro-batches in flight, like stage 0 of 1F1B) and the deferred
    ones run after the last B, filling the tail bubble.
    """
    warmup = min(p - s - 1, m)
    seq = [(F, i) for i in range(warmup)]
    fb = []
    for i in range(m - warmup):
        fb += [(F, warmup + i), (B, i)]
    fb += [(B, i) for i in range(m - warmup, m)]
    lag = 0 if order == "1f1b" else min(s, m)
    w_next = 0
    for t, i in fb:
        seq.append((t, i))
        if t == B and i >= lag:
            seq.append((W, w_next))
            w_next += 1
    seq += [(W, i) for i in range(w_next, m)]
    types, micro = (np.array(x, dtype=np.int64) for x in zip(*seq))
    types.flags.writeable = micro.flags.writeable = False  # cached: shared by every caller
    return types, micro


def worker_chains(graph: TaskGraph, order: str) -> list[np.ndarray]:
    """Each worker's fixed order over all iterations (its own replica's tasks), as task indices.

    Placeholder W tasks (fused backward) occupy no worker and are left out.
    """
    d, m, p = graph.shape
    chains = []
    for r in range(d):
        for s in range(p):
            types, micro = stage_order(order, p, m, s)
            k = np.arange(graph.n_iterations)[:, None]
            tasks = task_index(graph.shape, k, r, micro[None, :], s, types[None, :]).ravel()
            chains.append(tasks[graph.worker[tasks] >= 0])
    return chains


def chain_edges(chains) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) edges that make each chain run in its order."""
    src = [c[:-1] for c in chains if c.size > 1]
    dst = [c[1:] for c in chains if c.size > 1]
    if not src:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.concatenate(src), np.concatenate(dst)


def with_orders(graph: TaskGraph, chains) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The graph's predecessor lists plus the chain edges (CSR)."""
    src, dst = chain_edges(chains)
    n = graph.size
    counts = np.diff(graph.pred_ptr)
    old_dst = np.repeat(np.arange(n), counts)
    return csr(n, np.concatenate([graph.pred_idx, src]), np.concatenate([old_dst, dst]),
               np.concatenate([graph.pred_delay, np.zeros(src.size)]))
