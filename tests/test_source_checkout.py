"""Work from a source checkout: Python started in a clone's root imports the source tree, which has no
compiled Cython twin. What needs the twin says how to get it (exit 1, one line), and the processes relmodel
starts import the relmodel that started them, whatever the current folder holds."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import relmodel
from relmodel._bench import fresh_python

FIX = "pip install -e . --no-build-isolation"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A source checkout as a fresh clone is: the package's source, a pyproject.toml, no compiled twin."""
    root = tmp_path_factory.mktemp("clone")
    shutil.copytree(Path(relmodel.__file__).parent, root / "relmodel",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    (root / "pyproject.toml").write_text("[project]\nname = 'relmodel'\n")
    out = _run(["-c", "import relmodel; print(relmodel.__file__)"], root)
    assert out.returncode == 0, out.stderr
    if Path(out.stdout.strip()).resolve() != (root / "relmodel" / "__init__.py").resolve():
        # An editable install's import hook comes before the current folder: there is no trap to test.
        pytest.skip(f"an editable install of relmodel ({out.stdout.strip()}) is imported before the current folder")
    return root


def _run(args, cwd):
    """Python started in `cwd` as a user starts it (the suite's children otherwise skip the current folder)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONSAFEPATH"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_twin_asked_for_says_how_to_build_it(checkout):
    out = _run(["-c", "from relmodel._kernels import backend; backend('cython')"], checkout)
    assert out.returncode != 0
    assert "MissingExtraError" in out.stderr and FIX in out.stderr and str(checkout) in out.stderr


@pytest.mark.parametrize("command", [["bench", "--quick"],
                                     ["simulate", "--gpus", "1024", "--n-jobs", "10", "--backend", "cython"]])
def test_a_command_that_needs_the_twin_refuses_in_one_line(checkout, command):
    out = _run(["-m", "relmodel", *command], checkout)
    assert out.returncode == 1, out.stderr
    assert out.stderr.startswith("Error: the Cython twin of the kernels is not built") and FIX in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_process_relmodel_starts_imports_this_relmodel_whatever_the_folder_holds(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    decoy = tmp_path / "relmodel"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise ImportError('the decoy in the current folder')\n")
    out = fresh_python("import relmodel; print(relmodel.__file__)", tmp_path)
    assert Path(out.stdout.strip()).resolve() == Path(relmodel.__file__).resolve()
