"""Node availability traces to replay: `time, add|remove, node` event CSVs
(the AWS spot traces of the Bamboo artifact, time in milliseconds) and
`date, time, count` instance-count series (Google Cloud preemptible traces).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._display import readable
from .._text import NotUTF8Error, decode_utf8
from .._errors import ParameterError


class NodeTraceError(ParameterError):
    """A malformed trace; ``.parameter`` is the file (and line) or the trace's field."""


@readable("time")
@dataclass(frozen=True)
class Trace:
    """Node events in time order: time in hours from the first event, add or remove, node index.

    Parameters
    ----------
    name : str
        The trace's name.
    time : numpy.ndarray
        Hours from the first event.
    add : numpy.ndarray
        True where a node joins, False where it leaves.
    node : numpy.ndarray
        Index into `node_names` of each event's node.
    node_names : tuple of str
        The nodes.
    """

    name: str
    time: np.ndarray  # float64 hours, starting at 0
    add: np.ndarray  # bool
    node: np.ndarray  # int64 indices into node_names
    node_names: tuple

    def __post_init__(self):
        """Checked, read-only copies: the replay kernel indexes its arrays by these node numbers."""
        label = f"trace {self.name!r}"
        try:
            time = np.array(self.time, dtype=float, ndmin=1)
        except (TypeError, ValueError):
            raise NodeTraceError(str(label), "times must be numbers (hours)") from None
        add, node = np.array(self.add, ndmin=1), np.array(self.node, ndmin=1)
        names = tuple(self.node_names)
        if not (time.ndim == add.ndim == node.ndim == 1 and time.size == add.size == node.size):
            raise NodeTraceError(str(label), "time, add and node must be 1-D arrays of one length "
                                         f"(got shapes {time.shape}, {add.shape}, {node.shape})")
        if not np.all(np.isfinite(time)) or np.any(time < 0) or np.any(np.diff(time) < 0):
            raise NodeTraceError(str(label), "times must be finite, >= 0 and in order")
        if add.size and add.dtype != bool and not (add.dtype.kind in "iu" and np.isin(add, (0, 1)).all()):
            raise NodeTraceError(str(label), f"add must be booleans (got {add.dtype})")
        if node.size and (node.dtype.kind not in "iu" or node.min() < 0 or node.max() >= len(names)):
            raise NodeTraceError(str(label),
                                 f"node numbers must be integers in 0..{len(names) - 1} (one per node name)")
        for field, value in (("time", time), ("add", add.astype(bool)), ("node", node.astype(np.int64)),
                             ("node_names", names)):
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
            object.__setattr__(self, field, value)

    @property
    def duration(self) -> float:
        """Hours from the first event to the last."""
        return float(self.time[-1]) if self.time.size else 0.0

    @property
    def n_nodes(self) -> int:
        """Distinct nodes in the trace."""
        return len(self.node_names)

    def nodes_present(self) -> np.ndarray:
        """Return the number of nodes present after each event.

        Returns
        -------
        numpy.ndarray
            Node count after each event.
        """
        present = np.zeros(self.n_nodes, dtype=bool)
        out = np.empty(self.time.size, dtype=np.int64)
        for i, (a, v) in enumerate(zip(self.add, self.node)):
            present[v] = a
            out[i] = present.sum()
        return out


def read_node_trace(path, name: str | None = None) -> Trace:
    """Read a node event trace.

    Either events (``milliseconds,add|remove,nodeN``) or, for files of
    ``date, time, count`` rows, an instance-count series (see `count_series`).

    Parameters
    ----------
    path : str or pathlib.Path
        The trace file.
    name : str, optional
        The trace's name; the file's stem when None.

    Returns
    -------
    Trace
        The events.

    Raises
    ------
    NodeTraceError
        On a malformed file (the message names the file and line).
    """
    path = Path(path)
    try:
        text = decode_utf8(path.read_bytes())
    except OSError as err:
        raise NodeTraceError(str(path), f"cannot read the trace ({err.strerror or err})") from None
    except NotUTF8Error as err:
        raise NodeTraceError(str(path), str(err)) from None
    lines = [(i + 1, line.strip()) for i, line in enumerate(text.splitlines()) if line.strip()]
    if not lines:
        raise NodeTraceError(str(path), "the trace is empty")
    name = name or path.stem
    first = [c.strip() for c in lines[0][1].split(",")]
    if len(first) == 3 and first[1] in ("add", "remove"):
        return _event_trace(path, name, lines)
    if len(first) == 3 and _is_date(first[0]):
        return count_series(path, name, lines)
    raise NodeTraceError(f"{path}:{lines[0][0]}", "expected 'milliseconds,add|remove,node' or 'date, time, count' "
                                              f"(got {lines[0][1]!r})")


