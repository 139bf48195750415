"""Every shell command shown on a documentation page or in README.md runs, as a reader would run it.

The commands are the lines beginning with "$ " in ```console blocks of README.md and docs/**/*.md (a line
ending in a backslash goes on to the next). Each block runs its commands in order, in a fresh temporary
folder that sees the repository's examples/, tests/ and docs/ and the shared data folder by the same
relative paths as from the repository (../shared/data), with `relmodel` and `python` from this
environment's bin folder; each must exit 0. A block shown word for word on two pages runs once. ```bash blocks are shown and not run: installs, commands for
other machines, and the few that take minutes (docs/developer/ci-and-docs.md says so to writers).
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


def console_blocks(text: str) -> list[tuple[int, list[str]]]:
    """The commands of each ```console block: (line number of the fence, commands in order)."""
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
        assert done.returncode == 0, f"$ {command}\nexit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
