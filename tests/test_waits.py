"""No silent wait: the first line of `relmodel plan` before any compilation, a
note before a compilation, progress bars on a terminal only, units in JSON,
and short readable reprs of the result objects."""

import contextlib
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from click.testing import CliRunner

import relmodel as rm
from relmodel import _feedback
from relmodel._cli import main

QUICK_START = ["plan", "--gpus", "16384", "--work", "14d", "--checkpoint-cost", "5min", "--restart-cost", "10min",
               "--target-ettr", "0.8"]
# The first line comes well within the 2 s the feedback rule allows (`relmodel._feedback`) on an
# idle machine: 20 s is 10 times that, so a loaded machine does not fail it.
FIRST_LINE_BOUND_S = 20.0


def invoke(*args):
    return CliRunner().invoke(main, list(args))


# -- the first line of `relmodel plan` comes before any compilation --------------------

# Runs the quick start in a fresh interpreter and records, at the first write to
# stdout, which kernel modules were loaded (numba compiles at their import or first call).
PROBE = textwrap.dedent("""
    import json, sys, time
    start = time.perf_counter()
    seen = {}
    real = sys.stdout

    class Probe:
        def write(self, text):
            if text.strip() and not seen:
                seen.update(line=text.splitlines()[0], seconds=time.perf_counter() - start,
                            loaded=sorted(m for m in sys.modules if m == "numba" or m.endswith("_kernel") or (
                                m.startswith("relmodel._kernels.")
                                and m.rsplit(".", 1)[1] not in ("layout", "_jit", "__init__"))))
            return real.write(text)

        def __getattr__(self, name):
            return getattr(real, name)

    sys.stdout = Probe()
    from relmodel._cli import main
    try:
        main(sys.argv[1:])
    except SystemExit as done:
        code = done.code
    sys.stdout = real
    sys.stderr.write("PROBE " + json.dumps({**seen, "code": code}) + "\\n")
""")


def _probe(args, cache_dir):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    # Run outside the checkout, so that the child imports the installed relmodel (as pytest
    # itself does), not the source tree, which lacks the compiled twin after `pip install .`.
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=env,
                          timeout=600, check=False, cwd=cache_dir)
    line = next(x for x in done.stderr.splitlines() if x.startswith("PROBE "))
    return json.loads(line[len("PROBE "):]), done


def test_the_first_line_of_plan_comes_before_any_kernel_on_an_empty_numba_cache(tmp_path):
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    # The quick start's plan, figure included (it simulates too).
    seen, done = _probe([*QUICK_START, "--plot", str(tmp_path / "plan.png")], cache)
    assert seen["code"] == 0, done.stderr[-2000:]
    assert seen["line"].startswith("16384 GPUs (2048 nodes)")
    # Printed before any kernel was even imported, let alone compiled ...
    assert seen["loaded"] == [], seen["loaded"]
    assert seen["seconds"] < FIRST_LINE_BOUND_S
    # ... and the whole default plan compiled nothing: it checks with the Cython twin.
    assert list(cache.rglob("*.nbi")) == []
    assert (tmp_path / "plan.png").stat().st_size > 10_000
    assert "ETTR" in done.stdout and "largest job reaching it today" in done.stdout


def _run_on_a_terminal(args, cache_dir, timeout=600):
    """Run `relmodel` with stdout and stderr on one pseudo-terminal: what a user sees, in order."""
    pty = pytest.importorskip("pty")
    import fcntl
    import select
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    # Outside the checkout: the child imports the installed relmodel, as pytest does.
    child = subprocess.Popen([sys.executable, "-m", "relmodel._cli", *args], stdout=slave, stderr=slave,
                             stdin=subprocess.DEVNULL, env=env, close_fds=True, cwd=cache_dir)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif child.poll() is not None:
            break
    child.wait(timeout=60)
    os.close(master)
    return child.returncode, b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")


_CACHED = ("import sys; from relmodel._feedback import kernels_cached as k; "
           "m = 'relmodel._kernels.timeline_numba'; print(k(m, ['run_blocks']), m in sys.modules)")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_a_numba_compilation_is_announced_once_after_the_first_line(tmp_path):
    # The plan's own kernel compiles, as on an empty cache; the kernels it calls load from this
    # session's cache (warm_kernels, or the tests before, compiled them), which changes nothing a user sees and spares
    # their compilations. Their ready markers stay behind: the run must write its own.
    shutil.copytree(os.environ["NUMBA_CACHE_DIR"], tmp_path, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("relmodel-ready", "*run_blocks*"))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    cached = subprocess.run([sys.executable, "-c", _CACHED], capture_output=True, text=True, env=env, check=True,
                            cwd=tmp_path)
    assert cached.stdout.split() == ["False", "False"]  # looked up without importing (compiling) the kernel
    code, seen = _run_on_a_terminal([*QUICK_START, "--backend", "numba", "--n-jobs", "2000"], tmp_path)
    assert code == 0, seen[-3000:]
    first = seen.index("16384 GPUs (2048 nodes)")
    assert seen.count("compiling relmodel's simulation kernels (first run only") == 1
    assert first < seen.index("compiling relmodel's")
    # The cache is warm now: the run left its ready markers, and no note the second time.
    cached = subprocess.run([sys.executable, "-c", _CACHED], capture_output=True, text=True, env=env, check=True,
                            cwd=tmp_path)
    assert cached.stdout.split()[0] == "True"
    code, again = _run_on_a_terminal([*QUICK_START, "--backend", "numba", "--n-jobs", "2000"], tmp_path)
    assert code == 0 and "compiling" not in again and "16384 GPUs" in again


