"""The replay at a run's own plan reproduces every record it measures.

Records here are written by a small trainer of the test's own, apart from the
package: each attempt runs at its own pace (and each step at some jitter
around it), logs informative `step` lines, may fall back past its latest
checkpoint on restore, and meets failures in its initialisation, its waits
for persistence, its writes and its compute. The trainer keeps the true
components as it goes; the package must measure them back exactly and walk
the same wall at the run's own plan.
"""

import random
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relmodel import ParameterError
from relmodel.record import measure_run, read_run, replay_run
from relmodel.record._measure import MEASURED_COMPONENTS

MS = 10**6  # ns
START = datetime(2024, 1, 1, tzinfo=timezone.utc)


def _stamp(ms: int) -> str:
    """An ISO 8601 instant with milliseconds, `ms` after 2024-01-01T00:00:00Z."""
    instant = START + timedelta(milliseconds=ms)
    return instant.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


class _Trainer:
    """A run as a trainer lives it, in integer milliseconds, with its true components."""

    def __init__(self, rng: random.Random, knobs: dict):
        self.rng, self.knobs = rng, knobs
        self.t = 0  # ms since START
        self.rows = []
        self.truth = dict.fromkeys(MEASURED_COMPONENTS, 0)
        self.path = []  # (kind, ms) on the run's path since the start: "compute" or "write", or a checkpoint mark
        self.saved = []  # (step, index in path after its write) of the checkpoints on the path, oldest first
        self.step = 0

    def log(self, event, step="", duration="", wait="", reason=""):
        self.rows.append(f"{_stamp(self.t)},{event},{step},{duration},{wait},{reason}")

    def run(self, n_steps: int, every: int, failures: list):
        """Run `n_steps` steps, a checkpoint every `every`, meeting failures after the given runtimes."""
        self.log("attempt_start")
        first = True
        while True:
            life = failures.pop(0) if failures else None
            if self.attempt(first, life, n_steps, every):
                return
            first = False
            if self.rng.random() < self.knobs["stop_in_queue"]:
                return  # the record ends before the next attempt
            queue = self.rng.randint(0, 3_600_000)
            self.t += queue
            self.truth["queue"] += queue
            self.log("attempt_start")
            self.restore()

    def spend(self, ms, life, kind):
        """Spend `ms` of the attempt, or the life it has left: whether the failure struck first."""
        if life is not None and self.alive + ms > life:
            ms = life - self.alive
            self.t += ms
            self.alive = life
            return ms, True
        self.t += ms
        self.alive += ms
        return ms, False

    def attempt(self, first: bool, life, n_steps: int, every: int) -> bool:
        """One attempt: whether the run ended in it."""
        self.alive = 0
        init = self.rng.choice([0, 1, 60_000, 600_000])
        spent, struck = self.spend(init, life, "init")
        self.truth["startup" if first else "restart"] += spent
        if struck:
            self.log("failure", reason="xid 79")
            return False
        self.log("first_step", self.step + 1)
        pace = self.rng.choice([1_000, 2_500, 7_001]) * self.knobs["pace"][self.rng.randrange(3)]
        while self.step < n_steps:
            step_ms = pace + self.rng.randint(0, self.knobs["jitter"])
            spent, struck = self.spend(step_ms, life, "compute")
            self.path.append(("compute", spent))
            if struck:
                self.log("failure", reason="NCCL timeout")
                return False
            self.step += 1
            if self.step % every == 0 and self.step < n_steps:
                if self.write(life):
                    return False
            elif self.rng.random() < self.knobs["step_lines"]:
                self.log("step", self.step)
        self.log("run_end", self.step)
        return True

    def write(self, life) -> bool:
        """A checkpoint at this step (a wait for persistence first, sometimes): whether a failure cut it."""
        wait = self.rng.choice([0, 0, 1_500, 30_000])
        spent, struck = self.spend(wait, life, "wait")
        self.truth["persist_wait"] += spent
        if struck:
            self.log("failure", wait=f"{spent / 1000:.3f}" if spent else "", reason="GPU ECC error")
            return True
        duration = self.rng.choice([1, 1_000, 45_000, 61_234])
        spent, struck = self.spend(duration, life, "write")
        self.path.append(("write", spent))
        if struck:  # a write cut short: the failure carries the wait before it
            self.log("failure", wait=f"{wait / 1000:.3f}" if wait else "", reason="Faulty GPU")
            return True
        self.saved.append((self.step, len(self.path)))
        self.log("checkpoint_written", self.step, f"{duration / 1000:.3f}", f"{wait / 1000:.3f}" if wait else "")
        return False

    def restore(self):
        """Back to the latest checkpoint, or an older one (a fall-back): the path above it is lost."""
        depth = 0
        if self.saved and self.rng.random() < self.knobs["fallback"]:
            depth = self.rng.randint(1, len(self.saved))
        keep = len(self.saved) - depth
        restored_step, path_end = self.saved[keep - 1] if keep else (0, 0)
        del self.saved[keep:]
        self.truth["lost"] += sum(ms for _, ms in self.path[path_end:])
        del self.path[path_end:]
        self.step = restored_step
        if depth or self.rng.random() < 0.5:
            self.log("checkpoint_restored", restored_step)

    def finish(self):
        """The true totals of what the path kept (a record that ends down has lost the rest)."""
        if self.rows[-1].split(",")[1] == "failure":
            self.restore_latest()
        self.truth["productive"] = sum(ms for kind, ms in self.path if kind == "compute")
        self.truth["checkpoint"] = sum(ms for kind, ms in self.path if kind == "write")
        return {k: v * MS for k, v in self.truth.items()}

    def restore_latest(self):
        path_end = self.saved[-1][1] if self.saved else 0
        self.truth["lost"] += sum(ms for _, ms in self.path[path_end:])
        del self.path[path_end:]


