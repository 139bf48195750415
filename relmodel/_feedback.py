"""What the command line shows while it works: progress bars and one-line notes.

The rule (no silent wait over 2 seconds): a long step shows a progress bar on a
terminal, and nothing in a pipe or under ``--quiet``; a step that cannot count
its progress (a Numba compilation, a solver) shows a ticking line instead, what
it is doing and for how long, removed when it ends. The first compilation of a
family of Numba kernels says so in one line first, with the time it took on
this machine the last time (kept in the user's cache folder). All of it goes to
stderr, so that stdout stays the result (a table, or JSON for a pipe).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

COMPILE_NOTE = "compiling relmodel's {what} (first run only{estimate}; later runs load them from the cache)"
TICK_S = 0.5  # how often a ticking line redraws its elapsed time
_state = {"quiet": False, "watching": False}
_announced: set[tuple] = set()


def stderr_is_terminal() -> bool:
    """Whether stderr is a terminal (a pipe, a file or a test runner's buffer is not).

    Returns
    -------
    bool
    """
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # no stderr, or a closed one
        return False


@contextmanager
def quiet(flag: bool = True):
    """Within the block, no progress bar and no note (``--quiet``).

    Parameters
    ----------
    flag : bool
        True silences; False leaves the setting as it was.
    """
    before = _state["quiet"]
    _state["quiet"] = before or bool(flag)
    try:
        yield
    finally:
        _state["quiet"] = before


def enabled(explicit: bool | None = None) -> bool:
    """Whether to show feedback: `explicit` when given (``--progress/--no-progress``),
    else on a terminal and not quiet.

    Parameters
    ----------
    explicit : bool or None
        The user's own choice, which wins over the terminal test.

    Returns
    -------
    bool
    """
    if explicit is not None:
        return bool(explicit)
    return not _state["quiet"] and stderr_is_terminal()


def note(text: str):
    """One line to stderr, where feedback is enabled (flushed: it precedes a wait).

    Parameters
    ----------
    text : str
        The line, without its newline.
    """
    if enabled():
        from tqdm import tqdm

        tqdm.write(text, file=sys.stderr)  # clears a bar being drawn, then draws it again below
        sys.stderr.flush()


def note_once(text: str):
    """`note`, once per process for each text (the set `announce_compile` keeps).

    Parameters
    ----------
    text : str
        The line, without its newline.
    """
    if text not in _announced:
        _announced.add(text)
        note(text)


def bar_width() -> dict:
    """tqdm's size options: follow the terminal, or a fixed 80 columns where it reports
    fewer than 10 (0 on some detached or CI terminals, where a following bar drew
    nothing), and 24 rows where it reports fewer than 2 (tqdm hides a bar below the
    last row, so a terminal of 0 rows, as a fresh pseudo-terminal reports, showed none).

    Returns
    -------
    dict
        ``dynamic_ncols`` or ``ncols``, and ``nrows`` where needed, for tqdm.
    """
    import os

    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):  # not a terminal: tqdm picks its own size
        return {"dynamic_ncols": True}
    width = {"dynamic_ncols": True} if size.columns >= 10 else {"ncols": 80}
    return width if size.lines >= 2 else {**width, "nrows": 24}


def progress_bar(total: int | None, desc: str, unit: str = "job", enabled_: bool | None = None, **kwargs):
    """A tqdm bar on stderr, or a disabled one (every call a no-op) where feedback is off.

    A bar that is shown is redrawn every TICK_S by a background thread until it
    closes, so that its elapsed time moves even through a long step.

    Parameters
    ----------
    total : int or None
        Units of work in all (None: unknown, as for a `ticking` line).
    desc : str
        Its label.
    unit : str
        What one unit is ("job", "state", ...).
    enabled_ : bool or None
        Force it on or off (None: `enabled()`).
    **kwargs
        Passed to tqdm (bar_format, ...).

    Returns
    -------
    tqdm.tqdm
    """
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr, leave=False,
               mininterval=0.2, disable=not enabled(enabled_), **bar_width(), **kwargs)
    if not bar.disable:
        threading.Thread(target=_keep_drawing, args=(bar,), daemon=True, name=f"relmodel bar: {desc}").start()
    return bar


def _keep_drawing(bar) -> None:
    """Redraw `bar` every TICK_S until it closes (tqdm disables a bar as it closes it)."""
    pause = threading.Event()
    while not pause.wait(TICK_S) and not bar.disable:
        with type(bar).get_lock():  # the lock close() clears the line under: never drawn again after that
            if not bar.disable:
                bar.refresh(nolock=True)  # recomputes the elapsed time shown


def _njit_functions(path: str) -> dict[str, int]:
    """Top-level functions of a kernel module decorated with njit, with the line
    Numba names their cache files by (the first decorator's)."""
    import ast

    with open(path, encoding="utf-8") as file:
        tree = ast.parse(file.read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(
                "njit" in ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list):
            out[node.name] = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return out


def _marker_folder(module_path: str) -> Path:
    """Where the ready markers of a kernel module go: beside Numba's own cache
    (``NUMBA_CACHE_DIR`` where set, else the module's ``__pycache__``)."""
    import numba

    root = numba.config.CACHE_DIR or os.path.join(os.path.dirname(module_path), "__pycache__")
    return Path(root) / "relmodel-ready"


def _markers(module: str, module_path: str, names) -> list[Path]:
    """The markers that say each `module.name` was compiled with ``cache=True`` by this
    Numba, Python and CPU for this very source: names keyed by all of them (the
    source read once for all the names)."""
    import numba

    common = hashlib.sha256()
    for part in (numba.__version__, sys.version, platform.machine(), numba.config.CPU_NAME or "", module):
        common.update(part.encode() + b"\0")
    common.update(Path(module_path).read_bytes())
    folder = _marker_folder(module_path)
    out = []
    for name in names:
        key = common.copy()
        key.update(b"\0" + name.encode())
        out.append(folder / f"{module}.{name}.{key.hexdigest()[:24]}")
    return out


def _compiled(function) -> bool:
    """Whether a Numba dispatcher has compiled (or loaded) a specialisation in this process."""
    return bool(getattr(function, "signatures", None))


def mark_compiled_kernels() -> None:
    """Write the ready marker of every compiled relmodel kernel of this process.

    Numba writes a kernel's cache when it compiles it (``cache=True``); the
    marker records that, so that `kernels_cached` can tell without Numba's
    internals. Registered at exit once Numba is imported; a marker that
    cannot be written is left out (the next run then compiles, or loads, on
    its own: slower to start, never other numbers).
    """
    if "numba" not in sys.modules:
        return
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("relmodel.") or module is None or not getattr(module, "__file__", None):
            continue
        # Numba dispatchers defined here (every relmodel kernel compiles with cache=True: _kernels/_jit.py)
        compiled = [name for name, value in list(vars(module).items())
                    if getattr(value, "__module__", None) == module_name and hasattr(value, "py_func")
                    and _compiled(value)]
        if not compiled:
            continue
        try:
            for marker in _markers(module_name, module.__file__, compiled):
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.touch()
        except OSError:
            continue


def kernels_cached(module: str, entry_points=None) -> bool:
    """Whether the Numba kernels of `module` would load rather than compile: each of
    `entry_points` (default: any njit function of the module) is compiled in this
    process, or a run of this Numba on this source and machine compiled it with
    ``cache=True`` (its ready marker, `mark_compiled_kernels`). Looked up without
    importing the module: a kernel with an explicit signature compiles at import.

    Parameters
    ----------
    module : str
        A kernel module, e.g. ``"relmodel._kernels.timeline_numba"``.
    entry_points : iterable of str, optional
        The functions about to be called; all of them must be ready.

    Returns
    -------
    bool
        False where a compilation is due, or where it cannot tell.
    """
    import importlib.util

    loaded = sys.modules.get(module)
    try:
        path = importlib.util.find_spec(module).origin
        names = list(_njit_functions(path)) if entry_points is None else list(entry_points)
        if loaded is not None and all(_compiled(getattr(loaded, n, None)) for n in names):
            return True
        ready = [marker.exists() for marker in _markers(module, path, names)]
        return any(ready) if entry_points is None else all(ready)
    except (OSError, ImportError, AttributeError, SyntaxError):  # no source or no Numba: assume a compilation
        return False


@contextmanager
def ticking(desc: str, enabled_: bool | None = None):
    """Within the block, one line on stderr saying `desc` and the time since it began, moving
    (`progress_bar` without a total), removed at its end: for a step that cannot count its progress.

    Parameters
    ----------
    desc : str
        What the block does.
    enabled_ : bool or None
        Force it on or off (None: `enabled()`).

    Yields
    ------
    tqdm.tqdm
    """
    with progress_bar(None, desc, enabled_=enabled_, bar_format="{desc}: {elapsed}") as line:
        yield line


def _estimates_path() -> Path:
    """The file of measured compile times: in the user's cache folder, which outlives Numba's caches."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "relmodel" / "compile-seconds.json"


def _estimate_key(module: str) -> str:
    """A module's key among the measured compile times: its name, this machine and this Numba."""
    import numba

    from llvmlite.binding import get_host_cpu_name

    return "|".join((module, platform.machine(), numba.config.CPU_NAME or get_host_cpu_name(),
                     str(os.cpu_count()), numba.__version__))


def _read_estimates() -> dict:
    try:
        estimates = json.loads(_estimates_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none yet, or unreadable: no estimate, never an error
        return {}
    return estimates if isinstance(estimates, dict) else {}


def compile_estimate(module: str) -> float | None:
    """The seconds the last compilation of `module`'s kernels took on this machine, or None where none was kept.

    Parameters
    ----------
    module : str
        The kernel module.

    Returns
    -------
    float or None
    """
    seconds = _read_estimates().get(_estimate_key(module))
    return float(seconds) if isinstance(seconds, (int, float)) and seconds > 0 else None


def record_compile_seconds(module: str, seconds: float) -> None:
    """Keep how long `module`'s kernels took to compile here, for the next first run's note (a file that
    cannot be written is left as it is).

    Parameters
    ----------
    module : str
        The kernel module.
    seconds : float
        The time the compilation took.
    """
    estimates = {**_read_estimates(), _estimate_key(module): round(float(seconds), 3)}
    path = _estimates_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps(estimates, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(temporary, path)  # whole or not at all, should two processes write at once
    except OSError:
        pass


_compiling = threading.local()  # per thread: how deep in nested compilations, and the outermost one's line
_compile_seconds: dict[str, float] = {}  # by kernel module: the time its compilations took in this process
_kernel_names: dict[str, str] = {}  # by kernel module: what the notes call its kernels


# The line of a compilation is drawn by a small process of its own: Numba holds the GIL for
# seconds at a time as it compiles, so a thread of this process would stand still with it.
_LINE_PROCESS = """
import os, select, sys, time
desc, interval, start = sys.argv[1], float(sys.argv[2]), time.monotonic()
while True:
    seconds = int(time.monotonic() - start)
    os.write(2, f"\\r{desc}: {seconds // 60:02d}:{seconds % 60:02d}\\x1b[K".encode())
    if select.select([sys.stdin], [], [], interval)[0]:  # the parent closed the pipe: the step is over
        break
os.write(2, b"\\r\\x1b[K")
"""


class _LineProcess:
    """A `ticking` line drawn by a process of its own, for a step that holds the GIL (a compilation)."""

    def __init__(self, desc: str):
        import subprocess

        stderr_fd = sys.stderr.fileno()
        width = os.get_terminal_size(stderr_fd).columns if os.isatty(stderr_fd) else 80
        self.child = subprocess.Popen([sys.executable, "-I", "-S", "-c", _LINE_PROCESS, desc[:max(10, width - 8)],
                                       str(TICK_S)], stdin=subprocess.PIPE, stderr=stderr_fd)

    def close(self) -> None:
        self.child.stdin.close()
        self.child.wait()


def _compile_line(desc: str):
    """The line shown while a kernel compiles: a `_LineProcess` on a POSIX terminal, a `ticking` bar elsewhere."""
    if sys.platform != "win32":
        try:
            return _LineProcess(desc)
        except (OSError, ValueError, AttributeError):  # no file descriptor behind stderr: a bar of this process
            pass
    return progress_bar(None, desc, bar_format="{desc}: {elapsed}")


def _on_compile_start(dispatcher) -> None:
    depth = getattr(_compiling, "depth", 0)
    _compiling.depth = depth + 1
    if depth:
        return
    module = getattr(dispatcher.py_func, "__module__", "") or ""
    _compiling.module, _compiling.start, _compiling.line = module, time.perf_counter(), None
    # A compilation in another thread (a background compile) keeps nobody waiting: no line for it.
    if module.startswith("relmodel.") and threading.current_thread() is threading.main_thread() and enabled():
        _compiling.line = _compile_line(f"compiling relmodel's {_kernel_names.get(module, 'kernels')}")


def _on_compile_end() -> None:
    _compiling.depth -= 1
    if _compiling.depth:
        return
    if _compiling.line is not None:
        _compiling.line.close()
    module = _compiling.module
    if module.startswith("relmodel."):
        _compile_seconds[module] = _compile_seconds.get(module, 0.0) + time.perf_counter() - _compiling.start
        record_compile_seconds(module, _compile_seconds[module])


def watch_compilations() -> None:
    """From now on, a `ticking` line while Numba compiles a relmodel kernel in the main thread, and the
    time each kernel module took to compile kept (`record_compile_seconds`) for the next first run's note.

    Numba tells its listeners of each compilation (not of a load from its cache); once per process.
    """
    if _state["watching"]:
        return
    from numba.core import event

    class CompileListener(event.Listener):
        def on_start(self, ev):
            _on_compile_start(ev.data["dispatcher"])

        def on_end(self, ev):
            _on_compile_end()

    event.register("numba:compile", CompileListener())
    _state["watching"] = True


def announce_compile(module: str, entry_points=None, what: str = "kernels") -> bool:
    """Say once per process, before the kernels of `module` are first imported or
    called, that they are about to be compiled (when `kernels_cached` says so), with
    the time it took here the last time; a line ticks while they compile (`watch_compilations`).

    Parameters
    ----------
    module : str
        The kernel module, e.g. ``"relmodel._kernels.timeline_numba"``.
    entry_points : iterable of str, optional
        The functions about to be called (default: any of the module).
    what : str
        What the note calls them.

    Returns
    -------
    bool
        Whether it announced a compilation (only where feedback is on).
    """
    if not enabled():  # nobody to tell: spare the cache lookup
        return False
    _kernel_names.setdefault(module, what)
    watch_compilations()
    entry_points = None if entry_points is None else tuple(entry_points)
    key = (module, entry_points)
    if key in _announced:
        return False
    _announced.add(key)
    if kernels_cached(module, entry_points):
        return False
    seconds = compile_estimate(module)
    note(COMPILE_NOTE.format(what=what, estimate="" if seconds is None else f", ~{seconds:.0f} s here last time"))
    return True