_SPECIALISATIONS = textwrap.dedent("""
    import numba
    from relmodel._cli import main
    from relmodel.pipeline import _plan_kernel, _schedule_kernel
    try:
        main(["pipeline", "--model", "gpt3-175b", "--gpu", "a100-80gb", "--stages", "8", "--tensor-parallel", "8",
              "--replicas", "8", "--microbatches", "16", "--failures", "0..3"])
    except SystemExit as end:
        assert not end.code, end.code
    for module in (_plan_kernel, _schedule_kernel):
        for name, value in vars(module).items():
            if isinstance(value, numba.core.registry.CPUDispatcher):
                print(module.__name__.rsplit(".", 1)[-1] + "." + name, len(value.overloads))
""")


def test_the_pipeline_command_compiles_each_kernel_once():
    """On an empty cache each specialisation compiles for seconds, so each kernel compiles once (a
    read-only priority array, say, would make the planner's kernel compile twice)."""
    run = subprocess.run([sys.executable, "-c", _SPECIALISATIONS], capture_output=True, text=True, check=True)
    counts = dict(line.split() for line in run.stdout.splitlines() if line.count(" ") == 1)
    used = {name: int(n) for name, n in counts.items() if int(n)}
    assert {"_plan_kernel.search_states", "_plan_kernel.orders_period", "_schedule_kernel.longest_path"} <= set(used)
    assert all(n == 1 for n in used.values()), used


# -- progress: a bar on a terminal, nothing in a pipe or with --quiet ------------------------

@pytest.fixture
def terminal(monkeypatch):
    """Stderr taken for a terminal (CliRunner's is a buffer)."""
    monkeypatch.setattr(_feedback, "stderr_is_terminal", lambda: True)


@pytest.mark.parametrize("size, expected", [((0, 24), {"ncols": 80}), ((5, 24), {"ncols": 80}),
                                            ((120, 40), {"dynamic_ncols": True}), (None, {"dynamic_ncols": True}),
                                            ((0, 0), {"ncols": 80, "nrows": 24}),
                                            ((120, 1), {"dynamic_ncols": True, "nrows": 24})])
def test_a_terminal_that_reports_no_width_still_gets_a_bar(monkeypatch, size, expected):
    """On a terminal reporting 0 columns every bar drew nothing (tqdm followed the width)."""
    import io

    def terminal_size(fd=None):
        if size is None:
            raise OSError("not a terminal")
        return os.terminal_size(size)

    monkeypatch.setattr(os, "get_terminal_size", terminal_size)
    assert _feedback.bar_width() == expected
    if size == (0, 24):  # the bar itself at that width: drawn, 80 columns wide
        class Terminal(io.StringIO):
            def fileno(self):
                return 2

        out = Terminal()
        monkeypatch.setattr(sys, "stderr", out)
        with _feedback.progress_bar(100, "simulate", enabled_=True) as bar:
            bar.update(100)
            bar.refresh()
        drawn = [line for line in out.getvalue().split("\r") if line.startswith("simulate")]
        assert drawn and "100/100" in drawn[-1] and len(drawn[-1]) <= 80


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="no pseudo-terminals here")
def test_a_fresh_pseudo_terminal_of_no_size_shows_the_bar(monkeypatch):
    """A pseudo-terminal nobody sized reports 0 columns and 0 rows; tqdm hid every
    bar below the last row, so `relmodel sweep` sat silent there for its whole run."""
    import fcntl
    import select
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 0, 0, 0, 0))  # (Linux's default; said here)
    terminal = os.fdopen(slave, "w", encoding="utf-8")
    try:
        assert tuple(os.get_terminal_size(slave)) == (0, 0)
        monkeypatch.setattr(sys, "stderr", terminal)
        with _feedback.progress_bar(100, "sweep", enabled_=True) as bar:
            bar.update(100)
            bar.refresh()
        terminal.flush()
        drawn = ""
        # Read what arrives, a frame at a time on a busy machine; nothing drawn must fail the test, not hang it.
        while "100/100" not in drawn and select.select([master], [], [], 5.0)[0]:
            drawn += os.read(master, 65536).decode("utf-8", "replace")
    finally:
        terminal.close()
        os.close(master)
    assert "sweep" in drawn and "100/100" in drawn


SMALL_SIMULATE = ["simulate", "--gpus", "1024", "--n-jobs", "20000", "--seed", "3"]


def test_simulate_shows_a_bar_by_default_on_a_terminal(terminal):
    result = invoke(*SMALL_SIMULATE)
    assert result.exit_code == 0, result.output
    assert "simulate:" in result.stderr and "job" in result.stderr
    assert "simulate:" not in result.stdout