KNOBS = st.fixed_dictionaries({
    "pace": st.lists(st.sampled_from([1, 2, 3]), min_size=3, max_size=3),
    "jitter": st.sampled_from([0, 1, 999]),
    "step_lines": st.sampled_from([0.0, 0.3, 1.0]),
    "fallback": st.sampled_from([0.0, 0.3, 1.0]),
    "stop_in_queue": st.sampled_from([0.0, 0.1]),
})


def _records(seed, knobs, tmp_path):
    rng = random.Random(seed)
    trainer = _Trainer(rng, knobs)
    n_steps, every = rng.randint(1, 400), rng.choice([1, 7, 50])
    failures = sorted(rng.sample(range(1, 3_000_000), rng.randint(0, 6)))
    failures = [b - a for a, b in zip([0] + failures, failures)]  # each attempt's life
    trainer.run(n_steps, every, failures)
    truth = trainer.finish()
    path = tmp_path / "events.csv"
    path.write_text("time,event,step,duration_s,wait_s,reason\n" + "\n".join(trainer.rows) + "\n")
    return path, truth, trainer.rows


@settings(max_examples=150)
@given(st.integers(0, 2**32), KNOBS)
def test_the_runs_own_plan_reproduces_every_generated_record(tmp_path_factory, seed, knobs):
    path, truth, rows = _records(seed, knobs, tmp_path_factory.mktemp("records"))
    record = read_run(path)
    measured = measure_run(record)
    if not record.has_trainer_events:  # a record that ends in the first startup says only its boundaries
        assert int(measured.wall_ns) == sum(truth.values())
        return
    for c in MEASURED_COMPONENTS:
        assert int(measured.time_ns.sel(component=c)) == truth[c], c
    if truth["productive"] == 0:
        with pytest.raises(ParameterError, match="no productive work"):
            replay_run(record, n_runs=100)
        return
    replayed = replay_run(record, n_runs=100)
    assert bool(replayed.reproduced), "\n".join(rows)
    run = replayed.sel(plan="run")
    assert float(run.wall) == int(measured.wall_ns) / 3.6e12
    assert int(run.failures) == int(measured.interruptions)


