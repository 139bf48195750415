"""A run's own record: records written by the walk with known truth measure back to it exactly,
replay at the run's own plan gives its wall time to the nanosecond, the observed quantile is calibrated,
and a malformed record is named by file, line and field."""

import dataclasses
import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import relmodel as rm
from relmodel._cli import main
from relmodel.record import measure_run, predict_run, read_run, replay_run, simulate_run
from relmodel.record._events import NS_PER_H, RunRecordError, format_instant, parse_instant
from relmodel.record._measure import MEASURED_COMPONENTS, timeline
from relmodel._text import MISSING_TOKENS
from relmodel.record._timeline import MAX_WALK_POSITIONS, CheckpointSchedule, walk

DURATIONS = st.sampled_from([0.0, 1 / 3600, 0.01, 0.05, 0.2, 0.5, 1.0, 3.0])


@st.composite
def run_scenarios(draw):
    """Small runs over the whole valid space: free and costly writes, persists longer than the interval,
    no restart or queue, a job MTTF from a tenth of the interval to far beyond the run."""
    interval = draw(st.sampled_from([0.1, 0.37, 1.0, 2.5, 24.0]))
    fast = None
    if draw(st.booleans()):  # a fast level, from never to always surviving, persisting past its interval or not
        fast = (rm.CheckpointLevel(interval=interval / 4, cost=draw(DURATIONS) / 10, restart=draw(DURATIONS),
                                   persist=draw(st.sampled_from([0.0, interval / 2])),
                                   survives=draw(st.sampled_from([0.0, 0.5, 0.9, 1.0]))),)
    return rm.Scenario(n_gpus=draw(st.sampled_from([8, 1024, 16384])), failure_rate=draw(
        st.sampled_from([0.0, 1e-4, 6.5e-3, 0.05])), work=draw(st.sampled_from([0.5, 3.0, 30.0, 48.0])),
        checkpoint_interval=interval, checkpoint_cost=draw(DURATIONS), restart_cost=draw(DURATIONS),
        queue_wait=draw(DURATIONS), checkpoint_persist=draw(st.sampled_from([0.0, 0.05, 2 * interval])),
        fast_checkpoints=fast)


def _cap_hopeless(sc):
    """Whether the run ends in a walk of reasonable length (judged on its durable level, written blocking:
    the exact form has no answer where a level's writes wait and the job has fast levels)."""
    plain = dataclasses.replace(sc, fast_checkpoints=None, checkpoint_persist=0.0)
    return rm.ettr(plain, method="renewal") > 0.05


@settings(max_examples=60)
@given(run_scenarios(), st.integers(0, 2**32), st.sampled_from(["csv", "jsonl"]))
def test_measured_components_equal_the_walks_own_exactly(tmp_path_factory, sc, seed, fmt):
    if not _cap_hopeless(sc):
        return
    record, truth = simulate_run(sc, seed, reasons={"gpu": 3, "maintenance": 1}, planned=["maintenance"],
                                 startup="7min")
    path = tmp_path_factory.mktemp("runs") / f"run.{fmt}"
    getattr(record, f"to_{fmt}")(path)
    back = read_run(path, n_gpus=sc.n_gpus)
    ds = measure_run(back)
    assert int(ds.wall_ns) == truth["wall"]
    for c in MEASURED_COMPONENTS:
        assert int(ds.time_ns.sel(component=c)) == truth[c], c
    assert int(ds.interruptions) == truth["failures"]
    assert int(ds.failures) + int(ds.planned) == truth["failures"]
    # The figure's spans are the same accounting: each component's spans add up to it.
    spans = timeline(back).spans
    for c in MEASURED_COMPONENTS:
        assert sum(b - a for a, b in spans[c]) == truth[c], c
    assert not spans["attempt"]
    assert float(ds.ettr) == pytest.approx(truth["productive"] / truth["wall"], rel=1e-15)
    # The model's inputs, measured: every write and restart took the plan's time.
    if int(ds.writes) and not sc.fast_checkpoints:
        assert float(ds.checkpoint_cost) == pytest.approx(round(sc.checkpoint_cost * 3.6e12) / 3.6e12, abs=1e-12)


@settings(max_examples=40)
@given(run_scenarios(), st.integers(0, 2**32))
def test_replay_at_the_runs_own_plan_gives_its_wall_to_the_nanosecond(sc, seed):
    if not _cap_hopeless(sc):
        return
    record, truth = simulate_run(sc, seed, startup="3min")
    ds = replay_run(record, n_runs=100)
    assert bool(ds.reproduced)
    # (Hours are the nanoseconds correctly rounded; back to nanoseconds a 40-day wall can be 1 ns off.)
    assert float(ds.wall.sel(plan="run")) == truth["wall"] / 3.6e12
    assert int(ds.failures.sel(plan="run")) == truth["failures"]