@pytest.mark.parametrize("flags", [["--quiet"], ["--no-progress"]])
def test_quiet_or_no_progress_shows_nothing_on_a_terminal(terminal, flags):
    result = invoke(*SMALL_SIMULATE, *flags)
    assert result.exit_code == 0 and result.stderr == ""


def test_in_a_pipe_nothing_but_the_result():
    result = invoke(*SMALL_SIMULATE)
    assert result.exit_code == 0 and result.stderr == ""
    forced = invoke(*SMALL_SIMULATE, "--progress")  # asked for, it shows anyway
    assert "simulate:" in forced.stderr


def test_the_exact_level_kernels_announce_their_compilation(terminal, monkeypatch, estimates):
    """The exact form of an asynchronous write compiles its own kernels (seconds on a cold
    cache, inside the strategy planner's bar): a note first, once, naming them."""
    notes = []
    monkeypatch.setattr(_feedback, "note", notes.append)
    monkeypatch.setattr(_feedback, "_announced", set())
    monkeypatch.setattr(_feedback, "kernels_cached", lambda module, entry_points=None: (
        module != "relmodel._kernels.levels_exact"))
    sc = rm.Scenario(n_gpus=16384, failure_rate=3.8e-3, work="54d", checkpoint_interval="1h", checkpoint_cost="30s",
                     checkpoint_persist="5min", restart_cost="10min")
    rm.ettr(sc)
    rm.ettr(sc.sweep(checkpoint_interval=[0.5, 2.0]))
    assert notes == [_feedback.COMPILE_NOTE.format(what="exact checkpoint-level kernels", estimate="")]


def test_plan_bar_and_figure_note_on_a_terminal_only(terminal, tmp_path):
    png = tmp_path / "plan.png"
    result = invoke("plan", "--gpus", "1024", "--n-jobs", "1000", "--plot", str(png))
    assert result.exit_code == 0, result.output
    assert "check simulation:" in result.stderr and f"drawing {png}: 00:" in result.stderr
    # The text comes before the figure is drawn.
    assert result.stdout.index("Sensitivity") < result.stdout.index(f"wrote {png}")
    quiet = invoke("plan", "--gpus", "1024", "--n-jobs", "1000", "--plot", str(png), "--quiet")
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_the_bar_advances_by_blocks_of_jobs_not_by_the_whole_run():
    sc = rm.Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h", work="2d")
    steps = []
    ds = rm.simulate(sc, n_jobs=50_000, seed=1, backend="cython", progress=steps.append)
    assert sum(steps) == 50_000 and len(steps) >= 10
    same = rm.simulate(sc, n_jobs=50_000, seed=1, backend="numba")
    assert float(ds.ettr) == float(same.ettr) and float(ds.wall_se) == float(same.wall_se)


def test_a_two_chunk_study_moves_by_blocks_not_in_halves(tmp_path, monkeypatch):
    import tqdm.auto

    from relmodel._study import parse_study
    from relmodel._sweep import run_study

    updates = []

    class Recorder:
        def __init__(self, total=None, initial=0, **kwargs):
            self.total, self.disable = total, False

        def update(self, n=1):
            updates.append(n)

        def set_postfix_str(self, *args, **kwargs):
            pass

        def close(self):
            pass

    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    study = parse_study('[fixed]\nfailure_rate = 6.5e-3\nwork = "1d"\ncheckpoint_interval = "1h"\n'
                        '[sweep]\nn_gpus = [512, 1024]\n[run]\nn_jobs = 20000\nseed = 1\nchunk_points = 1\n'
                        'backend = "cython"\n', name="t.toml", folder=tmp_path)
    run_study(study, tmp_path / "s.zarr", progress=True)
    assert sum(updates) == 40_000 and len(updates) > 4


def test_auto_backend_gives_the_numba_bits():
    sc = rm.Scenario(n_gpus=[512, 4096], failure_rate=6.5e-3, checkpoint_interval="1h", work="3d",
                     taxonomy="meta-2024")
    auto = rm.simulate(sc, n_jobs=3000, seed=2, backend="auto")
    numba = rm.simulate(sc, n_jobs=3000, seed=2, backend="numba")
    assert auto.attrs["backend"] == "cython"  # a short run: no JIT needed
    for name in ("ettr", "ettr_se", "wall_quantile", "time_mean", "unproductive_by_category"):
        np.testing.assert_array_equal(auto[name].values, numba[name].values)


def test_auto_takes_numba_for_long_runs(monkeypatch):
    from relmodel import _engine as engine

    packed = engine.pack(rm.Scenario(n_gpus=16384, failure_rate=6.5e-3, checkpoint_interval="1h", work="14d"))
    assert engine.resolve_backend("auto", packed, 1000) == "cython"
    monkeypatch.setattr(engine, "numba_ready", lambda: True)
    assert engine.resolve_backend("auto", packed, 10**7) == "numba"
    monkeypatch.setattr(engine, "numba_ready", lambda: False)  # cold: the twin, while Numba compiles (`run`)
    assert engine.resolve_backend("auto", packed, 2 * 10**5) == "cython"
    assert engine.resolve_backend("auto", packed, 10**7) == "cython"
    assert engine.resolve_backend("numba", packed, 10) == "numba"


