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

from .._deprecation import deprecated_names, keep_public_names
from ._config import (
    BACKWARDS,
    OPTIMIZERS,
    ORDERS,
    PipelineConfig,
    PipelineError,
    StageMemory,
    failure_mask,
    spread_failures,
)
from ._datasets import (
    PLACEMENTS,
    failure_set,
    recycle_check,
    recycle_summary,
    replay_traces,
    schedule_dataset,
    simulate_runs,
    throughput_table,
)
from ._cli import format_runs, format_steady_state
from ._plot import throughput_figure
from ._planner import PLAN_METHODS, AdaptedPlan, PlannerWarning, adapted_plan, lower_bound
from ._recycle import recycle_plan, recycle_schedule
from ._sizing import GPUS, MODEL_PRESETS, GPUSpec, ModelSpec, StageProfile, gpu_preset, model_preset, stage_profile
from ._runs import RunModel
from ._schedule import DeadlockError, Schedule, fault_free
from ._strategies import (
    RECOVERY_STRATEGIES,
    StrategyOptions,
    StrategyResult,
    bamboo_schedule,
    evaluate,
    iteration_time,
    work_bound,
)
from ._traces import NodeTraceError, Trace, read_node_trace

__all__ = [
    "BACKWARDS",
    "GPUS",
    "MODEL_PRESETS",
    "OPTIMIZERS",
    "ORDERS",
    "PLACEMENTS",
    "PLAN_METHODS",
    "RECOVERY_STRATEGIES",
    "AdaptedPlan",
    "DeadlockError",
    "GPUSpec",
    "ModelSpec",
    "NodeTraceError",
    "PipelineConfig",
    "PipelineError",
    "PlannerWarning",
    "RunModel",
    "Schedule",
    "StageMemory",
    "StageProfile",
    "StrategyOptions",
    "StrategyResult",
    "Trace",
    "adapted_plan",
    "bamboo_schedule",
    "evaluate",
    "failure_mask",
    "format_runs",
    "format_steady_state",
    "failure_set",
    "fault_free",
    "gpu_preset",
    "iteration_time",
    "lower_bound",
    "model_preset",
    "read_node_trace",
    "recycle_check",
    "recycle_plan",
    "recycle_schedule",
    "recycle_summary",
    "replay_traces",
    "schedule_dataset",
    "simulate_runs",
    "spread_failures",
    "stage_profile",
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

keep_public_names(__name__)
