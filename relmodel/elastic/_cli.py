"""`relmodel cluster`: a workload under the elastic, fixed-batch and FIFO policies."""

from __future__ import annotations

from pathlib import Path

import click

from .._cli_shared import (ONLY_WITH_OUT, DatasetPath, Duration, FigurePath, draw_figure, format_table,
                           overwrite_option, quiet_option, refuse_unused, to_json, usage_error, write_dataset)
from .._units import UNIT_REQUIRED_HELP
from ._cluster import CLUSTER_POLICIES
from ._config import ADMISSIONS
from ._throughput import CURVE_FAMILIES

_FLAGS = {"window": "--duration", "batch_range_factor": "--batch-range"}
_TABLE_KEYS = ("completed", "dropped", "rejected", "mean_jct_h", "p50_jct_h", "p90_jct_h", "utilisation",
               "gpu_hours_lost_failures", "shrinks", "restarts", "rescales")


def _factors(text: str) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in text.split(","))
    except ValueError:
        raise click.UsageError(f"--batch-range: expected LOW,HIGH factors such as 0.5,2 (got {text!r})") from None
    return low, high


def _refuse_unused_rules(policy: str, failure_rate: float, unplaceable: str, trace, out):
    """Refuse the rules that do nothing in this run: those of failures without them, those of
    the policies that rescale (elastic, fixed-batch) or change batches (elastic) with none of them."""
    refuse_unused(failure_rate == 0, "only acts with node failures; give --failure-rate or leave it out",
                  "repair_time", "restart_cost")
    refuse_unused(trace is not None and failure_rate == 0, "only acts with a synthetic workload or node failures; "
                  "with --trace give --failure-rate or leave it out", "seed")
    refuse_unused(policy == "fifo", "only acts with the elastic and fixed-batch policies (fifo never rescales)",
                  "pause", "admission", "reoptimize_every", "objective")
    refuse_unused(policy in ("fifo", "fixed-batch"), "only acts with the elastic policy (the others keep the "
                  "submitted batch)", "batch_range")
    refuse_unused(unplaceable != "queue", "only acts with --unplaceable queue; give it or leave it out", "max_wait")
    refuse_unused(out is None, ONLY_WITH_OUT, "overwrite")


@click.command("cluster", epilog=f"Durations are {UNIT_REQUIRED_HELP}. Failure rates are failures per node-day.")
@click.option("--gpus", "n_gpus", type=int, default=64, show_default=True, help="GPUs of the cluster.")
@click.option("--gpus-per-node", type=int, default=8, show_default=True, help="GPUs per node (nodes fail whole).")
@click.option("--arrival-rate", type=float, default=6.0, show_default=True,
              help="Jobs per hour of the synthetic workload (Poisson arrivals).")
@click.option("--duration", type=Duration(), default=None,
              help="Arrival window [default: 24h; with --trace the whole trace].")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
              help="Seeds the workload and the node failures.")
@click.option("--policy", type=click.Choice(["all", *CLUSTER_POLICIES]), default="all", show_default=True)
@click.option("--failure-rate", type=float, default=0.0, show_default=True, help="Node failures per node-day.")
@click.option("--repair-time", type=Duration(), default="2h", show_default=True,
              help="A failed node is back after this long.")
@click.option("--checkpoint-interval", type=Duration(), default="1h", show_default=True,
              help="Compute between checkpoints.")
@click.option("--checkpoint-cost", type=Duration(), default="1min", show_default=True,
              help="Blocking time of a checkpoint write.")
@click.option("--restart-cost", type=Duration(), default="10min", show_default=True, help="Restart from a checkpoint.")
@click.option("--pause", type=Duration(), default="30s", show_default=True,
              help="Stop of a job whose GPUs or batch change.")
@click.option("--unplaceable", type=click.Choice(["drop", "queue"]), default="drop", show_default=True,
              help="What becomes of a job that cannot be placed when it arrives.")
@click.option("--max-wait", type=Duration(), default=None,
              help="With --unplaceable queue: a job not started this long after its submission is dropped "
                   "[default: it waits for ever].")
@click.option("--admission", type=click.Choice(list(ADMISSIONS)), default="first-fit", show_default=True,
              help="Which waiting jobs start (elastic and fixed-batch): in arrival order while their minimums "
                   "fit, or as the allocator's dynamic program chooses (a job may get zero GPUs).")
@click.option("--reoptimize-every", type=Duration(), default=None,
              help="Also re-solve the allocation this often (it is re-solved on every arrival, completion, "
                   "failure and repair anyway).")
@click.option("--objective", type=click.Choice(["throughput", "speedup"]), default="throughput", show_default=True,
              help="What the allocator maximises: total samples/s, or total speedup (each job's throughput over "
                   "its throughput on one GPU at its submitted batch).")
