"""What the fuzz modules (tests/test_fuzz.py, tests/test_fuzz_api.py) hold every call to:
a bound on its CPU time, on its traced memory, and on the warnings it may let out."""

import contextlib
import re
import signal
import tracemalloc

# A hang, not a slow run: CPU time, which a busy machine does not use up, with 10x
# the slowest valid draw (`pipeline --stages 1000 --failure-rate 10`: 13 CPU seconds
# idle, plus a cold JIT compilation of up to 15).
CALL_CPU_SECONDS = 300
# The memory budget the fuzz modules run under (RELMODEL_MEMORY_BUDGET, which every
# check reads before allocating): small, so that a draw sized past it must be refused.
MEMORY_BUDGET = "1GiB"
# Text that only a leak prints: a traceback, an error in a finaliser, a warning's own
# line (`showwarning` writes "<file>:<line>: RuntimeWarning: ..."; the command line's
# own warnings are one "Warning: ..." line).
LEAKED_TEXT = re.compile(r"Traceback \(most recent call last\)|Exception ignored|\w+Warning: ")


class NoAnswer(BaseException):
    """The call used up its CPU time. A BaseException, so that no `except Exception`
    (nor `except OSError`, which catches TimeoutError) in the code under test hides it."""


@contextlib.contextmanager
def cpu_time_bound(seconds=CALL_CPU_SECONDS):
    """Interrupt the call once this process has used `seconds` of CPU time (all its
    threads): a bound on the work the call does, which, unlike a wall-clock alarm, other
    processes on a busy machine do not use up. (A call blocked on input uses no CPU: the
    inputs here are regular files.)"""
    def too_long(signum, frame):
        raise NoAnswer(f"no answer within {seconds} CPU seconds")

    before = signal.signal(signal.SIGPROF, too_long)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, before)


def budget_in_force(flag_value=None) -> int:
    """The bytes a call may use: its `--memory-budget` where it gives one that reads, else the
    environment's (RELMODEL_MEMORY_BUDGET, as the call saw it)."""
    from relmodel._checks import MEMORY_BUDGET_ENV, parse_memory_size

    if flag_value is not None:
        with contextlib.suppress(ValueError):
            return parse_memory_size("--memory-budget", flag_value)
    return parse_memory_size(MEMORY_BUDGET_ENV, MEMORY_BUDGET)


@contextlib.contextmanager
def traced_peak():
    """Yield a list that holds, once the block ends, the peak of the memory traced while it ran
    (Python objects and NumPy arrays; not what compiled kernels allocate themselves)."""
    peak = []
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


def own_warning(category) -> bool:
    """Whether a warning class is one of relmodel's own (documented, meant for the user)."""
    return category.__module__.split(".")[0] == "relmodel"
