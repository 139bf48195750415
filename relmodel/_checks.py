"""The validators every layer uses, and the bounds they hold inputs to.

Each returns a value in normal form (a Python int, float, str or bool) or
raises a `ScenarioError` naming the parameter.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Sequence
from contextlib import contextmanager

import numpy as np

from ._errors import ParameterError, ScenarioError
from ._units import format_hours, short_repr, to_hours


# Field kinds of `Scenario` (its FIELDS table maps each field to one) and their bounds.
QUEUE_WAIT_DISTRIBUTIONS = ("fixed", "exponential")
# Weibull shapes whose mean-preserving scale (1 / Gamma(1 + 1/k)) stays a normal float.
SHAPE_RANGE = (0.01, 100.0)
# A zero interval or zero work is no job; other durations may be 0.
_POSITIVE_DURATIONS = ("checkpoint_interval", "work")


# -- validators: every public function checks its arguments with these, so that
# bad input is a ScenarioError naming the parameter, at once.

# GPUs, nodes and GPUs per node: 2**32 is some 10^4 times the largest cluster, so
# more is a typing mistake (2**64), and a lemon mixture's table (one entry per
# likely lemon count, about sqrt(n) of them) still fits in memory.
MAX_COUNT = 2**32
# Failures per node-day: 10^6 is a failure every 0.09 s (measured: 10^-3 to 10^-2), so
# more is a unit mistake, and a job's rate n_nodes * rate / 24 stays far inside float range.
MAX_FAILURE_RATE = 1e6
# A lemon node fails at most this many times as often as a healthy one (measured
# lemons: tens of times); far beyond it the healthy rate rounds away.
MAX_LEMON_RATE_FACTOR = 1e6


def _bound_text(x) -> str:
    """2**62 rather than 4611686018427387904 in messages."""
    for offset, suffix in ((0, ""), (1, " - 1")):
        if isinstance(x, int) and x + offset >= 2**16 and (x + offset) & (x + offset - 1) == 0:
            return f"2**{(x + offset).bit_length() - 1}{suffix}"
    return f"{x:g}" if isinstance(x, float) else str(x)


def check_integer(name: str, value, low: int, high: int) -> int:
    """Return `value` as an int in [low, high]: a Python or numpy integer, not a bool or a float.

    Parameters
    ----------
    name : str
        The parameter named in errors.
    value : int
        The value to check.
    low, high : int
        The inclusive bounds.

    Returns
    -------
    int
        The value as a Python int.

    Raises
    ------
    ScenarioError
        If `value` is not an integer or is out of bounds.
    """
    value = scalar_value(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= value <= high:
        raise ScenarioError(name, f"must be an integer in [{_bound_text(low)}, {_bound_text(high)}] "
                                  f"(got {short_repr(value)})")
    return int(value)


def check_real(name: str, value, what: str = "a real number", error: type[ParameterError] = ScenarioError) -> float:
    """Return `value` as a finite float; -0 becomes 0.0.

    Any real number type is read; not a bool, not a string.

    Parameters
    ----------
    name : str
        The parameter named in errors.
    value : float
        The value to check.
    what : str, default "a real number"
        What the error says was expected.
    error : type, default ScenarioError
        The `ParameterError` subclass raised (a subpackage's own).

    Returns
    -------
    float
        The value as a Python float.

    Raises
    ------
    ScenarioError
        If `value` is not a finite real number (or `error`, where given).
    """
    value = scalar_value(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise error(name, f"must be {what} (got {short_repr(value)})")
    try:
        x = float(value)
    except OverflowError:  # an int or fraction beyond the float range
        x = math.inf
    if not math.isfinite(x):
        raise error(name, f"must be finite (got {short_repr(value)})")
    return x + 0.0  # -0.0 prints as "-0" and flips the sign of an infinity divided by it


def check_choice(name: str, value, choices: tuple, error: type[ParameterError] = ScenarioError):
    """Return `value` if it is one of `choices` (strings).

    Parameters
    ----------
    name : str
        The parameter named in errors.
    value : str
        The value to check.
    choices : tuple of str
        The allowed values.
    error : type, default ScenarioError
        The `ParameterError` subclass raised (a subpackage's own).

    Returns
    -------
    str
        `value`.

    Raises
    ------
    ScenarioError
        If `value` is not one of `choices` (the message lists them; or
        `error`, where given).
    """
    if not isinstance(value, str) or value not in choices:
        raise error(name, f"must be one of {', '.join(map(repr, choices))} (got {short_repr(value)})")
    return value


def check_distinct(name: str, values: list, error: type[ParameterError] = ScenarioError) -> list:
    """Return `values` if no value is given twice: a repeated axis value or strategy is a slip,
    which a result indexed by them would collapse, or hold twice under one label.

    Parameters
    ----------
    name : str
        The parameter named in errors.
    values : list
        The values, hashable.
    error : type, default ScenarioError
        The `ParameterError` subclass raised (a subpackage's own).

    Returns
    -------
    list
        `values`.

    Raises
    ------
    ScenarioError
        If a value is given twice (or `error`, where given).
    """
    seen = set()
    for value in values:
        if value in seen:
            raise error(name, f"{short_repr(value)} is given twice")
        seen.add(value)
    return values


def check_flag(name: str, value) -> bool:
    """Return `value` as a bool: True or False (a numpy bool too).

    "no" or 0 is refused rather than read as truthy.

    Parameters
    ----------
    name : str
        The parameter named in errors.
    value : bool
        The value to check.

    Returns
    -------
    bool
        The flag.

    Raises
    ------
    ScenarioError
        If `value` is not a bool.
    """
    value = scalar_value(value)
    if not isinstance(value, bool):
        raise ScenarioError(name, f"must be True or False (got {short_repr(value)})")
    return value


def check_levels(name: str, values) -> tuple[float, ...]:
    """Return distinct probability levels in [0, 1] (quantiles), as a tuple of floats.

    Parameters
    ----------
    name : str
        The parameter named in errors.
    values : sequence of float
        The levels.

    Returns
    -------
    tuple of float
        The levels.

    Raises
    ------
    ScenarioError
        If a level is outside [0, 1], repeated, or not a number.
    """
    if not is_sequence(values):
        raise ScenarioError(name, f"must be a sequence of levels in [0, 1] (got {short_repr(values)})")
    levels = tuple(check_real(name, v, "a level in [0, 1]") for v in sequence_values(values))
    outside = [x for x in levels if not 0.0 <= x <= 1.0]
    if outside:
        raise ScenarioError(name, f"levels must be in [0, 1] (got {outside[0]!r})")
    if len(set(levels)) != len(levels):
        raise ScenarioError(name, f"levels must be distinct (got {short_repr(list(levels))})")
    return levels


def available_memory() -> int | None:
    """Return the bytes of memory this process could still get.

    MemAvailable on Linux; else the physical memory.

    Returns
    -------
    int or None
        Bytes, or None where neither is known.
    """
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return physical_memory()


# The memory budget (docs: user guide, "Memory budget"): what a call may allocate,
# checked from its inputs before it allocates. The environment variable sets it
# ("8GiB", "512MB", "25%" of the machine's memory); `--memory-budget` sets it for one
# command. By default half the machine's memory: a run that needs more would crowd out
# everything else on it, and a shared node is someone else's too.
MEMORY_BUDGET_ENV = "RELMODEL_MEMORY_BUDGET"
DEFAULT_MEMORY_FRACTION = 0.5
_SIZE_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
               "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_budget_set: list[int] = []  # the one a command's `--memory-budget` set, while it runs


def physical_memory() -> int | None:
    """Return the machine's memory in bytes (None where it is not known).

    Returns
    -------
    int or None
        Bytes.
    """
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def parse_memory_size(name: str, text) -> int:
    """Return a memory size in bytes from its text: "8GiB", "512MB", "1.5G", "25%" (of the machine's memory).

    Parameters
    ----------
    name : str
        The parameter (or flag) named in errors.
    text : str or int
        The size; an int is bytes.

    Returns
    -------
    int
        Bytes, at least 1 MiB.

    Raises
    ------
    ScenarioError
        If `text` is not a size, or is under 1 MiB.
    """
    if isinstance(text, numbers.Integral) and not isinstance(text, bool):
        size = int(text)
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z%]*)\s*", str(text))
        unit = match and match.group(2).lower()
        if not match or (unit != "%" and unit not in _SIZE_UNITS):
            raise ScenarioError(name, f"must be a memory size such as 8GiB, 512MB or 25% of the machine's memory "
                                      f"(got {short_repr(text)})")
        value = float(match.group(1))
        if unit == "%":
            total = physical_memory()
            if total is None or not 0 < value <= 100:
                raise ScenarioError(name, f"a percentage must be in (0, 100] of a machine whose memory is known "
                                          f"(got {short_repr(text)})")
            value, unit = value / 100 * total, ""
        size = int(min(value * _SIZE_UNITS[unit], 2**62))
    if size < 2**20:
        raise ScenarioError(name, f"must be at least 1MiB (got {short_repr(text)})")
    return size


def memory_budget() -> tuple[int | None, str]:
    """Return the memory budget in bytes and where it comes from (for messages).

    `--memory-budget` while a command runs, else the environment variable
    RELMODEL_MEMORY_BUDGET, else half the machine's memory.

    Returns
    -------
    budget : int or None
        Bytes (None where the machine's memory is not known and none was set).
    source : str
        How it was set, and how to set it.

    Raises
    ------
    ScenarioError
        If the environment variable is not a memory size.
    """
    if _budget_set:
        return _budget_set[-1], "--memory-budget"
    if os.environ.get(MEMORY_BUDGET_ENV, "").strip():
        return parse_memory_size(MEMORY_BUDGET_ENV, os.environ[MEMORY_BUDGET_ENV]), MEMORY_BUDGET_ENV
    total = physical_memory()
    return (None if total is None else int(total * DEFAULT_MEMORY_FRACTION),
            f"half this machine's memory; --memory-budget or {MEMORY_BUDGET_ENV} sets it")


@contextmanager
def memory_budget_set(nbytes: int):
    """Hold the memory budget at `nbytes` (a command's `--memory-budget`) inside the block."""
    _budget_set.append(nbytes)
    try:
        yield
    finally:
        _budget_set.pop()


def check_memory(name: str, nbytes: float, what: str):
    """Refuse up front what would pass the memory budget, or the memory available.

    Rather than run for an hour and die, or swap the machine to a halt.

    Parameters
    ----------
    name : str
        The parameter named in the error (the one to lower).
    nbytes : float
        Bytes the operation needs.
    what : str
        What would need them, for the message.

    Raises
    ------
    ScenarioError
        If `nbytes` exceeds the budget (`memory_budget`) or the memory available.
    """
    budget, source = memory_budget()
    if budget is not None and nbytes > budget:
        raise ScenarioError(name, f"{what} need {bytes_text(nbytes)} of memory, over the memory budget of "
                                  f"{bytes_text(budget)} ({source})")
    free = available_memory()
    if free is not None and nbytes > free:
        raise ScenarioError(name, f"{what} need {bytes_text(nbytes)} of memory; "
                                  f"{bytes_text(free)} is available")


def bytes_text(n: float) -> str:
    """8.2 GiB rather than 8804682137 bytes in messages."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} bytes"


def check_number(name: str, value, *, kind: str):
    """Return one scalar value of a Scenario field in normal form.

    Parameters
    ----------
    name : str
        The field (or parameter) named in errors; "checkpoint_interval" and
        "work" must be > 0, other durations >= 0.
    value : object
        The value: a number, or for a "duration" a string with a unit.
    kind : {"count", "rate", "duration", "shape", "fraction", "factor", "choice"}
        The field's kind (`relmodel._scenario.FIELDS`).

    Returns
    -------
    int, float or str
        An int for a count, hours for a duration, the string for a choice,
        else a float.

    Raises
    ------
    ScenarioError
        If the value is outside the kind's valid range.
    """
    value = scalar_value(value)
    if kind == "choice":
        return check_choice(name, value, QUEUE_WAIT_DISTRIBUTIONS)
    if kind == "count":
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            count = int(value)
        else:
            x = check_real(name, value, "a positive integer")  # 8.0 is 8
            if not x.is_integer():
                raise ScenarioError(name, f"must be a positive integer (got {short_repr(value)})")
            count = int(x)
        if not 1 <= count <= MAX_COUNT:
            raise ScenarioError(name, f"must be an integer in [1, {_bound_text(MAX_COUNT)}] (got {short_repr(value)})")
        return count
    if kind == "duration":
        try:
            hours = to_hours(value, name)
        except ValueError as err:
            raise ScenarioError(name, str(err).split(": ", 1)[1]) from None
        if math.isnan(hours) or math.isinf(hours):
            raise ScenarioError(name, f"must be finite (got {short_repr(value)})")
        if hours < 0 or (hours == 0 and name in _POSITIVE_DURATIONS):
            bound = "> 0" if name in _POSITIVE_DURATIONS else ">= 0"
            raise ScenarioError(name, f"must be {bound} (got {format_hours(hours)})")
        return hours
    x = check_real(name, value)
    if kind == "shape" and x <= 0:
        raise ScenarioError(name, f"must be > 0 (got {short_repr(value)})")
    if kind == "shape" and not SHAPE_RANGE[0] <= x <= SHAPE_RANGE[1]:
        raise ScenarioError(name, f"must be in [{SHAPE_RANGE[0]}, {SHAPE_RANGE[1]}] (got {short_repr(value)}); "
                                  "measured failure data fall within 0.3 to 3")
    if kind == "fraction" and not 0.0 <= x <= 1.0:
        raise ScenarioError(name, f"must be in [0, 1] (got {short_repr(value)})")
    if kind in ("rate", "factor") and x < 0:
        raise ScenarioError(name, f"must be >= 0 (got {short_repr(value)})")
    limit = {"rate": MAX_FAILURE_RATE, "factor": MAX_LEMON_RATE_FACTOR}.get(kind, math.inf)
    if x > limit:
        raise ScenarioError(name, f"must be at most {limit:g} (got {short_repr(value)})")
    return x




def scalar_value(value):
    """Return a numpy scalar or 0-d array as the Python value it holds (``.item()``); anything else as it is."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return value.item()
    return value


def is_sequence(value) -> bool:
    """Tell whether `value` is a sequence of values (a sweep axis): a list, tuple, range or 1-D array; not a string."""
    if isinstance(value, (str, bytes)):
        return False
    if isinstance(value, np.ndarray):
        return value.ndim >= 1
    return isinstance(value, (Sequence, range))


def sequence_values(value) -> list:
    """Return the values of a sequence (`is_sequence`) as a list; an array is flattened.

    Parameters
    ----------
    value : sequence
        A list, tuple, range or array.

    Returns
    -------
    list
        Its values.
    """
    return list(np.asarray(value).ravel()) if isinstance(value, np.ndarray) else list(value)
