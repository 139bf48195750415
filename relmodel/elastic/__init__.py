"""Elastic scaling of deep-learning jobs on a shared GPU cluster (Saxena et al. 2020).

`allocate` gives GPUs and batch sizes to a set of jobs by dynamic programming
(with ``may_wait``, it also chooses which jobs run at all); `simulate_cluster`
runs a workload (synthetic, an ElasticFlow trace or a job CSV) under the
elastic, fixed-batch and FIFO policies, with node failures, a queue with a
waiting-time limit and admission by the allocator, into a labelled Dataset.
Throughput curves come in two families: "fitted" to the ElasticFlow traces
(`FITTED_MODELS`) and "roofline" (`ROOFLINE_MODELS`), in which small per-GPU batches
under-use a GPU and communication grows linearly with the GPUs.

    import relmodel as rm
    alloc = rm.elastic.allocate(jobs, n_gpus=64, policy="elastic")   # or "fixed-batch"
    ds = rm.elastic.simulate_cluster(rm.elastic.synthetic_workload(6, "24h", seed=1), n_gpus=64)
"""

from .._deprecation import deprecated_names, keep_public_names
from ._allocate import ALLOCATION_POLICIES, OBJECTIVES, Allocation, allocate
from ._cluster import CLUSTER_POLICIES, OUTCOMES, PolicyRun, UnfinishedJobsWarning, run_policy
from ._config import ClusterConfig
from ._dataset import common_jct_mean, simulate_cluster, summary
from ._plot import cluster_figure, load_sweep_figure
from ._jobs import Job, JobError, check_job, job_options, statistical_efficiency
from ._throughput import (CURVE_FAMILIES, FITTED_MODELS, ROOFLINE_MODELS, ParametricThroughput, ProfiledThroughput,
                          RooflineThroughput, curve_models, fit_parametric, roofline_model)
from ._traces import JobTraceError, TraceWarning, read_elasticflow, read_job_csv, read_job_trace
from ._workloads import Workload, synthetic_workload

__all__ = [
    "ALLOCATION_POLICIES",
    "CLUSTER_POLICIES",
    "CURVE_FAMILIES",
    "FITTED_MODELS",
    "OBJECTIVES",
    "OUTCOMES",
    "ROOFLINE_MODELS",
    "Allocation",
    "ClusterConfig",
    "Job",
    "JobError",
    "JobTraceError",
    "ParametricThroughput",
    "PolicyRun",
    "ProfiledThroughput",
    "RooflineThroughput",
    "TraceWarning",
    "UnfinishedJobsWarning",
    "Workload",
    "allocate",
    "check_job",
    "cluster_figure",
    "common_jct_mean",
    "curve_models",
    "fit_parametric",
    "job_options",
    "load_sweep_figure",
    "read_elasticflow",
    "read_job_csv",
    "read_job_trace",
    "roofline_model",
    "run_policy",
    "simulate_cluster",
    "statistical_efficiency",
    "summary",
    "synthetic_workload",
]

# Old names, served for one release with a DeprecationWarning.
__getattr__ = deprecated_names(__name__, {
    "MODELS": "relmodel.elastic.FITTED_MODELS",
    "POLICIES": "relmodel.elastic.CLUSTER_POLICIES",
    "TraceError": "relmodel.elastic.JobTraceError",
    "read_trace": "relmodel.elastic.read_job_trace",
})

keep_public_names(__name__)
