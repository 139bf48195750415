"""The package's floors (docs: developer guide, "The floors"): no module imports from a floor above
its own, and no imports go round in a cycle, counting imports inside functions
too (a deferred import is still a dependency)."""

import ast
import fnmatch
from pathlib import Path

import pytest

import relmodel

PACKAGE = Path(relmodel.__file__).parent

# Bottom to top; a module is on the first floor with a pattern that matches it.
FLOORS = {
    "ground": ["relmodel._version", "relmodel._deprecation", "relmodel._units", "relmodel._errors", "relmodel._checks",
               "relmodel._display", "relmodel._extras", "relmodel._feedback", "relmodel._ticks", "relmodel._text",
               "relmodel._fast_csv", "relmodel._docparts", "relmodel.data"],
    "kernels": ["relmodel._kernels", "relmodel._kernels.*"],
    "models": ["relmodel._taxonomy", "relmodel._synthetic_log", "relmodel._failures", "relmodel._level_pattern",
               "relmodel._scenario", "relmodel._job_logs"],
    "computation": ["relmodel._engine", "relmodel._levels_closed_form", "relmodel._closed_form", "relmodel._labels"],
    "studies": ["relmodel._simulate", "relmodel._checkpoint_plan", "relmodel._plan", "relmodel._plan_parts",
                "relmodel._fit", "relmodel._study", "relmodel._store", "relmodel._study_reader", "relmodel._sweep"],
    "presentation": ["relmodel.plot", "relmodel.*._plot", "relmodel._cli_shared", "relmodel.*._cli", "relmodel._cli",
                     "relmodel.__main__", "relmodel._bench", "relmodel._bench.*", "relmodel.testing",
                     "relmodel.testing.*", "relmodel.data._*"],
    "subsystems": ["relmodel.pipeline.*", "relmodel.elastic.*", "relmodel.record.*"],
    "faces": ["relmodel", "relmodel.pipeline", "relmodel.elastic", "relmodel.record"],
}
ORDER = ["ground", "kernels", "models", "computation", "studies", "subsystems", "presentation", "faces"]
# The imports by name: `rm.pipeline` and `rm.elastic` load on first use (PEP 562),
# so that `import relmodel` stays light; it goes down, from the package to its parts.
# An old name's shim loads its new object on first use, by the dotted path it was given.
LAZY_LOADERS = {"relmodel", "relmodel._deprecation"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def floor(module: str) -> str:
    # Faces first ("relmodel.pipeline" also matches "relmodel.pipeline.*"), then FLOORS in
    # its order, presentation before subsystems ("relmodel.pipeline._cli" matches both).
    for name in ("faces", *(name for name in FLOORS if name != "faces")):
        if any(fnmatch.fnmatchcase(module, pattern) for pattern in FLOORS[name]):
            return name
    raise AssertionError(f"{module} is on no floor: add it to FLOORS and to docs/developer/layout.md")


def imports(module: str) -> set[str]:
    """The relmodel modules `module` imports, anywhere in its source."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "relmodel")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            if base.split(".")[0] != "relmodel":
                continue
            for alias in node.names:  # `from . import _labels` imports a module; `from .x import f`, x
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return found - {module}


GRAPH = {module: imports(module) for module in MODULES}


def test_every_module_is_on_a_floor():
    for module in MODULES:
        floor(module)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_from_a_floor_above(module):
    own = ORDER.index(floor(module))
    above = sorted(m for m in GRAPH[module] if ORDER.index(floor(m)) > own)
    assert not above, f"{module} ({floor(module)}) imports from above: " + ", ".join(
        f"{m} ({floor(m)})" for m in above)


def test_no_import_cycle():
    state = {}  # 1: on the current path, 2: done

    def visit(module, path):
        state[module] = 1
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                cycle = path[path.index(target):] + [target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, path + [target])
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])


def test_modules_are_imported_by_name_only_to_load_lazily():
    by_name = sorted(module for module, path in MODULES.items() if "import_module" in path.read_text())
    assert set(by_name) <= LAZY_LOADERS, by_name


def test_the_floors_catch_an_upward_import():
    # The check itself: scenario (models) importing simulate (studies) is refused.
    assert ORDER.index(floor("relmodel._simulate")) > ORDER.index(floor("relmodel._scenario"))
    assert floor("relmodel.pipeline._schedule_kernel") == "subsystems"
    assert floor("relmodel.pipeline._cli") == "presentation"
    assert floor("relmodel.pipeline") == "faces"
