"""relmodel.pipeline._sizing: stage times and memory from model sizes, against hand arithmetic.

The references are written out here (12 h^2 per layer, 2/4/6 x parameters x
tokens, Korthikanti et al.'s activation bytes), not taken from the module.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from relmodel.pipeline._config import PipelineConfig, PipelineError, StageMemory
from relmodel.pipeline._sizing import (
    GPUS,
    MODEL_PRESETS,
    GPUSpec,
    ModelSpec,
    StageProfile,
    gpu_preset,
    model_preset,
    split_layers,
    stage_profile,
)

GIB = 2**30

# A small made-up model: 4 layers, h = 64, 4 heads, s = 16, V = 100 (12 h^2 = 49152 per layer).
TINY = ModelSpec("tiny", layers=4, hidden=64, heads=4, seq_len=16, vocab=100)
SLOW_GPU = GPUSpec("slow", peak_flops=1e6, memory=1e9, mfu=0.5)   # 5e5 FLOP/s


def tiny_flops(recompute="selective"):
    """F, B, W FLOPs per stage of TINY on 2 stages (2 layers each), micro-batches of b = 2, t = 1."""
    dense = 2 * 49152 * (2 * 16)        # 2 P_l T, T = b s = 32 tokens
    scores = 4 * 2 * 16**2 * 64         # 4 b s^2 h
    logits = 2 * (100 * 64) * (2 * 16)  # 2 V h T
    redo = {"none": 0, "selective": scores, "full": dense + scores}[recompute]
    fwd = [2 * (dense + scores), 2 * (dense + scores) + logits]
    bwd_input = [2 * (dense + 2 * scores + redo), 2 * (dense + 2 * scores + redo) + logits]
    bwd_weight = [2 * dense, 2 * dense + logits]
    return fwd, bwd_input, bwd_weight


# -- exact numbers for a small model ------------------------------------------


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_tiny_model_flops_and_times_match_hand_arithmetic(recompute):
    prof = stage_profile(TINY, SLOW_GPU, stages=2, microbatch_size=2, recompute=recompute)
    fwd, bwd_input, bwd_weight = tiny_flops(recompute)
    assert prof.layers == (2, 2)
    assert prof.fwd == pytest.approx([x / 5e5 for x in fwd], rel=1e-14)
    assert prof.bwd_input == pytest.approx([x / 5e5 for x in bwd_input], rel=1e-14)
    assert prof.bwd_weight == pytest.approx([x / 5e5 for x in bwd_weight], rel=1e-14)
    total = [f + b + w for f, b, w in zip(fwd, bwd_input, bwd_weight, strict=True)]
    assert prof.flops == pytest.approx(total, rel=1e-14)


def test_tiny_model_numbers_written_out():
    # The selective case as plain numbers: dense 3145728, scores 131072, logits 409600.
    prof = stage_profile(TINY, SLOW_GPU, stages=2, microbatch_size=2)
    assert prof.flops[0] == 6_553_600 + 7_077_888 + 6_291_456
    assert prof.flops[1] == 6_963_200 + 7_487_488 + 6_701_056
    assert prof.fwd[1] == pytest.approx(6_963_200 / 5e5, rel=1e-15)


@pytest.mark.parametrize("recompute, per_layer", [
    ("none", 16 * 2 * 64 * (34 + 5 * 4 * 16 / 64)),   # s b h (34 + 5 a s / h) = 79872
    ("selective", 34 * 16 * 2 * 64),                 # 69632
    ("full", 2 * 16 * 2 * 64),                       # 4096
])
def test_tiny_model_memory_matches_hand_arithmetic(recompute, per_layer):
    prof = stage_profile(TINY, SLOW_GPU, stages=2, microbatch_size=2, recompute=recompute)
    # 2 layers x 49152 + the embedding (stage 0) or its tied copy (last stage), 16 bytes each.
    assert prof.memory.static == pytest.approx([(2 * 49152 + 6400) * 16] * 2, rel=1e-15)
    assert prof.memory.activation == pytest.approx([2 * per_layer] * 2, rel=1e-15)
    assert prof.memory.budget == 1e9
    assert isinstance(prof.memory, StageMemory)


def test_one_stage_holds_the_embedding_once_and_runs_the_logits():
    prof = stage_profile(TINY, SLOW_GPU, stages=1, microbatch_size=2, bytes_per_param=2.0)
    assert prof.memory.static == pytest.approx([(4 * 49152 + 6400) * 2], rel=1e-15)
    fwd, _, _ = tiny_flops()
    assert prof.fwd[0] == pytest.approx((fwd[0] + fwd[1]) / 5e5, rel=1e-14)


def test_three_stages_put_the_embedding_on_the_first_and_last():
    model = ModelSpec("six", layers=6, hidden=8, heads=2, seq_len=4, vocab=10)
    prof = stage_profile(model, SLOW_GPU, stages=3, bytes_per_param=1.0)
    assert prof.memory.static == pytest.approx([2 * 768 + 80, 2 * 768, 2 * 768 + 80], rel=1e-15)


def test_given_params_scale_the_layers_but_not_the_embedding():
    model = ModelSpec("scaled", layers=4, hidden=64, heads=4, seq_len=16, vocab=100, params=4 * 50000 + 6400)
    assert model.layer_params == pytest.approx(50000, rel=1e-15)
    assert model.total_params == 4 * 50000 + 6400
    prof = stage_profile(model, SLOW_GPU, stages=4, microbatch_size=1)
    assert prof.bwd_weight[0] == pytest.approx(2 * 50000 * 16 / 5e5, rel=1e-14)
    assert prof.bwd_weight[3] == pytest.approx((2 * 50000 * 16 + 2 * 6400 * 16) / 5e5, rel=1e-14)


def test_default_params_are_12_h_squared_per_layer_plus_the_embedding():
    assert TINY.layer_params == 12 * 64 * 64
    assert TINY.embedding_params == 6400
    assert TINY.total_params == 4 * 12 * 64 * 64 + 6400


# -- shape of the times -------------------------------------------------------


def test_negligible_attention_gives_equal_f_b_w():
    # s / h = 1e-4: attention's share is ~1e-5 of a layer's FLOPs.
    model = ModelSpec("wide", layers=8, hidden=2**16, heads=8, seq_len=8, vocab=1)
    prof = stage_profile(model, SLOW_GPU, stages=4, recompute="none")
    for f, b, w in zip(prof.fwd, prof.bwd_input, prof.bwd_weight, strict=True):
        assert f / w == pytest.approx(1.0, rel=1e-4)
        assert b / w == pytest.approx(1.0, rel=1e-4)


def test_attention_makes_b_longer_than_f_longer_than_w():
    prof = stage_profile("gpt3-175b", "a100-80gb", stages=8, tensor_parallel=8, recompute="none")
    for f, b, w in zip(prof.fwd, prof.bwd_input, prof.bwd_weight, strict=True):
        assert b > f > w
    # Per layer: F / W = 1 + 4 b s^2 h / (2 P_l T) = 1 + 2 s h / P_l.
    layer = (175e9 - 50257 * 12288) / 96
    assert prof.fwd[0] / prof.bwd_weight[0] == pytest.approx(1 + 2 * 2048 * 12288 / layer, rel=1e-12)


def test_full_recompute_adds_a_forward_to_b():
    sel = stage_profile(TINY, SLOW_GPU, stages=2, recompute="none")
    full = stage_profile(TINY, SLOW_GPU, stages=2, recompute="full")
    # Stage 0 (no logits layer): B_full = B_none + F.
    assert full.bwd_input[0] == pytest.approx(sel.bwd_input[0] + sel.fwd[0], rel=1e-14)
    assert full.fwd == sel.fwd and full.bwd_weight == sel.bwd_weight


def test_gpt3_175b_on_a100_80gb_by_hand():
    prof = stage_profile("gpt3-175b", "a100-80gb", stages=8, tensor_parallel=8, microbatch_size=1)
    assert prof.layers == (12,) * 8
    layer = (175e9 - 50257 * 12288) / 96          # 1.8165e9 parameters per layer
    dense, scores, logits = 2 * layer * 2048, 4 * 2048**2 * 12288, 2 * 50257 * 12288 * 2048
    rate = 312e12 * 0.4 * 8                       # t = 8 GPUs share each product
    assert prof.fwd[0] == pytest.approx(12 * (dense + scores) / rate, rel=1e-12)
    assert prof.bwd_input[0] == pytest.approx(12 * (dense + 3 * scores) / rate, rel=1e-12)  # + selective recompute
    assert prof.bwd_weight[7] == pytest.approx((12 * dense + logits) / rate, rel=1e-12)
    assert prof.fwd[0] == pytest.approx(0.0919, abs=1e-4)
    # 34 s b h / t bytes per layer and micro-batch; 12 layers.
    assert prof.memory.activation[0] == pytest.approx(12 * 34 * 2048 * 12288 / 8, rel=1e-15)
    static = 12 * layer * 16 / 8
    assert prof.memory.static[3] == pytest.approx(static, rel=1e-15)
    capacity = math.floor((80 * GIB - static) / (12 * 34 * 2048 * 12288 / 8))
    assert prof.memory.capacity()[3] == capacity == 32


# -- step_time, mfu, tensor parallelism ---------------------------------------


def test_step_time_sets_the_busiest_stage():
    base = stage_profile(TINY, SLOW_GPU, stages=2, microbatch_size=2)
    prof = stage_profile(TINY, SLOW_GPU, stages=2, microbatch_size=2, step_time=0.25)
    busiest = max(f + b + w for f, b, w in zip(prof.fwd, prof.bwd_input, prof.bwd_weight, strict=True))
    assert busiest == pytest.approx(0.25, rel=1e-15)
    # Stage 1 (with the logits layer) is the busiest; the shares are those of the FLOPs.
    fwd, bwd_input, bwd_weight = tiny_flops()
    total = fwd[1] + bwd_input[1] + bwd_weight[1]
    assert prof.fwd == pytest.approx([0.25 * x / total for x in fwd], rel=1e-14)
    assert np.allclose(np.array(prof.bwd_input) / np.array(base.bwd_input), 0.25 / sum(
        x[1] for x in (base.fwd, base.bwd_input, base.bwd_weight)), rtol=1e-14)
    assert prof.memory == base.memory


def test_step_time_ignores_the_gpus_mfu():
    fast = GPUSpec("fast", peak_flops=1e18, memory=1e9, mfu=1.0)
    a = stage_profile(TINY, SLOW_GPU, stages=2, step_time=3.0)
    b = stage_profile(TINY, fast, stages=2, step_time=3.0)
    assert a.fwd == b.fwd and a.bwd_input == b.bwd_input and a.bwd_weight == b.bwd_weight


def test_mfu_argument_overrides_the_gpus():
    base = stage_profile(TINY, SLOW_GPU, stages=2)                 # mfu 0.5
    prof = stage_profile(TINY, SLOW_GPU, stages=2, mfu=0.25)
    assert prof.fwd == pytest.approx([2 * x for x in base.fwd], rel=1e-15)
    assert prof.flops == base.flops
    assert stage_profile(TINY, SLOW_GPU, stages=2, mfu=0.5) == base


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_two_way_tensor_parallel_halves_times_and_bytes(recompute):
    one = stage_profile(TINY, SLOW_GPU, stages=2, recompute=recompute)
    two = stage_profile(TINY, SLOW_GPU, stages=2, tensor_parallel=2, recompute=recompute)
    for name in ("fwd", "bwd_input", "bwd_weight", "flops"):
        assert getattr(two, name) == pytest.approx([x / 2 for x in getattr(one, name)], rel=1e-15)
    assert two.memory.static == pytest.approx([x / 2 for x in one.memory.static], rel=1e-15)
    # Full recompute keeps each layer's whole input (2 s b h): not split.
    factor = 1 if recompute == "full" else 2
    assert two.memory.activation == pytest.approx([x / factor for x in one.memory.activation], rel=1e-15)


def test_microbatch_size_scales_flops_and_activations_linearly():
    one = stage_profile(TINY, SLOW_GPU, stages=2, microbatch_size=1)
    three = stage_profile(TINY, SLOW_GPU, stages=2, microbatch_size=3)
    assert three.flops == pytest.approx([3 * x for x in one.flops], rel=1e-14)
    assert three.memory.activation == pytest.approx([3 * x for x in one.memory.activation], rel=1e-15)
    assert three.memory.static == one.memory.static


# -- memory and capacity ------------------------------------------------------


def test_capacity_counts_micro_batches_that_fit():
    prof = stage_profile(TINY, SLOW_GPU, stages=2, microbatch_size=2)
    static, act = (2 * 49152 + 6400) * 16, 2 * 34 * 16 * 2 * 64
    gpu = GPUSpec("sized", peak_flops=1e6, memory=static + 3.5 * act)
    assert list(stage_profile(TINY, gpu, stages=2, microbatch_size=2).memory.capacity()) == [3, 3]
    small = GPUSpec("small", peak_flops=1e6, memory=static / 2)
    assert list(stage_profile(TINY, small, stages=2, microbatch_size=2).memory.capacity()) == [0, 0]
    assert prof.memory.capacity()[0] == (1e9 - static) // act


def test_uneven_split_gives_the_first_stages_more():
    assert split_layers(10, 4) == (3, 3, 2, 2)
    assert split_layers(96, 8) == (12,) * 8
    assert stage_profile(ModelSpec("ten", 10, 8, 2, 4), SLOW_GPU, stages=4).layers == (3, 3, 2, 2)
    prof = stage_profile(ModelSpec("ten", 10, 8, 2, 4, vocab=1), SLOW_GPU, stages=4)
    assert prof.fwd[0] == prof.fwd[1] > prof.fwd[2]


# -- presets and configurations -----------------------------------------------


# name: (layers, hidden, seq_len, vocab, params given, published size)
EXPECTED_MODELS = {
    "gpt3-1.3b": (24, 2048, 2048, 50257, 1.3e9, 1.3e9),
    "gpt3-6.7b": (32, 4096, 2048, 50257, 6.7e9, 6.7e9),
    "gpt3-13b": (40, 5140, 2048, 50257, 13e9, 13e9),
    "gpt3-175b": (96, 12288, 2048, 50257, 175e9, 175e9),
    "llama2-7b": (32, 4096, 4096, 32000, None, 6.738e9),
    "llama2-70b": (80, 8192, 4096, 32000, None, 68.977e9),
}


def test_presets_are_the_expected_ones():
    assert set(MODEL_PRESETS) == set(EXPECTED_MODELS)
    for name, (layers, hidden, seq_len, vocab, params, published) in EXPECTED_MODELS.items():
        spec = MODEL_PRESETS[name]
        assert (spec.layers, spec.hidden, spec.seq_len, spec.vocab, spec.params) == (
            layers, hidden, seq_len, vocab, params)
        assert spec.total_params == pytest.approx(published, rel=1e-3) and spec.name == name
    assert (MODEL_PRESETS["gpt3-175b"].heads, MODEL_PRESETS["llama2-70b"].heads, MODEL_PRESETS["llama2-7b"].heads) == (96, 64, 32)
    gpt = [spec for name, spec in MODEL_PRESETS.items() if name.startswith("gpt3")]
    assert all((s.kv_heads, s.mlp, s.ffn_hidden, s.tied_embeddings) == (s.heads, "gelu", 4 * s.hidden, True)
               for s in gpt)
    assert (MODEL_PRESETS["llama2-7b"].kv_heads, MODEL_PRESETS["llama2-7b"].ffn_hidden) == (32, 11008)
    assert (MODEL_PRESETS["llama2-70b"].kv_heads, MODEL_PRESETS["llama2-70b"].ffn_hidden) == (8, 28672)
    assert all(MODEL_PRESETS[n].mlp == "swiglu" and not MODEL_PRESETS[n].tied_embeddings for n in ("llama2-7b", "llama2-70b"))


def test_llama2_parameters_from_its_sizes_by_hand():
    # 7B: attention 4 h^2 (32 KV heads of 32), SwiGLU 3 h f; embedding and untied output V h each.
    h, f, v = 4096, 11008, 32000
    norms = (2 * 32 + 1) * h  # two per layer and a final one: the released count has them, the formula not
    assert MODEL_PRESETS["llama2-7b"].total_params == 32 * (4 * h * h + 3 * h * f) + 2 * v * h == 6_738_415_616 - norms
    # 70B: K and V projections 2 h^2 x 8 / 64 (grouped-query attention).
    h, f = 8192, 28672
    assert MODEL_PRESETS["llama2-70b"].layer_params == 2 * h * h + 2 * h * h * 8 // 64 + 3 * h * f
    assert MODEL_PRESETS["llama2-70b"].total_params == 80 * (2 * h * h + h * h // 4 + 3 * h * f) + 2 * v * h
    assert MODEL_PRESETS["llama2-70b"].total_params == 68_976_648_192 - (2 * 80 + 1) * h  # released, less the norms


# A small grouped-query model: 4 heads, 2 of them with keys and values, SwiGLU of width 96, untied output.
GQA = ModelSpec("gqa", layers=4, hidden=64, heads=4, seq_len=16, vocab=100, kv_heads=2, mlp="swiglu",
                ffn_hidden=96, tied_embeddings=False)


def test_gqa_swiglu_untied_model_by_hand():
    # P_l = 2 h^2 + 2 h^2 (2 / 4) + 3 h f = 8192 + 4096 + 18432 = 30720; V h = 6400 twice.
    assert GQA.layer_params == 30720
    assert (GQA.embedding_params, GQA.output_params) == (6400, 6400)
    assert GQA.total_params == 4 * 30720 + 2 * 6400
    prof = stage_profile(GQA, SLOW_GPU, stages=2, microbatch_size=2, recompute="none", bytes_per_param=1.0)
    dense = 2 * 30720 * 32                   # 2 P_l T
    scores = 4 * 2 * 16**2 * 64              # 4 b s^2 h: every query head attends
    logits = 2 * 6400 * 32
    assert prof.fwd == pytest.approx([2 * (dense + scores) / 5e5, (2 * (dense + scores) + logits) / 5e5], rel=1e-14)
    assert prof.bwd_weight == pytest.approx([2 * dense / 5e5, (2 * dense + logits) / 5e5], rel=1e-14)
    # Stage 0: 2 layers + the embedding; stage 1: 2 layers + the output layer's own weights.
    assert prof.memory.static == pytest.approx([2 * 30720 + 6400, 2 * 30720 + 6400], rel=1e-15)
    # Per layer (bytes): s b h (4 + 7 + 4 x 2/4 + 3) + 6 s b f + 5 a s^2 b = 2048 x 16 + 6 x 32 x 96 + 5 x 4 x 512.
    per_layer = 2048 * 16 + 6 * 32 * 96 + 5 * 4 * 16 * 16 * 2
    assert prof.memory.activation == pytest.approx([2 * per_layer] * 2, rel=1e-15)
    selective = stage_profile(GQA, SLOW_GPU, stages=2, microbatch_size=2, recompute="selective")
    assert selective.memory.activation == pytest.approx([2 * (2048 * 16 + 6 * 32 * 96)] * 2, rel=1e-15)


def test_one_stage_holds_an_untied_output_layer_beside_the_embedding():
    prof = stage_profile(GQA, SLOW_GPU, stages=1, bytes_per_param=1.0)
    assert prof.memory.static == pytest.approx([4 * 30720 + 2 * 6400], rel=1e-15)


def test_mha_gelu_of_4h_is_korthikantis_34_sbh_and_12_h_squared():
    # The general terms reduce to the published ones: A + M f / h = 4 + 7 + 4 + 3 + 4 x 4 = 34.
    spec = ModelSpec("m", layers=2, hidden=64, heads=4, seq_len=16, vocab=100, kv_heads=4, mlp="gelu",
                     ffn_hidden=256)
    assert spec.layer_params == 12 * 64**2
    prof = stage_profile(spec, SLOW_GPU, stages=1, microbatch_size=2, recompute="selective")
    assert prof.memory.activation == pytest.approx([2 * 34 * 16 * 2 * 64], rel=1e-15)


def test_default_swiglu_width_is_llamas_rule():
    # 8 h / 3 rounded up to a multiple of 256: 4096 -> 11008 (Llama 2 7B's width).
    assert ModelSpec("s", 1, 4096, 32, 8, mlp="swiglu").ffn_hidden == 11008
    assert ModelSpec("s", 1, 64, 4, 8, mlp="swiglu").ffn_hidden == 256
    assert ModelSpec("g", 1, 64, 4, 8).ffn_hidden == 256
    assert {name: (gpu.peak_flops, gpu.memory, gpu.mfu) for name, gpu in GPUS.items()} == {
        "v100-32gb": (125e12, 32 * GIB, 0.4), "a100-40gb": (312e12, 40 * GIB, 0.4),
        "a100-80gb": (312e12, 80 * GIB, 0.4), "h100-sxm": (989e12, 80 * GIB, 0.4)}
    assert all(name == name.lower() for name in (*MODEL_PRESETS, *GPUS))


def test_gpt3_175b_default_count_is_175_billion():
    spec = ModelSpec("gpt3", layers=96, hidden=12288, heads=96, seq_len=2048)
    assert spec.total_params == 12 * 96 * 12288**2 + 50257 * 12288
    assert spec.total_params == pytest.approx(175e9, rel=0.01)


def test_preset_lookup():
    assert model_preset("GPT3-175B") is MODEL_PRESETS["gpt3-175b"]
    assert model_preset(TINY) is TINY
    assert gpu_preset(" H100-SXM ") is GPUS["h100-sxm"]
    assert gpu_preset(SLOW_GPU) is SLOW_GPU


@pytest.mark.parametrize("model", sorted(EXPECTED_MODELS))
@pytest.mark.parametrize("gpu", ["v100-32gb", "a100-40gb", "a100-80gb", "h100-sxm"])
def test_every_preset_gives_a_valid_configuration(model, gpu):
    prof = stage_profile(model, gpu, stages=4, tensor_parallel=8)
    assert isinstance(prof, StageProfile)
    cfg = prof.config(replicas=2, microbatches=4)
    assert isinstance(cfg, PipelineConfig)
    assert (cfg.stages, cfg.replicas, cfg.microbatches) == (4, 2, 4)
    assert cfg.fwd == prof.fwd and cfg.bwd_input == prof.bwd_input and cfg.bwd_weight == prof.bwd_weight
    assert cfg.memory is prof.memory and cfg.memory.budget == GPUS[gpu].memory
    assert all(0 < x < 100 for x in cfg.stage_time)
    assert sum(prof.layers) == MODEL_PRESETS[model].layers


def test_config_passes_options_and_refuses_profile_fields():
    prof = stage_profile("gpt3-6.7b", "a100-80gb", stages=4, tensor_parallel=2)
    cfg = prof.config(replicas=2, microbatches=8, order="zb-h1", backward="decoupled", p2p_delay=1e-3,
                      optimizer_time=0.5)
    assert (cfg.order, cfg.backward, cfg.p2p_delay, cfg.optimizer_time) == ("zb-h1", "decoupled", 1e-3, 0.5)
    for name in ("stages", "fwd", "bwd_input", "bwd_weight", "memory"):
        with pytest.raises(PipelineError) as info:
            prof.config(replicas=2, microbatches=8, **{name: 1})
        assert info.value.parameter == name
    with pytest.raises(PipelineError) as info:
        prof.config(replicas=0, microbatches=8)
    assert info.value.parameter == "replicas"


# -- errors -------------------------------------------------------------------


def model_fields(**changes):
    return {"name": "m", "layers": 4, "hidden": 64, "heads": 4, "seq_len": 16, "vocab": 100, **changes}


@pytest.mark.parametrize("changes, parameter", [
    ({"name": ""}, "name"), ({"name": 3}, "name"),
    ({"layers": 0}, "layers"), ({"layers": -1}, "layers"), ({"layers": 1.5}, "layers"),
    ({"layers": True}, "layers"), ({"layers": 2**53 + 1}, "layers"), ({"layers": 10**400}, "layers"),
    ({"hidden": 0}, "hidden"), ({"hidden": float("nan")}, "hidden"), ({"heads": 0}, "heads"),
    ({"seq_len": 0}, "seq_len"), ({"seq_len": "16"}, "seq_len"), ({"vocab": 0}, "vocab"),
    ({"params": float("nan")}, "params"), ({"params": float("inf")}, "params"), ({"params": 0}, "params"),
    ({"params": -1e9}, "params"), ({"params": 6400}, "params"), ({"params": "1e9"}, "params"),
    ({"params": 10**400}, "params"), ({"params": 12800, "tied_embeddings": False}, "params"),
    ({"kv_heads": 0}, "kv_heads"), ({"kv_heads": 3}, "kv_heads"), ({"kv_heads": 8}, "kv_heads"),
    ({"kv_heads": True}, "kv_heads"), ({"mlp": "relu"}, "mlp"), ({"mlp": None}, "mlp"),
    ({"ffn_hidden": 0}, "ffn_hidden"), ({"ffn_hidden": 2**53 + 1}, "ffn_hidden"),
    ({"tied_embeddings": "yes"}, "tied_embeddings"), ({"tied_embeddings": 1}, "tied_embeddings"),
])
def test_bad_model_fields_are_named(changes, parameter):
    with pytest.raises(PipelineError) as info:
        ModelSpec(**model_fields(**changes))
    assert info.value.parameter == parameter


@pytest.mark.parametrize("changes, parameter", [
    ({"peak_flops": 0}, "peak_flops"), ({"peak_flops": -1e12}, "peak_flops"),
    ({"peak_flops": float("nan")}, "peak_flops"), ({"peak_flops": float("inf")}, "peak_flops"),
    ({"peak_flops": True}, "peak_flops"), ({"memory": 0}, "memory"), ({"memory": float("nan")}, "memory"),
    ({"mfu": 0}, "mfu"), ({"mfu": 1.5}, "mfu"), ({"mfu": -0.1}, "mfu"), ({"mfu": float("nan")}, "mfu"),
    ({"name": None}, "name"),
])
def test_bad_gpu_fields_are_named(changes, parameter):
    with pytest.raises(PipelineError) as info:
        GPUSpec(**{"name": "g", "peak_flops": 1e12, "memory": 1e9, **changes})
    assert info.value.parameter == parameter


@pytest.mark.parametrize("kwargs, parameter", [
    ({"model": "gpt-5"}, "model"), ({"model": 3}, "model"), ({"model": None}, "model"),
    ({"gpu": "tpu-v4"}, "gpu"), ({"gpu": SLOW_GPU.__dict__}, "gpu"),
    ({"stages": 0}, "stages"), ({"stages": 97}, "stages"), ({"stages": 2.5}, "stages"),
    ({"tensor_parallel": 0}, "tensor_parallel"), ({"tensor_parallel": 2**60}, "tensor_parallel"),
    ({"microbatch_size": 0}, "microbatch_size"), ({"microbatch_size": -2}, "microbatch_size"),
    ({"step_time": 0}, "step_time"), ({"step_time": -1.0}, "step_time"),
    ({"step_time": float("nan")}, "step_time"), ({"step_time": float("inf")}, "step_time"),
    ({"step_time": 1.0, "mfu": 0.5}, "mfu"), ({"mfu": 0}, "mfu"), ({"mfu": 2.0}, "mfu"),
    ({"mfu": float("nan")}, "mfu"), ({"recompute": "partial"}, "recompute"), ({"recompute": None}, "recompute"),
    ({"bytes_per_param": -1}, "bytes_per_param"), ({"bytes_per_param": float("nan")}, "bytes_per_param"),
])
def test_bad_profile_arguments_are_named(kwargs, parameter):
    args = {"model": "gpt3-175b", "gpu": "a100-80gb", "stages": 8}
    args.update(kwargs)
    with pytest.raises(PipelineError) as info:
        stage_profile(args.pop("model"), args.pop("gpu"), **args)
    assert info.value.parameter == parameter
    assert isinstance(info.value, ValueError)


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(PipelineError, match=r"known: .*gpt3-175b"):
        model_preset("gpt-5")
    with pytest.raises(PipelineError, match=r"known: .*h100-sxm"):
        gpu_preset("tpu")


def test_overflowing_sizes_are_named():
    huge = ModelSpec("huge", layers=1, hidden=2, heads=1, seq_len=2**40, vocab=1, params=1e300)
    with pytest.raises(PipelineError) as info:
        stage_profile(huge, SLOW_GPU, stages=1)
    assert info.value.parameter == "model"
    crawling = GPUSpec("crawling", peak_flops=1e-300, memory=1.0, mfu=1e-20)
    with pytest.raises(PipelineError) as info:
        stage_profile("gpt3-175b", crawling, stages=8)
    assert info.value.parameter == "peak_flops"
    with pytest.raises(PipelineError) as info:
        stage_profile("gpt3-175b", SLOW_GPU, stages=8, step_time=5e-324)
    assert info.value.parameter == "step_time"


# -- properties ---------------------------------------------------------------

sizes = {
    "layers": st.integers(1, 2000),
    "hidden": st.one_of(st.integers(1, 2**16), st.just(2**53)),
    "heads": st.integers(1, 1024),
    "seq_len": st.one_of(st.integers(1, 2**17), st.just(2**40)),
    "vocab": st.one_of(st.integers(1, 2**18), st.just(2**53)),
}


@st.composite
def layouts(draw):
    fields = {name: draw(strategy) for name, strategy in sizes.items()}
    divisors = [g for g in range(1, fields["heads"] + 1) if fields["heads"] % g == 0]
    fields.update(kv_heads=draw(st.sampled_from(divisors)), mlp=draw(st.sampled_from(["gelu", "swiglu"])),
                  ffn_hidden=draw(st.one_of(st.none(), st.integers(1, 2**18))), tied_embeddings=draw(st.booleans()))
    spec = ModelSpec("drawn", **fields)
    stages = draw(st.integers(1, min(spec.layers, 128)))
    return {"model": spec, "stages": stages, "microbatch_size": draw(st.sampled_from([1, 2, 7, 2**12, 2**40])),
            "recompute": draw(st.sampled_from(["none", "selective", "full"]))}


gpus = st.builds(GPUSpec, name=st.just("g"), peak_flops=st.floats(1e6, 1e20),
                 memory=st.floats(1.0, 1e15), mfu=st.floats(1e-4, 1.0))


def hand_total_flops(spec, b, recompute):
    """F + B + W FLOPs of one micro-batch over the whole model, all GPUs of a stage together."""
    tokens = b * spec.seq_len
    h, a, g, f = spec.hidden, spec.heads, spec.kv_heads, spec.ffn_hidden
    # No `params` in the drawn models: the layer from its sizes (a Fraction: exact where h^2 g / a is not whole).
    layer = 2 * h**2 + Fraction(2 * h**2 * g, a) + (2 if spec.mlp == "gelu" else 3) * h * f
    dense = 6 * spec.layers * layer * tokens                 # 6 P T
    attention = 12 * spec.layers * b * spec.seq_len**2 * spec.hidden   # 4 b s^2 h in F, 8 in B
    logits = 6 * spec.vocab * spec.hidden * tokens           # the logits layer, tied or not, once
    redo = {"none": 0, "selective": 4 * spec.layers * b * spec.seq_len**2 * spec.hidden,
            "full": spec.layers * (2 * layer * tokens + 4 * b * spec.seq_len**2 * spec.hidden)}[recompute]
    return float(dense + attention + logits + redo)          # exact, then rounded once


@given(layouts(), gpus, st.integers(1, 2**20))
def test_times_are_positive_and_finite_and_flops_add_up(layout, gpu, tensor_parallel):
    prof = stage_profile(layout.pop("model"), gpu, tensor_parallel=tensor_parallel, **layout)
    for name in ("fwd", "bwd_input", "bwd_weight", "flops"):
        values = getattr(prof, name)
        assert len(values) == prof.stages
        assert all(0 < x < math.inf for x in values), name
    total = math.fsum(prof.flops) * tensor_parallel
    assert total == pytest.approx(hand_total_flops(prof.model, prof.microbatch_size, layout["recompute"]), rel=1e-12)
    assert all(0 <= x < math.inf for x in prof.memory.static + prof.memory.activation)
    assert sum(prof.layers) == prof.model.layers and max(prof.layers) - min(prof.layers) <= 1
    assert list(prof.layers) == sorted(prof.layers, reverse=True)


@given(layouts(), gpus, st.integers(1, 2**20), st.integers(1, 2**20))
def test_more_tensor_parallel_never_slows_a_gpu(layout, gpu, t1, t2):
    assume(t1 != t2)
    low, high = sorted((t1, t2))
    spec = layout.pop("model")
    a = stage_profile(spec, gpu, tensor_parallel=low, **layout)
    b = stage_profile(spec, gpu, tensor_parallel=high, **layout)
    for name in ("fwd", "bwd_input", "bwd_weight"):
        assert all(y <= x for x, y in zip(getattr(a, name), getattr(b, name), strict=True)), name
    assert all(y <= x for x, y in zip(a.memory.static, b.memory.static, strict=True))
    assert all(y <= x for x, y in zip(a.memory.activation, b.memory.activation, strict=True))


@given(layouts(), gpus, st.floats(1e-6, 1e6))
def test_step_time_is_the_busiest_stages_work(layout, gpu, step_time):
    prof = stage_profile(layout.pop("model"), gpu, step_time=step_time, **layout)
    work = [f + b + w for f, b, w in zip(prof.fwd, prof.bwd_input, prof.bwd_weight, strict=True)]
    assert max(work) == pytest.approx(step_time, rel=1e-14)
    assert all(0 < x < math.inf for x in prof.fwd + prof.bwd_input + prof.bwd_weight)


@given(layouts(), st.floats(5e-324, 1e308), st.floats(5e-324, 1.0), st.integers(1, 2**53))
def test_extreme_gpus_give_valid_times_or_a_named_error(layout, peak, mfu, tensor_parallel):
    gpu = GPUSpec("extreme", peak_flops=peak, memory=1.0, mfu=mfu)
    try:
        prof = stage_profile(layout.pop("model"), gpu, tensor_parallel=tensor_parallel, **layout)
    except PipelineError as err:
        assert err.parameter == "peak_flops"
        return
    assert all(0 < x < math.inf for x in prof.fwd + prof.bwd_input + prof.bwd_weight)
