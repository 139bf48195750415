"""The model beside a run's record: records with known truth, prediction, and replay under another plan.

`simulate_run` walks one run of a scenario (random failures) and returns its
record with the true components; `predict_run` sets the scenario a record
implies beside it (renewal form, the simulated distribution of one run's ETTR
and where the run falls in it, and the gap to an assumed plan input by input);
`replay_run` keeps the run's failures and replays them under another plan.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import xarray as xr

from .._version import __version__
from .._closed_form import ettr as closed_form_ettr
from .._engine import DEFAULT_MAX_FAILURES, certainly_capped, pack
from .._errors import ParameterError
from .._checks import check_integer
from .._level_pattern import split_work
from .._scenario import DEFAULT_GPUS_PER_NODE, Scenario, as_checkpoint_levels, as_scenario
from .._simulate import simulate
from .._units import format_hours, to_hours
from ._events import NS_PER_H, RecordSummary, RunRecord, EventRow, events_dataset, parse_instant
from ._measure import MEASURED_COMPONENTS, measure_run, timeline
from ._measure import measure_timeline
from ._timeline import (MAX_WALK_POSITIONS, CheckpointSchedule, Level, Walk, exponential_failures, hours_to_ns,
                        walk)

PLAN_INPUTS = ("failure_rate", "checkpoint_interval", "checkpoint_cost", "restart_cost", "queue_wait")
MAX_RUNS = 10**7
MAX_HOURS = 1e6  # a replayed plan's durations: past a century is a unit slip (and past int64 nanoseconds)


def _plain_scenario(scenario, name="scenario") -> Scenario:
    sc = as_scenario(scenario)
    if sc.taxonomy is not None or sc.weibull_shape != 1.0 or sc.lemon_fraction != 0.0:
        raise ParameterError(name, "a run record is walked for exponential failures at one rate, without a "
                                   "taxonomy or lemon nodes")
    return sc


def scenario_plan(sc: Scenario, startup: float = 0.0) -> CheckpointSchedule:
    """Return a scenario's plan in nanoseconds (durations rounded to the nanosecond), fast levels included.

    Parameters
    ----------
    sc : Scenario
        A scalar scenario.
    startup : float, default 0.0
        The first attempt's initialisation (h).

    Returns
    -------
    CheckpointSchedule
        Positions every base interval of compute, the levels' costs, restarts and persists.

    Raises
    ------
    ParameterError
        If the plan writes more than `MAX_WALK_POSITIONS` checkpoints (naming
        the parameter that sets its fastest interval).
    """
    table = sc.level_table()
    base = table["base"] if table is not None else sc.checkpoint_interval
    interval = max(hours_to_ns(base), 1)
    work = hours_to_ns(sc.work)
    n_full = min(int(split_work(sc.work, base)[0]), work // interval)
    if n_full > MAX_WALK_POSITIONS:
        raise ParameterError("fast_checkpoints" if table is not None else "checkpoint_interval",
                             f"a checkpoint every {format_hours(base)} of {format_hours(sc.work)} of work is "
                             f"{n_full:,} checkpoints; a walked run takes at most {MAX_WALK_POSITIONS:,} (an "
                             f"interval of at least {format_hours(sc.work / MAX_WALK_POSITIONS)})")
    levels = None
    if sc.fast_checkpoints:
        levels = tuple(Level(int(m), hours_to_ns(c), hours_to_ns(r), hours_to_ns(p), float(v)) for m, c, r, p, v in
                       zip(table["mult"], table["cost"], table["restart"], table["persist"], table["survives"]))
    return CheckpointSchedule(work=work, positions=tuple(interval * k for k in range(1, n_full + 1)),
                              write=(hours_to_ns(sc.checkpoint_cost),), persist=hours_to_ns(sc.checkpoint_persist),
                              startup=hours_to_ns(startup), restart=(hours_to_ns(sc.restart_cost),),
                              queue=(hours_to_ns(sc.queue_wait),), levels=levels)


def _survival(rng):
    """Endless uniforms in [0, 1) for the levels' survival draws."""
    while True:
        yield rng.random()


