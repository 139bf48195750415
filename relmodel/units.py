"""Durations: numbers are hours; strings carry a unit ("90s", "5min", "2h", "1.5d", "1w")."""

from __future__ import annotations

import math
import numbers
import re

_HOURS_PER_UNIT = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1.0 / 3600.0),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), 1.0 / 60.0),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 1.0),
    **dict.fromkeys(("d", "day", "days"), 24.0),
    **dict.fromkeys(("w", "wk", "week", "weeks"), 168.0),
}
_DURATION = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*$")
UNITS_HELP = "a number of hours, or a number with a unit: s, min, h, d, w (e.g. 90s, 5min, 1.5d)"


def to_hours(value, name: str = "duration") -> float:
    """Convert a duration to hours; `name` is the parameter named in errors.

    Finite and non-negative checks belong to the caller, which knows the bounds.
    """
    if isinstance(value, bool):
        raise ValueError(f"{name}: expected a duration, got {value!r}; {UNITS_HELP}")
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match is None:
            raise ValueError(f"{name}: cannot read {value!r} as a duration; {UNITS_HELP}")
        number, unit = match.groups()
        if unit == "":
            return float(number)
        factor = _HOURS_PER_UNIT.get(unit.lower())
        if factor is None:
            hint = " ('m' is ambiguous: use 'min')" if unit.lower() == "m" else ""
            raise ValueError(f"{name}: unknown unit {unit!r} in {value!r}{hint}; {UNITS_HELP}")
        return float(number) * factor
    raise ValueError(f"{name}: expected a duration, got {value!r} ({type(value).__name__}); {UNITS_HELP}")


def format_hours(hours: float) -> str:
    """A short human form of a duration in hours: '45s', '5min', '2.5h', '14d'."""
    if not math.isfinite(hours):
        return str(hours)
    for unit, size in (("d", 24.0), ("h", 1.0), ("min", 1 / 60), ("s", 1 / 3600)):
        if abs(hours) >= size or unit == "s":
            return f"{hours / size:.4g}{unit}"
    raise AssertionError("unreachable")