def test_a_cold_auto_run_goes_on_in_numba_after_the_background_compile_with_the_same_bits(monkeypatch):
    """On a cold cache, "auto" starts a long run on the Cython twin, compiles Numba in
    a thread and takes it from the first chunk after: no frozen bar, the same bits."""
    from relmodel import _engine as engine

    sc = rm.Scenario(n_gpus=[4096, 16384], failure_rate=2e-2, checkpoint_interval="1h", work="14d")
    packed = engine.pack(sc)
    n_jobs = 40 * 1024
    assert engine.expected_events(packed, n_jobs) > engine.AUTO_CYTHON_EVENTS
    monkeypatch.setattr(engine, "numba_ready", lambda: False)
    monkeypatch.setattr(engine, "_background", [])  # no compile started yet in this process
    chunks = []
    # Switch after the third chunk, once the compile has ended (it may be cold here).
    monkeypatch.setattr(engine.BackgroundCompile, "ready",
                        lambda self: len(chunks) >= 3 and self._done.wait(900) and self.error is None)
    switched = engine.run(packed, n_jobs, 9, "auto", chunk_items=8, progress=chunks.append)
    numba = engine.run(packed, n_jobs, 9, "numba", chunk_items=64)
    assert switched.backend == "cython then numba" and len(chunks) == 10  # 2 rows x 40 blocks, 8 a chunk
    assert np.array_equal(switched.stats, numba.stats) and np.array_equal(switched.hist, numba.hist)
    first = engine._background[0]
    assert engine.run(packed, n_jobs, 9, "auto", chunk_items=8).backend == "numba"  # compiled: from the start
    assert engine.background_compile() is first and len(engine._background) == 1  # one compile a process
    ds = rm.simulate(sc, n_jobs=1000, seed=1, backend="cython")
    assert ds.attrs["backend"] == "cython"


def test_pipeline_progress_changes_no_number():
    import relmodel.pipeline as pl
    from relmodel.pipeline import _runs as runs

    cfg, model = pl.PipelineConfig(2, 2, 4), pl.RunModel(failure_rate=2.0, duration="3d")
    runs.clear_period_cache()
    quiet = pl.simulate_runs(cfg, model, n_runs=20, seed=4)
    runs.clear_period_cache()
    shown = pl.simulate_runs(cfg, model, n_runs=20, seed=4, progress=True)
    assert quiet.fraction_of_ideal.equals(shown.fraction_of_ideal)
    assert quiet.fraction_of_ideal_ci.equals(shown.fraction_of_ideal_ci)


# -- JSON carries units ------------------------------------------------------------------------

def _numeric_leaves(obj, path=()):
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _numeric_leaves(value, (*path, str(key)))
    elif isinstance(obj, list):
        if obj and all(isinstance(v, (int, float)) and not isinstance(v, bool) or v is None for v in obj):
            yield ".".join(path)  # a pair (an interval) has its list's unit
        else:
            for i, value in enumerate(obj):
                yield from _numeric_leaves(value, (*path, "*"))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield ".".join(path)


def _unit(units: dict, path: str):
    """The unit of a dotted key path: its own entry, or a pattern's ("*" is one key)."""
    if path in units:
        return units[path]
    parts = path.split(".")
    for pattern, unit in units.items():
        keys = pattern.split(".")
        if len(keys) == len(parts) and all(fnmatch.fnmatchcase(p, k) for p, k in zip(parts, keys)):
            return unit
    return None


def _assert_every_number_has_a_unit(out: dict):
    units = out.pop("units")
    missing = [p for p in _numeric_leaves(out) if not _unit(units, p)]
    assert missing == [], missing


