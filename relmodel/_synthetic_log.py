"""Synthetic scheduler logs with a known failure rate: the test oracle of `relmodel._fit`.

A cluster of ``n_nodes`` nodes runs ``n_jobs`` job runs arriving as a Poisson
process. Sizes are powers of two with many small and few large jobs; planned
lengths are log-normal. Each attempt of a run ends at the first of: its planned
remaining work (COMPLETED), its time limit (TIMEOUT, then resubmitted), an
infrastructure failure (NODE_FAIL, or FAILED with a health-check cause; then
requeued), a preemption (PREEMPTED or REQUEUED; requeued), a user failure
(FAILED), an out-of-memory kill (OUT_OF_MEMORY) or a cancellation (CANCELLED).
Infrastructure failures strike each node at ``failure_rate`` per node-day of
runtime (lemon nodes at ``lemon_rate_factor`` times that), so an attempt on
``N`` ordinary nodes fails after an exponential (or Weibull, same mean) time
with mean ``1 / (N r_f)`` on a clock that restarts with each attempt.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ._docparts import fill_doc_parts
from ._errors import ParameterError
from ._taxonomy import load as load_taxonomy
from ._display import key_value_table
from ._units import short_repr, to_hours

_EPOCH_2024 = int(datetime(2024, 1, 1, tzinfo=timezone.utc).timestamp())
SACCT_HEADER = ("JobID", "JobName", "Partition", "State", "Start", "End", "Elapsed", "NNodes", "AllocTRES",
                "NodeList", "Comment")
CSV_HEADER = ("job_id", "n_gpus", "start", "end", "state", "cause", "nodes")

_DOC_PARTS = {
    "attempt": """\