def _record_of(w: Walk, start_ns: int, reasons: list, planned: set, source: str, n_gpus) -> RunRecord:
    rows = w.events
    n = len(rows)
    written = [kind == "checkpoint_written" for _, kind, *_ in rows]
    columns = EventRow(
        time_ns=[start_ns + e[0] for e in rows],
        kind=[k if k != "failure" or reasons[r] not in planned else "interruption" for _, k, _, _, _, r in rows],
        step=[e[2] for e in rows],
        duration_ns=[e[3] if w else -1 for e, w in zip(rows, written)],
        wait_ns=[e[4] if w or e[4] else -1 for e, w in zip(rows, written)],
        reason=[reasons[e[5]] if e[5] >= 0 else "" for e in rows],
        source=np.full(n, "events"), line=np.arange(1, n + 1), file=np.full(n, source))
    ds = events_dataset(columns, {"sources": source})
    summary = RecordSummary(sources=[source], rows_read=n, rows_used=n)
    return RunRecord(events=ds, n_gpus=n_gpus, summary=summary)


def simulate_run(scenario, seed: int = 0, *, reasons=None, planned=(), startup="0", start="2024-01-01T00:00:00Z"):
    """One run of a scenario, walked with random failures: its record and the true components.

    Durations are rounded to the nanosecond; failures come at exponential
    runtime gaps of the scenario's job MTTF (numpy's Philox keyed by `seed`).
    The record's steps are seconds of productive compute.

    Parameters
    ----------
    scenario : Scenario or mapping
        A scalar scenario: exponential failures, a fixed queue wait; its
        checkpoint_persist and fast levels are walked with `simulate`'s
        semantics (survival drawn at every failure, restarts' included).
    seed : int, default 0
        Random seed (0 <= seed < 2**63).
    reasons : mapping of str to float, optional
        Failure reasons and their shares (normalised), drawn per failure.
    planned : sequence of str, default ()
        Reasons that are planned interruptions (logged as ``interruption``).
    startup : duration, default "0"
        The first attempt's initialisation (the model has none).
    start : str, default "2024-01-01T00:00:00Z"
        The run's start (UTC).

    Returns
    -------
    record : RunRecord
        The run's events (source "simulated").
    truth : dict
        The walk's own components (ns, ints: ``wall``, ``productive``,
        ``checkpoint``, ``persist_wait``, ``lost``, ``restart``, ``startup``,
        ``queue``) and ``failures``, ``capped``.
    """
    sc = _plain_scenario(scenario)
    if sc.queue_wait_distribution != "fixed":
        raise ParameterError("scenario", "simulate_run walks a fixed queue wait")
    seed = check_integer("seed", seed, 0, 2**63 - 1)
    rng = np.random.Generator(np.random.Philox(key=seed))
    names, shares = ["unknown"], np.array([1.0])
    if reasons:
        names = [str(k) for k in reasons]
        shares = np.array([float(v) for v in reasons.values()])
        if not (np.all(np.isfinite(shares)) and np.all(shares >= 0) and shares.sum() > 0):
            raise ParameterError("reasons", "shares must be finite, >= 0 and not all 0")
    unknown = set(planned) - set(names)
    if unknown:
        raise ParameterError("planned", f"{sorted(unknown)} are not among the reasons")
    cdf = np.cumsum(shares / shares.sum())

    def draw_reasons():
        while True:
            yield int(min(np.searchsorted(cdf, rng.random(), side="right"), len(names) - 1))

    startup_h = _plan_hours("startup", startup)
    plan = scenario_plan(sc, startup_h)
    mean_ns = sc.mttf * NS_PER_H
    w = walk(plan, exponential_failures(rng, mean_ns), draw_reasons() if reasons else None, _survival(rng))
    start_ns = parse_instant(start, None, "start", 0)
    record = _record_of(w, start_ns, names, set(planned), "simulated", sc.n_gpus)
    truth = {k: getattr(w, k) for k in ("wall", *MEASURED_COMPONENTS)}
    truth.update(failures=w.failures, capped=w.capped)
    return record, truth