def test_plan_json_gives_every_number_a_unit():
    result = invoke("plan", "--gpus", "16384", "--work", "14d", "--target-ettr", "0.8", "--n-jobs", "1000",
                    "--taxonomy", "meta-2024", "--checkpoint-interval", "1h", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["units"]["mttf_h"] == "h" and out["units"]["scenario.failure_rate"] == "failures per node-day"
    assert _unit(out["units"], "sensitivity.restart_cost.value") == "h"
    assert _unit(out["units"], "sensitivity.n_gpus.value") == "GPUs"
    _assert_every_number_has_a_unit(out)


def test_simulate_json_gives_every_number_a_unit():
    result = invoke("simulate", "--gpus", "512,1024", "--checkpoint-interval", "30min,1h", "--n-jobs", "500",
                    "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert _unit(out["units"], "rows.0.checkpoint_interval") == "h"
    assert _unit(out["units"], "rows.0.wall_p50_h") == "h"
    _assert_every_number_has_a_unit(out)


def test_fit_json_gives_every_number_a_unit(tmp_path):
    from relmodel._synthetic_log import synthetic_log

    synthetic_log(2000, failure_rate=6.5e-3, seed=5).to_csv(tmp_path / "jobs.csv")
    result = invoke("fit", str(tmp_path / "jobs.csv"), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["units"]["failure_rate_ci"] == "failures per node-day"
    _assert_every_number_has_a_unit(out)
    plan = invoke("plan", "--gpus", "16384", "--from-log", str(tmp_path / "jobs.csv"), "--n-jobs", "500", "--json")
    assert plan.exit_code == 0, plan.output
    _assert_every_number_has_a_unit(json.loads(plan.stdout))


# -- result objects read well in a notebook ------------------------------------------------------

def test_plan_has_a_short_repr_and_an_html_table():
    p = rm.plan(n_gpus=16384, failure_rate=6.5e-3, checkpoint_cost="5min", restart_cost="10min", work="14d",
                target_ettr=0.8, n_jobs=1000)
    text = repr(p)
    assert text.startswith("Plan(16384 GPUs") and "\n" not in text and len(text) < 200
    assert "ETTR 0.66" in text and "target 0.8" in text
    html = p._repr_html_()
    assert html.startswith("<table") and html.count("<tr>") == 1 + len(p.intervals_h) + 1
    assert str(p).startswith("16384 GPUs (2048 nodes)")


def test_fit_result_has_a_short_repr_and_an_html_table():
    from relmodel._synthetic_log import synthetic_log

    fitted = rm.fit(synthetic_log(2000, failure_rate=6.5e-3, seed=5).to_csv())
    text = repr(fitted)
    assert text.startswith("FitResult(") and "\n" not in text and len(text) < 250
    assert "per 1000 node-days" in text
    assert fitted._repr_html_().startswith("<table") and "MTTF at 16384 GPUs" in fitted._repr_html_()


def test_plan_with_strategies_shows_its_search_on_a_terminal(terminal):
    """Each strategy's search takes seconds: a bar names the step, so no wait is silent."""
    result = invoke("plan", "--gpus", "1024", "--n-jobs", "1000", "--checkpoint-cost", "30s",
                    "--checkpoint-persist", "5min", "--fast-checkpoint",
                    "interval=10min,cost=5s,restart=3min,persist=30s,survives=0.85")
    assert result.exit_code == 0, result.output
    assert "checkpoint strategies" in result.stderr and "multilevel: best intervals" in result.stderr
    quiet = invoke("plan", "--gpus", "1024", "--n-jobs", "1000", "--checkpoint-cost", "30s",
                   "--checkpoint-persist", "5min", "--quiet")
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_fit_on_a_large_log_says_what_it_is_reading_on_a_terminal(terminal, tmp_path):
    """A log of some megabytes takes seconds to read: one note first, so the wait is not silent."""
    from relmodel._synthetic_log import synthetic_log

    path = tmp_path / "big.csv"
    synthetic_log(12_000, failure_rate=6.5e-3, seed=1, format="csv", path=path)
    assert path.stat().st_size > 1_000_000
    result = invoke("fit", str(path))
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(f"\rreading and fitting {path} (")


@pytest.mark.parametrize("args, line", [(["fit", "--example"], "reading and fitting "),
                                        (["run", "show", "--example"], "reading run-events.csv: 00:"),
                                        (["run", "show", "--example", "--format", "megatron"],
                                         "reading run-megatron.log: 00:")])
def test_reading_an_input_shows_a_line_from_before_its_readers_load(terminal, args, line):
    """`fit` stood 2.2 s still from a clone's root: the imports of the log readers, then the fit, unannounced."""
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert line in result.stderr and line not in result.stdout


def test_the_pipeline_table_shows_its_strategies_on_a_terminal_and_the_same_numbers(terminal):
    """A ReCycle plan of a large pipeline takes seconds: the table's bar names the strategy and failures."""
    import relmodel.pipeline as pl

    result = invoke("pipeline", "--stages", "4", "--replicas", "2", "--microbatches", "4", "--failures", "0..2")
    assert result.exit_code == 0, result.output
    assert "strategies" in result.stderr and "recycle, 2 down" in result.stderr
    cfg = pl.PipelineConfig(4, 2, 4)
    assert pl.throughput_table(cfg, range(3), progress=True).period.equals(pl.throughput_table(cfg, range(3)).period)


# -- a ticking line for a step that cannot count its progress ----------------------------------

class _Terminal:
    """Stderr as a terminal: what was written, thread-safe enough for the ticker's redraws."""

    def __init__(self):
        import io

        self.buffer = io.StringIO()

    def write(self, text):
        return self.buffer.write(text)

    def flush(self):
        pass

    def fileno(self):
        raise OSError("not a real terminal")  # tqdm picks its own width

    def install(self, monkeypatch):
        monkeypatch.setattr(sys, "stderr", self)

    def draws(self, desc):
        return [frame.strip() for frame in self.buffer.getvalue().split("\r") if frame.strip().startswith(desc)]


@pytest.fixture
def ticking_terminal(terminal, monkeypatch):
    """A fake terminal (`_Terminal.install` in the test: pytest sets stderr anew for it), ticks every
    10 ms, and a tqdm clock that moves a second a reading."""
    import itertools

    import tqdm.std

    monkeypatch.setattr(_feedback, "TICK_S", 0.01)
    clock = itertools.count()
    monkeypatch.setattr(tqdm.std, "time", lambda: float(next(clock)))
    return _Terminal()


def _until(condition, what):
    """Wait for a background thread's effect; a hang fails the test instead of stalling it."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_ticker_shows_what_it_does_and_its_elapsed_time_moving_then_goes(ticking_terminal, monkeypatch):
    ticking_terminal.install(monkeypatch)
    with _feedback.ticking("solving the plan"):
        _until(lambda: len(ticking_terminal.draws("solving the plan")) >= 4, "the ticker never redrew")
    drawn = ticking_terminal.draws("solving the plan")
    assert drawn[0].startswith("solving the plan: 00:")
    assert len(set(drawn)) >= 3  # the elapsed time moves
    ended = len(ticking_terminal.buffer.getvalue())
    time.sleep(0.05)
    assert len(ticking_terminal.buffer.getvalue()) == ended  # no redraw once the step is over
    assert ticking_terminal.buffer.getvalue().rstrip(" \r").endswith("\r") or not \
        ticking_terminal.buffer.getvalue().split("\r")[-1].strip()  # the line is cleared


def test_a_bar_keeps_moving_through_a_long_step(ticking_terminal, monkeypatch):
    """A bar redrawn only as work is done stood still for seconds at "recycle, 1 down"."""
    ticking_terminal.install(monkeypatch)
    with _feedback.progress_bar(6, "strategies", unit="step") as bar:
        bar.update(1)
        _until(lambda: len(set(ticking_terminal.draws("strategies"))) >= 3, "the bar stood still")
    assert all("1.00/6.00" in frame for frame in ticking_terminal.draws("strategies")[1:])


@pytest.mark.parametrize("where", ["pipe", "quiet"])
def test_no_ticker_in_a_pipe_or_under_quiet(monkeypatch, where):
    import threading

    out = _Terminal()
    monkeypatch.setattr(sys, "stderr", out)
    monkeypatch.setattr(_feedback, "stderr_is_terminal", lambda: where != "pipe")
    threads = threading.active_count()
    with _feedback.quiet(where == "quiet"), _feedback.ticking("solving"):
        assert threading.active_count() == threads  # no thread to redraw nothing
    assert out.buffer.getvalue() == ""


# -- compile times measured here, not constants ------------------------------------------------

@pytest.fixture
def estimates(monkeypatch, tmp_path):
    """The measured compile times in a file of the test's own."""
    path = tmp_path / "cache" / "relmodel" / "compile-seconds.json"
    monkeypatch.setattr(_feedback, "_estimates_path", lambda: path)
    return path


def test_a_measured_compile_time_is_kept_and_read_back(estimates):
    module = "relmodel._kernels.levels_exact"
    assert _feedback.compile_estimate(module) is None
    _feedback.record_compile_seconds(module, 12.34)
    _feedback.record_compile_seconds("relmodel.pipeline._plan_kernel", 3.0)
    assert _feedback.compile_estimate(module) == 12.34
    assert _feedback.compile_estimate("relmodel.pipeline._plan_kernel") == 3.0
    assert _feedback.compile_estimate("relmodel.elastic._allocation_kernel") is None
    # keyed by this machine as well: another machine's time is not this one's
    kept = json.loads(estimates.read_text())
    assert [key.split("|")[0] for key in kept] == ["relmodel._kernels.levels_exact", "relmodel.pipeline._plan_kernel"]


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"%s": "soon"}', '{"%s": -1}', ""])
def test_a_missing_or_corrupt_estimate_file_is_ignored(estimates, content):
    module = "relmodel._kernels.levels_exact"
    estimates.parent.mkdir(parents=True)
    estimates.write_text(content.replace("%s", _feedback._estimate_key(module)) if "%s" in content else content)
    assert _feedback.compile_estimate(module) is None
    _feedback.record_compile_seconds(module, 5.0)  # and written over
    assert _feedback.compile_estimate(module) == 5.0


def test_an_estimate_that_cannot_be_written_is_no_error(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(_feedback, "_estimates_path", lambda: blocker / "relmodel" / "compile-seconds.json")
    _feedback.record_compile_seconds("relmodel._kernels.levels_exact", 5.0)
    assert _feedback.compile_estimate("relmodel._kernels.levels_exact") is None


def _notes_of_a_due_compilation(monkeypatch):
    notes = []
    monkeypatch.setattr(_feedback, "note", notes.append)
    monkeypatch.setattr(_feedback, "_announced", set())
    monkeypatch.setattr(_feedback, "_kernel_names", {})  # what a test calls a module's kernels stays in the test
    monkeypatch.setattr(_feedback, "kernels_cached", lambda module, entry_points=None: False)
    return notes


def test_the_compile_note_gives_this_machines_last_time_or_no_number(terminal, monkeypatch, estimates):
    notes = _notes_of_a_due_compilation(monkeypatch)
    assert _feedback.announce_compile("relmodel._kernels.levels_exact", what="exact kernels")
    assert notes == ["compiling relmodel's exact kernels (first run only; later runs load them from the cache)"]
    _feedback.record_compile_seconds("relmodel._kernels.levels_exact", 27.6)
    monkeypatch.setattr(_feedback, "_announced", set())
    _feedback.announce_compile("relmodel._kernels.levels_exact", what="exact kernels")
    assert notes[-1] == ("compiling relmodel's exact kernels (first run only, ~28 s here last time; "
                         "later runs load them from the cache)")


def test_no_compile_time_is_stated_in_the_code():
    import pathlib
    import re

    package = pathlib.Path(rm.__file__).parent
    stated = [f"{path.name}: {line.strip()}" for path in package.rglob("*.py") for line in path.read_text().splitlines()
              if re.search(r"~\d+ s\b|\d+ to \d+ s on|announce_compile\(.*seconds=", line)]
    assert stated == []


@contextlib.contextmanager
def _a_compilation(module, ticks_seen=None):
    """What Numba tells its listeners while it compiles a kernel of `module` (a compilation's events, without the
    seconds of a real one); with `ticks_seen`, it lasts until that holds."""
    from types import SimpleNamespace

    from numba.core import event

    dispatcher = SimpleNamespace(py_func=SimpleNamespace(__module__=module))
    with event.trigger_event("numba:compile", data={"dispatcher": dispatcher, "args": (), "return_type": None}):
        if ticks_seen is not None:
            _until(ticks_seen, "no ticking line during the compilation")
        yield


def test_a_compilation_ticks_while_it_lasts_and_its_time_is_kept(ticking_terminal, estimates, monkeypatch):
    ticking_terminal.install(monkeypatch)
    monkeypatch.setitem(_feedback._kernel_names, "relmodel._fake_kernels", "fake kernels")
    _feedback.watch_compilations()
    with _a_compilation("relmodel._fake_kernels",
                        lambda: len(ticking_terminal.draws("compiling relmodel's fake kernels:")) >= 3):
        pass
    assert _feedback.compile_estimate("relmodel._fake_kernels") is not None
    drawn = len(ticking_terminal.draws("compiling"))
    with _a_compilation("numpy.somewhere"):  # not relmodel's: neither shown nor kept
        pass
    assert len(ticking_terminal.draws("compiling")) == drawn
    assert _feedback.compile_estimate("numpy.somewhere") is None


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX terminal's line")
def test_a_compilation_line_is_drawn_by_a_process_of_its_own(terminal, capfd, estimates, monkeypatch):
    """Numba holds the GIL for seconds as it compiles: a thread of this process stood still with it."""
    monkeypatch.setattr(_feedback, "TICK_S", 0.01)
    monkeypatch.setitem(_feedback._kernel_names, "relmodel._fake_kernels", "fake kernels")
    _feedback.watch_compilations()
    seen = []
    with _a_compilation("relmodel._fake_kernels"):
        child = _feedback._compiling.line.child
        _until(lambda: seen.append(capfd.readouterr().err) or "".join(seen).count("fake kernels: 00:0") >= 3,
               "the line's process drew nothing")
    assert child.returncode == 0  # ended with the compilation
    seen.append(capfd.readouterr().err)
    drawn = "".join(seen)
    assert drawn.startswith("\rcompiling relmodel's fake kernels: 00:00\x1b[K") and drawn.endswith("\r\x1b[K")
    assert _feedback.compile_estimate("relmodel._fake_kernels") is not None


def test_a_compilation_in_a_background_thread_shows_nothing(ticking_terminal, estimates, monkeypatch):
    ticking_terminal.install(monkeypatch)
    import threading

    _feedback.watch_compilations()

    def compile_():
        with _a_compilation("relmodel._fake_kernels"):
            time.sleep(0.1)  # ten ticks' time: a line would have shown

    worker = threading.Thread(target=compile_)
    worker.start()
    worker.join()
    assert ticking_terminal.draws("compiling") == []
    assert _feedback.compile_estimate("relmodel._fake_kernels") is not None  # still measured


# -- each formerly silent step moves ----------------------------------------------------------------

def _compiling_first(monkeypatch, module, function, terminal):
    """Make the first call of `module.function` a compilation of `module` that lasts until its line ticked."""
    import importlib

    kernels = importlib.import_module(module)
    real, calls = getattr(kernels, function), []

    def compiled_first(*args, **kwargs):
        if not calls:
            calls.append(args)
            ticks = len(terminal.draws("compiling relmodel's"))
            with _a_compilation(module, lambda: len(terminal.draws("compiling relmodel's")) >= ticks + 3):
                pass
        return real(*args, **kwargs)

    monkeypatch.setattr(kernels, function, compiled_first)
    return calls


def test_plan_with_a_persist_time_ticks_while_the_exact_level_kernels_compile(ticking_terminal, estimates,
                                                                             monkeypatch):
    """Its exact form compiled for seconds inside the strategies' bar, which stood still meanwhile."""
    ticking_terminal.install(monkeypatch)
    sc = rm.Scenario(n_gpus=16384, failure_rate=6.5e-3, work="14d", checkpoint_interval="1h", checkpoint_cost="5min",
                     restart_cost="10min", checkpoint_persist="5min")
    quiet = rm.plan_checkpoints(sc, n_jobs=0, progress=False)
    notes = _notes_of_a_due_compilation(monkeypatch)
    calls = _compiling_first(monkeypatch, "relmodel._kernels.levels_exact", "solve_cycles", ticking_terminal)
    shown = rm.plan_checkpoints(sc, n_jobs=0, progress=True)
    assert calls and notes == [
        "compiling relmodel's exact checkpoint-level kernels (first run only; later runs load them from the cache)"]
    seen = ticking_terminal.buffer.getvalue()
    first_tick = seen.index("compiling relmodel's exact checkpoint-level kernels: 00:")
    assert seen.index("checkpoint strategies") < first_tick < seen.rindex("checkpoint strategies")
    assert shown == quiet  # the same numbers


def test_the_pipeline_ticks_while_recycles_planner_compiles(ticking_terminal, estimates, monkeypatch):
    """The table's bar stood still at "recycle, 1 down" while the planner compiled."""
    ticking_terminal.install(monkeypatch)
    import relmodel.pipeline as pl

    cfg = pl.PipelineConfig(4, 4, 8)
    quiet = pl.throughput_table(cfg, [0, 1], ["recycle"])
    notes = _notes_of_a_due_compilation(monkeypatch)
    calls = _compiling_first(monkeypatch, "relmodel.pipeline._plan_kernel", "search_states", ticking_terminal)
    from relmodel.pipeline import _runs

    _runs.clear_period_cache()
    shown = pl.throughput_table(cfg, [0, 1], ["recycle"], progress=True)
    assert calls and "compiling relmodel's ReCycle planner (first run only; later runs load them from the cache)" \
        in notes
    seen = ticking_terminal.buffer.getvalue()
    assert seen.index("strategies") < seen.index("compiling relmodel's ReCycle planner: 00:")
    assert quiet.period.equals(shown.period) and quiet.fraction_of_ideal.equals(shown.fraction_of_ideal)


def test_recycle_check_shows_a_bar_on_a_terminal_only(terminal, monkeypatch):
    import io

    import relmodel.pipeline as pl

    grid = dict(stages=(2,), replicas=(2, 4), microbatches=(4,), n_failures=(1, 2))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    shown = pl.recycle_check(**grid)
    assert "ReCycle check:" in out.getvalue() and "0.00/8.00" in out.getvalue()  # a point of the grid a step
    monkeypatch.setattr(_feedback, "stderr_is_terminal", lambda: False)
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stderr", piped)
    quiet = pl.recycle_check(**grid)
    assert piped.getvalue() == ""
    assert quiet.drop_vars("planning_time").identical(shown.drop_vars("planning_time"))


def test_sweep_ticks_while_it_opens_and_finishes_its_store(terminal, tmp_path):
    import pathlib

    study = pathlib.Path(__file__).parents[1] / "docs" / "user-guide" / "study.toml"
    result = invoke("sweep", str(study), "--out", str(tmp_path / "study.zarr"))
    assert result.exit_code == 0, result.output
    assert "sweep: opening study.zarr: 00:" in result.stderr and "sweep: finishing study.zarr: 00:" in result.stderr
    assert result.stderr.index("sweep: opening") < result.stderr.index("sweep:  ") \
        < result.stderr.index("sweep: finishing")
    again = invoke("sweep", str(study), "--out", str(tmp_path / "again.zarr"), "--quiet")
    assert again.exit_code == 0 and again.stderr == ""


@pytest.mark.parametrize("args", [
    ["pipeline", "--stages", "2", "--replicas", "2", "--microbatches", "4", "--failures", "0,1"],
    ["fit", "--example"],
    ["cluster", "--gpus", "16", "--duration", "2h"],
    ["run", "show", "--example"],
    ["run", "predict", "--example", "--runs", "200"],
    ["compare", "--gpus", "1024,4096", "--n-jobs", "1000"],
], ids=lambda args: " ".join(args[:2]))
def test_every_figure_ticks_while_it_is_drawn(terminal, tmp_path, args):
    png = tmp_path / "figure.png"
    result = invoke(*args, "--plot", str(png))
    assert result.exit_code == 0, result.output
    assert f"drawing {png}: 00:" in result.stderr and png.stat().st_size > 0


_SC = rm.Scenario(n_gpus=1024, failure_rate=6.5e-3, checkpoint_interval="1h", work="2d")
_PIPELINE = rm.pipeline.PipelineConfig(stages=2, replicas=2, microbatches=4)
# Every long Python call shows its bar by default where stderr is a terminal: (call, its bar's label, a summary).
PYTHON_CALLS = {
    "plan": (lambda: rm.plan(_SC, n_jobs=2000), "check simulation:", lambda p: p.to_dict()),
    "simulate": (lambda: rm.simulate(_SC, n_jobs=2000), "simulate:", lambda ds: float(ds.ettr)),
    "plan_checkpoints": (lambda: rm.plan_checkpoints(_SC.sweep(checkpoint_persist="5min"), n_jobs=1000),
                         "checkpoint strategies:", lambda p: p.to_dict()),
    "pipeline.simulate_runs": (lambda: rm.pipeline.simulate_runs(_PIPELINE, n_runs=50), "runs:",
                               lambda ds: ds.fraction_of_ideal.values.tolist()),
}


@pytest.mark.parametrize("name", PYTHON_CALLS)
def test_python_calls_show_their_bar_on_a_terminal_only(terminal, monkeypatch, name):
    import io

    call, label, summary = PYTHON_CALLS[name]
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    shown = summary(call())
    assert label in out.getvalue()
    monkeypatch.setattr(_feedback, "stderr_is_terminal", lambda: False)
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stderr", piped)
    assert summary(call()) == shown and piped.getvalue() == ""
