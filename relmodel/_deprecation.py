"""Old names kept for one release: a module's ``__getattr__`` that warns and hands on the new object.

A module whose names were renamed ends with::

    __getattr__ = deprecated_names(__name__, {"MODELS": "relmodel.pipeline.sizing.MODEL_PRESETS"})

and a module that moved whole becomes::

    __getattr__ = deprecated_names(__name__, moved_to="relmodel._logs")

Each access of an old name warns `DeprecationWarning` naming the new one.
"""

from __future__ import annotations

import importlib
import warnings

REMOVED_IN = "0.4.0"
# Every old name served, "old module.old name" -> new dotted path: what the tests and docs check.
RENAMED: dict[str, str] = {}


def resolve(path: str):
    """Return the object a dotted path names: a module, or an attribute of the longest importable module."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            target = importlib.import_module(module)
        except ModuleNotFoundError as err:
            if err.name != module:
                raise
            continue
        for attribute in parts[cut:]:
            target = getattr(target, attribute)
        return target
    raise ModuleNotFoundError(path)


def deprecated_names(module: str, renames: dict[str, str] | None = None, *, moved_to: str | None = None,
                     message: str | None = None):
    """Return a module ``__getattr__`` serving old names with a `DeprecationWarning`.

    Parameters
    ----------
    module : str
        The module the old names are looked up in (its ``__name__``).
    renames : dict of str to str, optional
        Old name -> the new object's dotted path (``"relmodel.elastic.CLUSTER_POLICIES"``).
        The new object is imported on first use, so a shim never imports what its
        module does not.
    moved_to : str, optional
        A module's dotted path: any other public name is looked up there (a whole
        module moved; the warning names the new module).
    message : str, optional
        Text added to each warning (what else changed, where to read more).

    Returns
    -------
    callable
        ``__getattr__(name)`` for the module: the new object after a warning, or
        `AttributeError` for a name it does not serve.
    """
    renames = dict(renames or {})
    RENAMED.update({f"{module}.{old}": new for old, new in renames.items()})
    if moved_to is not None:
        RENAMED[module] = moved_to

    def __getattr__(name: str):
        if name in renames:
            new = renames[name]
        elif moved_to is not None and not name.startswith("_"):
            new = f"{moved_to}.{name}"
        else:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        target = resolve(new)
        note = f"; {message}" if message else ""
        warnings.warn(f"{module}.{name} is deprecated and goes in relmodel {REMOVED_IN}: use {new}{note}",
                      DeprecationWarning, stacklevel=2)
        return target

    return __getattr__
