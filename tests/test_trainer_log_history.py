"""A metrics history as CSV (W&B's run history, MLflow's metric history) read into a run and measured.

W&B's rows are laid out as wandb/wandb writes them (wandb/sdk/wandb_history.py, ``History._flush``: ``_step``, the
run's counter, continued across a resume; ``_runtime``; ``_timestamp``, ``time.time()``) and as ``Run.history()``
then ``DataFrame.to_csv`` export them (an unnamed index column first). MLflow's as mlflow/mlflow describes a metric
(mlflow/entities/metric.py, ``Metric(key, value, timestamp, step)``: ``timestamp`` integer ms since the epoch),
``MlflowClient.get_metric_history`` of two metrics written one a row.
"""

import pytest

from relmodel.record import RunRecordError, measure_run, read_run
from relmodel.record._trainers import TRAINER_FORMATS

T0 = 1714557600  # 2024-05-01T10:00:00Z
S = 10**9


def _wandb(rows) -> list:
    header = [",_step,_runtime,_timestamp,train/loss"]
    return header + [f"{i},{step},{at - T0},{at}.25,{3.0 - step / 100}" for i, (step, at) in enumerate(rows)]


# Five minutes of steps, a 30-minute pause (a restart: W&B's _step goes on), four more minutes.
WANDB = _wandb([(k, T0 + 60 * k) for k in range(6)] + [(6 + k, T0 + 2100 + 60 * k) for k in range(5)])
MLFLOW = (["key,value,timestamp,step"]
          + [f"loss,{3 - s / 100},{(T0 + 6 * s) * 1000 + 7},{s}" for s in (0, 10, 20, 30)]
          + [f"loss,{3 - s / 100},{(T0 + 300 + 6 * s) * 1000 + 7},{s}" for s in (20, 30, 40)]
          + [f"lr,0.001,{(T0 + 6 * s) * 1000 + 7},{s}" for s in (0, 10, 20, 30)])


def _write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_wandb_history_with_a_restart_read_and_measured(tmp_path):
    record = read_run(_write(tmp_path, "history.csv", WANDB))
    ds = record.events
    assert list(ds.kind.values) == (["attempt_start", "first_step"] + ["step"] * 5 + ["failure", "attempt_start",
                                    "first_step"] + ["step"] * 4)
    assert ds.time.values[0].astype("int64") == T0 * S + S // 4
    assert list(ds.step.values[[1, 6, 9, 13]]) == [0, 5, 6, 10]
    measured = measure_run(record)
    got = {str(c): int(v) for c, v in zip(measured.component.values, measured.time_ns.values)}
    assert got == {"productive": 240 * S, "checkpoint": 0, "persist_wait": 0, "lost": 300 * S, "restart": 0,
                   "startup": 0, "queue": 1800 * S}


def test_an_mlflow_history_restarts_where_the_step_goes_back(tmp_path):
    ds = read_run(_write(tmp_path, "loss.csv", MLFLOW), format="history").events
    assert list(ds.kind.values) == ["attempt_start", "first_step", "step", "step", "step", "failure",
                                    "attempt_start", "first_step", "step", "step"]
    assert list(ds.step.values[[1, 4, 7, 9]]) == [0, 30, 20, 40]
    assert ds.time.values[7].astype("int64") == (T0 + 420) * S + 7 * 10**6


def test_auto_picks_it_and_detect_is_specific(tmp_path):
    record = read_run(_write(tmp_path, "history.csv", WANDB), format="auto")
    assert "history log lines" in " ".join(record.summary.skipped)
    detect = TRAINER_FORMATS["history"].detect
    assert detect(MLFLOW)
    assert not detect(["[INFO|trainer.py:2078] 2024-05-01 10:00:00,000 >> ***** Running training *****"])
    assert not detect(["2024-05-01 10:00:00,000 INFO x: GPU available: True (cuda), used: True"])
    assert not detect(["time,event,step", "garbage", ""])


@pytest.mark.parametrize("column, value, words", [(1, "1x", "'1x' is not a step number"),
                                                  (3, "1714557900,5", "fields where the header has")])
def test_a_garbled_row_names_its_line(tmp_path, column, value, words):
    lines = WANDB.copy()
    fields = lines[6].split(",")
    fields[column] = value
    lines[6] = ",".join(fields)
    with pytest.raises(RunRecordError, match=words) as info:
        read_run(_write(tmp_path, "history.csv", lines))
    assert info.value.line == 7