def test_replay_reproduces_runs_cut_short_in_startups_restarts_waits_and_writes():
    # MTTF ~0.35 h against a 2 h startup, 1 h restarts and 30 min writes that wait for persistence:
    # failures strike in each phase.
    fast = (rm.CheckpointLevel(interval="15min", cost="18min", restart="1s", persist="0s", survives=1.0),)
    sc = rm.Scenario(n_gpus=16384, failure_rate=0.0065, checkpoint_interval="1h", work="3h", checkpoint_cost="30min",
                     restart_cost="1h", queue_wait="3h", checkpoint_persist="2h", fast_checkpoints=fast)
    for seed in range(20):
        record, truth = simulate_run(sc, seed, startup="2h")
        ds = replay_run(record, n_runs=100)
        assert bool(ds.reproduced), seed
        assert float(ds.wall.sel(plan="run")) == truth["wall"] / 3.6e12


def test_replay_of_a_hand_written_run_with_irregular_writes():
    # Writes of 60 s and 90 s after 50 and 70 min of compute, a failure 20 min after the second write:
    # 20 min lost, a 30 min queue, a 5 min restart, then the last 30 min of work.
    text = "\n".join([
        "time,event,step,duration_s,wait_s,reason",
        "2024-03-01T00:00:00Z,attempt_start,,,,",
        "2024-03-01T00:02:00Z,first_step,0,,,",
        "2024-03-01T00:53:00Z,checkpoint_written,500,60,,",
        "2024-03-01T02:04:30Z,checkpoint_written,1200,90,,",
        "2024-03-01T02:24:30Z,failure,,,,xid 79",
        "2024-03-01T02:54:30Z,attempt_start,,,,",
        "2024-03-01T02:59:30Z,first_step,1200,,,",
        "2024-03-01T03:29:30Z,run_end,1500,,,",
    ])
    path = _write(text)
    record = read_run(path, n_gpus=16)
    ds = measure_run(record)
    minutes = {c: float(ds.time.sel(component=c)) * 60 for c in MEASURED_COMPONENTS}
    assert minutes == pytest.approx({"productive": 150, "checkpoint": 2.5, "persist_wait": 0, "lost": 20,
                                     "restart": 5, "startup": 2, "queue": 30})
    assert float(ds.wall) * 60 == pytest.approx(209.5)
    assert float(ds.ettr) == pytest.approx(150 / 209.5)
    assert float(ds.checkpoint_interval) * 60 == pytest.approx(60)  # positions 50 and 120 min of compute
    replayed = replay_run(record)
    assert bool(replayed.reproduced)
    # Free checkpoints every 20 min: the failure, 142.5 min of runtime after the startup, comes 2.5 min
    # after the seventh; the restart is the run's own 5 min, and the run needs less runtime than it had.
    other = replay_run(record, checkpoint_interval="20min", checkpoint_cost="0s")
    assert int(other.extrapolated_failures.sel(plan="replayed")) == 0
    minutes = other.time.sel(plan="replayed") * 60
    assert float(minutes.sel(component="lost")) == pytest.approx(2.5)
    assert float(minutes.sel(component="restart")) == pytest.approx(5)
    assert float(other.wall.sel(plan="replayed")) * 60 == pytest.approx(2 + 150 + 2.5 + 30 + 5)


def test_the_walk_agrees_with_the_renewal_form():
    # The walk is its own implementation of the timeline model: its mean wall over many runs is the
    # renewal form's E[wall] (and so rm.simulate's) within a few standard errors.
    sc = rm.Scenario(n_gpus=4096, failure_rate=6.5e-3, work="2d", checkpoint_interval="1h",
                     checkpoint_cost="5min", restart_cost="10min", queue_wait="20min")
    walls = np.array([simulate_run(sc, seed)[1]["wall"] / 3.6e12 for seed in range(600)])
    expected = sc.work / rm.ettr(sc, method="renewal")
    assert abs(walls.mean() - expected) < 4 * walls.std(ddof=1) / np.sqrt(walls.size)


@pytest.mark.parametrize("survives", [0.0, 0.8, 1.0])
def test_the_walk_with_levels_agrees_with_simulate(survives):
    # Fast levels and asynchronous writes that wait: the walk's mean wall is rm.simulate's (the kernel's
    # semantics, written apart: survival drawn at every failure, pending writes lost, waits for persistence).
    fast = rm.CheckpointLevel(interval="15min", cost="10s", restart="3min", persist="20min", survives=survives)
    sc = rm.Scenario(n_gpus=4096, failure_rate=1e-2, work="1d", checkpoint_interval="1h", checkpoint_cost="5min",
                     restart_cost="10min", queue_wait="5min", checkpoint_persist="90min", fast_checkpoints=(fast,))
    walks = [simulate_run(sc, seed)[1] for seed in range(400)]
    walls = np.array([w["wall"] for w in walks]) / 3.6e12
    waits = np.array([w["persist_wait"] for w in walks]) / 3.6e12
    sim = rm.simulate(sc, n_jobs=100_000, seed=1)
    for mine, name in ((walls, "wall"), (waits, "persist_wait")):
        theirs = float(sim.wall_mean) if name == "wall" else float(sim.time_mean.sel(component=name))
        se = mine.std(ddof=1) / np.sqrt(mine.size)
        assert abs(mine.mean() - theirs) < 4.5 * se + 1e-12, name


