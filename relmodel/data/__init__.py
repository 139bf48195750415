"""Sample files installed with relmodel, to try each workflow before your own data.

- ``cluster-jobs.sacct``: a 128-node GPU cluster's job log, as Slurm's
  ``sacct --parsable2`` writes it (job steps, requeued attempts, node failures,
  preemptions, out-of-memory kills), drawn by `relmodel.synthetic_log` at 6.5
  infrastructure failures per 1000 node-days; ``relmodel fit --example``.
- ``run-events.csv``: the trainer's events of a 13-day run on 4096 GPUs,
  checkpointed every 3 hours where about 1 hour is best, drawn by
  `relmodel.simulate_run`; ``relmodel run show --example``.
- ``run-megatron.log``, ``run-torchtitan.log``, ``run-hf_trainer.log``,
  ``run-lightning.log``: the same run as each framework's trainer logs it;
  ``relmodel run show --example --format megatron``.

Both are generated, not real, by ``python -m relmodel.data._make`` with a fixed seed.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .._deprecation import keep_public_names
from .._errors import ParameterError

_SAMPLES = "samples"
_RUN_GPUS = 4096  # the trainer's events do not say; ``relmodel run --example`` passes it as --gpus


def names() -> list[str]:
    """Return the names of the sample files, for `path`.

    Returns
    -------
    list of str
        The file names, sorted.

    Examples
    --------
    >>> import relmodel as rm
    >>> rm.data.names()[:2]
    ['cluster-jobs.sacct', 'run-events.csv']
    """
    return sorted(entry.name for entry in resources.files(__name__).joinpath(_SAMPLES).iterdir()
                  if entry.is_file())


def path(name: str) -> Path:
    """Return the installed path of a sample file.

    Parameters
    ----------
    name : str
        One of `names`: ``"cluster-jobs.sacct"`` (read it with `relmodel.fit`
        or `relmodel.read_log`), ``"run-events.csv"`` or a trainer's log of the
        same run, ``"run-<format>.log"`` (with `relmodel.read_run`,
        ``n_gpus=4096``).

    Returns
    -------
    pathlib.Path
        The file, inside the installed package: read it, do not write it.

    Raises
    ------
    relmodel.ParameterError
        If `name` is not a sample's name; the message lists them.

    Examples
    --------
    >>> import relmodel as rm
    >>> fitted = rm.fit(rm.data.path("cluster-jobs.sacct"))
    >>> record = rm.read_run(rm.data.path("run-events.csv"), n_gpus=4096)
    """
    known = names()
    if name not in known:
        raise ParameterError("name", f"no sample file {name!r}; the samples are {', '.join(known)}")
    return Path(str(resources.files(__name__).joinpath(_SAMPLES, name)))


keep_public_names(__name__)

__all__ = ["names", "path"]
