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