Parameters
----------
i : int
    The attempt.""",
}


@dataclasses.dataclass
class SyntheticLog:
    """The attempts of a synthetic cluster log, and the truth they were drawn from.

    Parameters
    ----------
    rows : dict of str to numpy.ndarray
        One entry per scheduler attempt: ``job_id``, ``n_gpus``, ``n_nodes``,
        ``start``, ``end`` (integer seconds since the epoch; ``start`` is -1
        for jobs cancelled before they started), ``state``, ``cause``,
        ``first_node`` and ``stride`` (the allocation is the nodes
        ``(first_node + stride * k) mod n_cluster_nodes`` for ``k < n_nodes``).
    truth : dict
        The parameters and the number of infrastructure failures drawn.
    n_cluster_nodes : int
        Nodes in the cluster.
    """

    rows: dict
    truth: dict
    n_cluster_nodes: int

    def __len__(self) -> int:
        return len(self.rows["job_id"])

    def __repr__(self) -> str:
        return (f"SyntheticLog({len(self):,} attempts of {np.unique(self.rows['job_id']).size:,} jobs on "
                f"{self.n_cluster_nodes:,} nodes, truth={short_repr(self.truth, 160)})")

    def _repr_html_(self) -> str:
        rows = [("attempts", f"{len(self):,}"), ("jobs", f"{np.unique(self.rows['job_id']).size:,}"),
                ("cluster nodes", f"{self.n_cluster_nodes:,}"),
                *((f"truth: {name}", short_repr(value, 120)) for name, value in self.truth.items())]
        return key_value_table("SyntheticLog", rows)

    def node_indices(self, i: int) -> np.ndarray:
        """Return the cluster node indices of attempt `i` (sorted).

        %(attempt)s

        Returns
        -------
        numpy.ndarray
            The node indices.
        """
        first, stride, count = (int(self.rows[k][i]) for k in ("first_node", "stride", "n_nodes"))
        return np.sort((first + stride * np.arange(count)) % self.n_cluster_nodes)

    def node_names(self, i: int) -> list[str]:
        """Return the node names of attempt `i`.

        %(attempt)s

        Returns
        -------
        list of str
            The node names, sorted.
        """
        return [_node_name(k) for k in self.node_indices(i)]

    def nodelist(self, i: int) -> str:
        """Return the allocation in Slurm's compressed form, e.g. ``node[0010-0013,0020]``.

        %(attempt)s

        Returns
        -------
        str
            The compressed host list.
        """
        if self.rows["start"][i] < 0:
            return "None assigned"
        index = self.node_indices(i)
        if index.size == 1:
            return _node_name(int(index[0]))
        breaks = np.flatnonzero(np.diff(index) != 1) + 1
        spans = [(int(run[0]), int(run[-1])) for run in np.split(index, breaks)]
        return "node[" + ",".join(f"{a:04d}-{b:04d}" if b > a else f"{a:04d}" for a, b in spans) + "]"

    def to_csv(self, path: str | Path | None = None) -> str:
        """Return the log as CSV (job_id, n_gpus, start, end, state, cause, nodes).

        Parameters
        ----------
        path : str or pathlib.Path, optional
            Also write it to this file.

        Returns
        -------
        str
            The CSV text.
        """
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_HEADER)
        r = self.rows
        for i in range(len(self)):
            started = r["start"][i] >= 0
            writer.writerow([r["job_id"][i], int(r["n_gpus"][i]), _iso(r["start"][i]) if started else "",
                             _iso(r["end"][i]), r["state"][i], r["cause"][i],
                             self.nodelist(i) if started else ""])
        return _maybe_write(out.getvalue(), path)

    def to_sacct(self, path: str | Path | None = None) -> str:
        """Return the log as ``sacct --parsable2`` output (with .batch/.extern/.0 steps).

        Parameters
        ----------
        path : str or pathlib.Path, optional
            As in `to_csv`.

        Returns
        -------
        str
            The sacct text.
        """
        lines = ["|".join(SACCT_HEADER)]
        r = self.rows
        for i in range(len(self)):
            started = r["start"][i] >= 0
            start = _iso(r["start"][i]) if started else "Unknown"
            elapsed = _elapsed(r["end"][i] - r["start"][i]) if started else "00:00:00"
            nodes, n_nodes, gpus = self.nodelist(i), int(r["n_nodes"][i]), int(r["n_gpus"][i])
            state = r["state"][i] + (" by 1234" if r["state"][i] == "CANCELLED" else "")
            tres = f"billing={gpus * 4},cpu={gpus * 12},gres/gpu={gpus},mem={gpus * 120}G,node={n_nodes}"
            job = r["job_id"][i]
            lines.append("|".join([job, "train", "gpu", state, start, _iso(r["end"][i]), elapsed, str(n_nodes),
                                   tres, nodes, r["cause"][i]]))
            if started:
                for step in ("batch", "extern") + (("0",) if n_nodes > 1 else ()):
                    step_state = "COMPLETED" if step == "extern" else r["state"][i]
                    lines.append("|".join([f"{job}.{step}", step, "", step_state, start, _iso(r["end"][i]), elapsed,
                                           "1" if step == "batch" else str(n_nodes), "cpu=12,mem=0,node=1",
                                           nodes, ""]))
        return _maybe_write("\n".join(lines) + "\n", path)

    def text(self, format: str = "csv") -> str:
        """Return the log as text in `format`.

        Parameters
        ----------
        format : {"csv", "sacct"}, default "csv"
            The format.

        Returns
        -------
        str
            The log's text.

        Raises
        ------
        ValueError
            On another format.
        """
        if format not in ("csv", "sacct"):
            raise ParameterError("format", f"must be 'csv' or 'sacct' (got {format!r})")
        return self.to_csv() if format == "csv" else self.to_sacct()


fill_doc_parts(_DOC_PARTS, SyntheticLog.node_indices, SyntheticLog.node_names, SyntheticLog.nodelist)


def synthetic_log(n_jobs: int, *, failure_rate: float, seed: int = 0, n_nodes: int = 1024, gpus_per_node: int = 8,
                  weibull_shape: float = 1.0, lemon_nodes: int = 0, lemon_rate_factor: float = 30.0,
                  size_decay: float = 0.5, max_gpus: int | None = None, median_length="4h", length_sigma: float = 1.2,
                  time_limit="3d", mean_arrival_gap="2min", requeue_wait="20min", preemption_rate: float = 0.005,
                  user_failure_prob: float = 0.08, oom_prob: float = 0.03, cancel_prob: float = 0.05,
                  never_started_prob: float = 0.01, array_prob: float = 0.1, node_fail_share: float = 0.6,
                  max_attempts: int = 6, taxonomy="meta-2024", format: str | None = None, path=None):
    """Draw a synthetic cluster job log with a known infrastructure failure rate.

    Parameters
    ----------
    n_jobs : int
        Job runs (each may span several scheduler attempts).
    failure_rate : float
        Infrastructure failures per node-day of runtime of an ordinary node
        (lemon nodes fail `lemon_rate_factor` times as often).
    seed : int, default 0
        The log is a deterministic function of its arguments and `seed`
        (numpy ``Generator(Philox(seed))``).
    n_nodes : int, default 1024
        Nodes in the cluster.
    gpus_per_node : int, default 8
        GPUs per node.
    weibull_shape : float, default 1.0
        Shape of the time to an infrastructure failure within an attempt
        (1: exponential); the mean stays ``1 / (N r_f)``.
    lemon_nodes : int, default 0
        How many nodes fail more often.
    lemon_rate_factor : float, default 30.0
        How many times as often they fail.
    size_decay : float, default 0.5
        Job sizes are ``2**i`` GPUs with weight ``2**(-size_decay i)``.
    max_gpus : int, optional
        The largest job; the whole cluster when None.
    median_length : float or str, default "4h"
        Median of the log-normal planned length of a run.
    length_sigma : float, default 1.2
        Sigma of that log-normal.
    time_limit : float or str, default "3d"
        Per attempt; a run that hits it is resubmitted (TIMEOUT).
    mean_arrival_gap : float or str, default "2min"
        Mean time between run submissions (exponential gaps).
    requeue_wait : float or str, default "20min"
        Wait before a resubmitted attempt starts.
    preemption_rate : float, default 0.005
        Preemptions per hour of an attempt.
    user_failure_prob : float, default 0.08
        Chance that an attempt ends in a user failure (at a uniform time).
    oom_prob : float, default 0.03
        Chance that an attempt ends in an out-of-memory kill.
    cancel_prob : float, default 0.05
        Chance that an attempt is cancelled.
    never_started_prob : float, default 0.01
        Runs cancelled while pending (no Start in the log).
    array_prob : float, default 0.1
        Small jobs written as array tasks (``123_4``).
    node_fail_share : float, default 0.6
        Infrastructure failures recorded as NODE_FAIL; the rest are FAILED with
        a health-check cause naming a taxonomy category.
    max_attempts : int, default 6
        Scheduler attempts a run may take at most.
    taxonomy : str or Taxonomy, default "meta-2024"
        The taxonomy whose end states and categories the log uses.
    format : {"csv", "sacct"}, optional
        If given, return the text in that format instead of the `SyntheticLog`.
    path : str or pathlib.Path, optional
        With `format`, also write the text to this file.

    Returns
    -------
    SyntheticLog or str
        The log, or its text when `format` is given.
    """
    _check_log_arguments(n_jobs, failure_rate, lemon_nodes, n_nodes)
    rng = np.random.Generator(np.random.Philox(seed))
    tax = load_taxonomy(taxonomy)
    limit_h, wait_h = to_hours(time_limit, "time_limit"), to_hours(requeue_wait, "requeue_wait")
    gpus, nodes, planned, arrival, job_ids = _draw_runs(
        rng, n_jobs, n_nodes=n_nodes, gpus_per_node=gpus_per_node, size_decay=size_decay, max_gpus=max_gpus,
        median_length=median_length, length_sigma=length_sigma, mean_arrival_gap=mean_arrival_gap,
        array_prob=array_prob)
    lemons = np.sort(rng.choice(n_nodes, size=lemon_nodes, replace=False)) if lemon_nodes else np.array([], int)
    placement = _Placement.for_cluster(n_nodes)
    causes = _FailureCauses(tax, node_fail_share)

    out = {k: [] for k in _ATTEMPT_COLUMNS}
    remaining, clock = planned.copy(), arrival.copy()
    active = _add_never_started(out, rng, arrival, never_started_prob)
    for _ in range(max_attempts):
        if active.size == 0:
            break
        m = active.size
        first, stride, rate = placement.draw(rng, nodes[active], failure_rate, lemons, lemon_rate_factor)
        which, length = _draw_attempt_ends(
            rng, remaining[active], rate, limit_h=limit_h, weibull_shape=weibull_shape,
            preemption_rate=preemption_rate, user_failure_prob=user_failure_prob, oom_prob=oom_prob,
            cancel_prob=cancel_prob)
        state, cause = causes.draw(rng, which)
        # Whole seconds, as schedulers log them: both written formats then carry the same times.
        start_s = np.round(clock[active] * 3600)
        end_s = start_s + np.maximum(np.round(length * 3600), 1)
        _append_attempts(out, (active, start_s, end_s, state, cause, first, stride))
        remaining[active] -= length
        again = np.isin(which, (_TIMEOUT, _INFRA, _PREEMPTED)) & (remaining[active] > 1 / 3600)
        clock[active] = end_s / 3600 + rng.exponential(wait_h, m) + 1 / 3600
        active = active[again]

    rows = _sorted_rows(out, job_ids, gpus, nodes)
    infra_rows = (rows["state"] == "NODE_FAIL") | (rows["state"] == "FAILED") & np.char.startswith(
        rows["cause"].astype(str), "health_check")
    truth = {"failure_rate": failure_rate, "weibull_shape": weibull_shape, "seed": seed, "n_jobs": n_jobs,
             "n_cluster_nodes": n_nodes, "gpus_per_node": gpus_per_node, "lemon_nodes": [_node_name(k) for k in lemons],
             "lemon_rate_factor": lemon_rate_factor, "infrastructure_failures": int(infra_rows.sum()),
             "taxonomy": tax.name}
    log = SyntheticLog(rows=rows, truth=truth, n_cluster_nodes=n_nodes)
    if format is None:
        if path is not None:
            raise ParameterError("path", "give format= too ('csv' or 'sacct')")
        return log
    text = log.text(format)
    _maybe_write(text, path)
    return text


def _check_log_arguments(n_jobs, failure_rate, lemon_nodes, n_nodes) -> None:
    """Refuse arguments no log can be drawn from."""
    if not (isinstance(n_jobs, (int, np.integer)) and n_jobs >= 1):
        raise ParameterError("n_jobs", f"must be a positive integer (got {n_jobs!r})")
    if not (math.isfinite(failure_rate) and failure_rate >= 0):
        raise ParameterError("failure_rate", f"must be finite and >= 0 (got {failure_rate!r})")
    if not 0 <= lemon_nodes <= n_nodes:
        raise ParameterError("lemon_nodes", f"must be in [0, n_nodes] (got {lemon_nodes!r})")


def _draw_runs(rng, n_jobs, *, n_nodes, gpus_per_node, size_decay, max_gpus, median_length, length_sigma,
               mean_arrival_gap, array_prob):
    """Draw what each run asks for: GPUs, nodes, planned hours, arrival hour and job id."""
    max_gpus = min(max_gpus or n_nodes * gpus_per_node, n_nodes * gpus_per_node)
    sizes = 2 ** np.arange(int(math.log2(max_gpus)) + 1)
    weights = 2.0 ** (-size_decay * np.arange(sizes.size))
    gpus = rng.choice(sizes, size=n_jobs, p=weights / weights.sum())
    nodes = -(-gpus // gpus_per_node)
    planned = to_hours(median_length, "median_length") * np.exp(length_sigma * rng.standard_normal(n_jobs))
    arrival = np.cumsum(rng.exponential(to_hours(mean_arrival_gap, "mean_arrival_gap"), n_jobs))
    array_task = (gpus <= gpus_per_node) & (rng.random(n_jobs) < array_prob)
    task_index = rng.integers(0, 32, n_jobs)
    job_ids = np.array([f"{1000 + j}_{task_index[j]}" if array_task[j] else str(1000 + j) for j in range(n_jobs)],
                       dtype=object)
    return gpus, nodes, planned, arrival, job_ids


@dataclasses.dataclass(frozen=True)
class _Placement:
    """Where attempts run, and how fast lemon nodes make them fail.

    Allocations are arithmetic progressions (first + stride * k) mod n_nodes with a stride
    coprime to n_nodes: scattered like a fragmented cluster's, and a lemon's membership is
    one modular inverse away, with no loop over a job's nodes.
    """

    n_nodes: int
    strides: np.ndarray
    inverses: np.ndarray

    @classmethod
    def for_cluster(cls, n_nodes: int) -> _Placement:
        strides = np.array([s for s in range(1, n_nodes + 1) if math.gcd(s, n_nodes) == 1][:64], dtype=np.int64)
        inverses = np.array([pow(int(s), -1, n_nodes) if n_nodes > 1 else 0 for s in strides], dtype=np.int64)
        return cls(n_nodes, strides, inverses)

    def draw(self, rng, nodes, failure_rate, lemons, lemon_rate_factor):
        """Place attempts of `nodes` nodes; return first node, stride and infrastructure failures per hour."""
        first = rng.integers(0, self.n_nodes, nodes.size)
        pick = rng.integers(0, self.strides.size, nodes.size)
        rate = nodes * (failure_rate / 24.0)
        for lemon in lemons:
            position = ((lemon - first) * self.inverses[pick]) % self.n_nodes
            rate = rate + np.where(position < nodes, (lemon_rate_factor - 1) * failure_rate / 24.0, 0.0)
        return first, self.strides[pick], rate


_ATTEMPT_COLUMNS = ("run", "start", "end", "state", "cause", "first_node", "stride")
# What may end an attempt, in the order `_draw_attempt_ends` stacks their times.
_ENDS = np.array(["COMPLETED", "TIMEOUT", "INFRA", "PREEMPTED", "FAILED", "OUT_OF_MEMORY", "CANCELLED"], dtype=object)
_TIMEOUT, _INFRA, _PREEMPTED, _USER_FAILURE = 1, 2, 3, 4


def _add_never_started(out: dict, rng, arrival, never_started_prob) -> np.ndarray:
    """Add the runs cancelled while pending to `out`; return the indices of the others."""
    never = rng.random(arrival.size) < never_started_prob
    n = never.sum()
    columns = (np.flatnonzero(never), np.full(n, -1.0), np.round((arrival[never] + rng.exponential(0.5, n)) * 3600),
               np.full(n, "CANCELLED", dtype=object), np.full(n, "", dtype=object), np.zeros(n, dtype=np.int64),
               np.ones(n, dtype=np.int64))
    _append_attempts(out, columns)
    return np.flatnonzero(~never)


def _append_attempts(out: dict, columns: tuple) -> None:
    """Append one array per column of `_ATTEMPT_COLUMNS` (in that order) to `out`."""
    for key, value in zip(_ATTEMPT_COLUMNS, columns):
        out[key].append(value)


def _draw_attempt_ends(rng, remaining, rate, *, limit_h, weibull_shape, preemption_rate, user_failure_prob,
                       oom_prob, cancel_prob):
    """Draw the time of each way an attempt may end; return which comes first (an index of
    `_ENDS`) and the attempt's length in hours."""
    m = remaining.size
    t_infra = _time_to_failure(rng, rate, weibull_shape)
    t_user = np.where(rng.random(m) < user_failure_prob, rng.random(m) * remaining, np.inf)
    t_oom = np.where(rng.random(m) < oom_prob, rng.random(m) * np.minimum(remaining, 1.0), np.inf)
    t_cancel = np.where(rng.random(m) < cancel_prob, rng.random(m) * remaining, np.inf)
    t_preempt = rng.exponential(1.0 / preemption_rate, m) if preemption_rate > 0 else np.full(m, np.inf)
    candidates = np.stack([remaining, np.full(m, limit_h), t_infra, t_preempt, t_user, t_oom, t_cancel])
    which = np.argmin(candidates, axis=0)
    return which, np.maximum(candidates[which, np.arange(m)], 1 / 3600)


