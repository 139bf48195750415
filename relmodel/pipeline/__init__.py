"""Pipeline training under failures: an exact schedule simulator, ReCycle's
adaptive pipelining and its baselines, and throughput over a run.

For example::

    import relmodel as rm
    rm.pipeline.iteration_time(stages=4, replicas=4, microbatches=8, fwd=1.0, bwd_input=1.0,
                               bwd_weight=1.0, strategy="recycle", failed={1: 1})   # 33.0
    profile = rm.pipeline.stage_profile("gpt3-175b", "a100-80gb", stages=8, tensor_parallel=8)
    cfg = profile.config(replicas=8, microbatches=16)      # task times (s) and memory from model sizes

Layers: `graph` builds task arrays, `schedule` runs them (the kernels in
`relmodel.pipeline._schedule_kernel`), `planner` plans ReCycle's adapted iteration
(`plan_exact` its exact search, `_plan_kernel` its list scheduler), `recycle` and
`strategies` give each strategy's steady state, `sizing` turns model sizes into task
times and memory, `runs` integrates them along failure paths, `datasets` labels.
"""

from .._deprecation import deprecated_names
from .config import (
                     BACKWARDS,
                     OPTIMIZERS,
                     ORDERS,
                     PipelineConfig,
                     PipelineError,
                     StageMemory,
                     failure_mask,
                     spread_failures,
)
from .datasets import (
                     PLACEMENTS,
                     failure_set,
                     recycle_check,
                     recycle_summary,
                     replay_traces,
                     schedule_dataset,
                     simulate_runs,
                     throughput_table,
)
from .plot import throughput_figure
from .planner import PLAN_METHODS, AdaptedPlan, PlannerWarning, lower_bound
from .recycle import recycle_plan, recycle_schedule
from .sizing import GPUS, MODEL_PRESETS, GPUSpec, ModelSpec, StageProfile, gpu_preset, model_preset, stage_profile
from .runs import RunModel
from .schedule import DeadlockError, Schedule, fault_free
from .strategies import (
                     RECOVERY_STRATEGIES,
                     StrategyOptions,
                     StrategyResult,
                     bamboo_schedule,
                     evaluate,
                     iteration_time,
                     work_bound,
)
from .traces import NodeTraceError, Trace, read_node_trace

__all__ = [
    "AdaptedPlan",
    "BACKWARDS",
    "GPUS",
    "GPUSpec",
    "MODEL_PRESETS",
    "ModelSpec",
    "PLAN_METHODS",
    "PlannerWarning",
    "StageMemory",
    "StageProfile",
    "gpu_preset",
    "lower_bound",
    "model_preset",
    "recycle_plan",
    "stage_profile",
    "DeadlockError",
    "OPTIMIZERS",
    "ORDERS",
    "PLACEMENTS",
    "PipelineConfig",
    "PipelineError",
    "RunModel",
    "RECOVERY_STRATEGIES",
    "Schedule",
    "StrategyOptions",
    "StrategyResult",
    "Trace",
    "NodeTraceError",
    "bamboo_schedule",
    "evaluate",
    "failure_mask",
    "failure_set",
    "fault_free",
    "iteration_time",
    "read_node_trace",
    "recycle_check",
    "recycle_summary",
    "recycle_schedule",
    "replay_traces",
    "schedule_dataset",
    "simulate_runs",
    "spread_failures",
    "throughput_figure",
    "throughput_table",
    "work_bound",
]

# Old names, served for one release with a DeprecationWarning.
__getattr__ = deprecated_names(__name__, {
    "MODELS": "relmodel.pipeline.MODEL_PRESETS",
    "STRATEGIES": "relmodel.pipeline.RECOVERY_STRATEGIES",
    "TraceError": "relmodel.pipeline.NodeTraceError",
    "failed_workers": "relmodel.pipeline.failure_mask",
    "read_trace": "relmodel.pipeline.read_node_trace",
})
