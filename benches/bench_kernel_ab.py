"""The Numba timeline kernel of a git revision against the working tree's, in one process (a script, not a test).

    python benches/bench_kernel_ab.py [REV] [--rounds 9]

On a machine whose speed drifts by tens of per cent between runs, two
`relmodel bench` runs cannot show a 10% change; this times both kernels'
`run_blocks` on the three reference scenarios and on the paths they leave
out, checkpoint levels and the general one-job path (one thread, the rounds
interleaved, best of `--rounds`) and checks first that their sums are the same
bits. The revision's `rng_numba`, `lanes_numba` and `timeline_numba` are
copied from git into a temporary folder as modules of their own (the rest of
the package, layout included, is the working tree's, so REV must share its
layout); REV defaults to HEAD.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

import relmodel as rm
from relmodel import _engine as engine
from relmodel._engine import work_groups
from relmodel._kernels import timeline_numba
from relmodel._kernels.layout import BLOCK_SIZE, N_BINS, N_CAT_STATS, N_LEVEL_STATS, N_STATS
from relmodel._bench import FAST_LEVEL, LEVEL_RUNS, SCENARIOS

_LARGE = SCENARIOS["large"][0]
# The three reference scenarios, then the paths they leave out: checkpoint levels (stepping a
# persisting write, two levels, jumping a blocking fast level) and the general one-job path.
RUNS = {
    "small": (SCENARIOS["small"][0], 256 * BLOCK_SIZE),
    "medium": (SCENARIOS["medium"][0], 64 * BLOCK_SIZE),
    "large": (_LARGE, 4 * BLOCK_SIZE),
    # `relmodel bench`'s own level runs (the one without levels is "large").
    **{label: (dict(_LARGE, **extra), 16 * BLOCK_SIZE) for label, extra in LEVEL_RUNS.items() if extra},
    "fast level, blocking": (dict(_LARGE, fast_checkpoints=(dict(FAST_LEVEL, persist="0s"),)), 16 * BLOCK_SIZE),
    "weibull, exp. queue": (dict(_LARGE, weibull_shape=0.7, queue_wait_distribution="exponential"), 16 * BLOCK_SIZE),
}
_MODULES = ("rng_numba", "lanes_numba", "timeline_numba")


def revision_kernel(rev: str, folder: Path):
    """Import REV's timeline kernel from `folder` as `rev_timeline_numba`."""
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).parent).stdout.strip()
    for name in _MODULES:
        source = subprocess.run(["git", "show", f"{rev}:relmodel/_kernels/{name}.py"], capture_output=True,
                                text=True, check=True, cwd=root).stdout
        for other in _MODULES:
            source = source.replace(f"from .{other} import", f"from rev_{other} import")
            source = source.replace(f"from . import {other}", f"import rev_{other} as {other}")
        source = source.replace("from . import", "from relmodel._kernels import")
        source = source.replace("from .", "from relmodel._kernels.")
        if name == "timeline_numba":  # compiled lazily here: the signature would make both load at import
            start = source.index('@njit(\n    "void(')
            source = source[:start] + "@njit(parallel=True, **JIT_OPTIONS)\n" + source[source.index("def run_blocks("):]
        (folder / f"rev_{name}.py").write_text(source)
    sys.path.insert(0, str(folder))
    return importlib.import_module("rev_timeline_numba")


def block_sums(kernel, packed, n_jobs):
    """Per-block sums of n_jobs jobs of the row (seed 0)."""
    items = n_jobs // BLOCK_SIZE
    stats = np.zeros((items, N_STATS))
    args = (*packed.kernel_args(), np.uint64(0), np.zeros(1, np.uint64), np.zeros(items, np.int64),
            np.arange(items, dtype=np.int64), n_jobs, 10**6, stats, np.zeros(items, np.int64),
            np.zeros((1, 1, N_BINS + 1), np.int64), np.zeros((items, packed.n_categories, N_CAT_STATS)),
            np.zeros((items, packed.n_levels, N_LEVEL_STATS)))
    parameters = inspect.signature(kernel.run_blocks.py_func).parameters
    if "n_groups" in parameters:  # a revision with even groups
        args += (work_groups(items, 1),)
    elif "items_per_group" in parameters:  # a revision with groups of a fixed size
        args += (max(1, min(32, items // 4)),)
    kernel.run_blocks(*args)
    return stats


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", default="HEAD")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    numba.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        kernels = {args.rev: revision_kernel(args.rev, Path(folder)), "working tree": timeline_numba}
        print(f"run_blocks, one thread, best of {args.rounds} interleaved rounds (ns a job)")
        for name, (fields, n_jobs) in RUNS.items():
            packed = engine.pack(rm.Scenario(**fields))
            sums = [block_sums(kernel, packed, n_jobs) for kernel in kernels.values()]
            if not np.array_equal(*sums):
                sys.exit(f"{name}: the two kernels' sums differ")
            best = dict.fromkeys(kernels, np.inf)
            for _ in range(args.rounds):
                for label, kernel in kernels.items():
                    start = time.perf_counter()
                    block_sums(kernel, packed, n_jobs)
                    best[label] = min(best[label], time.perf_counter() - start)
            old, new = (best[label] / n_jobs * 1e9 for label in kernels)
            print(f"  {name:23s} {args.rev}: {old:8.1f}   working tree: {new:8.1f}   speed-up {old / new:.2f}")


if __name__ == "__main__":
    main()
