"""Durations: numbers are hours; strings carry a unit ("90s", "5min", "2h", "1.5d", "1w")."""

from __future__ import annotations

import math
import numbers
import re

from ._errors import ParameterError

_HOURS_PER_UNIT = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1.0 / 3600.0),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), 1.0 / 60.0),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 1.0),
    **dict.fromkeys(("d", "day", "days"), 24.0),
    **dict.fromkeys(("w", "wk", "week", "weeks"), 168.0),
}
_DURATION = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*$")
UNITS_HELP = "a number of hours, or a number with a unit: s, min, h, d, w (e.g. 90s, 5min, 1.5d)"
UNIT_REQUIRED_HELP = "a number with a unit: s, min, h, d, w (e.g. 90s, 5min, 1.5d); 0 needs none"


def to_hours(value, name: str = "duration") -> float:
    """Convert a duration to hours.

    Finite and non-negative checks belong to the caller, which knows the bounds.
    -0 comes back as 0.0 (a "-0s" cost would print as "-0" and flip the sign of
    an infinity divided by it).

    Parameters
    ----------
    value : float or str
        Hours as a number, or a string with a unit: ``"90s"``, ``"5min"``,
        ``"2h"``, ``"1.5d"``, ``"1w"``.
    name : str, default "duration"
        The parameter named in error messages.

    Returns
    -------
    float
        The duration in hours.

    Raises
    ------
    ParameterError
        If `value` is neither a number nor a duration string (a `ValueError`
        naming `name`).
    """
    return _to_hours(value, name, UNITS_HELP)


def to_hours_with_unit(text, name: str = "duration") -> float:
    """Convert a duration as the command line and study files read it: a non-zero number needs a unit.

    In the Python API a bare number is hours; typed as an option or written in
    a file, 300 is far more often meant as seconds or minutes, and taking it
    for hours would be a silently wrong run. Zero needs no unit; a number that
    is not finite comes back for the caller's bounds to refuse.

    `text` is the duration as typed (``"300s"``, ``"0"``) or a number read from
    a file (``300`` is refused, ``0`` is read); the result is in hours, and a
    `ParameterError` names the option `name`, as `to_hours` does.
    """
    if isinstance(text, str):
        number, unit = _split(text, name, UNIT_REQUIRED_HELP)
        if unit == "" and float(number) != 0:
            raise ParameterError(name, f"{number} has no unit; write {number}s, {number}min or {number}h")
    elif isinstance(text, numbers.Real) and not isinstance(text, bool) and _finite_non_zero(text):
        number = short_repr(text)
        raise ParameterError(name, f'{number} has no unit; write "{number}s", "{number}min" or "{number}h"')
    return _to_hours(text, name, UNIT_REQUIRED_HELP)


def _finite_non_zero(value: numbers.Real) -> bool:
    try:
        return math.isfinite(value) and value != 0
    except OverflowError:  # an int beyond the float range: `_to_hours` refuses it
        return False


def _to_hours(value, name: str, help_text: str) -> float:
    if isinstance(value, bool):
        raise ParameterError(name, f"expected a duration, got {value!r}; {help_text}")
    if isinstance(value, numbers.Real):
        try:
            return float(value) + 0.0
        except OverflowError:  # an int beyond the float range
            raise ParameterError(name, f"{short_repr(value)} hours is beyond any duration") from None
    if isinstance(value, str):
        number, unit = _split(value, name, help_text)
        if unit == "":
            return float(number) + 0.0
        factor = _HOURS_PER_UNIT.get(unit.lower())
        if factor is None:
            hint = " ('m' is ambiguous: use 'min')" if unit.lower() == "m" else ""
            raise ParameterError(name, f"unknown unit {short_repr(unit)} in {short_repr(value)}{hint}; {help_text}")
        return float(number) * factor + 0.0
    raise ParameterError(name, f"expected a duration, got {short_repr(value)} ({type(value).__name__}); {help_text}")


def _split(text: str, name: str, help_text: str) -> tuple[str, str]:
    """(number, unit) of a duration string; unit "" when there is none."""
    match = _DURATION.match(text)
    if match is None:
        raise ParameterError(name, f"cannot read {short_repr(text)} as a duration; {help_text}")
    return match.groups()


def short_repr(value, limit: int = 60) -> str:
    """Return ``repr(value)`` cut to `limit` characters.

    An error message quotes what it got, not a megabyte of it.

    Parameters
    ----------
    value : object
        Any value.
    limit : int, default 60
        The longest text returned.

    Returns
    -------
    str
        The repr, shortened with an ellipsis when longer than `limit`.
    """
    text = _digits(value) if isinstance(value, int) and not isinstance(value, bool) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _digits(value: int) -> str:
    """An int as text; a huge one as its size (str() of it is slow, and refused past 4300 digits)."""
    if abs(value) < 10**30:
        return str(value)
    return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"


def duration_text(hours: float) -> str:
    """A duration in hours as a person types it, exactly (`to_hours` reads it back to the same float):
    ``'5min'``, ``'14d'``, ``'2.5h'``; one no unit writes exactly stays hours, as a float's repr."""
    if math.isfinite(hours) and hours != 0.0:
        unit, size = _unit_of(hours)
        for number in (f"{hours / size:.6g}", f"{hours / size:.12g}", repr(hours / size)):
            if to_hours(number + unit) == hours:
                return number + unit
    return repr(float(hours))


def values_text(values, text=repr) -> str:
    """A sweep axis (a sequence of values) in a repr: its size and range (each end as `text` writes it), not
    its values."""
    values = list(values)
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    span = f", {text(min(numbers))}..{text(max(numbers))}" if len(numbers) == len(values) and numbers else ""
    return f"<{len(values)} values{span}>"


def format_hours(hours: float) -> str:
    """Format a duration in hours in a short human form: '45s', '5min', '2.5h', '14d'.

    Parameters
    ----------
    hours : float
        The duration in hours.

    Returns
    -------
    str
        The duration with the largest unit that reads well.
    """
    if not math.isfinite(hours):
        return str(hours)
    unit, size = _unit_of(hours)
    return f"{hours / size:.4g}{unit}"


def _unit_of(hours: float) -> tuple[str, float]:
    """The largest unit (and its size in hours) that writes `hours` as at least 1, else seconds."""
    return next(((unit, size) for unit, size in (("d", 24.0), ("h", 1.0), ("min", 1 / 60)) if abs(hours) >= size),
                ("s", 1 / 3600))
