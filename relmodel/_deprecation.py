"""Old names and old module paths kept for one release, each warning `DeprecationWarning`.

A public module whose names were renamed ends with::

    __getattr__ = deprecated_names(__name__, {"MODELS": "relmodel.pipeline.MODEL_PRESETS"})

A module that became private is served at its old path by one import hook,
from the table `MOVED_MODULES` (old path -> private module, and the names
renamed inside it): ``import relmodel.closed_form`` still works, and each
name read from it warns and names where the name is public now.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

REMOVED_IN = "0.4.0"
# Every old name served, "old module.old name" -> new dotted path: what the tests and docs check.
RENAMED: dict[str, str] = {}

# Where public names live: a warning names the first of these that holds the object.
PUBLIC_MODULES = ("relmodel", "relmodel.pipeline", "relmodel.elastic", "relmodel.record", "relmodel.plot",
                  "relmodel.testing.strategies", "relmodel.testing.invariants")

# Modules private from 0.3.0: old path -> (private module, or modules it was split
# into, {old name: new dotted path}).
MOVED_MODULES: dict[str, tuple[str | tuple[str, ...], dict[str, str]]] = {
    "relmodel.bench": ("relmodel._bench", {
        "main": "relmodel._bench.benchmark_main",
        "run": "relmodel._bench.run_benchmark",
    }),
    "relmodel.bench.peers": ("relmodel._bench.peers", {}),
    "relmodel.checkpoint_plan": ("relmodel._checkpoint_plan", {
        "STRATEGIES": "relmodel.CHECKPOINT_STRATEGIES",
    }),
    "relmodel.cli": ("relmodel._cli", {}),
    "relmodel.closed_form": ("relmodel._closed_form", {}),
    "relmodel.elastic.allocate": ("relmodel.elastic._allocate", {
        "POLICIES": "relmodel.elastic.ALLOCATION_POLICIES",
        "solve": "relmodel.elastic._allocate.choose_options",
    }),
    "relmodel.elastic.cluster": ("relmodel.elastic._cluster", {
        "POLICIES": "relmodel.elastic.CLUSTER_POLICIES",
    }),
    "relmodel.elastic.throughput": ("relmodel.elastic._throughput", {
        "MODELS": "relmodel.elastic.FITTED_MODELS",
    }),
    "relmodel.elastic.traces": ("relmodel.elastic._traces", {
        "TraceError": "relmodel.elastic.JobTraceError",
        "read_trace": "relmodel.elastic.read_job_trace",
    }),
    "relmodel.errors": (("relmodel._errors", "relmodel._checks"), {}),
    "relmodel.failures": ("relmodel._failures", {"MODELS": "relmodel.FAILURE_MODELS"}),
    "relmodel.fit": ("relmodel._fit", {}),
    "relmodel.labels": ("relmodel._labels", {}),
    "relmodel.levels_closed_form": ("relmodel._levels_closed_form", {}),
    "relmodel.logs": ("relmodel._job_logs", {}),
    "relmodel.pipeline.cli": ("relmodel.pipeline._cli", {
        "format_table": "relmodel.pipeline.format_steady_state",
    }),
    "relmodel.pipeline.config": ("relmodel.pipeline._config", {
        "failed_workers": "relmodel.pipeline.failure_mask",
    }),
    "relmodel.pipeline.datasets": ("relmodel.pipeline._datasets", {
        "RNG_SCHEME": "relmodel.pipeline._datasets.PIPELINE_RNG_SCHEME",
    }),
    "relmodel.pipeline.plan_exact": ("relmodel.pipeline._plan_exact", {}),
    "relmodel.pipeline.planner": ("relmodel.pipeline._planner", {"plan": "relmodel.pipeline.adapted_plan"}),
    "relmodel.pipeline.runs": ("relmodel.pipeline._runs", {
        "STRATEGIES": "relmodel.pipeline.RECOVERY_STRATEGIES",
    }),
    "relmodel.pipeline.sizing": ("relmodel.pipeline._sizing", {
        "MAX_COUNT": "relmodel.pipeline._sizing.MAX_SIZE",
        "MODELS": "relmodel.pipeline.MODEL_PRESETS",
    }),
    "relmodel.pipeline.strategies": ("relmodel.pipeline._strategies", {
        "STRATEGIES": "relmodel.pipeline.RECOVERY_STRATEGIES",
    }),
    "relmodel.pipeline.traces": ("relmodel.pipeline._traces", {
        "TraceError": "relmodel.pipeline.NodeTraceError",
        "read_trace": "relmodel.pipeline.read_node_trace",
    }),
    "relmodel.plan": ("relmodel._plan", {}),
    "relmodel.record.events": (("relmodel.record._events", "relmodel.record._read"), {
        "MAX_FILE_BYTES": "relmodel.record._read.MAX_RECORD_FILE_BYTES",
    }),
    "relmodel.record.measure": ("relmodel.record._measure", {
        "COMPONENTS": "relmodel.record._measure.MEASURED_COMPONENTS",
    }),
    "relmodel.record.model": ("relmodel.record._model", {}),
    "relmodel.record.plot": ("relmodel.record._plot", {}),
    "relmodel.record.timeline": ("relmodel.record._timeline", {
        "Plan": "relmodel.record._timeline.CheckpointSchedule",
    }),
    "relmodel.scenario": ("relmodel._scenario", {}),
    "relmodel.simulate": ("relmodel._simulate", {}),
    "relmodel.store": ("relmodel._store", {}),
    "relmodel.study": ("relmodel._study", {}),
    "relmodel.sweep": (("relmodel._sweep", "relmodel._study_reader", "relmodel._study"), {}),
    "relmodel.synthetic_log": ("relmodel._synthetic_log", {}),
    "relmodel.taxonomy": ("relmodel._taxonomy", {"MAX_FILE_BYTES": "relmodel._taxonomy.MAX_TAXONOMY_FILE_BYTES"}),
    "relmodel.units": ("relmodel._units", {}),
}
for _old, (_new, _renames) in MOVED_MODULES.items():
    RENAMED[_old] = _new if isinstance(_new, str) else _new[0]
    RENAMED.update({f"{_old}.{name}": new for name, new in _renames.items()})


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


def deprecated_names(module: str, renames: dict[str, str] | None = None, *,
                     moved_to: str | tuple[str, ...] | None = None,
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
    moved_to : str or tuple of str, optional
        A module's dotted path, or several (a module split in two): any other
        public name is looked up there, in order (a whole module moved).
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
    moved = (moved_to,) if isinstance(moved_to, str) else tuple(moved_to or ())
    if moved:
        RENAMED[module] = moved[0]

    def __getattr__(name: str):
        holders = [] if name.startswith("_") else [m for m in moved if hasattr(importlib.import_module(m), name)]
        if name in renames:
            new = renames[name]
        elif holders:
            new = f"{holders[0]}.{name}"
        else:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        target = resolve(new)
        note = f"; {message}" if message else ""
        public = public_path(target, new)
        advice = f"use {public}" if public else f"it is private now ({new}), with no public replacement"
        warnings.warn(f"{module}.{name} is deprecated and goes in relmodel {REMOVED_IN}: {advice}{note}",
                      DeprecationWarning, stacklevel=2)
        return target

    return __getattr__


def public_path(target, path: str) -> str | None:
    """The public dotted path of `target` (found in `PUBLIC_MODULES` under its own
    or its path's last name), `path` itself if no part of it is private, else None."""
    if not any(part.startswith("_") for part in path.split(".")):
        return path
    names = {path.rsplit(".", 1)[-1], getattr(target, "__name__", None)} - {None}
    for module in PUBLIC_MODULES:
        namespace = importlib.import_module(module)
        for name in sorted(names):
            if getattr(namespace, name, None) is target and name in getattr(namespace, "__all__", (name,)):
                return f"{module}.{name}"
    return None


class _OldPathLoader(importlib.abc.Loader):
    """Makes the module an old path names: no code of its own, a ``__getattr__``
    that serves the private module's names with a warning."""

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        new, renames = MOVED_MODULES[module.__name__]
        private = new if isinstance(new, str) else " and ".join(new)
        module.__doc__ = f"Deprecated path: the module is private ({private}) from relmodel 0.3.0."
        module.__getattr__ = deprecated_names(module.__name__, renames, moved_to=new)

    def get_code(self, fullname):
        # `python -m <old path>` runs the private module as the main program.
        new = RENAMED[fullname]
        source = (f"import runpy, warnings\n"
                  f"warnings.warn('python -m {fullname} is deprecated: use python -m relmodel', DeprecationWarning)\n"
                  f"runpy.run_module({new!r}, run_name='__main__', alter_sys=True)\n")
        return compile(source, fullname, "exec")


class _OldPathFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED_MODULES:
            return None
        is_package = any(other.startswith(fullname + ".") for other in MOVED_MODULES)
        return importlib.util.spec_from_loader(fullname, _OldPathLoader(), is_package=is_package)


def serve_old_module_paths():
    """Install the import hook for `MOVED_MODULES` (once; the package's import calls it)."""
    if not any(isinstance(finder, _OldPathFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _OldPathFinder())  # before any finder that could see a stale file


class PublicPackage(types.ModuleType):
    """A package whose public names stay bound: importing a submodule binds it on
    its package, and an old module path (``relmodel.fit``) must not replace the
    function of the same name (``relmodel.fit``)."""

    def __setattr__(self, name, value):
        current = self.__dict__.get(name)
        if isinstance(value, types.ModuleType) and current is not None and not isinstance(current,
                                                                                          types.ModuleType):
            return
        super().__setattr__(name, value)


def keep_public_names(module_name: str):
    """Make the package `module_name` a `PublicPackage`."""
    sys.modules[module_name].__class__ = PublicPackage
