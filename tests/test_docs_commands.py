"""Every shell command shown on a documentation page or in README.md runs, as a reader would run it.

The commands are the lines beginning with "$ " in ```console blocks of README.md and docs/**/*.md (a line
ending in a backslash goes on to the next). Each block runs its commands in order, in a fresh temporary
folder that sees the repository's examples/, tests/ and docs/ and the shared data folder by the same
relative paths as from the repository (../shared/data), with `relmodel` and `python` from this
environment's bin folder; each must exit 0. A block shown word for word on two pages runs once. ```bash
blocks are shown and not run: installs, commands for other machines, and the few that take minutes
(docs/developer/ci-and-docs.md says so to writers).

README.md's other blocks run too: its ```python blocks in one session (the numbers a line's comment quotes
checked at the digits shown), and its quick start's two commands (the tests' is `.ci/run`'s own; the plan's
runs after its install).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
# What a command may read from the repository, by the same relative path.
LINKED = ("examples", "tests", "docs")
_FENCE = re.compile(r"^(`{3,}|~{3,})\s*\{?([\w-]*)\}?")


def fenced_blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """Every fenced block: (line number of the fence, its language, its lines)."""
    blocks, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        marker, language, start = fence.group(1), fence.group(2), i + 1
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith(marker):
            body.append(lines[i])
            i += 1
        i += 1
        blocks.append((start, language, body))
    return blocks


def console_blocks(text: str) -> list[tuple[int, list[str]]]:
    """The commands of each ```console block: (line number of the fence, commands in order)."""
    blocks = []
    for start, language, body in fenced_blocks(text):
        if language != "console":
            continue
        commands, pending = [], None
        for line in body:
            if pending is not None:
                pending += " " + line.strip()
            elif line.startswith("$ "):
                pending = line[2:].strip()
            else:
                continue
            if pending.endswith("\\"):
                pending = pending[:-1].rstrip()
            else:
                commands.append(pending)
                pending = None
        if commands:
            blocks.append((start, commands))
    return blocks


def distinct_blocks() -> list:
    """Every block once: README.md repeats the tour's blocks word for word, and one run checks both."""
    seen = {}
    for page in PAGES:
        for line, commands in console_blocks(page.read_text(encoding="utf-8")):
            seen.setdefault(tuple(commands), f"{page.relative_to(REPO)}:{line}")
    return [pytest.param(list(commands), id=where) for commands, where in seen.items()]


BLOCKS = distinct_blocks()


def test_the_pages_show_commands():
    assert len(BLOCKS) >= 10, "no ```console blocks found: did the pages move?"


def test_console_blocks_are_read_with_continuations():
    text = "```console\n$ relmodel plan \\\n    --gpus 8\nMTTF ...\n$ relmodel --version\n```\n```bash\nrm -rf /\n```\n"
    assert console_blocks(text) == [(1, ["relmodel plan --gpus 8", "relmodel --version"])]


@pytest.mark.parametrize("commands", BLOCKS)
def test_docs_command_runs(commands, tmp_path):
    if any("../shared/data" in command for command in commands) and not (SHARED / "data").is_dir():
        pytest.skip(f"the shared data folder {SHARED / 'data'} is absent")
    work = tmp_path / "repo"
    work.mkdir()
    for name in LINKED:
        (work / name).symlink_to(REPO / name, target_is_directory=True)
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED, target_is_directory=True)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               MPLBACKEND="Agg")
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, \
            f"$ {command}\nexit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


# ---- README.md: every code block, as a reader copies it ------------------------------------

README = REPO / "README.md"
_SHOWN_NUMBER = re.compile(r"([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)(?:\s*,\s*|\s+|$)")


def shown_numbers(comment: str) -> list[str]:
    """The numbers a code comment opens with: ``# 0.6139, 1.8e-05`` gives both; ``# 1.80 hours ...`` one."""
    numbers, rest = [], comment.lstrip("# ")
    while match := _SHOWN_NUMBER.match(rest):
        numbers.append(match.group(1))
        rest = rest[match.end():]
    return numbers


def agrees_with_shown(value: float, shown: str) -> bool:
    """Whether `value` rounds to `shown` at the digits it shows."""
    mantissa, _, exponent = shown.partition("e")
    decimals = len(mantissa.partition(".")[2])
    half_unit = 0.5 * 10.0 ** (int(exponent or 0) - decimals)
    return abs(value - float(shown)) <= half_unit * (1 + 1e-9)


def comments_by_line(source: str) -> dict[int, str]:
    import io
    import tokenize

    return {tok.start[0]: tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.COMMENT}


def test_shown_numbers_are_read_to_their_digits():
    assert shown_numbers("# 0.6139, 1.8e-05") == ["0.6139", "1.8e-05"]
    assert shown_numbers("# 1.80 hours between failures of the job") == ["1.80"]
    assert shown_numbers("# what `relmodel plan` prints") == []
    assert agrees_with_shown(1.8049, "1.80") and not agrees_with_shown(1.806, "1.80")
    assert agrees_with_shown(1.84e-5, "1.8e-05") and not agrees_with_shown(1.86e-5, "1.8e-05")


def test_the_readme_python_blocks_run_verbatim_and_say_what_they_print(tmp_path, monkeypatch):
    """Every ```python block of README.md, in order, in one session, in an empty folder; a line whose comment
    opens with numbers (``rm.ettr(sc, at="exact")   # 0.6620``) must give them at the digits shown."""
    import ast
    import warnings

    blocks = [(line, "\n".join(body)) for line, language, body in fenced_blocks(README.read_text("utf-8"))
              if language == "python"]
    assert blocks, "README.md shows no Python: did the tour move?"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace, checked = {}, 0
    for fence_line, source in blocks:
        comments = comments_by_line(source)
        for statement in ast.parse(source).body:
            where = f"README.md:{fence_line + statement.end_lineno}"
            code = compile(ast.Module([statement], type_ignores=[]), where, "exec")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the tour shows the linear form's warning on purpose
                if isinstance(statement, ast.Expr):
                    value = eval(compile(ast.Expression(statement.value), where, "eval"), namespace)
                else:
                    exec(code, namespace)
                    value = None
            numbers = shown_numbers(comments.get(statement.end_lineno, ""))
            if numbers and value is not None:
                values = [float(v) for v in (value if isinstance(value, tuple) else (value,))]
                assert len(values) >= len(numbers) and all(
                    agrees_with_shown(v, shown) for v, shown in zip(values, numbers)), (where, values, numbers)
                checked += 1
    assert checked >= 5, "the tour's comments no longer quote what its lines give"


def test_the_readme_quick_start_is_what_ci_runs_and_its_plan_runs(tmp_path):
    """The two commands of the quick start: the second is `.ci/run`'s own test command, word for word; the
    first installs, then plans: its plan runs here, against the installed package, and draws its figure."""
    quick_start = [body for _, language, body in fenced_blocks(README.read_text("utf-8")) if language == "bash"][:2]
    assert [len(body) for body in quick_start] == [1, 1], quick_start
    install_and_plan, install_and_test = quick_start[0][0], quick_start[1][0]
    assert install_and_test in (REPO / ".ci" / "run").read_text("utf-8")
    prefix = "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/"
    assert install_and_plan.startswith(prefix), install_and_plan
    plan = install_and_plan[len(prefix):]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               MPLBACKEND="Agg")
    done = subprocess.run(["bash", "-c", plan], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"$ {plan}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "MTTF" in done.stdout and (tmp_path / "plan.png").stat().st_size > 10_000
