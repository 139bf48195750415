"""Public names are defined once, and each renamed one keeps its old name for a release with a warning."""

import ast
import importlib
import json
import pkgutil
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import relmodel
from relmodel import _deprecation

ROOT = Path(relmodel.__file__).parent
WHATS_NEW = Path(__file__).resolve().parents[1] / "docs" / "whats-new.md"  # the repository's, not beside the installed package


def public_modules():
    """Every module of the package none of whose dotted parts is private."""
    names = ["relmodel"] + [info.name for info in pkgutil.walk_packages(relmodel.__path__, "relmodel.")]
    return [name for name in names if not any(part.startswith("_") for part in name.split("."))]


def defined_names(tree: ast.Module):
    """Public names a module binds itself (defs, classes, assignments), not those it imports."""
    found, todo = [], list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        elif isinstance(node, (ast.If, ast.Try)):
            todo += node.body + node.orelse + getattr(node, "handlers", []) + getattr(node, "finalbody", [])
        elif isinstance(node, ast.ExceptHandler):
            todo += node.body
    return {name for name in found if not name.startswith("_")}


def every_module():
    """Every module but the command line's ``__main__`` (importing it runs it) and the
    compiled kernels, whose functions share their Python wrappers' names by design."""
    names = ["relmodel"] + [info.name for info in pkgutil.walk_packages(relmodel.__path__, "relmodel.")]
    return [name for name in names if not name.endswith((".__main__", "_kernel")) and "._kernels" not in name]


def test_no_public_name_is_defined_twice():
    # Over every module, private ones included: a name that two modules define
    # would be one export away from two public objects of one name.
    owners: dict[str, dict[int, list[str]]] = {}
    for name in every_module():
        module = importlib.import_module(name)
        for attribute in defined_names(ast.parse(Path(module.__file__).read_text())):
            obj = getattr(module, attribute)
            owners.setdefault(attribute, {}).setdefault(id(obj), []).append(name)
    twice = {name: sorted(m for ms in objects.values() for m in ms)
             for name, objects in owners.items() if len(objects) > 1}
    assert not twice, f"public names defined in two modules as different objects: {twice}"


def renames_in_whats_new() -> dict[str, str]:
    """The 0.3.0 table of old names kept with a warning: `old` -> `new` (dotted paths)."""
    section = WHATS_NEW.read_text().partition("## 0.3.0")[2].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `(relmodel[\w.]*)` \| `(relmodel[\w.]*)` \|", section, flags=re.M))


def test_whats_new_lists_every_old_name_served():
    for name in public_modules():
        importlib.import_module(name)  # each module registers its old names as it loads
    listed = renames_in_whats_new()
    assert listed and listed == _deprecation.RENAMED


OLD_NAMES = sorted((old, new) for old, new in renames_in_whats_new().items() if old not in _deprecation.MOVED_MODULES)
OLD_MODULES = sorted((old, new) for old, new in renames_in_whats_new().items() if old in _deprecation.MOVED_MODULES)


@pytest.mark.parametrize("old, new", OLD_NAMES)
def test_old_name_warns_and_is_the_new_object(old, new):
    module, name = old.rsplit(".", 1)
    with pytest.warns(DeprecationWarning, match=re.escape(new)):
        got = getattr(importlib.import_module(module), name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert got is _deprecation.resolve(new)
    assert name not in vars(importlib.import_module(module))  # served by the shim alone


@pytest.mark.parametrize("old, new", OLD_MODULES)
def test_an_old_module_path_serves_every_name_of_the_private_module_with_a_warning(old, new):
    old_module = importlib.import_module(old)
    held = _deprecation.MOVED_MODULES[old][0]
    assert new == (held if isinstance(held, str) else held[0])
    for private in map(importlib.import_module, [held] if isinstance(held, str) else held):
        names = [name for name in vars(private) if not name.startswith("_")]
        assert names
        for name in names:
            with pytest.warns(DeprecationWarning, match=re.escape(f"{old}.{name} is deprecated")):
                assert getattr(old_module, name) is getattr(private, name)
        assert not any(name in vars(old_module) for name in names)


def test_the_old_module_paths_keep_the_package_functions_of_the_same_name():
    # Importing relmodel.fit binds it on the package, where `rm.fit` is a function.
    for old in ("relmodel.fit", "relmodel.plan", "relmodel.simulate", "relmodel.elastic.allocate"):
        importlib.import_module(old)
    assert callable(relmodel.fit) and callable(relmodel.plan) and callable(relmodel.simulate)
    assert callable(relmodel.elastic.allocate)
    with pytest.warns(DeprecationWarning, match=r"use relmodel\.FitResult"):
        from relmodel.fit import FitResult
    assert FitResult is relmodel.FitResult


def test_no_module_file_is_left_at_an_old_path():
    for old in _deprecation.MOVED_MODULES:
        path = ROOT.parent.joinpath(*old.split("."))
        assert not path.with_suffix(".py").exists() and not path.is_dir(), old


def test_python_m_relmodel_runs_the_command_line():
    done = subprocess.run([sys.executable, "-m", "relmodel", "plan", "--gpus", "1024", "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert {"mttf_h", "optimal_interval_h", "ettr"} <= set(json.loads(done.stdout))


def test_from_import_of_an_old_name_warns():
    with pytest.warns(DeprecationWarning, match=r"relmodel\.elastic\.CLUSTER_POLICIES"):
        from relmodel.elastic import POLICIES
    assert POLICIES is relmodel.elastic.CLUSTER_POLICIES


def test_unknown_names_still_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'NOT_A_NAME'"):
        relmodel.pipeline.NOT_A_NAME  # noqa: B018


def test_a_moved_module_serves_its_public_names(monkeypatch):
    monkeypatch.setattr(_deprecation, "RENAMED", dict(_deprecation.RENAMED))  # the registry stays as it was
    getattr_ = _deprecation.deprecated_names("relmodel.old_units", moved_to="relmodel._units")
    with pytest.warns(DeprecationWarning, match=r"relmodel\.old_units\.to_hours .* use relmodel\.to_hours"):
        assert getattr_("to_hours") is relmodel.to_hours
    with pytest.raises(AttributeError):
        getattr_("_private")


def test_the_api_reference_documents_each_public_name_once():
    api = Path(__file__).resolve().parents[1] / "docs" / "api"
    documented = []
    for page in sorted(api.glob("*.rst")):
        module = None
        for line in page.read_text().splitlines():
            if m := re.match(r"\.\. currentmodule:: ([\w.]+)$", line):
                module = m[1]
            elif m := re.match(r"\.\. (?:autofunction|autoclass|data):: (\w+)$", line):
                documented.append(f"{module}.{m[1]}")
    assert len(documented) == len(set(documented))
    faces = {"relmodel": relmodel, "relmodel.pipeline": relmodel.pipeline, "relmodel.elastic": relmodel.elastic,
             "relmodel.record": relmodel.record, "relmodel.plot": importlib.import_module("relmodel.plot"),
             "relmodel.data": relmodel.data}
    exported = {f"{name}.{attribute}" for name, face in faces.items() for attribute in face.__all__
                if not isinstance(getattr(face, attribute), type(relmodel))}
    # `rm.RunRecord` and the like are relmodel.record's names, documented there.
    exported -= {f"relmodel.{attribute}" for attribute in relmodel.record.__all__}
    assert set(documented) == exported
