"""Nodes of the cluster: their failures and repairs, and which GPUs each job holds.

Failures follow the toolkit's model: Poisson at `failure_rate` per node-day
of up time, independent across nodes (so the cluster fails at n_nodes times
that); a failed node is back after `repair_time`. Node n's k-th time to
failure is drawn from uniform k of row n under key (seed, STREAM_FAILURES),
so the failure history depends on the seed alone, not on the policy or the
jobs: every policy of a run sees the same failures.
"""

from __future__ import annotations

import math

import numpy as np

STREAM_FAILURES = 3
_CHUNK = 32


class FailureProcess:
    """Times to failure of each node (lazily drawn), or an explicit list of
    (time h, node) failures that replaces the random process."""

    def __init__(self, n_nodes: int, failure_rate: float, seed: int, explicit=None):
        self.n_nodes, self.seed = n_nodes, seed
        self.mean_up_h = math.inf if failure_rate == 0 else 24.0 / failure_rate
        self.explicit = None if explicit is None else sorted((float(t), int(n)) for t, n in explicit)
        self._drawn = [np.empty(0) for _ in range(n_nodes)]
        self._used = [0] * n_nodes

    def first_failures(self) -> list[tuple[float, int]]:
        if self.explicit is not None:
            return list(self.explicit)
        return [(t, n) for n in range(self.n_nodes) if math.isfinite(t := self.next_failure(n, 0.0))]

    def next_failure(self, node: int, up_since: float) -> float:
        """When node `node`, up since `up_since`, fails next (inf: never; explicit mode: never drawn)."""
        if self.explicit is not None or math.isinf(self.mean_up_h):
            return math.inf
        k = self._used[node]
        if k >= self._drawn[node].size:
            from ._allocation_kernel import stream_uniforms

            more = stream_uniforms(self.seed, STREAM_FAILURES, node, self._drawn[node].size, _CHUNK)
            self._drawn[node] = np.concatenate([self._drawn[node], more])
        self._used[node] = k + 1
        return up_since - math.log(self._drawn[node][k]) * self.mean_up_h


def node_sizes(n_gpus: int, gpus_per_node: int) -> np.ndarray:
    """GPUs per node: full nodes, and a last partial one if n_gpus is not a multiple."""
    full, rest = divmod(n_gpus, gpus_per_node)
    return np.array([gpus_per_node] * full + ([rest] if rest else []), dtype=np.int64)


class Placement:
    """Free GPUs per node and the GPUs each job holds on each node."""

    def __init__(self, sizes: np.ndarray):
        self.sizes = sizes
        self.free = sizes.copy()
        self.up = np.ones(sizes.size, dtype=bool)
        self.held: dict[int, dict[int, int]] = {}  # job -> {node: GPUs}
        # Kept as GPUs move, not summed over the nodes on every question.
        self.capacity = int(sizes.sum())  # GPUs on nodes that are up
        self.total_free = self.capacity  # free GPUs on them (a node down has none free)

    def gpus_of(self, job: int) -> int:
        return sum(self.held.get(job, {}).values())

    def acquire(self, job: int, n: int):
        """n more GPUs for `job`: first on nodes it already uses, then on the
        nodes with the most free GPUs (a job spans few nodes)."""
        mine = self.held.setdefault(job, {})
        order = sorted(range(self.sizes.size), key=lambda k: (k not in mine, -self.free[k], k))
        for k in order:
            if n == 0:
                break
            take = min(n, int(self.free[k])) if self.up[k] else 0
            if take:
                self.free[k] -= take
                self.total_free -= take
                mine[k] = mine.get(k, 0) + take
                n -= take
        if n:
            raise RuntimeError(f"placement: {n} GPUs short for job {job}")  # the allocator guarantees room

    def release(self, job: int, n: int | None = None):
        """Give back n of the job's GPUs (all by default), from the nodes where it has fewest."""
        mine = self.held.get(job, {})
        n = sum(mine.values()) if n is None else n
        for k in sorted(mine, key=lambda k: (mine[k], -k)):
            if n == 0:
                break
            give = min(n, mine[k])
            mine[k] -= give
            self.free[k] += give
            self.total_free += give
            n -= give
            if mine[k] == 0:
                del mine[k]
        if not mine:
            self.held.pop(job, None)

    def fail(self, node: int) -> dict[int, int]:
        """Node down: the GPUs each job lost there."""
        if self.up[node]:
            self.capacity -= int(self.sizes[node])
        self.up[node] = False
        self.total_free -= int(self.free[node])
        self.free[node] = 0
        lost = {}
        for job, mine in self.held.items():
            if node in mine:
                lost[job] = mine.pop(node)
        for job in [j for j, mine in self.held.items() if not mine]:
            del self.held[job]
        return lost

    def repair(self, node: int):
        if not self.up[node]:
            self.capacity += int(self.sizes[node])
        self.up[node] = True
        self.total_free += int(self.sizes[node] - self.free[node])
        self.free[node] = self.sizes[node]


def capacity_timeline(sizes: np.ndarray, process: FailureProcess, repair_time: float, until: float):
    """(times, GPUs up) change points of the failure process alone on [0, until]."""
    import heapq

    heap = [(t, 1, n) for t, n in process.first_failures() if t <= until]
    heapq.heapify(heap)
    up = np.ones(sizes.size, dtype=bool)
    times, gpus = [0.0], [int(sizes.sum())]
    while heap:
        t, fails, n = heapq.heappop(heap)
        if fails:
            if not up[n]:
                continue
            up[n] = False
            if t + repair_time <= until:
                heapq.heappush(heap, (t + repair_time, 0, n))
        else:
            up[n] = True
            nxt = process.next_failure(n, t)
            if nxt <= until:
                heapq.heappush(heap, (nxt, 1, n))
        times.append(t)
        gpus.append(int(sizes[up].sum()))
    return np.array(times), np.array(gpus)