def test_replay_under_a_fast_level():
    sc = rm.Scenario(n_gpus=16384, failure_rate=6.5e-3, work="3d", checkpoint_interval="1h",
                     checkpoint_cost="5min", restart_cost="15min", queue_wait="5min")
    record, _ = simulate_run(sc, 4)
    fast = rm.CheckpointLevel(interval="10min", cost="5s", restart="3min", persist="1min", survives=0.9)
    ds = replay_run(record, fast_checkpoints=(fast,), n_runs=2000, n_gpus=16384)
    assert float(ds.saving) > 0 and float(ds.simulated_ettr.sel(plan="replayed")) > float(
        ds.simulated_ettr.sel(plan="run"))
    again = replay_run(record, fast_checkpoints=(fast,), n_runs=2000, n_gpus=16384)
    assert float(again.wall.sel(plan="replayed")) == float(ds.wall.sel(plan="replayed"))  # survival draws seeded
    lost = replay_run(record, fast_checkpoints=(dataclasses.replace(fast, survives=0.0),), n_runs=200)
    # A level that never survives only costs its writes and waits.
    assert float(lost.time.sel(plan="replayed", component="checkpoint")) > float(
        ds.time.sel(plan="replayed", component="checkpoint")) - 1e-9


@pytest.mark.slow
def test_the_observed_quantile_is_uniform_over_simulated_runs():
    sc = rm.Scenario(n_gpus=4096, failure_rate=6.5e-3, work="2d", checkpoint_interval="1h",
                     checkpoint_cost="5min", restart_cost="10min", queue_wait="20min")
    quantiles = [float(predict_run(simulate_run(sc, seed)[0], scenario=sc, n_runs=4000, seed=10**6 + seed)
                       .observed_quantile) for seed in range(300)]
    assert stats.kstest(quantiles, "uniform").pvalue > 1e-3


def test_the_observed_quantile_is_calibrated_in_a_bounded_sample():
    sc = rm.Scenario(n_gpus=4096, failure_rate=6.5e-3, work="1d", checkpoint_interval="1h",
                     checkpoint_cost="5min", restart_cost="10min", queue_wait="20min")
    quantiles = np.array([float(predict_run(simulate_run(sc, seed)[0], scenario=sc, n_runs=2000,
                                            seed=10**6 + seed).observed_quantile) for seed in range(80)])
    assert stats.kstest(quantiles, "uniform").pvalue > 1e-4
    # The implied scenario fits its rate to the very run: its quantiles crowd the middle (documented).
    assert 0.2 < quantiles.mean() < 0.8


def test_prediction_splits_the_gap_by_input():
    sc = rm.Scenario(n_gpus=16384, failure_rate=6.5e-3, work="7d", checkpoint_interval="1h",
                     checkpoint_cost="5min", restart_cost="10min", queue_wait="20min")
    record, _ = simulate_run(sc, 3)
    assumed = rm.Scenario(n_gpus=16384, failure_rate=2e-3, work="7d", checkpoint_interval="1h",
                          checkpoint_cost="1min", restart_cost="10min", queue_wait="20min")
    ds = predict_run(record, assumed=assumed, n_runs=2000)
    assert float(ds.assumed_ettr) == pytest.approx(rm.ettr(assumed, method="renewal"))
    effect = ds.effect.to_series()
    assert effect["failure_rate"] < effect["checkpoint_cost"] < 0
    assert effect["restart_cost"] == pytest.approx(0, abs=1e-9)  # measured as assumed (to the ns)
    total = float(ds.gap_all_inputs) + float(ds.gap_unexplained)
    assert total == pytest.approx(float(ds.gap))
    assert float(ds.predicted_ettr_renewal) == pytest.approx(float(ds.predicted_ettr_simulated), abs=0.01)


