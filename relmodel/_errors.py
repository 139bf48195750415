"""Parameter errors: the ground floor.

`ParameterError` is the base of every "this input cannot be used" error of
relmodel; its message starts with the parameter at fault (a parameter, a key,
or a file's line), ``.parameter`` holds it and ``.reason`` says what is wrong.
The validators that raise them are in `_checks`.
"""

from __future__ import annotations





class ParameterError(ValueError):
    """An input relmodel cannot use; ``.parameter`` names it, ``.reason`` says why.

    A `ValueError`, so callers that catch ValueError catch it too. The message
    is ``"<where>: <parameter>: <reason>"``, or ``"<parameter>: <reason>"``
    without `where`.

    Parameters
    ----------
    parameter : str
        What is at fault: a parameter, a key, a column, or a file's line.
    reason : str
        What is wrong with it.
    where : str, optional
        The record it belongs to (a job, a file's line), named first.
    """

    def __init__(self, parameter: str, reason: str, *, where: str | None = None):
        super().__init__(f"{where}: {parameter}: {reason}" if where else f"{parameter}: {reason}")
        self.parameter, self.reason, self.where = parameter, reason, where

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # A subclass that keeps this constructor keeps its parameters, documented once: here.
        if "__init__" not in cls.__dict__ and cls.__doc__ and "\n    Parameters\n" not in cls.__doc__:
            cls.__doc__ = cls.__doc__.rstrip() + "\n\n" + _constructor_section(ParameterError.__doc__)

    def __reduce__(self):
        # Rebuilt from its message and attributes, whatever the subclass's signature:
        # an error raised on a Dask worker reaches the client whole.
        return _rebuild_error, (type(self), self.args, self.__dict__)


def _constructor_section(doc: str) -> str:
    """The Parameters section of a class docstring, as written (indented), to its end."""
    return doc[doc.index("    Parameters\n"):].rstrip() + "\n    "


def _rebuild_error(cls, args, attributes):
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(attributes)
    return err


def parameter_and_reason(err: Exception) -> tuple[str, str]:
    """Return what an error names first and the rest of its message, to name a flag instead.

    Parameters
    ----------
    err : Exception
        A `ParameterError`, or any error whose message reads "parameter: reason".

    Returns
    -------
    parameter : str
        The parameter (for a ParameterError with a `where`, the record).
    reason : str
        The rest of the message ("" when it names nothing).
    """
    if isinstance(err, ParameterError) and err.where is None:
        return err.parameter, err.reason
    parameter, _, reason = str(err).partition(": ")
    return parameter, reason


class ScenarioError(ParameterError):
    """An invalid scenario or run parameter; ``.parameter`` names it.

    Raised by `Scenario`, by the core's functions (`simulate`, `ettr`, ...)
    and by the validators here.
    """
