"""Public names are defined once, and each renamed one keeps its old name for a release with a warning."""

import ast
import importlib
import pkgutil
import re
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


def test_no_public_name_is_defined_twice():
    owners: dict[str, dict[int, list[str]]] = {}
    for name in public_modules():
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


@pytest.mark.parametrize("old, new", sorted(renames_in_whats_new().items()))
def test_old_name_warns_and_is_the_new_object(old, new):
    module, name = old.rsplit(".", 1)
    with pytest.warns(DeprecationWarning, match=re.escape(new)):
        got = getattr(importlib.import_module(module), name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert got is _deprecation.resolve(new)
    assert name not in vars(importlib.import_module(module))  # served by the shim alone


def test_from_import_of_an_old_name_warns():
    with pytest.warns(DeprecationWarning, match=r"relmodel\.elastic\.CLUSTER_POLICIES"):
        from relmodel.elastic import POLICIES
    assert POLICIES is relmodel.elastic.CLUSTER_POLICIES


def test_unknown_names_still_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'NOT_A_NAME'"):
        relmodel.pipeline.NOT_A_NAME  # noqa: B018


def test_a_moved_module_serves_its_public_names(monkeypatch):
    monkeypatch.setattr(_deprecation, "RENAMED", dict(_deprecation.RENAMED))  # the registry stays as it was
    getattr_ = _deprecation.deprecated_names("relmodel.old_units", moved_to="relmodel.units")
    with pytest.warns(DeprecationWarning, match=r"relmodel\.units\.to_hours"):
        assert getattr_("to_hours") is relmodel.to_hours
    with pytest.raises(AttributeError):
        getattr_("_private")