_STEP_LINE_BEFORE_FAILURE = """\
time,event,step,duration_s,wait_s,reason
2024-01-01T00:00:00Z,attempt_start,,,,
2024-01-01T00:10:00Z,first_step,1,,,
2024-01-01T01:10:00Z,checkpoint_written,100,60,,
2024-01-01T02:10:00Z,checkpoint_written,200,60,,
2024-01-01T03:15:00Z,step,300,,,
2024-01-01T03:15:30Z,failure,,,,Faulty GPU
2024-01-01T03:35:00Z,attempt_start,,,,
2024-01-01T03:45:00Z,first_step,201,,,
2024-01-01T04:44:00Z,step,300,,,
2024-01-01T04:45:00Z,checkpoint_written,300,60,,
2024-01-01T05:05:00Z,run_end,,,,
"""

_FALLBACK_AT_ANOTHER_PACE = """\
time,event,step,duration_s,wait_s,reason
2024-01-01T00:00:00Z,attempt_start,,,,
2024-01-01T00:10:00Z,first_step,1,,,
2024-01-01T01:10:00Z,checkpoint_written,100,60,,
2024-01-01T02:10:00Z,checkpoint_written,200,60,,
2024-01-01T02:40:00Z,failure,,,,Faulty GPU
2024-01-01T03:00:00Z,attempt_start,,,,
2024-01-01T03:05:00Z,checkpoint_restored,100,,,
2024-01-01T03:10:00Z,first_step,101,,,
2024-01-01T04:20:00Z,checkpoint_written,200,60,,
2024-01-01T05:20:00Z,checkpoint_written,300,60,,
2024-01-01T05:40:00Z,run_end,,,,
"""


@pytest.mark.parametrize("text", [_STEP_LINE_BEFORE_FAILURE, _FALLBACK_AT_ANOTHER_PACE])
@pytest.mark.parametrize("truncate", range(4, 12))
def test_every_prefix_of_a_record_is_reproduced(tmp_path, text, truncate):
    # A record that stops anywhere (in a queue, a restart, compute or right at a failure) is measured and
    # walked to its end; one that stops in a restart once failed to add up.
    path = tmp_path / "events.csv"
    path.write_text("\n".join(text.splitlines()[:truncate]) + "\n")
    assert bool(replay_run(read_run(path), n_runs=100).reproduced)


@pytest.mark.parametrize("text, wall_min, lost_min, interval_min", [
    # The step line at 03:15 is progress: the failure loses the 65.5 min since the write at step 200.
    (_STEP_LINE_BEFORE_FAILURE, 305, 65.5, 59),
    # Steps 101-200 are redone at another pace (69 min, not 59): no write at the first pace's position.
    (_FALLBACK_AT_ANOTHER_PACE, 340, 90, (59 + 69 + 59) / 3),
])
def test_hand_written_records_are_reproduced(tmp_path, text, wall_min, lost_min, interval_min):
    path = tmp_path / "events.csv"
    path.write_text(text)
    record = read_run(path)
    measured = measure_run(record)
    assert int(measured.wall_ns) == wall_min * 60 * 10**9
    assert float(measured.time.sel(component="lost")) * 60 == pytest.approx(lost_min)
    # The mean interval over the writes the run's end kept.
    assert float(measured.checkpoint_interval) * 60 == pytest.approx(interval_min)
    replayed = replay_run(record, n_runs=100)
    assert bool(replayed.reproduced)
    assert float(replayed.wall.sel(plan="run")) * 60 == pytest.approx(wall_min)
    assert float(replayed.time.sel(plan="run", component="lost")) * 60 == pytest.approx(lost_min)
