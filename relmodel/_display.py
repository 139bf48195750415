"""How result objects show in a notebook: a one-line repr and a small HTML table."""

from __future__ import annotations

from html import escape


def key_value_table(caption: str, rows) -> str:
    """An HTML table of (name, value) rows under a caption, every cell escaped.

    Parameters
    ----------
    caption : str
        The table's caption (the object's class name).
    rows : iterable of (str, str)
        Name and formatted value of each row.

    Returns
    -------
    str
        The table, for ``_repr_html_``.
    """
    body = "".join(f"<tr><th>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>" for k, v in rows)
    return f"<table><caption>{escape(caption)}</caption>{body}</table>"



SHORT_REPR = 300  # a repr a person reads at a glance: counts and ranges, never a whole array


def readable(*durations: str):
    """Give a dataclass a repr a person can read, and a notebook table of the same.

    Both show the fields given (those at their defaults left out), durations
    in hours as a person types them (``'5min'``, ``'14d'``), a sequence or
    array of more than a few values by its shape and range, and a nested
    object by its class and name. The repr keeps to `SHORT_REPR` characters,
    its last fields elided where they would not fit. Applied over
    ``@dataclass``, whose own repr it replaces.

    Parameters
    ----------
    *durations : str
        The fields that hold durations in hours (scalars or arrays).

    Returns
    -------
    callable
        The class decorator.
    """
    def short(self) -> str:
        name, texts = type(self).__name__, [f"{k}={v}" for k, v in _given_fields(self, durations)]
        while len(name) + 2 + len(", ".join(texts)) > SHORT_REPR and len(texts) > 1:
            texts[-2:] = ["..."]
        return f"{name}({', '.join(texts)})"

    def install(cls):
        cls.__repr__ = short
        cls._repr_html_ = lambda self: key_value_table(type(self).__name__, _given_fields(self, durations))
        return cls

    return install


def _given_fields(obj, durations) -> list[tuple[str, str]]:
    """(name, text) of each field shown by `readable`: not at its default."""
    import dataclasses

    rows = []
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        if field.repr and not _at_default(field, value, field.name in durations):
            rows.append((field.name, value_text(value, duration=field.name in durations)))
    return rows


def _at_default(field, value, duration: bool) -> bool:
    import dataclasses

    from ._units import to_hours

    if field.default is not dataclasses.MISSING:
        default = field.default
    elif field.default_factory is not dataclasses.MISSING:
        default = field.default_factory()
    else:
        return False
    if duration and isinstance(default, str):  # a default typed with its unit, kept in hours
        default = to_hours(default)
    try:
        return value is default or bool(value == default)
    except (TypeError, ValueError):  # an array's comparison: shown
        return False


def value_text(value, duration: bool = False) -> str:
    """A field's value as `readable` shows it.

    Parameters
    ----------
    value : object
        The field's value.
    duration : bool
        Whether it is a duration in hours (a number, or numbers).

    Returns
    -------
    str
        A number, a duration as typed, ``(a, b)`` for a few values,
        ``<shape values, lo..hi>`` for more, ``<Class 'name'>`` for an object.
    """
    import dataclasses

    import numpy as np

    from ._units import duration_text, short_repr

    def one(x) -> str:
        if isinstance(x, (bool, str, type(None), np.bool_)):
            return short_repr(x.item() if isinstance(x, np.generic) else x, 60)
        if duration:
            return repr(duration_text(float(x)))
        if isinstance(x, (float, np.floating)):
            exact = repr(float(x))
            return exact if len(exact) <= 8 else f"{float(x):.6g}"
        return short_repr(int(x), 60)

    if isinstance(value, (bool, str, type(None), int, float, np.generic)):
        return one(value)
    if dataclasses.is_dataclass(value) or hasattr(value, "sizes"):  # a nested record, or an xarray object
        name = getattr(value, "name", None)
        return f"<{type(value).__name__}{f' {name!r}' if isinstance(name, str) else ''}>"
    if isinstance(value, dict):
        return short_repr(value, 80) if len(value) <= 3 else f"<{len(value)} entries>"
    if isinstance(value, (tuple, list)) and len(value) <= 4 and all(
            isinstance(v, (bool, str, int, float, np.generic)) for v in value):
        return f"({', '.join(map(one, value))}{',' * (len(value) == 1)})"
    if isinstance(value, np.ndarray):
        return _array_text(value, one)
    if isinstance(value, (tuple, list)):
        try:
            return _array_text(np.asarray(value), one)
        except ValueError:  # ragged: nested sequences of different lengths
            return f"<{len(value)} values>"
    return f"<{type(value).__name__}>"


def _array_text(array, one) -> str:
    """An array by its shape and range: ``<4x2 values, 0..7>``."""
    import numpy as np

    shape = "x".join(map(str, array.shape))
    if array.size == 0 or array.dtype.kind not in "biuf" or np.isnan(array).all():
        return f"<{shape} values>"
    low, high = np.nanmin(array), np.nanmax(array)
    if low == high:
        return f"<{shape} values, all {one(low)}>"
    return f"<{shape} values, {one(low)}..{one(high)}>"
