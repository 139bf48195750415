"""relmodel against the alternatives and against the limit (`relmodel bench`,
`python -m benches`).

For three reference scenarios (6.5e-3 failures per node-day, 8 GPUs per node,
checkpoints every 1 h costing 5 min, 10 min restarts, exponential failures, no
queue): small = 8 GPUs x 7 days, medium = 1024 GPUs x 7 days, large = 16,384
GPUs x 14 days.

* relmodel: Numba on 1 thread and on all threads, and Cython (serial), timed
  through the public `simulate` (packing, kernel, summaries and labels), best
  of 3 after a warm-up call, so JIT compilation is excluded;
* the same model as a user would write it: the strongest NumPy form we know
  (`relmodel._bench.peers.numpy_timelines`: ziggurat exponentials on PCG64, a
  job-level fast path, state for running jobs only, whole intervals skipped per
  failure, failed restarts redrawn for those jobs alone), run in its fastest
  chunking of those in NUMPY_CHUNKS, best of 3; and a SimPy discrete-event model;
  then Numba on 1 thread and on all, and the NumPy peer, alternate
  INTERLEAVED_ROUNDS more times and each keeps its best, so the ratios the
  goals read compare them on the same machine state;
* the limit: a floor of the kernel's own generator (the Philox4x32-10 calls a
  job's draws need and the ziggurat's first step on each word, SIMD across
  jobs, nothing else; `rng_numba.exponential_generator_limit`) for as many
  exponentials per job as the kernel draws, on 1 thread and on all threads;
  from it, the ceiling: the best ratio to the NumPy peer that any kernel on
  this stream could reach.

Every implementation must agree with the renewal form's ETTR within 4 of its
own standard errors, and the Cython run must be bit-identical to the Numba
run, before any speed is printed. Then: jobs/s, failure events/s, the Numba
kernel's ratio to each peer per thread count, its thread scaling, its fraction
of the generator's floor and the ceiling that floor puts on the ratio, peak
traced memory, and the time to a first result in a fresh process (cold and
warm cache), with PASS/MISS against the goals (information, never an exit
code). `--figures DIR` draws throughput against
threads and the cost per job against failures per job (0.01 to 1000).
`--quick` takes about a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from .._version import __version__
from .._closed_form import ettr as closed_form_ettr
from .._feedback import ticking
from .._kernels import backend as get_backend
from .._scenario import Scenario

COMMON = dict(failure_rate=6.5e-3, gpus_per_node=8, checkpoint_interval="1h", checkpoint_cost="5min",
              restart_cost="10min")
# name: (fields, jobs for relmodel, for the NumPy peer, for the SimPy peer); --quick
# takes a tenth, but never fewer relmodel jobs than MIN_JOBS.
SCENARIOS = {
    "small": (dict(COMMON, n_gpus=8, work="7d"), 25_000_000, 2_000_000, 2_000),
    "medium": (dict(COMMON, n_gpus=1024, work="7d"), 10_000_000, 500_000, 300),
    "large": (dict(COMMON, n_gpus=16384, work="14d"), 300_000, 20_000, 20),
}
MIN_JOBS = {"small": 2_000_000, "medium": 1_000_000, "large": 40_000}
NUMPY_CHUNKS = (10_000, 30_000, 100_000, 300_000, 1_000_000)  # and the whole run in one call
SEED, REPEATS = 0, 3
INTERLEAVED_ROUNDS = 3  # then Numba on one thread and the NumPy peer alternate (`interleaved_rounds`)
# Checkpoint levels on the large scenario (jobs per run): one blocking level (the
# kernels' plain path), one asynchronous level, and an in-memory level below it.
FAST_LEVEL = dict(interval="10min", cost="5s", restart="3min", persist="30s", survives=0.85)
LEVEL_RUNS = {"one level, blocking": {}, "one level, asynchronous": dict(checkpoint_persist="5min"),
              "two levels": dict(checkpoint_persist="5min", fast_checkpoints=(FAST_LEVEL,))}
LEVEL_JOBS = 100_000


def best_of(call, repeats=REPEATS, warm_up=True):
    """Time a call: the best of `repeats` calls after one warm-up call.

    Parameters
    ----------
    call : callable
        Called with no arguments.
    repeats : int, default REPEATS
        Timed calls.
    warm_up : bool, default True
        Make the untimed warm-up call (False where the caller has warmed it up).

    Returns
    -------
    seconds : float
        The best time.
    result : object
        The last call's result.
    """
    if warm_up:
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return min(times), result


def peak_memory_mb(call) -> float:
    """Return the peak Python memory a call allocates, by tracemalloc.

    Parameters
    ----------
    call : callable
        Called once with no arguments.

    Returns
    -------
    float
        Peak traced memory in MiB.
    """
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def ratio_estimate(productive, wall):
    """Return total productive / total wall and its delta-method standard error.

    Parameters
    ----------
    productive : numpy.ndarray
        Productive time per job.
    wall : numpy.ndarray
        Wall time per job.

    Returns
    -------
    ettr : float
        The ratio of totals.
    se : float
        Its standard error.
    """
    n = len(wall)
    r = productive.sum() / wall.sum()
    resid = productive - r * wall
    return float(r), float(np.sqrt(resid.var(ddof=1) / n) / wall.mean())


def measure_relmodel(sc, n_jobs, backend, threads):
    """Time relmodel on a scenario through the public `simulate`, best of REPEATS.

    Parameters
    ----------
    sc : Scenario
        A scalar scenario.
    n_jobs : int
        Jobs simulated.
    backend : {"numba", "cython"}
        The kernel.
    threads : int or None
        Threads for the Numba kernel (None: all).

    Returns
    -------
    dict
        Seconds, jobs, failure events, jobs that failed at all, ETTR and its
        standard error.
    """
    from .. import _engine as engine
    from .._kernels.layout import N_BINS, S_FAILURES
    from .._simulate import simulate

    # The failure counts from the kernel's own sums: an untimed call, which is also the warm-up.
    totals = engine.run(engine.pack(sc), n_jobs, SEED, backend, n_threads=threads)
    seconds, ds = best_of(lambda: simulate(sc, n_jobs=n_jobs, seed=SEED, backend=backend, n_threads=threads),
                          warm_up=False)
    return dict(seconds=seconds, n_jobs=n_jobs, events=float(totals.stats[:, S_FAILURES].sum()),
                jobs_failing=float(n_jobs - totals.hist[:, N_BINS].sum()),
                ettr=float(ds["ettr"]), ettr_se=float(ds["ettr_se"]),
                peak_mb=peak_memory_mb(lambda: simulate(sc, n_jobs=min(n_jobs, 1_000_000), seed=SEED,
                                                        backend=backend, n_threads=threads)))


def chunked(peer, chunk: int):
    """The peer run in chunks of `chunk` jobs, chunk k seeded with (seed, k).

    Parameters
    ----------
    peer : callable
        As in `measure_peer`.
    chunk : int
        Jobs per call.

    Returns
    -------
    callable
        With the peer's signature; the chunks' arrays concatenated.
    """
    def run(sc, n_jobs, seed):
        parts = [peer(sc, min(chunk, n_jobs - start), [seed, k]) for k, start in enumerate(range(0, n_jobs, chunk))]
        return tuple(np.concatenate(arrays) for arrays in zip(*parts))
    return run


def measure_peer_chunked(peer, sc, n_jobs):
    """Time a peer in each chunking of NUMPY_CHUNKS (and in one call), keep the fastest.

    Parameters
    ----------
    peer, sc, n_jobs
        As in `measure_peer`.

    Returns
    -------
    dict
        `measure_peer`'s figures for the fastest chunking, with ``chunk`` (jobs
        per call) and ``chunk_seconds`` (every chunking tried).
    """
    tried = {}
    for chunk in sorted({c for c in NUMPY_CHUNKS if c < n_jobs} | {n_jobs}):
        tried[chunk] = measure_peer(chunked(peer, chunk), sc, n_jobs)
    best = min(tried, key=lambda c: tried[c]["seconds"])
    return dict(tried[best], chunk=best, chunk_seconds={str(c): r["seconds"] for c, r in tried.items()})


def interleaved_rounds(runs: dict, sc, numpy_peer, rounds: int = INTERLEAVED_ROUNDS):
    """Time Numba on one thread and on all, and the NumPy peer (in its fastest
    chunking), in alternation, `rounds` more times each, and keep each one's
    best: the ratios the goals read then compare them on the same machine
    state (on a virtual machine the speed drifts by tens of per cent within minutes).

    Parameters
    ----------
    runs : dict
        A scenario's measurements (`measure_relmodel`, `measure_peer_chunked`);
        the ``"numba"``, ``"numba-1-thread"`` and ``"numpy"`` entries' seconds are updated.
    sc : Scenario
        The scenario.
    numpy_peer : callable
        The NumPy peer, as `measure_peer` takes it.
    rounds : int, default INTERLEAVED_ROUNDS
        Alternations.
    """
    from .._simulate import simulate

    mine, peer = runs["numba-1-thread"], runs["numpy"]
    calls = {"numba-1-thread": lambda: simulate(sc, n_jobs=mine["n_jobs"], seed=SEED, backend="numba", n_threads=1),
             "numpy": lambda: chunked(numpy_peer, peer["chunk"])(sc, peer["n_jobs"], SEED)}
    if "numba" in runs:
        calls["numba"] = lambda: simulate(sc, n_jobs=runs["numba"]["n_jobs"], seed=SEED, backend="numba")
    for _ in range(rounds):
        for label, call in calls.items():
            seconds, _ = best_of(call, repeats=1, warm_up=False)
            runs[label]["seconds"] = min(runs[label]["seconds"], seconds)
    for label in calls:
        runs[label]["interleaved_rounds"] = rounds


def measure_peer(peer, sc, n_jobs):
    """Time a peer implementation (`relmodel._bench.peers`) on a scenario, best of REPEATS.

    Parameters
    ----------
    peer : callable
        ``peer(sc, n_jobs, seed) -> (productive, wall, failures)``.
    sc : Scenario
        A scalar scenario.
    n_jobs : int
        Jobs simulated.

    Returns
    -------
    dict
        Seconds, jobs, failure events, ETTR and its standard error.
    """
    seconds, (productive, wall, failures) = best_of(lambda: peer(sc, n_jobs, SEED), repeats=REPEATS)
    ettr, se = ratio_estimate(productive, wall)
    return dict(seconds=seconds, n_jobs=n_jobs, events=float(failures.sum()), jobs_failing=float((failures > 0).sum()),
                ettr=ettr, ettr_se=se,
                peak_mb=peak_memory_mb(lambda: peer(sc, min(n_jobs, 200_000), SEED)))


def measure_limit(n_jobs, draws_per_job, threads):
    """Time the floor of the kernel's generator (`rng_numba.exponential_generator_limit`):
    the Philox calls and ziggurat steps of `draws_per_job` exponentials per job, each
    candidate looked at once (an integer count), nothing else.

    Parameters
    ----------
    n_jobs : int
        Jobs.
    draws_per_job : int
        Exponential variates per job.
    threads : int or None
        Numba threads (None: all).

    Returns
    -------
    dict
        Seconds, draws per job and draws per second.
    """
    from .. import _engine as engine
    from .._kernels.layout import BLOCK_SIZE
    from .._kernels.rng_numba import exponential_generator_limit

    with engine.numba_threads(threads):
        seconds, _ = best_of(lambda: exponential_generator_limit(SEED, 0, n_jobs, draws_per_job, BLOCK_SIZE))
    return dict(seconds=seconds, draws_per_job=draws_per_job, draws_per_s=n_jobs * draws_per_job / seconds)


FIRST_RESULT = """import time
start = time.perf_counter()
import relmodel
relmodel.simulate(relmodel.Scenario(**{fields!r}), n_jobs=1000, seed=0, backend={backend!r})
print(time.perf_counter() - start)
"""


def step(desc: str):
    """A ticking line saying what the bench measures, on a terminal, while it does (`relmodel._feedback.ticking`).

    Parameters
    ----------
    desc : str
        The measurement.

    Returns
    -------
    contextlib.AbstractContextManager
    """
    return ticking(f"bench: {desc}")


def first_result_seconds(backend) -> dict:
    """Time ``import relmodel`` to a first result in fresh processes: cold, then warm cache.

    Parameters
    ----------
    backend : {"numba", "cython"}
        The kernel.

    Returns
    -------
    dict
        ``cold_s`` and ``warm_s``.
    """
    code = FIRST_RESULT.format(fields=SCENARIOS["small"][0], backend=backend)
    with tempfile.TemporaryDirectory(prefix="relmodel-bench-cache-") as cache, step(
            f"a first result with {backend} in a fresh process, on a cold then a warm cache"):
        cold, warm = (float(fresh_python(code, cache, NUMBA_CACHE_DIR=cache).stdout.split()[-1]) for _ in range(2))
    return dict(cold_s=cold, warm_s=warm)


def fresh_python(code: str, folder, **env) -> subprocess.CompletedProcess:
    """Run `code` in a new Python process that imports this relmodel, whatever the current folder holds: it
    starts in `folder`, with this package's parent first on its path and not the folder (PYTHONSAFEPATH); `env`
    is added to its environment.

    Parameters
    ----------
    code : str
        The program (``python -c``).
    folder : str or pathlib.Path
        Its working folder.
    **env : str
        Environment variables to set.

    Returns
    -------
    subprocess.CompletedProcess
        Its output, as text; `subprocess.CalledProcessError` where it fails.
    """
    parent = str(Path(__file__).resolve().parents[2])  # the folder that holds this relmodel
    path = os.pathsep.join(p for p in (parent, os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-c", code], cwd=folder, check=True, capture_output=True, text=True,
                          env={**os.environ, **env, "PYTHONPATH": path, "PYTHONSAFEPATH": "1"})


def machine() -> dict:
    """Describe the machine: platform, CPU, Python and library versions, threads.

    Returns
    -------
    dict
        The description, for the report.
    """
    import numba

    model = ""
    if os.path.exists("/proc/cpuinfo"):
        model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                      if line.startswith("model name")), "")
    return dict(platform=platform.platform(), cpu=model or platform.processor(), python=platform.python_version(),
                relmodel=__version__, numba=numba.__version__, numpy=np.__version__, cpu_count=os.cpu_count(),
                numba_threads=numba.config.NUMBA_NUM_THREADS, load_avg_start=os.getloadavg()[0])


def check_agreement(results: dict, renewal: dict):
    """Check every implementation against the renewal form, and Cython against Numba.

    Parameters
    ----------
    results : dict
        The measurements by scenario and implementation (``ettr``, ``ettr_se``).
    renewal : dict
        The renewal form's ETTR by scenario.

    Raises
    ------
    SystemExit
        If any implementation is more than 4 of its standard errors from the
        renewal form, or the Cython run is not bit-identical to the Numba run:
        no speed is printed.
    """
    problems = []
    for scenario, runs in results.items():
        expected = renewal[scenario]
        for name, r in runs.items():
            if name == "cython" and (r["ettr"], r["ettr_se"]) != (runs["numba"]["ettr"], runs["numba"]["ettr_se"]):
                problems.append(f"{scenario}: cython ETTR {r['ettr']!r} is not bit-identical to numba "
                                f"{runs['numba']['ettr']!r}")
            off = abs(r["ettr"] - expected)
            if not off <= 4.0 * r["ettr_se"]:  # NaN fails too
                z = off / r["ettr_se"] if r["ettr_se"] > 0 else np.inf
                problems.append(f"{scenario}: {name} ETTR {r['ettr']:.6f} vs the renewal form {expected:.6f} "
                                f"({z:.1f} standard errors of {r['ettr_se']:.1e})")
    if problems:
        raise SystemExit("implementations disagree; no speed is reported:\n  " + "\n  ".join(problems))


def scaling_figures(directory, quick: bool) -> dict:
    """Draw throughput against thread count, and cost per job against failures per job.

    Parameters
    ----------
    directory : str or pathlib.Path
        Folder the figures are written into.
    quick : bool
        Fewer jobs and points.

    Returns
    -------
    dict
        The measured points behind the figures.
    """
    import numba
    from matplotlib.figure import Figure

    from .. import _engine as engine
    from .._kernels.layout import S_FAILURES
    from .._closed_form import feasible_interval, optimal_interval

    data = {"threads": {}, "failures": []}
    threads = list(range(1, numba.config.NUMBA_NUM_THREADS + 1))
    for name, (fields, n_jobs, _, _) in SCENARIOS.items():
        n = n_jobs // (20 if quick else 5)
        packed = engine.pack(Scenario(**fields))
        data["threads"][name] = [n / best_of(lambda: engine.run(packed, n, SEED, n_threads=t), 1)[0]
                                 for t in threads]
    for rate in np.geomspace(1e-5, 1.0, 9 if quick else 13):
        sc = Scenario(**dict(COMMON, n_gpus=1024, work="7d", failure_rate=rate))
        sc = sc.sweep(checkpoint_interval=feasible_interval(optimal_interval(sc, "exact"), sc.work))
        packed = engine.pack(sc)
        n = 20_000
        seconds, totals = best_of(lambda: engine.run(packed, n, SEED), 1)
        while seconds < (0.1 if quick else 0.4) and n < 50_000_000:  # long enough to time
            n *= 4
            seconds, totals = best_of(lambda: engine.run(packed, n, SEED), 1)
        failures = totals.stats[0, S_FAILURES] / n
        data["failures"].append(dict(failure_rate=float(rate), failures_per_job=float(failures),
                                     ns_per_job=seconds / n * 1e9))
    fig = Figure(figsize=(11, 4), layout="constrained")
    left, right = fig.subplots(1, 2)
    for name, rates in data["threads"].items():
        left.plot(threads, np.array(rates) / rates[0], "o-", label=f"{name} ({rates[0]:.3g} jobs/s on 1)")
    left.plot(threads, threads, "k:", label="linear")
    left.set(xlabel="Numba threads", ylabel="speed-up over 1 thread", title="throughput against threads",
             xticks=threads)
    left.legend(fontsize=8)
    f = data["failures"]
    x = [p["failures_per_job"] for p in f]
    right.loglog(x, [p["ns_per_job"] for p in f], "o-", label="ns per job")
    right.loglog(x, [p["ns_per_job"] / max(p["failures_per_job"], 1e-300) for p in f], "s--", label="ns per failure")
    right.set(xlabel="failures per job", ylabel="ns (all threads)", title="cost against failures per job (1024 GPUs)")
    right.legend(fontsize=8)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "bench_scaling.png")
    from .._store import save_figure

    save_figure(fig, path, parameter="figures")
    data["figure"] = path
    return data


def kernel_draws(run: dict) -> float:
    """Return the exponential draws a kernel run made: every job's first failure
    time (a settled job's too: its word 0 is drawn to settle it) and one restart
    draw per failure.

    Parameters
    ----------
    run : dict
        A measurement of `measure_relmodel` (``n_jobs``, ``events``).

    Returns
    -------
    float
        Draws (ziggurat rejections, 2.2% of draws, not counted).
    """
    return run["events"] + run["n_jobs"]


def measure_levels(quick: bool) -> dict:
    """Speed of the kernels with checkpoint levels on the large scenario, 1 thread.

    Each run must agree with the exact closed form within 4 of its standard
    errors, and Cython with Numba bit for bit, before any speed is kept.

    Parameters
    ----------
    quick : bool
        A tenth of the jobs.

    Returns
    -------
    dict
        By run: the `measure_relmodel` figures, ``exact`` ETTR and ``jobs_per_s``.
    """
    from .._closed_form import levels_point_ettr

    n_jobs = LEVEL_JOBS // (10 if quick else 1)
    out = {}
    for label, extra in LEVEL_RUNS.items():
        sc = Scenario(**SCENARIOS["large"][0], **extra)
        with step(f"checkpoint levels, {label}"):
            exact = levels_point_ettr(sc, "renewal")[0] if sc.has_levels else closed_form_ettr(sc, "renewal")
            numba_run = measure_relmodel(sc, n_jobs, "numba", 1)
            cython_run = measure_relmodel(sc, n_jobs // 10, "cython", None)
            check = measure_relmodel(sc, n_jobs // 10, "numba", 1)
        if (cython_run["ettr"], cython_run["ettr_se"]) != (check["ettr"], check["ettr_se"]):
            raise SystemExit(f"checkpoint levels, {label}: cython {cython_run['ettr']!r} is not numba's "
                             f"{check['ettr']!r} bit for bit; no speed is reported")
        z = (numba_run["ettr"] - exact) / numba_run["ettr_se"]
        if not abs(z) < 4:
            raise SystemExit(f"checkpoint levels, {label}: simulated ETTR {numba_run['ettr']:.6f} is {z:.1f} "
                             f"standard errors from the exact {exact:.6f}; no speed is reported")
        out[label] = dict(numba_run, exact=float(exact), jobs_per_s=n_jobs / numba_run["seconds"],
                          events_per_s=numba_run["events"] / numba_run["seconds"])
    return out


def run_benchmark(quick: bool = False, json_path=None, figures=None) -> dict:
    """Run the benchmark and print its table.

    Parameters
    ----------
    quick : bool, default False
        A tenth of the jobs.
    json_path : str or pathlib.Path, optional
        Also write the report as JSON here (a JSON file there is replaced;
        anything else is refused before any measuring).
    figures : str or pathlib.Path, optional
        Also draw the scaling figures into this folder.

    Returns
    -------
    dict
        The report.
    """
    import numba

    from .._extras import require
    from .._store import judge_output

    if json_path:  # refused before the minutes of measuring, not after
        judge_output(json_path, "json", parameter="json_path")
    get_backend("cython")  # the bench compares both kernels: one not built is refused before it starts
    require("simpy", "relmodel bench (its SimPy peer)")  # likewise the peer it measures last
    info = machine()
    print(f"{info['cpu']} | {info['platform']} | python {info['python']} | numba {info['numba']} | "
          f"cpus {info['cpu_count']} | Numba threads {info['numba_threads']} | load {info['load_avg_start']:.2f}")
    all_threads = numba.config.NUMBA_NUM_THREADS
    results, limits, renewal = measure_scenarios(quick)
    check_agreement(results, renewal)
    print_results(results, renewal)
    ratios = print_ratios(results, all_threads)
    print("\nthe NumPy peer's chunking (jobs per call, fastest kept): "
          + ", ".join(f"{n} {runs['numpy']['chunk']:,}" for n, runs in results.items()))
    print_limits(results, limits)
    levels = measure_levels(quick)
    level_ratios = print_levels(levels)

    print("\ntime to a first result in a fresh process (import relmodel, simulate 1000 jobs)")
    first = {b: first_result_seconds(b) for b in ("numba", "cython")}
    for b, t in first.items():
        print(f"  {b:7} cold cache (compiles) {t['cold_s']:6.2f} s   warm cache {t['warm_s']:5.2f} s")

    goal_rows = print_goals(results, ratios, limits, level_ratios, first, all_threads)
    report = dict(machine=info, quick=quick, scenarios={k: v[0] for k, v in SCENARIOS.items()}, renewal=renewal,
                  results=results, ratios=ratios, limit=limits, first_result=first, goals=goal_rows,
                  levels=dict(results=levels, ratios=level_ratios))
    if figures:
        with step("the scaling figures"):
            report["scaling"] = scaling_figures(figures, quick)
        print(f"\nwrote {report['scaling']['figure']}")
    report["machine"]["load_avg_end"] = os.getloadavg()[0]
    print(f"load average at the end {report['machine']['load_avg_end']:.2f} (above the thread count means "
          "other work shared the cores and the figures are low)")
    if json_path:
        from .._store import write_json_file

        write_json_file(json.dumps(report, indent=2), json_path, parameter="json_path")
        print(f"wrote {json_path}")
    return report


def measure_scenarios(quick: bool) -> tuple[dict, dict, dict]:
    """Measure every implementation and the generator's floor on each scenario of SCENARIOS.

    Parameters
    ----------
    quick : bool
        A tenth of the jobs (but never fewer relmodel jobs than MIN_JOBS).

    Returns
    -------
    results : dict
        By scenario and implementation, the `measure_relmodel` or `measure_peer` figures.
    limits : dict
        By scenario and thread count (``"1"``, ``"all"``), the `measure_limit` figures.
    renewal : dict
        The renewal form's ETTR by scenario.
    """
    from .peers import numpy_timelines, simpy_timelines

    scale = 10 if quick else 1
    results, limits, renewal = {}, {}, {}
    for name, (fields, n_rel, n_numpy, n_simpy) in SCENARIOS.items():
        sc = Scenario(**fields)
        renewal[name] = float(closed_form_ettr(sc, "renewal"))
        n_jobs = max(n_rel // scale, MIN_JOBS[name])
        measures = {
            "numba": lambda: measure_relmodel(sc, n_jobs, "numba", None),
            "numba-1-thread": lambda: measure_relmodel(sc, n_jobs, "numba", 1),
            "cython": lambda: measure_relmodel(sc, n_jobs, "cython", None),
            "numpy": lambda: measure_peer_chunked(numpy_timelines, sc,
                                                  max(n_numpy // scale, min(n_numpy, 20_000))),
            "simpy": lambda: measure_peer(simpy_timelines, sc, max(10, n_simpy // scale)),
        }
        runs = {}
        for label, measure in measures.items():
            with step(f"{name} scenario, {label}"):
                runs[label] = measure()
        with step(f"{name} scenario, Numba and the NumPy peer in alternation"):
            interleaved_rounds(runs, sc, numpy_timelines)
        results[name] = runs
        ref = runs["numba"]
        per_job = max(1, round(kernel_draws(ref) / ref["n_jobs"]))
        with step(f"{name} scenario, the generator's floor"):
            limits[name] = {"1": measure_limit(ref["n_jobs"], per_job, 1),
                            "all": measure_limit(ref["n_jobs"], per_job, None)}
    return results, limits, renewal


def print_results(results: dict, renewal: dict) -> None:
    """Print each implementation's ETTR, jobs/s, events/s and peak memory; add the rates to `results`."""
    print("\nevery implementation agrees with the renewal form's ETTR within 4 of its standard errors; "
          "cython bit for bit with numba\n")
    print(f"{'scenario':8} {'implementation':15} {'n_jobs':>11} {'ETTR':>9} {'renewal':>9} {'jobs/s':>10} "
          f"{'events/s':>10} {'peak MB':>8}")
    for name, runs in results.items():
        for impl, r in runs.items():
            r["jobs_per_s"] = r["n_jobs"] / r["seconds"]
            r["events_per_s"] = r["events"] / r["seconds"]
            print(f"{name:8} {impl:15} {r['n_jobs']:>11,} {r['ettr']:9.5f} {renewal[name]:9.5f} "
                  f"{r['jobs_per_s']:>10.3g} {r['events_per_s']:>10.3g} {r['peak_mb']:>8.1f}")


def print_ratios(results: dict, all_threads: int) -> dict:
    """Print and return, per scenario, Numba's jobs/s over each peer's, and over itself on 1 thread."""
    ratios = {}
    print(f"\n{'numba jobs/s ratio':26} " + " ".join(f"{n:>8}" for n in results))
    rows = [("numba 1 thread / numpy", "numba-1-thread", "numpy"),
            (f"numba {all_threads} threads / numpy", "numba", "numpy"),
            ("numba 1 thread / simpy", "numba-1-thread", "simpy"),
            ("numba 1 thread / cython", "numba-1-thread", "cython"),
            (f"numba {all_threads} threads / 1 thread", "numba", "numba-1-thread")]
    for label, mine, other in rows:
        values = {n: runs[mine]["jobs_per_s"] / runs[other]["jobs_per_s"] for n, runs in results.items()}
        ratios[label] = values
        print(f"{label:26} " + " ".join(f"{v:>8.3g}" for v in values.values()))
    return ratios


def print_limits(results: dict, limits: dict) -> None:
    """Print the Numba kernel against the generator's floor; add its fraction and ceiling to `limits`."""
    print(f"\n{'limit: the generator floor':26} {'draws/job':>9} {'threads':>7} {'draws/s':>10} {'kernel draws/s':>14} "
          f"{'fraction':>8} {'ceiling vs numpy':>16}")
    for name, by_threads in limits.items():
        for threads, lim in by_threads.items():
            kernel = results[name]["numba-1-thread" if threads == "1" else "numba"]
            lim["kernel_draws_per_s"] = kernel_draws(kernel) / kernel["seconds"]
            lim["fraction"] = lim["kernel_draws_per_s"] / lim["draws_per_s"]
            # The best jobs/s a kernel on this stream could reach, over the NumPy peer's.
            lim["ceiling_vs_numpy"] = (lim["draws_per_s"] / lim["draws_per_job"]) / results[name]["numpy"]["jobs_per_s"]
            print(f"{name:26} {lim['draws_per_job']:>9} {threads:>7} {lim['draws_per_s']:>10.3g} "
                  f"{lim['kernel_draws_per_s']:>14.3g} {lim['fraction']:>8.3f} {lim['ceiling_vs_numpy']:>15.2f}x")


def print_levels(levels: dict) -> dict:
    """Print the checkpoint-level runs; return each one-level run's speed over the two-level run's."""
    print(f"\n{'checkpoint levels (large, 1 thread)':36} {'ETTR':>9} {'exact':>9} {'jobs/s':>10} {'events/s':>10}")
    for label, r in levels.items():
        print(f"{label:36} {r['ettr']:9.5f} {r['exact']:9.5f} {r['jobs_per_s']:>10.3g} {r['events_per_s']:>10.3g}")
    two = levels["two levels"]["jobs_per_s"]
    level_ratios = {f"{label} / two levels": r["jobs_per_s"] / two for label, r in levels.items()
                    if label != "two levels"}
    for label, value in level_ratios.items():
        print(f"  {label:34} {value:.3g}x the speed")
    return level_ratios


def print_goals(results, ratios, limits, level_ratios, first, all_threads) -> list[dict]:
    """Print PASS or MISS for each goal (information, not an exit code); return them as report rows."""
    # (goal, measured, target, passed)
    goals = [(f"numba 1 thread >= 3x the NumPy peer ({n})", ratios["numba 1 thread / numpy"][n], 3.0) for n in results]
    if all_threads >= 2:
        goals += [(f"numba {all_threads} threads >= 1.8x 1 thread ({n})",
                   ratios[f"numba {all_threads} threads / 1 thread"][n], 1.8) for n in results]
    # Whether the generator's floor leaves room for 3x at all, on this machine.
    goals += [(f"generator floor allows 3x the NumPy peer ({n})", limits[n]["1"]["ceiling_vs_numpy"], 3.0)
              for n in results]
    goals += [
        ("numba >= 0.8 of the generator floor (large, 1 thread)", limits["large"]["1"]["fraction"], 0.8),
        ("numba >= 1000x the SimPy model (medium, 1 thread)", ratios["numba 1 thread / simpy"]["medium"], 1000.0),
    ]
    goals = [(label, value, target, bool(value >= target)) for label, value, target in goals]
    slowdown = level_ratios["one level, blocking / two levels"]
    goals.append(("two levels at most 1.5x slower than one (large)", slowdown, 1.5, slowdown <= 1.5))
    goals.append(("numba warm-cache first result < 1 s", first["numba"]["warm_s"], 1.0, first["numba"]["warm_s"] < 1.0))
    print("\ngoals (information, not an exit code)")
    goal_rows = []
    for label, value, target, ok in goals:
        goal_rows.append(dict(goal=label, value=value, target=target, passed=ok))
        print(f"  {'PASS' if ok else 'MISS'}  {label:52} measured {value:.3g}")
    return goal_rows


def benchmark_main(argv=None):
    """Run the benchmark from the command line (``python -m benches``).

    Parameters
    ----------
    argv : list of str, optional
        Arguments; ``sys.argv[1:]`` when None.
    """
    parser = argparse.ArgumentParser(prog="python -m benches", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the jobs; under two minutes")
    parser.add_argument("--json", metavar="PATH", help="also write every figure, with machine information")
    parser.add_argument("--figures", metavar="DIR", help="draw the scaling figures into DIR")
    args = parser.parse_args(argv)
    run_benchmark(args.quick, args.json, args.figures)