@click.option("--curve", type=click.Choice(list(CURVE_FAMILIES)), default="fitted", show_default=True,
              help="Throughput curves of the jobs' models: fitted to the ElasticFlow traces, or roofline "
                   "(small per-GPU batches under-use a GPU, communication grows linearly with the GPUs).")
@click.option("--batch-range", default="0.5,2", show_default=True,
              help="Each job's batch range: LOW,HIGH times its submitted batch.")
@click.option("--trace", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Replay a trace instead of a synthetic workload: an ElasticFlow CSV, or a job CSV "
                   "(submit_time, model, work, batch, and optional bounds).")
@click.option("--out", type=DatasetPath(), default=None,
              help="Write the Dataset (.nc or .zarr).")
@overwrite_option()
@click.option("--plot", type=FigurePath(), default=None,
              help="Draw utilisation and completion-time figures to this image file.")
@click.option("--json", "as_json", is_flag=True, help='Print {"policies": {...}, ...} as JSON.')
@quiet_option("No progress display and no notes on stderr.")
def cluster(n_gpus, gpus_per_node, arrival_rate, duration, seed, policy, failure_rate, repair_time,
            checkpoint_interval, checkpoint_cost, restart_cost, pause, unplaceable, max_wait, admission,
            reoptimize_every, objective, curve, batch_range,
            trace, out, overwrite, plot, as_json, quiet):
    """Simulate a GPU cluster: elastic scaling (GPUs and batch sizes by dynamic
    programming) against fixed batch sizes and plain FIFO, with node failures;
    prints a table per policy."""
    from .. import _feedback as feedback
    from ._dataset import simulate_cluster, summary
    from ._traces import JobTraceError, read_job_trace
    from ._workloads import synthetic_workload

    factors = _factors(batch_range)
    _refuse_unused_rules(policy, failure_rate, unplaceable, trace, out)
    try:
        # The workload's and the allocator's kernels compile (or load) on first use, below.
        feedback.announce_compile("relmodel.elastic._allocation_kernel", ("extend_allocation", "stream_uniforms"),
                                  what="cluster kernels")
        if trace is not None:
            refuse_unused(True, "not used with --trace (arrivals come from the trace)", "arrival_rate")
            if not trace.is_file():
                raise click.UsageError(f"--trace: no such file {str(trace)!r}")
            workload = read_job_trace(trace, batch_range_factor=factors, window=duration, curve=curve)
        else:
            window = "24h" if duration is None else duration  # 0 is a window too (and refused)
            workload = synthetic_workload(arrival_rate, window, seed, batch_range_factor=factors, curve=curve)
        ds = simulate_cluster(workload, policy, n_gpus=n_gpus, gpus_per_node=gpus_per_node, seed=seed,
                              failure_rate=failure_rate, repair_time=repair_time,
                              checkpoint_interval=checkpoint_interval, checkpoint_cost=checkpoint_cost,
                              restart_cost=restart_cost, pause=pause, unplaceable=unplaceable,
                              max_wait=max_wait, admission=admission, reoptimize_every=reoptimize_every,
                              objective=objective)  # its progress bar: on a terminal, not with --quiet
    except JobTraceError as err:
        raise click.UsageError(f"--trace: {err}") from None
    except ValueError as err:
        raise usage_error(err, _FLAGS) from None
    if out is not None:
        write_dataset(ds, out, overwrite=overwrite, writer="relmodel cluster")
    rows = summary(ds)
    rejected = [{"job_id": str(ds.job_id.values[i]), "reason": str(reason)}
                for i, reason in zip(ds.rejected_job.values, ds.rejection_reason.values)]
    # The results first, then the figure.
    if as_json:
        click.echo(to_json({"policies": rows, "rejected_jobs": rejected, "attrs": dict(ds.attrs)}))
    else:
        source = trace.name if trace is not None else f"synthetic, {arrival_rate:g} jobs/h"
        click.echo(f"{source}: {ds.sizes['job']} jobs on {n_gpus} GPUs"
                   + (f", {failure_rate:g} failures per node-day" if failure_rate else ""))
        click.echo(format_table([{"policy": name, **{k: row[k] for k in _TABLE_KEYS}}
                                 for name, row in rows.items()]))
        if rejected:
            click.echo(f"{len(rejected)} job(s) rejected at submission; first: {rejected[0]['reason']}")
    if plot is not None:
        from ._plot import cluster_figure

        draw_figure(plot, cluster_figure, ds, plot)
    if as_json:
        return
    written = [str(p) for p in (out, plot) if p is not None]
    if written:
        click.echo("wrote " + " and ".join(written))