def _event_trace(path, name, lines) -> Trace:
    times, adds, nodes = [], [], []
    names: dict[str, int] = {}
    for number, line in lines:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 3:
            raise NodeTraceError(f"{path}:{number}", f"expected 3 fields 'milliseconds,add|remove,node' (got {line!r})")
        ms, action, node = cells
        try:
            t = float(ms)
        except ValueError:
            raise NodeTraceError(f"{path}:{number}", f"time {ms!r} is not a number of milliseconds") from None
        if not np.isfinite(t) or t < 0:
            raise NodeTraceError(f"{path}:{number}", f"time must be finite and >= 0 (got {ms!r})")
        if times and t < times[-1]:
            raise NodeTraceError(f"{path}:{number}", f"time {ms} ms goes back (previous row: {times[-1]:g} ms)")
        if action not in ("add", "remove"):
            raise NodeTraceError(f"{path}:{number}", f"action must be 'add' or 'remove' (got {action!r})")
        if not node:
            raise NodeTraceError(f"{path}:{number}", "the node name is empty")
        times.append(t)
        adds.append(action == "add")
        nodes.append(names.setdefault(node, len(names)))
    hours = (np.asarray(times) - times[0]) / 3.6e6
    return Trace(name=name, time=hours, add=np.asarray(adds), node=np.asarray(nodes, dtype=np.int64),
                 node_names=tuple(names))


def _is_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def count_series(path, name, lines) -> Trace:
    """An instance-count series as node events: rows sorted by time (stable; a
    repeated time keeps its last row), a rise adds new nodes, a fall removes
    the most recently added ones."""
    stamps, counts = [], []
    for number, line in lines:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 3:
            raise NodeTraceError(f"{path}:{number}", f"expected 3 fields 'date, time, count' (got {line!r})")
        try:
            stamp = datetime.datetime.fromisoformat(f"{cells[0]} {cells[1]}")
        except ValueError:
            raise NodeTraceError(f"{path}:{number}",
                                 f"cannot read {cells[0]!r} {cells[1]!r} as a date and time") from None
        try:
            count = int(cells[2])
        except ValueError:
            raise NodeTraceError(f"{path}:{number}", f"count {cells[2]!r} is not an integer") from None
        if count < 0:
            raise NodeTraceError(f"{path}:{number}", f"count must be >= 0 (got {count})")
        stamps.append(stamp)
        counts.append(count)
    order = sorted(range(len(stamps)), key=lambda i: stamps[i])
    start = stamps[order[0]]
    times, adds, nodes = [], [], []
    alive: list[int] = []
    n_names = 0
    for k, i in enumerate(order):
        if k + 1 < len(order) and stamps[order[k + 1]] == stamps[i]:
            continue  # a later row at the same time wins
        hours = (stamps[i] - start).total_seconds() / 3600.0
        while len(alive) < counts[i]:
            alive.append(n_names)
            times.append(hours), adds.append(True), nodes.append(n_names)
            n_names += 1
        while len(alive) > counts[i]:
            times.append(hours), adds.append(False), nodes.append(alive.pop())
    if not times:
        raise NodeTraceError(str(path), "every count is 0: no node ever present")
    return Trace(name=name, time=np.asarray(times, dtype=float), add=np.asarray(adds),
                 node=np.asarray(nodes, dtype=np.int64), node_names=tuple(f"node{i}" for i in range(n_names)))