def _plan_hours(name: str, value, *, positive: bool = False) -> float:
    """A duration of a replayed plan in hours: >= 0 (> 0 if `positive`) and at most MAX_HOURS,
    refused in the units it reads best in."""
    hours = to_hours(value, name)
    if not (np.isfinite(hours) and (hours > 0 if positive else hours >= 0) and hours <= MAX_HOURS):
        raise ParameterError(name, f"must be {'> 0' if positive else '>= 0'} and at most {MAX_HOURS:g}h "
                                   f"(got {format_hours(hours)})")
    return hours

def implied_scenario(measured: xr.Dataset, *, n_gpus=None, failure_rate=None) -> Scenario:
    """The scenario a measured run implies: its GPUs, work, mean interval and costs, and failure rate.

    Parameters
    ----------
    measured : xarray.Dataset
        From `measure_run`.
    n_gpus : int, optional
        GPUs (default: the record's).
    failure_rate : float, optional
        Per node-day (default: the run's own interruption rate).

    Returns
    -------
    Scenario
        The scenario.
    """
    gpus = n_gpus if n_gpus is not None else int(measured.attrs["n_gpus"])
    gpus_per_node = int(measured.attrs.get("gpus_per_node", DEFAULT_GPUS_PER_NODE))
    if gpus is None or gpus < 1:
        raise ParameterError("n_gpus", "the record does not say how many GPUs the run had: give n_gpus")
    rate = failure_rate if failure_rate is not None else float(measured.node_day_rate) if "node_day_rate" in measured \
        else float(measured.interruptions) / (float(measured.runtime) / 24.0 * -(-gpus // gpus_per_node))
    productive = float(measured.time.sel(component="productive"))
    if not np.isfinite(productive):
        raise ParameterError("events", "the record has no trainer events: its productive time is unknown")

    def mean(name, default=0.0):
        value = float(measured[name])
        return value if np.isfinite(value) else default

    return Scenario(n_gpus=gpus, gpus_per_node=gpus_per_node, failure_rate=rate, work=productive,
                    checkpoint_interval=mean("checkpoint_interval", productive),
                    checkpoint_cost=mean("checkpoint_cost"), restart_cost=mean("restart_cost"),
                    queue_wait=mean("queue_wait"))


def predict_run(record: RunRecord, *, scenario=None, assumed=None, n_gpus=None, failure_rate=None,
                n_runs: int = 20_000, seed: int = 0) -> xr.Dataset:
    """The model beside a run: predicted ETTR, one run's ETTR distribution, the run's quantile, the gap by input.

    Parameters
    ----------
    record : RunRecord
        The run (with its trainer events).
    scenario : Scenario, optional
        The scenario to hold the run to (default: the one it implies,
        `implied_scenario`; its failure rate is then fitted to this very run,
        which pulls the quantile towards the middle).
    assumed : Scenario, optional
        What the plan assumed: the gap from its predicted ETTR to the
        observed one is split by input, each measured input substituted in
        turn (``effect``), the rest being the run's luck and what the model
        leaves out (its startup).
    n_gpus, failure_rate : optional
        For the implied scenario (see `implied_scenario`).
    n_runs : int, default 20000
        Runs simulated for the distribution.
    seed : int, default 0
        Seed of the simulation.

    Returns
    -------
    xarray.Dataset
        ``observed_ettr`` (the study's), ``observed_ettr_model_terms`` (less
        startup, which the model has not), ``predicted_ettr_renewal``,
        ``predicted_ettr_simulated`` (work / mean wall), ``run_ettr_quantile``
        along ``quantile`` (one run's ETTR), ``observed_quantile`` (share of
        simulated runs below the observed one, ties halved); with `assumed`,
        along ``input``: ``assumed_value``, ``measured_value``,
        ``ettr_substituted`` and ``effect`` (each input alone), and
        ``assumed_ettr``, ``gap`` (observed - assumed), split exactly as
        ``gap = gap_all_inputs + gap_unexplained``: ``gap_all_inputs`` is the
        renewal ETTR with every measured input at once less the assumed one,
        ``gap_unexplained`` the rest. The inputs interact, so the one-at-a-time
        effects do not add up to ``gap_all_inputs``: they rank the inputs. The
        scenario used, and the measurement's notes, in attrs.
    """
    n_runs = check_integer("n_runs", n_runs, 100, MAX_RUNS)
    measured = measure_run(record, n_gpus=n_gpus)
    implied = implied_scenario(measured, n_gpus=n_gpus, failure_rate=failure_rate)
    sc = _plain_scenario(scenario) if scenario is not None else implied
    observed = float(measured.ettr)
    model_terms = float(measured.ettr_model_terms)
    if certainly_capped(pack(sc), DEFAULT_MAX_FAILURES).all():  # every kept run would be stepped to the cap
        raise ParameterError("failure_rate", f"at {sc.failure_rate:g} failures per node-day no run of "
                                             f"{format_hours(sc.work)} of work on {sc.n_gpus} GPUs finishes within "
                                             f"{DEFAULT_MAX_FAILURES:,} failures: there is nothing to predict")
    sim = simulate(sc, n_jobs=n_runs, seed=seed, backend="auto", keep_jobs=True)
    per_run = (sim.job_productive / sim.job_wall).values.ravel()
    quantiles = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
    below = float((per_run < model_terms).sum() + 0.5 * (per_run == model_terms).sum()) / per_run.size
    ds = xr.Dataset(
        {"observed_ettr": observed, "observed_ettr_model_terms": model_terms,
         "predicted_ettr_renewal": closed_form_ettr(sc, method="renewal"),
         "predicted_ettr_simulated": float(sim.ettr.values.ravel()[0]),
         "run_ettr_quantile": ("quantile", np.quantile(per_run, quantiles)),
         "observed_quantile": below},
        coords={"quantile": quantiles},
        attrs={"relmodel_version": __version__, "scenario": repr(sc), "n_runs": n_runs, "seed": seed,
               "notes": measured.attrs["notes"],
               "scenario_source": "given" if scenario is not None else "implied by the run"},
    )
    if assumed is not None:
        base_sc = _plain_scenario(assumed, "assumed")
        base = closed_form_ettr(base_sc, method="renewal")
        rows = []
        for name in PLAN_INPUTS:
            value = getattr(implied, name)
            substituted = closed_form_ettr(dataclasses.replace(base_sc, **{name: value}), method="renewal")
            rows.append((getattr(base_sc, name), value, substituted, substituted - base))
        columns = list(zip(*rows))
        ds["assumed_value"] = ("input", np.array(columns[0], dtype=float))
        ds["measured_value"] = ("input", np.array(columns[1], dtype=float))
        ds["ettr_substituted"] = ("input", np.array(columns[2], dtype=float))
        ds["effect"] = ("input", np.array(columns[3], dtype=float))
        ds = ds.assign_coords(input=list(PLAN_INPUTS))
        ds["assumed_ettr"] = base
        ds["gap"] = observed - base
        ds["gap_all_inputs"] = closed_form_ettr(implied, method="renewal") - base
        ds["gap_unexplained"] = observed - closed_form_ettr(implied, method="renewal")
        ds.attrs["assumed"] = repr(base_sc)
    return ds


def own_plan(record: RunRecord, tl=None) -> tuple[CheckpointSchedule, list]:
    """The plan a run followed, as it was (writes, waits, restarts, queues and restores that fell back past
    the latest checkpoint, by occurrence), and its failures.

    Parameters
    ----------
    record : RunRecord
        The run (with trainer events).
    tl : Timeline, optional
        ``measure.timeline(record)``, where the caller has it.

    Returns
    -------
    plan : CheckpointSchedule
        The plan as the run followed it.
    failures : list of int
        Runtime instants (ns) of its interruptions.
    """
    tl = timeline(record) if tl is None else tl
    if not record.has_trainer_events:
        raise ParameterError("events", "replay needs the trainer's events (checkpoints and first steps)")
    # Each attempt writes where it did (the pace varies between attempts), and the writes take their own
    # times by occurrence. A wait for persistence that a failure cut short is a write begun there: the wait
    # is logged, then a write of 1 ns that the same failure cuts at once.
    by_attempt = [[] for _ in tl.attempts]
    begun = []  # (end, duration, wait) of each write begun, in time order
    for w in tl.writes:
        by_attempt[w.attempt].append(w.position)
        begun.append((w.end, w.duration, w.wait))
    for k, x in enumerate(tl.interruptions):  # interruption k ends attempt k
        if x.wait_cut:
            by_attempt[k].append(x.compute_at)
            begun.append((x.time, 1, x.wait_cut))
    begun.sort(key=lambda a: a[0])
    completed = [x.restart_after for x in tl.interruptions if x.restart_completed]
    mean_restart = int(round(np.mean(completed))) if completed else 0
    # A restart a failure cut short lasted at least what it ran: longer than that, or the replay misses the failure.
    restarts = tuple(x.restart_after if x.restart_completed else max(mean_restart, x.restart_after + 1)
                     for x in tl.interruptions) or (0,)
    queues = tuple(max(x.queue_after, 0) for x in tl.interruptions) or (0,)
    first = tl.attempts[0]  # a startup cut short (by a failure or the record's end) lasted longer than it ran
    startup = first.first_step - first.start if first.first_step >= 0 else first.end - first.start + 1
    # A record that stops before the run's end is walked to its last instant of runtime.
    until = None if tl.ended else tl.end - tl.start - sum(queues)
    plan = CheckpointSchedule(work=tl.totals["productive"], positions=tuple(tl.kept_positions),
                              write=tuple(a[1] for a in begun) or (0,), wait=tuple(a[2] for a in begun) or (0,),
                              startup=startup, restart=restarts, queue=queues, fallback=tuple(tl.restore_depths),
                              by_attempt=tuple(map(tuple, by_attempt)), until=until)
    return plan, [x.runtime_at for x in tl.interruptions]


def replay_run(record: RunRecord, *, checkpoint_interval=None, checkpoint_cost=None, checkpoint_persist=None,
               restart_cost=None, queue_wait=None, fast_checkpoints=None, n_gpus=None, n_runs: int = 20_000,
               seed: int = 0) -> xr.Dataset:
    """Replay a run's own failures under another plan, deterministically, beside new failure draws.

    The failures strike at the same instants of runtime as in the run; each
    interruption keeps its queue wait and its restart (unless `queue_wait` or
    `restart_cost` is given). A plan that needs more runtime than the run had
    meets failures beyond the record's: they are drawn at the run's own
    interruption rate past the runtime the record covers (seeded, counted in
    ``extrapolated_failures``). A record that does not end (a run still going,
    or given up) is replayed for the work it did.

    Parameters
    ----------
    record : RunRecord
        The run (with trainer events).
    checkpoint_interval, checkpoint_cost, checkpoint_persist, restart_cost, queue_wait : duration, optional
        The plan's changes (hours or strings with units); the rest as measured
        (means).
    fast_checkpoints : sequence of CheckpointLevel, optional
        Fast levels below the run's own checkpoint (as in `Scenario`): which
        levels survive each failure is drawn (seeded), as in `simulate`.
    n_gpus : int, optional
        GPUs, for the simulated counterfactual's scenario.
    n_runs : int, default 20000
        Runs simulated for the counterfactual.
    seed : int, default 0
        Seed of the extrapolated failures and of the simulation.

    Returns
    -------
    xarray.Dataset
        Along ``plan`` ("run", "replayed"): ``wall``, ``ettr``, ``time`` by
        ``component``, ``failures``, ``extrapolated_failures``,
        ``simulated_ettr`` and ``simulated_wall`` (new failure draws, the
        run's rate); ``saving`` (run wall - replayed wall, h); ``reproduced``
        (the replay at the run's own plan gives its wall and every component
        to the nanosecond).
    """
    tl = timeline(record)
    measured = measure_timeline(record, tl, n_gpus=n_gpus)
    plan, failures = own_plan(record, tl)
    if plan.work == 0:
        raise ParameterError("events", "the record keeps no productive work: there is nothing to replay")
    implied = implied_scenario(measured, n_gpus=n_gpus) if (n_gpus or record.n_gpus) else None
    failure_seed, survival_seed = np.random.SeedSequence(check_integer("seed", seed, 0, 2**63 - 1)).spawn(2)
    runtime_ns = int(measured.wall_ns) - int(measured.time_ns.sel(component="queue"))
    rate = len(failures) / runtime_ns if runtime_ns > 0 else 0.0
    own = walk(plan, iter(failures))
    changes = {k: v for k, v in dict(checkpoint_interval=checkpoint_interval, checkpoint_cost=checkpoint_cost,
                                     checkpoint_persist=checkpoint_persist, restart_cost=restart_cost,
                                     queue_wait=queue_wait).items() if v is not None}
    hours = {k: _plan_hours(k, v, positive=k == "checkpoint_interval") for k, v in changes.items()}
    measured_interval = float(measured.checkpoint_interval)
    hours.setdefault("checkpoint_interval", measured_interval if np.isfinite(measured_interval)
                     else float(measured.time.sel(component="productive")))
    hours.setdefault("checkpoint_cost", float(measured.checkpoint_cost) if tl.writes else 0.0)  # completed writes
    fast = as_checkpoint_levels(fast_checkpoints)
    # The replayed plan, as a scenario's (its levels checked there), with the run's work and its
    # interruptions' own restarts and queues unless changed.
    shape = scenario_plan(Scenario(n_gpus=1, failure_rate=0.0, work=plan.work / NS_PER_H, fast_checkpoints=fast,
                                   **{k: v for k, v in hours.items() if k not in ("queue_wait",)}))
    base = shape.positions[0] if shape.positions else plan.work
    restart = (hours_to_ns(hours["restart_cost"]),) if "restart_cost" in hours else plan.restart
    queue = (hours_to_ns(hours["queue_wait"]),) if "queue_wait" in hours else plan.queue
    positions = tuple(base * k for k in range(1, plan.work // base + 1))
    other = dataclasses.replace(shape, work=plan.work, positions=positions, startup=plan.startup, restart=restart,
                                queue=queue)
    if fast:
        changes["fast_checkpoints"] = [dataclasses.asdict(level) for level in fast]
    rng = np.random.Generator(np.random.Philox(failure_seed))
    replayed = walk(other, _then_drawn(failures, runtime_ns, rng, 1.0 / rate if rate > 0 else np.inf),
                    survival=_survival(np.random.Generator(np.random.Philox(survival_seed))))
    walks = {"run": own, "replayed": replayed}
    ds = xr.Dataset(
        {"wall": ("plan", [w.wall / NS_PER_H for w in walks.values()]),
         "ettr": ("plan", [w.productive / w.wall if w.wall else np.nan for w in walks.values()]),
         "time": (("plan", "component"),
                  [[getattr(w, c) / NS_PER_H for c in MEASURED_COMPONENTS] for w in walks.values()]),
         "failures": ("plan", [w.failures for w in walks.values()]),
         "extrapolated_failures": ("plan", [0, max(replayed.failures - len(failures), 0)]),
         "capped": ("plan", [own.capped, replayed.capped])},
        coords={"plan": list(walks), "component": list(MEASURED_COMPONENTS)},
        attrs={"relmodel_version": __version__, "changes": repr(changes), "seed": seed,
               "failure_clock": "runtime (queue excluded), as the model's", "notes": measured.attrs["notes"]},
    )
    ds["saving"] = ds.wall.sel(plan="run") - ds.wall.sel(plan="replayed")
    ds["reproduced"] = own.wall == int(measured.wall_ns) and all(
        getattr(own, c) == int(measured.time_ns.sel(component=c)) for c in MEASURED_COMPONENTS)
    if implied is not None:
        n_runs = check_integer("n_runs", n_runs, 100, MAX_RUNS)
        scenarios = [implied, dataclasses.replace(implied, **hours, fast_checkpoints=fast)]
        sims = [simulate(s, n_jobs=n_runs, seed=seed, backend="auto") for s in scenarios]
        ds["simulated_ettr"] = ("plan", [float(s.ettr.values.ravel()[0]) for s in sims])
        ds["simulated_wall"] = ("plan", [float(sc.work) / float(sim.ettr.values.ravel()[0])
                                         for sc, sim in zip(scenarios, sims)])
    for name in ("wall", "time", "saving"):
        ds[name].attrs["units"] = "h"
    return ds


def _then_drawn(observed, runtime_ns, rng, mean_ns):
    """The observed failures, then drawn ones past the record's runtime (up to it, the record says
    which instants had none)."""
    yield from observed
    if np.isfinite(mean_ns):
        yield from exponential_failures(rng, mean_ns, runtime_ns)

