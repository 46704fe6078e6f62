"""The memory preflight: its arithmetic, and what it refuses before submission."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.launchers.compose import compose
from harness.config.errors import ConfigError
from harness.launchers.compose import validated as validate
from harness.trainers.verl.memory import (Model, Setup, activations_gb, padded_micro_tokens, offloaded_gb, refusal, resident_gb, rollout_gb, tp_candidates,
                                          training_gb)
from harness.trainers.verl.overrides import RunPaths, verl_overrides

REPO = Path(__file__).resolve().parents[2]
QWEN3_30B = Model("Qwen3-30B-A3B-Base", params_b=30.5, layers=48, kv_heads=4, head_dim=128, heads=32,
                  expert_params_b=29.0)
QWEN3_8B = Model("Qwen3-8B-Base", params_b=8.2, layers=36, kv_heads=8, head_dim=128, heads=32)


def setup(**changes) -> Setup:
    base = dict(gpu_gb=80.0, gpus_per_node=8, gpus=16, utilization=0.6, rollout_tp=1, rollout_bytes=2,
                sequence=10240, megatron=True, offload=True, train_tp=1, expert_parallel=8)
    return Setup(**{**base, **changes})


def test_rollout_is_weights_over_tp_plus_one_full_sequence_of_kv():
    # 30.5e9 x 2 bytes = 61.0 GB; KV: 2 x 48 layers x 4 heads x 128 x 2 bytes = 98,304 bytes per token
    assert rollout_gb(QWEN3_30B, setup()) == pytest.approx((61.0e9 + 98304 * 10240) / 1e9)
    # TP 2 halves the weights and the KV heads on each GPU
    assert rollout_gb(QWEN3_30B, setup(), tp=2) == pytest.approx((30.5e9 + 49152 * 10240) / 1e9)
    # past the KV heads, each GPU still holds one
    assert rollout_gb(QWEN3_30B, setup(), tp=8) == pytest.approx((61.0e9 / 8 + 2 * 48 * 1 * 128 * 2 * 10240) / 1e9)
    assert rollout_gb(QWEN3_30B, setup(rollout_bytes=1)) == pytest.approx((30.5e9 + 98304 * 10240) / 1e9)


def test_trainer_states():
    fsdp = setup(megatron=False, expert_parallel=1, offload=False, gpus=8)
    assert resident_gb(QWEN3_8B, fsdp) == pytest.approx(12 * 8.2 / 8)
    assert training_gb(QWEN3_8B, fsdp) == pytest.approx(16 * 8.2 / 8)
    assert resident_gb(QWEN3_8B, setup(megatron=False, offload=True)) == 0.0


def test_moe_shards_experts_by_expert_parallel_and_the_rest_by_tensor_parallel_only():
    # the 1.5B outside the experts are whole on every rank at TP 1: ~54 GB per GPU, not 6 x 30.5 / 8 + ... = 46
    megatron = setup(offload=False)
    assert resident_gb(QWEN3_30B, megatron) == pytest.approx(6 * (1.5 + 29.0 / 8) + 12 * 30.5 / 16)
    assert resident_gb(QWEN3_30B, megatron) == pytest.approx(53.6, abs=0.1)
    assert training_gb(QWEN3_30B, setup(train_tp=2)) == pytest.approx(6 * (1.5 / 2 + 29.0 / 16) + 12 * 30.5 / 16)
    dense = setup(offload=False, expert_parallel=1, train_tp=2)  # a dense model: everything over TP
    assert resident_gb(QWEN3_8B, dense) == pytest.approx(6 * 8.2 / 2 + 12 * 8.2 / 16)


def test_offload_needs_host_memory_per_node():
    # Megatron: the bf16 shard (2 bytes) and the optimizer (12 bytes / GPUs) per GPU, 8 GPUs a node
    assert offloaded_gb(QWEN3_30B, setup()) == pytest.approx(2 * (1.5 + 29.0 / 8) + 12 * 30.5 / 16)
    assert offloaded_gb(QWEN3_8B, setup(megatron=False, expert_parallel=1, gpus=8)) == pytest.approx(12 * 8.2 / 8)
    assert offloaded_gb(QWEN3_30B, setup(offload=False)) == 0.0
    line = refusal(QWEN3_30B, setup(rollout_tp=2, host_gb=64.0), "launcher profile 'gpu_node'")
    assert line == ("launcher.mem_gb=64 does not fit trainer.verl.offload=true for model=Qwen3-30B-A3B-Base: the "
                    "offloaded actor states take 265 GB of host memory per node (8 GPUs x 33.1 GB) of the 45 GB "
                    "Ray's object store leaves (launcher profile 'gpu_node'); set launcher.mem_gb=379 or more")
    assert refusal(QWEN3_30B, setup(rollout_tp=2, host_gb=379.0), "x") is None
    assert refusal(QWEN3_30B, setup(rollout_tp=2, host_gb=None), "x") is None  # unknown: not checked


def test_tp_candidates_divide_gpus_and_heads():
    assert tp_candidates(QWEN3_30B, setup()) == [1, 2, 4, 8]
    assert tp_candidates(Model("m", 1.0, 2, 2, 64, 12), setup(gpus_per_node=8)) == [1, 2, 4]


def test_the_issue_case_is_refused_naming_a_tp_that_fits():
    line = refusal(QWEN3_30B, setup(), "launcher profile 'gpu_node'")
    assert line.startswith("trainer.verl.rollout_tensor_parallel=1 does not fit model=Qwen3-30B-A3B-Base: vLLM needs "
                           "62.0 GB per GPU")
    assert "of its 48.0 GB (gpu_memory_utilization=0.6 x 80 GB, launcher profile 'gpu_node')" in line
    assert line.endswith("trainer.verl.rollout_tensor_parallel=2 fits (31.0 GB)")
    assert refusal(QWEN3_30B, setup(rollout_tp=2), "x") is None
    assert refusal(QWEN3_30B, setup(rollout_bytes=1), "x") is None  # FP8 rollout fits at TP 1


def test_nothing_fits_says_so():
    line = refusal(QWEN3_30B, setup(gpu_gb=24.0, gpus_per_node=1, gpus=1), "x")
    assert "no rollout tensor-parallel size up to 1 fits; use precision=fp8_rollout" in line


def test_trainer_beside_vllm_names_offload():
    line = refusal(QWEN3_30B, setup(rollout_tp=2, offload=False), "x")
    assert line.startswith("trainer.verl.offload=false does not fit model=Qwen3-30B-A3B-Base: the trainer keeps 53.6 GB")
    assert "trainer.verl.offload=true fits" in line
    line = refusal(QWEN3_8B, setup(megatron=False, expert_parallel=1, offload=False, gpus=1, gpus_per_node=1), "x")
    assert line.startswith("trainer.verl.offload=false does not fit model=Qwen3-8B-Base")


GPU_NODE_2X8 = ["launcher=slurm", "launcher.profile=gpu_node8", "launcher.hub_access=true", "launcher.nodes=2"]


def test_preflight_refuses_a_preset_that_cannot_fit():
    with pytest.raises(ConfigError, match=r"^trainer.verl.rollout_tensor_parallel=1 does not fit model=Qwen3-30B-A3B-"
                                          r"Base: .* trainer.verl.rollout_tensor_parallel=2 fits"):
        validate(compose(["experiment=drpo_qwen3_30b_a3b", "trainer.verl.rollout_tensor_parallel=1", *GPU_NODE_2X8]))


def test_vllm_is_told_the_length_the_preflight_holds_kv_for():
    """verl leaves rollout.max_model_len unset and vLLM then sizes for the model's context (32,768 tokens for
    Qwen3): the overrides pass prompt + response, the number the refusal names."""
    run = ["experiment=dppo_dense_qwen3_8b", "delta=0.2", "launcher=slurm", "launcher.profile=gpu_node8", "launcher.hub_access=true"]
    items = dict(item.split("=", 1) for item in verl_overrides(validate(compose(run)), RunPaths(Path("/run"))))
    assert items["actor_rollout_ref.rollout.max_model_len"] == str(2048 + 14336)
    with pytest.raises(ConfigError, match=r"KV of one 16384-token sequence\) of its 16.0 GB"):
        validate(compose([*run, "trainer.verl.gpu_memory_utilization=0.2"]))


def test_cli_refusal_is_one_line(run_harness):
    proc = run_harness("experiment=dppo_moe_qwen3_30b", "delta=0.2", "trainer.verl.offload=false", *GPU_NODE_2X8,
                       "--dry-run")
    assert proc.returncode == 2 and proc.stdout == ""
    line, = proc.stderr.strip().splitlines()
    assert "trainer.verl.offload=false does not fit model=Qwen3-30B-A3B-Base" in line


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (REPO / "conf" / "experiment").glob("*.yaml")
                                               if "trainer: verl" in p.read_text()))
def test_every_verl_preset_fits_two_80gb_nodes(experiment):
    validate(compose([f"experiment={experiment}", "delta=0.2", *GPU_NODE_2X8]))


# Activations: Qwen3-30B-A3B's shape (hidden 2048, 48 layers) and every preset's vocabulary of 151,936
QWEN3_30B_SHAPED = Model("Qwen3-30B-A3B-Base", params_b=30.5, layers=48, kv_heads=4, head_dim=128, heads=32,
                         expert_params_b=29.0, hidden=2048, vocab=151936)
QWEN3_8B_SHAPED = Model("Qwen3-8B-Base", params_b=8.2, layers=36, kv_heads=8, head_dim=128, heads=32, hidden=4096,
                        vocab=151936)


def test_activations_count_layer_inputs_logits_and_the_entropy_softmax():
    tokens = 16384
    layer_inputs = 48 * tokens * 2048 * 2 / 1e9  # bf16, one per layer under gradient checkpointing: 3.2 GB
    logits = tokens * 151936 * 2 / 1e9  # bf16 [16K x 152K]: the issue's ~5 GB
    assert logits == pytest.approx(4.98, abs=0.01)
    plain = setup(micro_tokens=tokens)
    assert activations_gb(QWEN3_30B_SHAPED, plain) == pytest.approx(layer_inputs + logits)
    assert activations_gb(QWEN3_30B_SHAPED, setup(micro_tokens=tokens, entropy=True)) == pytest.approx(
        layer_inputs + 2 * logits)
    # Megatron tensor parallel splits both (sequence parallel, vocabulary-parallel logits)
    assert activations_gb(QWEN3_30B_SHAPED, setup(micro_tokens=tokens, train_tp=2)) == pytest.approx(
        (layer_inputs + logits) / 2)
    assert training_gb(QWEN3_30B_SHAPED, plain) == pytest.approx(resident_gb(QWEN3_30B_SHAPED, setup(offload=False))
                                                                 + layer_inputs + logits)


def test_the_issue_case_one_node_moe_has_no_room_for_activations():
    # 8 GPUs, expert parallel 8: 6 x (1.5 + 29.0 / 8) + 12 x 30.5 / 8 = 76.5 GB of model states per 80 GB GPU
    states = 6 * (1.5 + 29.0 / 8) + 12 * 30.5 / 8
    assert states == pytest.approx(76.5)
    one_node = setup(gpus=8, rollout_tp=2, micro_tokens=16384, entropy=True)
    activations = (48 * 16384 * 2048 * 2 + 2 * 16384 * 151936 * 2) / 1e9
    assert refusal(QWEN3_30B, setup(gpus=8, rollout_tp=2), "x") is None  # model states alone: passed before
    line = refusal(QWEN3_30B_SHAPED, one_node, "launcher profile 'gpu_node8'")
    assert line.startswith(f"model=Qwen3-30B-A3B-Base does not fit training on 8 GPUs: 76.5 GB of model states + "
                           f"{activations:.1f} GB of activations of a 16384-token micro-batch (layer inputs 3.2 GB, "
                           f"logits 5.0 GB, entropy 5.0 GB) per GPU of 80 GB (launcher profile 'gpu_node8'); ")
    assert line.endswith("a larger trainer.verl.train_tensor_parallel / expert_parallel or more GPUs")
    assert refusal(QWEN3_30B_SHAPED, setup(rollout_tp=2, micro_tokens=16384, entropy=True), "x") is None  # 2 nodes


def test_entropy_checkpointing_is_named_when_the_entropy_tips_it_over():
    # FSDP with offload (no states on the GPU): 98,304 tokens of Qwen3-8B take 36 x T x 4096 x 2 = 29.0 GB of layer
    # inputs and T x 151,936 x 2 = 29.9 GB per [T x vocabulary] tensor: 88.8 GB with the entropy's, 58.9 without
    tokens = 98304
    layer_inputs, logits = 36 * tokens * 4096 * 2 / 1e9, tokens * 151936 * 2 / 1e9
    assert layer_inputs + 2 * logits > 80 >= layer_inputs + logits
    fsdp = dict(megatron=False, expert_parallel=1, gpus=8, sequence=16384, micro_tokens=tokens)
    line = refusal(QWEN3_8B_SHAPED, setup(**fsdp, entropy=True), "x")
    assert line.endswith("trainer.verl.entropy_checkpointing=true fits (the entropy recomputed in the backward)")
    assert refusal(QWEN3_8B_SHAPED, setup(**fsdp, entropy=False), "x") is None
    # too many tokens even without the entropy: the largest micro-batch that fits is named
    line = refusal(QWEN3_8B_SHAPED, setup(**{**fsdp, "micro_tokens": 2 * tokens}), "x")
    fits = int(2 * tokens * 80 / (2 * (layer_inputs + logits)))
    assert line.endswith(f"at most {fits} tokens per micro-batch fit (trainer.verl.max_tokens_per_gpu), or more GPUs")


DENSE_8B = ["experiment=dppo_dense_qwen3_8b", "delta=0.2", "launcher=slurm", "launcher.profile=gpu_node8", "launcher.hub_access=true",
            "trainer.verl.offload=true", "trainer.verl.max_tokens_per_gpu=98304", "trainer.verl.attention=flash_attention_2"]


def test_padded_micro_batches_count_their_padding():
    # sdpa (use_remove_padding=false): the 98,304-token limit holds up to 24 sequences of >= 4,096 real tokens, each
    # padded to 16,384: 393,216 tokens a micro-batch, not 98,304 (flash-attn's packed sequences: 98,304, fits)
    sdpa = [item for item in DENSE_8B if not item.startswith("trainer.verl.attention")]
    with pytest.raises(ConfigError) as err:
        validate(compose(sdpa))
    line = str(err.value)
    assert "\n" not in line and "of a 393216-token micro-batch" in line
    assert "pads each micro-batch to its longest sequence: up to 24 sequences x 16384 tokens" in line
    assert "trainer.verl.attention=flash_attention_2 packs them" in line
    assert padded_micro_tokens(16384, 98304, 4, 64, packed=True) == (98304, "")
    assert padded_micro_tokens(16384, None, 4, 64, packed=False) == (4 * 16384, "")
    assert padded_micro_tokens(16384, 98304, 4, 8, packed=False)[0] == 8 * 16384  # the mini-batch has only 8


def test_preflight_counts_the_entropy_and_offers_entropy_checkpointing():
    with pytest.raises(ConfigError, match=r"^model=Qwen3-8B-Base does not fit training on 8 GPUs: 0.0 GB of model "
                                          r"states \+ 88.7 GB of activations .* trainer.verl.entropy_checkpointing=true"):
        validate(compose(DENSE_8B))
    cfg = validate(compose([*DENSE_8B, "trainer.verl.entropy_checkpointing=true"]))
    items = dict(item.split("=", 1) for item in verl_overrides(cfg, RunPaths(Path("/run"))))
    assert items["actor_rollout_ref.actor.entropy_checkpointing"] == "true"
    # anchor=recompute: the old-log-prob forward computes the entropy without a backward, the update does not
    validate(compose([*DENSE_8B, "anchor=recompute"]))


def test_one_node_moe_preset_is_refused_and_megatron_has_no_entropy_checkpointing():
    with pytest.raises(ConfigError, match=r"^model=Qwen3-30B-A3B-Base does not fit training on 8 GPUs: 76.5 GB of "
                                          r"model states \+ 13.2 GB of activations"):
        validate(compose(["experiment=dppo_moe_qwen3_30b", "delta=0.2", "launcher=slurm",
                          "launcher.profile=gpu_node8", "launcher.hub_access=true"]))
    with pytest.raises(ConfigError, match=r"^trainer.verl.entropy_checkpointing=True .*false with "
                                          r"trainer.verl.strategy=megatron"):
        validate(compose(["experiment=dppo_moe_qwen3_30b", "delta=0.2", *GPU_NODE_2X8,
                          "trainer.verl.entropy_checkpointing=true"]))
