"""Rules the test files themselves keep: a test that load can fail is a timed test."""

import re
from pathlib import Path

# Wall-clock limits handed to a solver: HiGHS's (scipy's milp/linprog options) and CP-SAT's.
# Deterministic budgets (HiGHS's node_limit, CP-SAT's max_deterministic_time) are the way.
WALL_CLOCK_LIMITS = re.compile(r"""["']time_limit["']\s*:|max_time_in_seconds""")


def test_no_test_gives_a_solver_a_wall_clock_limit():
    """A HiGHS program with `time_limit=120` that had to prove its plan failed on a busy machine."""
    here = Path(__file__)
    offenders = [f"{path.relative_to(here.parent)}:{number}"
                 for path in sorted(here.parent.rglob("*.py")) if path != here
                 for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if WALL_CLOCK_LIMITS.search(line)]
    assert not offenders, f"wall-clock solver limits in tests (use a node or deterministic budget): {offenders}"
