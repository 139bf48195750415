"""Per-stage task times and memory from a model's sizes and a GPU's speed.

Instead of hand-entered F, B and W times, describe a decoder-only transformer
(`ModelSpec`), a GPU (`GPUSpec`) and the parallel layout; `stage_profile`
gives each pipeline stage's forward (F), input-gradient (B) and
weight-gradient (W) time per micro-batch, and what a stage keeps in memory
(`StageMemory`). `StageProfile.config` turns it into a `PipelineConfig`.
Presets: `MODEL_PRESETS` and `GPUS` (`model_preset`, `gpu_preset`). For example::

    from relmodel.pipeline._sizing import stage_profile
    profile = stage_profile("gpt3-175b", "a100-80gb", stages=8, tensor_parallel=8)
    cfg = profile.config(replicas=4, microbatches=16, backward="decoupled")

Notation: L transformer layers of hidden size h, a attention heads of which
g hold keys and values (`ModelSpec.kv_heads`: g = a is multi-head attention,
1 < g < a grouped-query, g = 1 multi-query), MLP width f, sequence length s,
vocabulary V; p pipeline stages, t-way tensor parallelism, micro-batches of b
sequences, so T = b s tokens per micro-batch.

Parameters. A transformer layer has P_l = 2 h^2 (the query and output
projections) + 2 h^2 g / a (keys and values, one head of h / a each per KV
head) + the MLP: 2 h f for a GELU MLP (f = 4 h by default: 12 h^2 per layer in
all with a = g), 3 h f for a SwiGLU one (gate, up and down projections; biases
and norms left out). The embedding has V h; an untied output (logits) layer
another V h, a tied one none. So P = L P_l + V h (tied) or + 2 V h (untied).
When `ModelSpec.params` gives the total, P_l = (params - V h) / L, or (params
- 2 V h) / L untied, instead: the embedding and output layer are counted once
each, and P_l absorbs whatever the formula leaves out. Layers are split over
the stages as evenly as possible, the first L mod p stages taking one more.
The embedding lives on stage 0; the output layer is computed on the last stage.

FLOPs of one micro-batch. The standard 2/4/6 x parameters x tokens counts
(Kaplan et al. 2020, "Scaling laws for neural language models"; Narayanan et
al. 2021, "Efficient large-scale language model training on GPU clusters
using Megatron-LM"): a matrix product with P weights costs 2 P T FLOPs in the
forward pass, 2 P T for the gradient with respect to its input (B) and 2 P T
for the gradient with respect to its weights (W), 6 P T in all. Per
transformer layer, with P = P_l; on the last stage also for the logits layer,
with P = V h. Attention's score and context products (Q K^T and scores x V)
have no weights: 4 b s^2 h FLOPs per layer forward (every query head attends,
however few heads hold keys and values), twice that in B (the gradients of
both operands), none in W. So for a stage with n layers::

    F = n (2 P_l T + 4 b s^2 h)  [+ 2 V h T on the last stage]
    B = n (2 P_l T + 8 b s^2 h)  [+ 2 V h T on the last stage]  + recomputation
    W = n (2 P_l T)              [+ 2 V h T on the last stage]

each divided by t: tensor parallelism splits every product over t GPUs
(`StageProfile.flops` holds F + B + W per GPU). Recomputation (below) runs
again, within B, the part of the forward pass whose activations were not kept:
n 4 b s^2 h with "selective", n (2 P_l T + 4 b s^2 h) with "full" (the
logits layer is not recomputed: its input is kept).

Times. A GPU runs at `peak_flops` x `mfu` (model FLOPs utilisation), so each
time is its FLOPs per GPU / (peak_flops x mfu), in seconds; the `mfu`
argument of `stage_profile` replaces `GPUSpec.mfu`. With `step_time` (one
micro-batch's measured F + B + W on the busiest stage, seconds) the times are
instead scaled so that the busiest stage's F + B + W is `step_time`: the
FLOPs then set only the shares of the stages and of F, B and W.

Memory (bytes per GPU; Korthikanti et al. 2022, "Reducing activation
recomputation in large transformer models", Table 2, with tensor and
sequence parallelism). Static: a stage's parameters / t x `bytes_per_param`
(16 for mixed-precision Adam: 2 for 16-bit weights, 2 for 16-bit gradients,
12 for the 32-bit master weights and two moments). Stage 0 holds the
embedding; the last stage holds the output layer: its own weights when
untied, else (with p > 1) a copy of the embedding (as Megatron-LM does, the
two copies' gradients all-reduced). Activations kept per micro-batch in
flight and layer, 16-bit values, one byte per dropout-mask entry:

- recompute="none": (A s b h + M s b f + 5 a s^2 b) / t;
- recompute="selective" (attention's scores recomputed in B): (A s b h + M s b f) / t;
- recompute="full" (only each layer's input kept, the layer recomputed in
  B): 2 s b h.

Here A = 4 (the two layer norms' inputs) + 7 + 4 g / a (attention: its
input, Q, K and V, the output projection's input, a dropout mask) + 3 (the
MLP's input and its dropout mask), and M = 4 for GELU (its input and output)
or 6 for SwiGLU (gate and up outputs, and their product). With g = a and a
GELU MLP of f = 4 h this is Korthikanti et al.'s 34 s b h (+ 5 a s^2 b).

A stage's activation bytes are its layers times that (the embedding's and
the logits layer's own activations are left out: small next to the layers'
for all but tiny models). `StageMemory.capacity()` then gives the
micro-batches each stage can hold in flight.
"""