def test_replay_draws_failures_beyond_the_record_when_a_plan_runs_longer():
    sc = rm.Scenario(n_gpus=1024, failure_rate=6.5e-3, work="2d", checkpoint_interval="1h",
                     checkpoint_cost="1min", restart_cost="10min")
    record, _ = simulate_run(sc, 5)
    ds = replay_run(record, checkpoint_cost="3h", n_gpus=1024, n_runs=500)  # ~140 h more runtime
    assert float(ds.saving) < 0 and int(ds.extrapolated_failures.sel(plan="replayed")) > 0
    again = replay_run(record, checkpoint_cost="3h", n_gpus=1024, n_runs=500)
    assert float(again.wall.sel(plan="replayed")) == float(ds.wall.sel(plan="replayed"))  # seeded


def test_asynchronous_writes_replayed():
    sc = rm.Scenario(n_gpus=16384, failure_rate=6.5e-3, work="3d", checkpoint_interval="30min",
                     checkpoint_cost="5min", restart_cost="10min")
    record, _ = simulate_run(sc, 9)
    ds = replay_run(record, checkpoint_cost="10s", checkpoint_persist="5min", n_runs=500)
    assert float(ds.saving) > 0
    assert float(ds.time.sel(plan="replayed", component="checkpoint")) < float(
        ds.time.sel(plan="run", component="checkpoint"))


def test_a_hopeless_replay_is_capped_and_flagged():
    sc = rm.Scenario(n_gpus=16384, failure_rate=6.5e-3, work="1d", checkpoint_interval="1h",
                     checkpoint_cost="1min", restart_cost="10min")
    record, _ = simulate_run(sc, 1)
    with pytest.warns(rm.CappedJobsWarning):  # the simulated counterfactual says so too
        ds = replay_run(record, restart_cost="30d", n_runs=100, n_gpus=16384)
    assert bool(ds.capped.sel(plan="replayed"))


def test_a_capped_replay_says_so_in_json_and_bounds_its_saving_in_text():
    """A capped walk's wall is a lower bound: its cost is "at least", and JSON says which plan was capped."""
    from click.testing import CliRunner

    args = ["run", "replay", "--example", "--checkpoint-interval", "20d", "--runs", "100"]
    with warnings.catch_warnings():
        warnings.simplefilter("default", rm.CappedJobsWarning)  # the counterfactual's simulated jobs are capped too
        text = CliRunner().invoke(main, args)
        reply = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    assert text.exit_code == 0 and "the replayed plan costs at least " in text.stdout, text.output
    assert "the replayed plan stopped at 1,000,000 events" in text.stderr
    assert reply["replayed"]["capped"] and not reply["run"]["capped"]


def test_a_plan_of_more_checkpoints_than_a_walk_takes_is_refused_before_it_is_built():
    """Such a plan reached the walk's event cap and was flagged as hopeless: a 240-hour run
    checkpointed every 0.2 s in memory replayed as 66 hours of work."""
    sc = rm.Scenario(n_gpus=8, failure_rate=1e-3, work="1d", checkpoint_interval="0.1s")
    with pytest.raises(rm.ParameterError, match="checkpoint_interval: a checkpoint every 0.1s of 1d of work"):
        simulate_run(sc, 1)
    fast = rm.CheckpointLevel(interval="0.1s", cost="0s", restart="1min", survives=0.5)
    record, _ = simulate_run(sc.sweep(checkpoint_interval="1h"), 1)
    with pytest.raises(rm.ParameterError, match="fast_checkpoints: a checkpoint every 0.1s"):
        replay_run(record, fast_checkpoints=(fast,), n_runs=100)
    at_most = sc.sweep(checkpoint_interval=24 / MAX_WALK_POSITIONS)
    _, truth = simulate_run(at_most, 1)
    assert not truth["capped"] and truth["productive"] == 24 * NS_PER_H


# ---- reading: zones, sacct, and malformed records ----------------------------------------------------------


def _write(text, name="events.csv"):
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / name
    path.write_text(text)
    return path


def test_times_in_a_zone_across_a_dst_change_and_with_offsets():
    # Europe/Paris: 2024-03-31 02:00 local jumps to 03:00. 01:30 -> 03:30 local is one hour.
    text = "time,event\n2024-03-31T01:30:00,attempt_start\n2024-03-31T03:30:00,run_end\n"
    ds = measure_run(read_run(_write(text), tz="Europe/Paris"))
    assert float(ds.wall) == pytest.approx(1.0)
    offsets = "time,event\n2024-03-31T01:30:00+01:00,attempt_start\n2024-03-31T03:30:00+02:00,run_end\n"
    assert float(measure_run(read_run(_write(offsets))).wall) == pytest.approx(1.0)
    epoch = "time,event\n1711845000.25,attempt_start\n1711848600.5,run_end\n"
    assert int(measure_run(read_run(_write(epoch))).wall_ns) == 3600_250_000_000


