"""Axis ticks as plain numbers, for every figure of relmodel (the core's, the pipeline's, the cluster's).

Ground floor: matplotlib only, imported when a figure is drawn.
"""

from __future__ import annotations

import math


def number_text(value) -> str:
    """Return a tick value as a plain number: 0.25, 1, 16384, 1.5e+05 only beyond 10^6.

    Parameters
    ----------
    value : float
        The tick value.

    Returns
    -------
    str
        The value as text: every digit of a whole number (GPU counts), else
        three significant digits.
    """
    value = float(value)
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if value.is_integer() and abs(value) < 1e12:  # GPU counts: every digit
        return f"{value:.0f}"
    return f"{value:.3g}"


def plain_log_axis(axis, base: float = 10) -> None:
    """Set log-scale ticks as plain numbers (0.1, 0.2, 0.5, 1, 2 ...; never 3x10^0).

    Parameters
    ----------
    axis : matplotlib.axis.Axis
        ``ax.xaxis`` or ``ax.yaxis``, already on a log scale.
    base : float, default 10
        10 (ticks at 1, 2, 5 per decade where the range is short) or 2.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    low, high = sorted(abs(v) for v in axis.get_view_interval())
    decades = math.log10(high / low) if low > 0 and math.isfinite(high / low) else 10
    if base == 10:
        subs = (1.0, 2.0, 5.0) if decades <= 2.5 else (1.0,)
        axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=12))
    else:
        axis.set_major_locator(LogLocator(base=base, numticks=9))
    axis.set_major_formatter(FuncFormatter(lambda v, _: number_text(v)))
    axis.set_minor_formatter(NullFormatter())