class _FailureCauses:
    """The logged state and cause of each attempt's end, from a taxonomy's categories."""

    def __init__(self, tax, node_fail_share: float):
        self.node_fail_share = node_fail_share
        self.causes = np.array([f"health_check: {c.name}" for c in tax.categories], dtype=object)
        shares = np.array([c.share for c in tax.categories])
        self.shares = shares / shares.sum()

    def draw(self, rng, which: np.ndarray):
        """Return the states and causes of attempts ended by `which` (indices of `_ENDS`)."""
        m = which.size
        state, cause = _ENDS[which], np.full(m, "", dtype=object)
        infra = which == _INFRA
        as_failed = infra & (rng.random(m) >= self.node_fail_share)
        state[infra] = "NODE_FAIL"
        state[as_failed] = "FAILED"
        cause[as_failed] = self.causes[rng.choice(self.causes.size, size=as_failed.sum(), p=self.shares)]
        cause[which == _USER_FAILURE] = "exit code 1"
        state[(which == _PREEMPTED) & (rng.random(m) < 0.3)] = "REQUEUED"
        return state, cause


def _sorted_rows(out: dict, job_ids, gpus, nodes) -> dict:
    """The attempts of `out` as `SyntheticLog.rows`: by run, then start, in seconds since the epoch."""
    cat = {k: np.concatenate(v) for k, v in out.items()}
    order = np.lexsort((cat["start"], cat["run"]))
    run = cat["run"][order]
    start = cat["start"][order]
    return {
        "job_id": job_ids[run].astype(str), "n_gpus": gpus[run].astype(np.int64),
        "n_nodes": nodes[run].astype(np.int64),
        "start": np.where(start < 0, -1, start + _EPOCH_2024).astype(np.int64),
        "end": cat["end"][order].astype(np.int64) + _EPOCH_2024,
        "state": cat["state"][order].astype(str), "cause": cat["cause"][order].astype(str),
        "first_node": cat["first_node"][order].astype(np.int64), "stride": cat["stride"][order].astype(np.int64),
    }


def _time_to_failure(rng, rate_per_hour: np.ndarray, shape: float) -> np.ndarray:
    """Exponential (shape 1) or Weibull times with mean 1 / rate; infinite at rate 0."""
    with np.errstate(divide="ignore"):
        mean = np.where(rate_per_hour > 0, 1.0 / np.where(rate_per_hour > 0, rate_per_hour, 1.0), np.inf)
    if shape == 1.0:
        return mean * rng.standard_exponential(rate_per_hour.size)
    return mean / math.gamma(1 + 1 / shape) * rng.weibull(shape, rate_per_hour.size)


def _node_name(index: int) -> str:
    return f"node{index:04d}"


def _iso(seconds) -> str:
    return datetime.fromtimestamp(int(seconds), timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def _elapsed(seconds) -> str:
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def _maybe_write(text: str, path) -> str:
    if path is not None:
        Path(path).write_text(text)
    return text