@pytest.mark.parametrize("stamp", ["2024-10-27T02:30:00", "2024-03-31T02:30:00"])  # repeated, skipped
def test_a_local_time_that_dst_makes_ambiguous_is_refused(stamp):
    text = f"time,event\n2024-10-26T00:00:00,attempt_start\n{stamp},run_end\n"
    with pytest.raises(RunRecordError, match=r"line 3: time: .*daylight-saving"):
        read_run(_write(text), tz="Europe/Paris")


def test_instants_round_trip_to_the_nanosecond():
    for ns in (0, 1, 1_711_845_000_123_456_789, 4_102_444_800_000_000_001):
        assert parse_instant(format_instant(ns), None, "x", 1) == ns


BAD = [
    ("time,event\n2024-01-01T00:00:00Z,attempt_start\n2024-01-01T01:00:00Z,exploded\n", r"line 3: event: 'exploded'"),
    ("time,event\nyesterday,attempt_start\n", r"line 2: time: 'yesterday'"),
    ("time,event\n,attempt_start\n", r"line 2: time: missing"),
    ("time,event,step\n2024-01-01T00:00:00Z,attempt_start,\n2024-01-01T01:00:00Z,checkpoint_written,5\n",
     r"line 3: duration_s: .*needs"),
    ("time,event,step,duration_s\n2024-01-01T00:00:00Z,attempt_start,,\n"
     "2024-01-01T01:00:00Z,checkpoint_written,5,-3\n", r"line 3: duration_s: '-3' must be"),
    ("time,event,step,duration_s\n2024-01-01T00:00:00Z,attempt_start,,\n"
     "2024-01-01T00:00:10Z,checkpoint_written,5,60\n", r"line 3: duration_s: the write"),
    ("time,event,step\n2024-01-01T00:00:00Z,attempt_start,\n2024-01-01T01:00:00Z,failure,\n"
     "2024-01-01T02:00:00Z,attempt_start,\n2024-01-01T02:01:00Z,checkpoint_restored,7\n",
     r"line 5: step: no restorable checkpoint of step 7"),
    ("time,event\n2024-01-01T00:00:00Z,attempt_start\n2024-01-01T01:00:00Z,run_end\n2024-01-01T02:00:00Z,step\n",
     r"line 4: event: an event after run_end"),
    ("time,event\n2024-01-01T00:00:00Z,attempt_start\n2024-01-01T01:00:00Z,attempt_start\n",
     r"line 3: event: an attempt_start while an attempt runs"),
    ("time,event\n2024-01-01T00:00:00Z,first_step\n2024-01-01T01:00:00Z,attempt_start\n",
     r"line 2: time: an event before the run's first attempt_start"),
    ("time,event,step\n2024-01-01T00:00:00Z,attempt_start,1.5\n", r"line 2: step: '1.5' is not a whole number"),
    ("time,event,step\n2024-01-01T00:00:00Z,attempt_start,1e300\n", r"line 2: step: '1e300' is above"),
    ("time,event,step,duration_s\n2024-01-01T00:00:00Z,attempt_start,,\n"
     "2024-01-01T01:00:00Z,checkpoint_written,5,1e300\n", r"line 3: duration_s: '1e300' is above 1e\+09 s"),
    ("time,event\n9999-01-01T00:00:00Z,attempt_start\n", r"line 2: time: .* outside the years 1678-2261"),
    ("time,event\n999999999999,attempt_start\n", r"line 2: time: .* outside the years"),
    ("when,what\n1,2\n", r"format: not a record relmodel reads \(it begins 'when,what'\): expected the trainer-ev"),
    ('{"time": "2024-01-01T00:00:00Z", "event": "attempt_start"}\n[1, 2]\n', r"line 2: record: not a JSON object"),
    ('{"time": "2024-01-01T00:00:00Z", "event": "attempt_start"}\n{"time": \n', r"line 2: record: not a JSON"),
]


@pytest.mark.parametrize("text, message", BAD)
def test_a_malformed_record_names_file_line_and_field(text, message):
    path = _write(text, "events.jsonl" if text.startswith("{") else "events.csv")
    with pytest.raises(RunRecordError, match=message) as info:
        measure_run(read_run(path))
    assert str(info.value).startswith(str(path))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("token", sorted({*MISSING_TOKENS, *(t.upper() for t in MISSING_TOKENS), " N/A "}))
def test_every_missing_token_reads_as_no_value(token):
    # The run's record and the job logs read one list (MISSING_TOKENS): an attempt's step
    # written as missing is no step, where any other text is refused naming the field.
    text = "time,event,step\n2024-01-01T00:00:00Z,attempt_start,{}\n2024-01-01T02:00:00Z,run_end,\n"
    record = read_run(_write(text.format(token), "events.csv"))
    assert int(measure_run(record).attempts) == 1
    with pytest.raises(RunRecordError, match="line 2: step: 'seven' is not"):
        read_run(_write(text.format("seven"), "events.csv"))