from __future__ import annotations

import dataclasses
import math

from .._checks import check_choice, check_real
from .._display import readable
from ._config import PipelineConfig, PipelineError, StageMemory, check_count, check_time

MLPS = ("gelu", "swiglu")
"""MLP kinds: GELU (two projections, width 4 h by default) or SwiGLU (gate, up
and down projections; width by default Llama's: 8 h / 3 rounded up to a multiple of 256)."""

RECOMPUTE = ("none", "selective", "full")
"""Activation recomputation: none, Korthikanti et al.'s selective (attention's
scores), or full (each layer from its input)."""

GIB = 2**30
"""Bytes in a GiB."""

MAX_SIZE = 2**53
"""Most layers, hidden units, heads, tokens, vocabulary entries, GPUs or stages
a size may have: every integer up to it is exact in float64, so the FLOP counts
are computed from exact sizes."""

# Profile fields a caller of StageProfile.config cannot override: they come from the profile.
_PROFILE_FIELDS = ("stages", "fwd", "bwd_input", "bwd_weight", "memory")


def _size(name: str, value) -> int:
    n = check_count(name, value)
    if n > MAX_SIZE:
        raise PipelineError(name, f"must be at most 2**53, exact in float64 (got {n!r})")
    return n


def _positive(name: str, value) -> float:
    x = check_real(name, value, error=PipelineError)
    if x <= 0:
        raise PipelineError(name, f"must be > 0 (got {value!r})")
    return x


def _utilisation(name: str, value) -> float:
    x = check_real(name, value, error=PipelineError)
    if not 0 < x <= 1:
        raise PipelineError(name, f"must be in (0, 1] (got {value!r})")
    return x


