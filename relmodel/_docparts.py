"""Docstring parts that several public docstrings share, written once (as pandas' and scipy's doc
templates do): a docstring names a part as ``%(name)s`` on a line of its own, and `fill_doc_parts` puts
the part in when the module is imported, so ``help()`` and the API pages show the whole text."""

from __future__ import annotations

import inspect


def fill_doc_parts(parts: dict, *objects) -> None:
    """Fill the ``%(name)s`` parts of the objects' docstrings (functions, classes, class or static methods).

    Parameters
    ----------
    parts : dict of str to str
        Each part's text, unindented.
    *objects
        The objects whose docstrings name parts.
    """
    for obj in objects:
        target = getattr(obj, "__func__", obj)
        if target.__doc__:  # None under python -OO
            target.__doc__ = inspect.cleandoc(target.__doc__) % parts + "\n"