SACCT = """\
JobID|JobName|State|Start|End|Elapsed|NNodes|AllocTRES|NodeList|Comment
500|pretrain|NODE_FAIL|2024-03-01T00:00:00|2024-03-01T10:00:00|10:00:00|16|cpu=96,gres/gpu=128,node=16|node[001-016]|
500.0|python|FAILED|2024-03-01T00:00:00|2024-03-01T10:00:00|10:00:00|16|cpu=96|node[001-016]|
501|pretrain|PREEMPTED|2024-03-01T11:00:00|2024-03-01T20:00:00|09:00:00|16|cpu=96,gres/gpu=128,node=16|node[017-032]|
502|pretrain|COMPLETED|2024-03-01T20:30:00|2024-03-02T08:30:00|12:00:00|16|cpu=96,gres/gpu=128,node=16|node[017-032]|
600|other|COMPLETED|2024-03-01T00:00:00|2024-03-01T01:00:00|01:00:00|1|gres/gpu=8|node099|
"""


def test_sacct_alone_says_what_it_can():
    path = _write(SACCT, "sacct.txt")
    record = read_run(sacct=path, run="500,501,502")
    assert record.n_gpus == 128 and record.summary.skipped["sacct: another run"] == 1
    ds = measure_run(record)
    assert float(ds.wall) == pytest.approx(32.5) and float(ds.time.sel(component="queue")) == pytest.approx(1.5)
    assert np.isnan(float(ds.time.sel(component="productive"))) and np.isnan(float(ds.ettr))
    assert int(ds.failures) == 1 and int(ds.planned) == 1 and int(ds.infrastructure) == 1
    assert float(ds.node_day_rate) == pytest.approx(2 / (31 / 24 * 16))
    assert "no trainer events" in ds.attrs["notes"]
    spans = timeline(record).spans  # the figure's: attempts and queue waits alone
    assert {k for k, v in spans.items() if v} == {"attempt", "queue"}
    assert sum(b - a for v in spans.values() for a, b in v) == int(ds.wall_ns)
    with pytest.raises(rm.ParameterError, match="trainer's events"):
        replay_run(record)


def test_sacct_local_times_in_the_clusters_zone():
    # New York: 2024-03-10 02:00 local jumps to 03:00; the first attempt spans the change (9 h, not 10).
    text = SACCT.replace("2024-03-01T00:00:00|2024-03-01T10:00:00", "2024-03-09T20:00:00|2024-03-10T06:00:00")
    text = text.replace("2024-03-01T11:00:00|2024-03-01T20:00:00", "2024-03-10T07:00:00|2024-03-10T16:00:00")
    ds = measure_run(read_run(sacct=_write(text, "sacct.txt"), run="500,501", tz="America/New_York"))
    assert float(ds.interruption_runtime[0]) == pytest.approx(9.0)
    ambiguous = SACCT.replace("2024-03-01T10:00:00", "2024-11-03T01:30:00").replace(
        "2024-03-01T00:00:00|2024-11", "2024-11-02T00:00:00|2024-11")
    with pytest.raises(RunRecordError, match=r"sacct.txt, line 2: End: .*daylight-saving"):
        read_run(sacct=_write(ambiguous, "sacct.txt"), run="500", tz="America/New_York")


def test_sacct_gives_the_boundaries_and_the_trainer_the_rest():
    events = "\n".join([
        "time,event,step,duration_s",
        "2024-03-01T00:00:00Z,attempt_start,,",  # superseded by sacct's (counted)
        "2024-03-01T00:10:00Z,first_step,0,",
        "2024-03-01T06:10:00Z,checkpoint_written,600,60",
        "2024-03-01T11:15:00Z,first_step,600,",
        "2024-03-01T20:30:10Z,first_step,600,",
    ])
    record = read_run(_write(events), sacct=_write(SACCT, "sacct.txt"), run="500,501,502")
    assert record.summary.skipped["trainer boundary events (sacct gives the attempts)"] == 1
    ds = measure_run(record)
    assert float(ds.time.sel(component="startup")) == pytest.approx(10 / 60)
    assert float(ds.time.sel(component="restart")) == pytest.approx(15 / 60 + 10 / 3600)
    # The second attempt's work (no checkpoint) is lost at its preemption.
    assert float(ds.interruption_lost[1]) == pytest.approx(20 - 11.25)
    assert sum(float(ds.time.sel(component=c)) for c in MEASURED_COMPONENTS) == pytest.approx(float(ds.wall))


