"""Array layout shared by the Python layer and both kernel backends, declared once.

setup.py writes the Cython twin's compile-time constants (`_layout.pxi`) from
`LAYOUT` here; a test checks that the built twin's `LAYOUT` equals it, so a
stale build cannot drift apart either.

The tables whose columns become Dataset variables (a level's parameters, a
job's outputs, the per-category and per-level sums) are declared as `Column`
records: the constant, the name the estimates and Datasets give it, its unit
and the dtype a Dataset stores it as. The constants are unpacked from them in
order, and a test holds each constant to its record.
"""

from typing import NamedTuple


class Column(NamedTuple):
    """One column of a kernel array (the kernels hold every column as float64)."""

    constant: str  # its index's name below
    name: str  # in estimates and Datasets (``job_<name>``, ``<name>_by_category``, ``<name>_by_level``)
    unit: str  # "h", or "1" for counts and ratios
    dtype: str = "float64"  # as a Dataset stores it


# Columns of the per-scenario float parameter table.
P_INTERVAL = 0  # productive time between checkpoints (h)
P_CKPT = 1  # blocking checkpoint write (h)
P_RESTART = 2  # restart overhead after each interruption (h)
P_QUEUE = 3  # queue wait (or its mean) after each interruption (h)
P_WORK = 4  # productive time the job needs (h)
P_N_FULL = 5  # number of full intervals, each followed by a checkpoint
P_REMAINDER = 6  # final partial interval, no checkpoint after it (h)
P_SHAPE = 7  # Weibull shape of inter-failure times (1 = exponential)
P_SCALE_FACTOR = 8  # 1 / Gamma(1 + 1/shape): Weibull scale per unit mean
P_QUEUE_EXP = 9  # 1.0: queue wait ~ exponential(mean); 0.0: fixed
P_FF_CKPT = 10  # checkpoint time of the failure-free job (h)
P_FF_WAIT = 11  # time the failure-free job waits for writes to persist (h)
N_PARAMS = 12

# With checkpoint levels (fast levels, or a persisting checkpoint), a row has a
# level table: one line per level, fastest first, the scenario's own checkpoint
# last; P_INTERVAL is then the fastest interval, P_N_FULL and P_REMAINDER count
# positions of it, and P_CKPT the largest write cost (for bounds only).
LEVEL_PARAMS = (
    Column("V_COST", "cost", "h"),  # blocking write
    Column("V_RESTART", "restart", "h"),  # after restoring this level; the scenario's own level uses P_RESTART
    Column("V_PERSIST", "persist", "h"),  # until a write is durable
    Column("V_SURVIVES", "survives", "1"),  # fraction of failures after which this level can be restored
)
V_COST, V_RESTART, V_PERSIST, V_SURVIVES = range(len(LEVEL_PARAMS))
N_LEVEL_PARAMS = len(LEVEL_PARAMS)

# Columns of the per-job output (keep_jobs) and the per-block sums.
JOB_COLUMNS = (
    Column("J_WALL", "wall", "h"),
    Column("J_PRODUCTIVE", "productive", "h"),
    Column("J_CHECKPOINT", "checkpoint", "h"),
    Column("J_LOST", "lost", "h"),
    Column("J_RESTART", "restart", "h"),
    Column("J_QUEUE", "queue", "h"),
    Column("J_FAILURES", "failures", "1", "int64"),
    Column("J_CAPPED", "capped", "1", "int64"),  # 1 where the job was stopped at the failure cap
    Column("J_WAIT", "persist_wait", "h"),  # waiting for a previous write of the same level to persist
)
J_WALL, J_PRODUCTIVE, J_CHECKPOINT, J_LOST, J_RESTART, J_QUEUE, J_FAILURES, J_CAPPED, J_WAIT = range(len(JOB_COLUMNS))
N_JOB_FIELDS = len(JOB_COLUMNS)

# Wall, productive and eff (productive / wall) are summed as deviations from
# the failure-free job (wall - D, productive - work, eff - work / D, with
# D = work + n_full * checkpoint cost): exact zeros without failures, and no
# cancellation in the variances.
S_N = 0
S_WALL = 1
S_WALL_SQ = 2
S_PRODUCTIVE = 3
S_PRODUCTIVE_SQ = 4
S_PRODUCTIVE_WALL = 5
S_EFF = 6  # per-job productive / wall
S_EFF_SQ = 7
S_CHECKPOINT = 8
S_LOST = 9
S_RESTART = 10
S_QUEUE = 11
S_FAILURES = 12
S_FAILURES_SQ = 13
S_CAPPED = 14
S_WAIT = 15
N_STATS = 16

# The time components past productive time, and the block sum each is the mean of:
# estimates list them in this order after productive time (`engine.COMPONENTS`).
COMPONENT_STATS = {"checkpoint": S_CHECKPOINT, "lost": S_LOST, "restart": S_RESTART, "queue": S_QUEUE,
                   "persist_wait": S_WAIT}

# Columns of the per-category sums (only with a failure taxonomy): per block of
# jobs, or per job with keep_jobs. A failure is counted in the category it
# draws; its lost work, and the queue wait and restart that follow it, go there too.
CATEGORY_COLUMNS = (
    Column("C_FAILURES", "failures", "1"),
    Column("C_LOST", "lost", "h"),
    Column("C_RESTART", "restart", "h"),
    Column("C_QUEUE", "queue", "h"),
)
C_FAILURES, C_LOST, C_RESTART, C_QUEUE = range(len(CATEGORY_COLUMNS))
N_CAT_STATS = len(CATEGORY_COLUMNS)

# Columns of the per-level sums (only with checkpoint levels): per block of
# jobs, or per job with keep_jobs.
LEVEL_COLUMNS = (
    Column("L_WRITES", "writes", "1"),  # completed writes
    Column("L_RESTORES", "restores", "1"),  # restores from this level (the job's start counts as the last level)
    Column("L_WAIT", "persist_wait", "h"),  # waiting for this level's previous write to persist
)
L_WRITES, L_RESTORES, L_WAIT = range(len(LEVEL_COLUMNS))
N_LEVEL_STATS = len(LEVEL_COLUMNS)

# Histogram of y = (failure-free wall) / wall in (0, 1]: N_BINS equal bins plus
# one atom bin (index N_BINS) for jobs that saw no loss at all (y == 1 exactly).
N_BINS = 2048

# Jobs are summed in fixed blocks, in job order, and blocks are folded in block
# order: the sums do not depend on threads or on how a run is chunked.
BLOCK_SIZE = 1024

# A block whose jobs have one failure rate with cumulative hazard below this
# (in thousandths; survival above 1/2) settles first every job whose first
# failure falls after its failure-free end, and adds those jobs to its sums
# last, all at once. That fixes the order of the block's sums, so both backends
# take the same decision.
SETTLE_MAX_HAZARD_MILLI = 700

LAYOUT = {
    name: value
    for name, value in dict(globals()).items()
    if name.isupper() and isinstance(value, int)
}