@readable()
@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer's sizes.

    Parameters
    ----------
    name : str
        What to call it.
    layers : int
        Transformer layers L.
    hidden : int
        Hidden size h.
    heads : int
        Attention heads a (need not divide `hidden`: GPT-3 13B's do not).
    seq_len : int
        Sequence length s, tokens.
    vocab : int, default 50257
        Vocabulary size V (GPT-2's BPE by default).
    params : float, optional
        Total parameters. None: from the sizes (the module's description).
        Given: each layer has (params - V h) / L, or (params - 2 V h) / L
        with an untied output layer, so the total matches with the embedding
        and output layer counted once each.
    kv_heads : int, optional
        Heads g that hold keys and values, dividing `heads`: None (or
        `heads`) for multi-head attention, fewer for grouped-query
        attention, 1 for multi-query attention.
    mlp : {"gelu", "swiglu"}, default "gelu"
        The MLP kind (`MLPS`).
    ffn_hidden : int, optional
        MLP width f. None: 4 h for GELU; for SwiGLU Llama's rule, 8 h / 3
        rounded up to a multiple of 256.
    tied_embeddings : bool, default True
        Whether the output (logits) layer shares the embedding's weights
        (GPT) or has its own (Llama).

    Raises
    ------
    PipelineError
        If a size is not an integer in [1, 2**53], `kv_heads` does not
        divide `heads`, `mlp` is not one of `MLPS`, or `params` is not a
        finite number above the embedding and output layer's parameters (the
        error names the field).
    """

    name: str
    layers: int
    hidden: int
    heads: int
    seq_len: int
    vocab: int = 50257
    params: float | None = None
    kv_heads: int | None = None
    mlp: str = "gelu"
    ffn_hidden: int | None = None
    tied_embeddings: bool = True

    def __post_init__(self):
        def put(name, value):  # a frozen dataclass: normalised fields are set past its guard
            object.__setattr__(self, name, value)

        if not isinstance(self.name, str) or not self.name:
            raise PipelineError("name", f"must be a non-empty string (got {self.name!r})")
        for field in ("layers", "hidden", "heads", "seq_len", "vocab"):
            put(field, _size(field, getattr(self, field)))
        put("kv_heads", self.heads if self.kv_heads is None else _size("kv_heads", self.kv_heads))
        if self.kv_heads > self.heads or self.heads % self.kv_heads:
            raise PipelineError("kv_heads", f"must divide heads = {self.heads} (got {self.kv_heads!r})")
        put("mlp", check_choice("mlp", self.mlp, MLPS, PipelineError))
        if self.ffn_hidden is None:  # derived from hidden (<= 2**53), so exact in float64 as it is
            put("ffn_hidden", 4 * self.hidden if self.mlp == "gelu" else -(-(8 * self.hidden // 3) // 256) * 256)
        else:
            put("ffn_hidden", _size("ffn_hidden", self.ffn_hidden))
        if not isinstance(self.tied_embeddings, bool):
            raise PipelineError("tied_embeddings", f"must be True or False (got {self.tied_embeddings!r})")
        if self.params is not None:
            params = check_real("params", self.params, error=PipelineError)
            outer = self.embedding_params + self.output_params
            if not params > outer:
                what = "embedding's vocab x hidden" if self.tied_embeddings else "embedding and output layer's"
                raise PipelineError("params", f"must exceed the {what} {outer:.6g} (got {self.params!r})")
            put("params", params)

    @property
    def layer_params(self) -> float:
        """Parameters of one transformer layer, P_l (from the sizes unless `params` is given)."""
        if self.params is None:
            h = float(self.hidden)
            attention = 2.0 * h * h + 2.0 * h * h * self.kv_heads / self.heads
            mlp = (2.0 if self.mlp == "gelu" else 3.0) * h * float(self.ffn_hidden)
            return attention + mlp
        return (self.params - self.embedding_params - self.output_params) / self.layers

    @property
    def embedding_params(self) -> float:
        """Parameters of the token embedding, V h."""
        return float(self.vocab) * float(self.hidden)

    @property
    def output_params(self) -> float:
        """Parameters of the output (logits) layer of its own: V h untied, 0 tied to the embedding."""
        return 0.0 if self.tied_embeddings else self.embedding_params

    @property
    def total_params(self) -> float:
        """All parameters, L P_l + V h (+ V h untied); `params` when given."""
        if self.params is not None:
            return self.params
        return self.layers * self.layer_params + self.embedding_params + self.output_params


@readable()
@dataclasses.dataclass(frozen=True)
class GPUSpec:
    """A GPU: its dense 16-bit speed, its memory and the share of the speed a model reaches.

    Parameters
    ----------
    name : str
        What to call it.
    peak_flops : float
        Dense 16-bit (FP16/BF16 tensor core) FLOP/s.
    memory : float
        Memory, bytes.
    mfu : float, default 0.4
        Model FLOPs utilisation in (0, 1]: the model's FLOPs per second over
        `peak_flops` (about 0.3 to 0.55 for large-model training).

    Raises
    ------
    PipelineError
        If `peak_flops` or `memory` is not a finite number > 0, or `mfu` is
        not in (0, 1] (the error names the field).
    """

    name: str
    peak_flops: float
    memory: float
    mfu: float = 0.4

    def __post_init__(self):
        def put(name, value):  # a frozen dataclass: normalised fields are set past its guard
            object.__setattr__(self, name, value)

        if not isinstance(self.name, str) or not self.name:
            raise PipelineError("name", f"must be a non-empty string (got {self.name!r})")
        put("peak_flops", _positive("peak_flops", self.peak_flops))
        put("memory", _positive("memory", self.memory))
        put("mfu", _utilisation("mfu", self.mfu))


# Sizes from Brown et al. 2020, "Language models are few-shot learners", Table 2.1
# (context 2048, GPT-2's 50257-token vocabulary, tied embeddings, GELU MLPs of 4 h);
# that table gives the 13B model d_model 5140 with 40 heads of 128, and the XL
# (1.3B) 24 heads of 128 with d_model 2048: copied as printed. Llama 2 from
# Touvron et al. 2023, "Llama 2: open foundation and fine-tuned chat models", and
# its released configurations (4096 context, 32000 tokens, untied output layer,
# SwiGLU MLPs of 11008 and 28672, 70B with 8 KV heads): their parameters follow
# from the sizes (6.738e9 and 68.977e9; the released weights add only the norms).
MODEL_PRESETS: dict[str, ModelSpec] = {
    spec.name: spec for spec in (
        ModelSpec("gpt3-1.3b", layers=24, hidden=2048, heads=24, seq_len=2048, params=1.3e9),
        ModelSpec("gpt3-6.7b", layers=32, hidden=4096, heads=32, seq_len=2048, params=6.7e9),
        ModelSpec("gpt3-13b", layers=40, hidden=5140, heads=40, seq_len=2048, params=13e9),
        ModelSpec("gpt3-175b", layers=96, hidden=12288, heads=96, seq_len=2048, params=175e9),
        ModelSpec("llama2-7b", layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000, mlp="swiglu",
                  ffn_hidden=11008, tied_embeddings=False),
        ModelSpec("llama2-70b", layers=80, hidden=8192, heads=64, seq_len=4096, vocab=32000, kv_heads=8,
                  mlp="swiglu", ffn_hidden=28672, tied_embeddings=False),
    )
}
"""Preset models by lower-case name: GPT-3 1.3B, 6.7B, 13B and 175B; Llama 2 7B and 70B.

:meta hide-value:
"""

# Dense FP16/BF16 tensor-core peaks (without 2:4 sparsity) from NVIDIA's data sheets:
# V100 SXM2 125 TFLOP/s, A100 312 TFLOP/s, H100 SXM5 989 TFLOP/s. Memory taken as GiB.
GPUS: dict[str, GPUSpec] = {
    spec.name: spec for spec in (
        GPUSpec("v100-32gb", peak_flops=125e12, memory=32 * GIB),
        GPUSpec("a100-40gb", peak_flops=312e12, memory=40 * GIB),
        GPUSpec("a100-80gb", peak_flops=312e12, memory=80 * GIB),
        GPUSpec("h100-sxm", peak_flops=989e12, memory=80 * GIB),
    )
}
"""Preset GPUs by lower-case name (mfu 0.4): V100 32 GB, A100 40 and 80 GB, H100 SXM.

:meta hide-value:
"""


def _preset(kind: str, value, presets: dict, spec_type: type):
    if isinstance(value, spec_type):
        return value
    if isinstance(value, str) and value.strip().lower() in presets:
        return presets[value.strip().lower()]
    known = ", ".join(presets)
    if isinstance(value, str):
        raise PipelineError(kind, f"unknown {kind} {value!r}; known: {known}")
    raise PipelineError(kind, f"must be a preset name or a {spec_type.__name__} (got {type(value).__name__}); "
                              f"known: {known}")


def model_preset(name: str | ModelSpec) -> ModelSpec:
    """Return a preset model by name (case-insensitive); a `ModelSpec` passes through.

    Parameters
    ----------
    name : str or ModelSpec
        A key of `MODEL_PRESETS`, or a model.

    Returns
    -------
    ModelSpec
        The model.

    Raises
    ------
    PipelineError
        On ``"model"``, if the name is not a preset (the message lists them).
    """
    return _preset("model", name, MODEL_PRESETS, ModelSpec)


def gpu_preset(name: str | GPUSpec) -> GPUSpec:
    """Return a preset GPU by name (case-insensitive); a `GPUSpec` passes through.

    Parameters
    ----------
    name : str or GPUSpec
        A key of `GPUS`, or a GPU.

    Returns
    -------
    GPUSpec
        The GPU.

    Raises
    ------
    PipelineError
        On ``"gpu"``, if the name is not a preset (the message lists them).
    """
    return _preset("gpu", name, GPUS, GPUSpec)


@readable()
@dataclasses.dataclass(frozen=True)
class StageProfile:
    """Per-stage task times and memory of a model on a GPU layout; built by `stage_profile`.

    Parameters
    ----------
    model : ModelSpec
        The model.
    gpu : GPUSpec
        The GPU.
    stages : int
        Pipeline stages p.
    tensor_parallel : int
        GPUs t each stage's layers are split over.
    microbatch_size : int
        Sequences b per micro-batch.
    layers : tuple of int
        Transformer layers per stage.
    fwd : tuple of float
        Per stage, F seconds per micro-batch.
    bwd_input : tuple of float
        Per stage, B seconds per micro-batch (with any recomputation).
    bwd_weight : tuple of float
        Per stage, W seconds per micro-batch.
    flops : tuple of float
        Per stage, F + B + W FLOPs of one micro-batch on one GPU.
    memory : StageMemory
        One GPU's memory (`budget`), and per stage its static bytes and its
        activation bytes per micro-batch in flight.
    """

    model: ModelSpec
    gpu: GPUSpec
    stages: int
    tensor_parallel: int
    microbatch_size: int
    layers: tuple[int, ...]
    fwd: tuple[float, ...]
    bwd_input: tuple[float, ...]
    bwd_weight: tuple[float, ...]
    flops: tuple[float, ...]
    memory: StageMemory

    def config(self, replicas: int, microbatches: int, **options) -> PipelineConfig:
        """Return a pipeline configuration with these stage times (seconds) and memory.

        Parameters
        ----------
        replicas : int
            Data-parallel replicas d.
        microbatches : int
            Micro-batches m per replica per iteration.
        **options
            Other `PipelineConfig` fields: order, backward, optimizer,
            p2p_delay, reroute_delay, optimizer_time (seconds).

        Returns
        -------
        PipelineConfig
            The configuration (validated).

        Raises
        ------
        PipelineError
            If an option is one the profile sets (stages, times, memory), or
            `PipelineConfig` refuses a value (the error names it).
        """
        for name in _PROFILE_FIELDS:
            if name in options:
                raise PipelineError(name, "is set by the profile; build another profile to change it")
        return PipelineConfig(stages=self.stages, replicas=replicas, microbatches=microbatches, fwd=self.fwd,
                              bwd_input=self.bwd_input, bwd_weight=self.bwd_weight, memory=self.memory, **options)


def split_layers(layers: int, stages: int) -> tuple[int, ...]:
    """Split layers over stages as evenly as possible, the remainder to the first stages.

    Parameters
    ----------
    layers : int
        Transformer layers L.
    stages : int
        Pipeline stages p, at most L.

    Returns
    -------
    tuple of int
        Layers per stage: L // p, plus one on each of the first L mod p.

    Raises
    ------
    PipelineError
        On ``"stages"``, if there are more stages than layers.
    """
    layers, stages = _size("layers", layers), _size("stages", stages)
    if stages > layers:
        raise PipelineError("stages", f"{stages} stages but only {layers} layers: every stage needs one")
    base, extra = divmod(layers, stages)
    return tuple(base + (i < extra) for i in range(stages))


def stage_profile(model: str | ModelSpec, gpu: str | GPUSpec, *, stages: int, tensor_parallel: int = 1,
                  microbatch_size: int = 1, step_time: float | None = None, mfu: float | None = None,
                  recompute: str = "selective", bytes_per_param: float = 16.0) -> StageProfile:
    """Per-stage F, B and W seconds per micro-batch and memory, from the model's sizes.

    The formulas are in the module's description.

    Parameters
    ----------
    model : str or ModelSpec
        The model, or a key of `MODEL_PRESETS`.
    gpu : str or GPUSpec
        The GPU, or a key of `GPUS`.
    stages : int
        Pipeline stages p (at most the model's layers).
    tensor_parallel : int, default 1
        GPUs t each stage is split over (tensor and sequence parallelism).
    microbatch_size : int, default 1
        Sequences b per micro-batch.
    step_time : float, optional
        Measured seconds of one micro-batch's F + B + W on the busiest stage;
        the times are scaled to it. None: FLOPs / (peak_flops x mfu).
    mfu : float, optional
        Model FLOPs utilisation in (0, 1] instead of the GPU's; not with
        `step_time`.
    recompute : {"selective", "none", "full"}, default "selective"
        Activation recomputation (see `RECOMPUTE`).
    bytes_per_param : float, default 16.0
        Static bytes per parameter (16: mixed-precision Adam).

    Returns
    -------
    StageProfile
        The stage times, FLOPs and memory.

    Raises
    ------
    PipelineError
        If a parameter is invalid, the two presets unknown, both `step_time`
        and `mfu` given, or the FLOPs or times overflow float64 (the error
        names the parameter).
    """
    spec, device = model_preset(model), gpu_preset(gpu)
    p = _size("stages", stages)
    t = _size("tensor_parallel", tensor_parallel)
    b = _size("microbatch_size", microbatch_size)
    if step_time is not None:
        step_time = _positive("step_time", step_time)
        if mfu is not None:
            raise PipelineError("mfu", "step_time sets the times; give step_time or mfu, not both")
    rate_share = device.mfu if mfu is None else _utilisation("mfu", mfu)
    recompute = check_choice("recompute", recompute, RECOMPUTE, PipelineError)
    bytes_per_param = check_time("bytes_per_param", bytes_per_param)
    layers = split_layers(spec.layers, p)

    h, s, a = float(spec.hidden), float(spec.seq_len), float(spec.heads)
    tokens = float(b) * s
    dense = 2.0 * spec.layer_params * tokens     # one pass (F, B or W) of one layer's weight products
    scores = 4.0 * b * s * s * h                 # attention's Q K^T and scores x V, forward
    logits = 2.0 * spec.embedding_params * tokens
    redo = {"none": 0.0, "selective": scores, "full": dense + scores}[recompute]
    last = p - 1
    fwd = [(n * (dense + scores) + (logits if i == last else 0.0)) / t for i, n in enumerate(layers)]
    bwd_input = [(n * (dense + 2.0 * scores + redo) + (logits if i == last else 0.0)) / t
                 for i, n in enumerate(layers)]
    bwd_weight = [(n * dense + (logits if i == last else 0.0)) / t for i, n in enumerate(layers)]
    flops = [f + bi + w for f, bi, w in zip(fwd, bwd_input, bwd_weight, strict=True)]
    if not all(math.isfinite(x) for x in flops):
        raise PipelineError("model", f"{spec.name}: FLOPs per micro-batch overflow float64 (layers, hidden, "
                                     "seq_len or microbatch_size too large)")

    if step_time is not None:
        scale = step_time / max(flops)    # the busiest stage's F + B + W becomes step_time
        times = [[x * scale for x in row] for row in (fwd, bwd_input, bwd_weight)]
    else:
        rate = device.peak_flops * rate_share
        rate_culprit = "peak_flops" if mfu is None else "mfu"  # a given mfu scales the GPU's peak
        if rate == 0:  # both tiny: their product underflows
            raise PipelineError(rate_culprit, f"peak_flops x mfu = {device.peak_flops!r} x {rate_share!r} "
                                             "underflows to 0")
        times = [[x / rate for x in row] for row in (fwd, bwd_input, bwd_weight)]
    if not all(0 < x < math.inf for row in times for x in row):
        culprit = "step_time" if step_time is not None else rate_culprit
        raise PipelineError(culprit, "gives stage times outside float64's range (0 or overflowing); the model's "
                                     f"FLOPs per GPU span {min(flops):.3g} to {max(flops):.3g}")

    # Korthikanti et al. 2022, Table 2, by the layer's attention and MLP kind: bytes kept per layer
    # and micro-batch (sequence parallelism with t > 1); the module's description has the terms.
    sbh = s * b * h
    mlp_kept = (4.0 if spec.mlp == "gelu" else 6.0) * s * b * spec.ffn_hidden
    kept = (14.0 + 4.0 * spec.kv_heads / spec.heads) * sbh + mlp_kept
    per_layer = {"none": (kept + 5.0 * a * s * s * b) / t, "selective": kept / t, "full": 2.0 * sbh}[recompute]
    # Stage 0 holds the embedding; the last stage the output layer: its own weights, or a copy of the
    # tied embedding (none when p == 1: the one stage has it).
    output = spec.output_params if not spec.tied_embeddings else (spec.embedding_params if p > 1 else 0.0)
    embedding = [spec.embedding_params * (i == 0) + output * (i == last) for i in range(p)]
    static = [(n * spec.layer_params + e) / t * bytes_per_param for n, e in zip(layers, embedding, strict=True)]
    memory = StageMemory(budget=device.memory, static=tuple(static), activation=tuple(n * per_layer for n in layers))
    return StageProfile(model=spec, gpu=device, stages=p, tensor_parallel=t, microbatch_size=b, layers=layers,
                        fwd=tuple(times[0]), bwd_input=tuple(times[1]), bwd_weight=tuple(times[2]),
                        flops=tuple(flops), memory=memory)


__all__ = [
    "GIB",
    "GPUS",
    "MAX_SIZE",
    "MLPS",
    "MODEL_PRESETS",
    "RECOMPUTE",
    "GPUSpec",
    "ModelSpec",
    "StageProfile",
    "gpu_preset",
    "model_preset",
    "split_layers",
    "stage_profile",
]