def test_cli_show_predict_replay(tmp_path):
    from click.testing import CliRunner

    sc = rm.Scenario(n_gpus=1024, failure_rate=6.5e-3, work="3d", checkpoint_interval="1h",
                     checkpoint_cost="5min", restart_cost="10min", queue_wait="10min")
    record, truth = simulate_run(sc, 2)
    path = record.to_csv(tmp_path / "run.csv")
    runner = CliRunner()
    shown = runner.invoke(main, ["run", "show", str(path), "--gpus", "1024", "--json"])
    assert shown.exit_code == 0, shown.output
    out = json.loads(shown.output)
    assert out["components_h"]["lost"] == pytest.approx(truth["lost"] / 3.6e12)
    text = runner.invoke(main, ["run", "show", str(path), "--gpus", "1024"])
    assert text.exit_code == 0 and "ETTR" in text.output and "interruption rate" in text.output
    predicted = runner.invoke(main, ["run", "predict", str(path), "--gpus", "1024", "--runs", "500",
                                     "--assumed-failure-rate", "2e-3", "--assumed-checkpoint-interval", "1h", "--json"])
    assert predicted.exit_code == 0, predicted.output
    assert set(json.loads(predicted.output)["by_input"]) == {"failure_rate", "checkpoint_interval", "checkpoint_cost",
                                                             "restart_cost", "queue_wait"}
    replayed = runner.invoke(main, ["run", "replay", str(path), "--checkpoint-interval", "30min", "--json",
                                    "--gpus", "1024", "--runs", "500"])
    assert replayed.exit_code == 0 and json.loads(replayed.output)["reproduced"] is True
    levelled = runner.invoke(main, ["run", "replay", str(path), "--gpus", "1024", "--runs", "500", "--fast-checkpoint",
                                    "interval=10min,cost=5s,restart=3min,survives=0.9"])
    assert levelled.exit_code == 0 and "replayed" in levelled.output, levelled.output
    # The help's own example with --json ended in `TypeError: asdict() ...` (exit 70).
    levelled_json = runner.invoke(main, ["run", "replay", str(path), "--gpus", "1024", "--runs", "500", "--json",
                                         "--fast-checkpoint",
                                         "interval=10min,cost=5s,restart=3min,persist=30s,survives=0.85"])
    assert levelled_json.exit_code == 0, levelled_json.output
    assert json.loads(levelled_json.output)["fast_checkpoints_h"] == [
        {"interval": 1 / 6, "cost": 5 / 3600, "restart": 0.05, "persist": 30 / 3600, "survives": 0.85}]
    huge = runner.invoke(main, ["run", "replay", str(path), "--restart-cost", "1e300h"])
    assert huge.exit_code == 2 and "--restart-cost" in huge.output and "at most" in huge.output, huge.output
    bad = runner.invoke(main, ["run", "replay", str(path), "--checkpoint-interval", "30"])
    assert bad.exit_code == 2 and "--checkpoint-interval" in bad.output and "unit" in bad.output
    none = runner.invoke(main, ["run", "show"])
    assert none.exit_code == 2 and "--sacct" in none.output


@pytest.mark.parametrize("args, line", [
    (["replay", "--example", "--restart-cost=-5min"],
     "Error: --restart-cost: must be >= 0 and at most 1e+06h (got -5min)"),
    (["replay", "--example", "--checkpoint-interval", "0"],
     "Error: --checkpoint-interval: must be > 0 and at most 1e+06h (got 0s)"),
    (["replay", "--example", "--queue-wait", "2e6h"], "Error: --queue-wait: must be >= 0 and at most 1e+06h (got "
                                                      "8.333e+04d)"),
    (["replay", "--example", "--fast-checkpoint", "interval=1s,cost=1s,restart=3min,survives=0.5"],
     "Error: --fast-checkpoint: a checkpoint every 1s of 10d of work is 864,000 checkpoints; a walked run takes at "
     "most 500,000 (an interval of at least 1.728s)"),
    (["replay", "--example", "--checkpoint-interval", "0.001s"],
     "Error: --checkpoint-interval: a checkpoint every 0.001s of 10d of work is 864,000,000 checkpoints"),
    (["show", "--example", "--tz", "Mars/Olympus"], "Error: --tz: 'Mars/Olympus' is no time zone"),
    (["predict", "--example", "--assumed-failure-rate", "1e-3", "--assumed-checkpoint-interval=-5min"],
     "Error: --assumed-checkpoint-interval: must be > 0 (got -5min)"),
    (["predict", "--example", "--failure-rate", "1e9", "--assumed-failure-rate", "1e-3",
      "--assumed-checkpoint-interval", "1h"], "Error: --failure-rate: must be at most 1e+06"),
])
def test_a_refused_run_flag_is_named_as_typed_with_its_duration_in_units(args, line):
    from click.testing import CliRunner

    result = CliRunner().invoke(main, ["run", *args])
    assert result.exit_code == 2 and len(result.output.splitlines()) == 1
    assert result.output.startswith(line), result.output


