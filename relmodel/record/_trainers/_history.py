"""A metrics history exported as CSV: W&B's run history or MLflow's metric history.

Learned from wandb/wandb, wandb/sdk/wandb_history.py: ``History._flush`` stamps every logged row with ``_step``
(the run's step counter, which a resumed run continues from ``run.starting_step``), ``_runtime`` and
``_timestamp`` (``time.time()``: seconds since the epoch); ``Run.history()`` returns those rows, columns included,
and ``DataFrame.to_csv`` writes them (an unnamed index column first). And from mlflow/mlflow,
mlflow/entities/metric.py: ``Metric(key, value, timestamp, step)``, ``timestamp`` an integer of milliseconds since
the epoch and ``step`` an integer; ``MlflowClient.get_metric_history`` returns them, written one a row.
"""

from __future__ import annotations

import csv
import statistics
from decimal import Decimal

from .._events import RunRecordError, event_columns
from ._format import TrainerFormat, event, instant, step_number

# A pause between rows longer than both is a restart: a logging cadence stretched that far is a process gone.
RESTART_GAP_NS = 10 * 60 * 10**9
RESTART_GAP_CADENCES = 20
_COLUMNS = {"wandb": ("_step", "_timestamp"), "mlflow": ("step", "timestamp")}


def _header(lines: list):
    """The first non-blank line's index and its columns, stripped."""
    for index, text in enumerate(lines):
        if text.strip():
            return index, [name.strip() for name in next(csv.reader([text]))]
    return None, []


def _kind(columns: list):
    """Which export the columns are (W&B's first: its rows may also carry a metric named "step")."""
    return next((kind for kind, needed in _COLUMNS.items() if set(needed) <= set(columns)), None)


def _row_time(text: str, kind: str, path: str, line: int) -> int:
    if kind == "wandb":
        return instant(text, None, path, line)
    if not text.isdigit():
        raise RunRecordError(path, line, "timestamp", f"{text!r} is not MLflow's milliseconds since the epoch")
    return instant(format(Decimal(text).scaleb(-3), "f"), None, path, line)


def _rows(lines: list, path: str) -> list:
    """(time_ns, step, line) of every row, in time order (ties keep the file's)."""
    first, columns = _header(lines)
    kind = _kind(columns)
    step_at, time_at = (columns.index(name) for name in _COLUMNS[kind])
    reader = csv.reader(lines[first + 1:])
    rows = []
    for values in reader:
        line = first + 1 + reader.line_num
        if not any(value.strip() for value in values):
            continue
        if len(values) != len(columns):
            raise RunRecordError(path, line, "", f"{len(values)} fields where the header has {len(columns)}")
        step = step_number(values[step_at].strip(), path, line, "the step", columns[step_at])
        rows.append((_row_time(values[time_at].strip(), kind, path, line), step, line))
    return sorted(rows, key=lambda row: row[0])


def _restart_gap(rows: list) -> int:
    """The pause that reads as a restart: past both a fixed floor and many of the history's usual cadence."""
    gaps = [b[0] - a[0] for a, b in zip(rows, rows[1:]) if b[0] > a[0]]
    return max(RESTART_GAP_NS, RESTART_GAP_CADENCES * int(statistics.median(gaps))) if gaps else RESTART_GAP_NS


def _parse(lines: list, path: str, zone):
    rows = _rows(lines, path)
    gap, events, previous = _restart_gap(rows), [], None
    for at, step, line in rows:
        if previous is not None and step == previous[1]:
            continue  # the same step again (another metric's row)
        if previous is None or step < previous[1] or at - previous[0] > gap:
            if previous is not None:  # the history cannot say why or exactly when the attempt ended
                events.append(event(path, previous[2], previous[0], "failure"))
            events.append(event(path, line, at, "attempt_start"))
            events.append(event(path, line, at, "first_step", step=step))
        else:
            events.append(event(path, line, at, "step", step=step))
        previous = (at, step, line)
    return event_columns(events)


def _detect(lines: list) -> bool:
    return _kind(_header(lines)[1]) is not None


HISTORY_FORMAT = TrainerFormat(
    name="history",
    title="a W&B run history (Run.history(): _step, _timestamp) or MLflow metric history (step, timestamp in ms) "
          "as CSV",
    detect=_detect,
    parse=_parse,
    reads=("each row's step and time (W&B's _step and _timestamp, epoch seconds; else MLflow's step and "
           "timestamp, epoch milliseconds), in time order: a row whose step goes back, or that follows a pause "
           f"longer than {RESTART_GAP_NS // 60 // 10**9} minutes and {RESTART_GAP_CADENCES} times the median "
           "pause between rows, begins a new attempt; rows repeating the previous step (other metrics) are "
           "skipped"),
    cannot=("A history holds only logged steps: no checkpoints (measure_run then reads all compute before a "
            "failure as lost), no cause of a failure, no end of the run. Each attempt is read as starting at its "
            "first logged step, with that step its first (start-up and restart read as none), and as failing at "
            "its last logged step (the time after it reads as queue): an sacct export gives the attempts' true "
            "starts and ends. W&B continues _step across a resume, so there only the pause shows a restart; "
            "a restart quicker than the pause rule is not seen."),
)