def test_an_impossible_utc_offset_in_run_show_names_the_file_line_and_field(tmp_path):
    from click.testing import CliRunner

    path = _write("time,event,step,duration_s,wait_s,reason\n2026-01-01T00:00:00Z,attempt_start,,,,\n"
                  "2026-01-01T00:00:00+99:00,first_step,0,,,\n2026-01-01T05:00:00Z,run_end,100,,,\n", "run.csv")
    result = CliRunner().invoke(main, ["run", "show", str(path)])
    assert result.exit_code == 2
    assert result.output == (f"Error: {path}, line 3: time: '2026-01-01T00:00:00+99:00' has no valid UTC offset "
                             "(at most 23:59)\n")


def test_simulate_run_refuses_a_startup_out_of_bounds():
    sc = rm.Scenario(n_gpus=8, failure_rate=6.5e-3, work="1d", checkpoint_interval="1h")
    for startup in ("-1h", "1e300h"):
        with pytest.raises(rm.ParameterError, match="startup"):
            simulate_run(sc, 0, startup=startup)


def test_plan_walk_ends_at_work_when_work_is_a_multiple_of_the_interval():
    # Job model: n_full = floor(work / interval) checkpoints, also when work is a multiple; then an empty remainder.
    w = walk(CheckpointSchedule.regular(work=10, interval=5, write=1), iter(()))
    assert (w.wall, w.productive, w.checkpoint) == (12, 10, 2)


@pytest.mark.parametrize("gpus_per_node", [8, 4, 1])
def test_the_node_day_rate_and_its_interval_are_the_garwood_formula(gpus_per_node):
    sc = rm.Scenario(n_gpus=4096, gpus_per_node=gpus_per_node, failure_rate=0.05, work="2d",
                     checkpoint_interval="1h", checkpoint_cost="5min", restart_cost="10min")
    record, _ = simulate_run(sc, 3)
    measured = measure_run(record, n_gpus=4096, gpus_per_node=gpus_per_node)
    k = int(measured.interruptions)
    node_days = float(measured.runtime) / 24 * -(-4096 // gpus_per_node)
    assert k > 0 and float(measured.node_day_rate) == pytest.approx(k / node_days, rel=1e-12)
    # The chi-square form of the exact interval, independent of the package's inverse gamma.
    assert float(measured.node_day_rate_low) == pytest.approx(stats.chi2.ppf(0.025, 2 * k) / 2 / node_days, rel=1e-9)
    assert float(measured.node_day_rate_high) == pytest.approx(stats.chi2.ppf(0.975, 2 * k + 2) / 2 / node_days,
                                                               rel=1e-9)
    implied = rm.record.implied_scenario(measured)
    assert implied.gpus_per_node == gpus_per_node and implied.failure_rate == float(measured.node_day_rate)


def test_attempts_of_different_sizes_count_their_own_node_days():
    # 10 h on 16 nodes, then 9 h on 8 nodes and 12 h on 16 (sacct's AllocTRES): 2 interruptions.
    text = SACCT.replace("501|pretrain|PREEMPTED|2024-03-01T11:00:00|2024-03-01T20:00:00|09:00:00|16|"
                         "cpu=96,gres/gpu=128,node=16", "501|pretrain|PREEMPTED|2024-03-01T11:00:00|"
                         "2024-03-01T20:00:00|09:00:00|8|cpu=48,gres/gpu=64,node=8")
    record = read_run(sacct=_write(text, "sacct.txt"), run="500,501,502")
    assert record.n_gpus == 128 and "node-days counted per attempt" in str(record.summary)
    ds = measure_run(record)
    node_days = (10 * 16 + 9 * 8 + 12 * 16) / 24
    assert float(ds.node_day_rate) == pytest.approx(2 / node_days, rel=1e-12)
    assert float(ds.node_day_rate_high) == pytest.approx(stats.chi2.ppf(0.975, 6) / 2 / node_days, rel=1e-9)
    # A size given for the run holds for every attempt.
    assert float(measure_run(record, n_gpus=128).node_day_rate) == pytest.approx(2 / (31 / 24 * 16), rel=1e-12)
    assert float(measure_run(read_run(sacct=_write(text, "sacct.txt"), run="500,501,502",
                                      n_gpus=128)).node_day_rate) == pytest.approx(2 / (31 / 24 * 16), rel=1e-12)


def test_a_prediction_no_run_of_which_can_finish_is_refused_at_once():
    from click.testing import CliRunner

    result = CliRunner().invoke(main, ["run", "predict", "--example", "--failure-rate", "1e6"])
    assert result.exit_code == 2
    assert result.output.startswith("Error: --failure-rate: at 1e+06 failures per node-day no run of 10d of work "
                                    "on 4096 GPUs finishes within 100,000 failures")
