"""The memory preflight of a verl run (torch-free arithmetic): does the model fit one GPU (and one node's host
memory) of the profile?

verl's hybrid engine puts vLLM and the trainer on the same GPUs. Three budgets per GPU and one per node, in GB
(1e9 bytes):

1. rollout: vLLM gets `gpu_memory_utilization` x the GPU. It needs the weights (2 bytes per parameter,
   1 with FP8 rollout) split over the rollout tensor-parallel size, and a KV cache that holds at least one
   sequence of the full length (vLLM refuses to start otherwise): 2 (K, V) x layers x KV heads on this GPU
   (KV heads / TP, at least 1) x head width x 2 bytes per token.
2. beside the rollout: what the trainer keeps on the GPU while vLLM holds its share (no offload):
   FSDP (fp32 parameters, fully sharded): parameters + Adam moments, 12 bytes per parameter / GPUs.
   Megatron (distributed optimizer): bf16 parameters + fp32 gradient buffers, 6 bytes per parameter of the
   rank's model shard, + fp32 master weights and Adam moments, 12 bytes / GPUs. A MoE model's shard is split
   per parameter group: the experts by tensor x expert parallel, everything else (attention, embeddings,
   router, norms: Qwen3-30B-A3B's ~1.5B) by tensor parallel only.
   With `trainer.verl.offload` these live on the CPU between uses.
3. training: the same states (FSDP: + fp32 gradients, 16 bytes / GPUs) with vLLM asleep, against the GPU.
   With FSDP offload, parameters and optimizer states stream from the CPU (not counted). Plus the activations
   of one micro-batch of T tokens (`max_tokens_per_gpu`, else micro_batch_per_gpu x prompt + response), in
   bf16, the least the update's backward needs (Megatron: over tensor parallel, sequence parallel):
   - the layer inputs gradient checkpointing keeps: layers x T x hidden x 2 bytes;
   - the logits the log-probs' backward keeps: T x vocabulary x 2 bytes (~5 GB for 16K tokens x 152K);
   - with the update computing the entropy (anchor=rollout: bypass mode) and no `entropy_checkpointing`,
     the softmax the entropy's backward keeps: another T x vocabulary x 2 bytes.
4. host memory, with offload: what each GPU's process moves to the CPU (verl utils/fsdp_utils.py and
   megatron_utils.py: FSDP the fp32 parameter shard and Adam moments, 12 bytes / GPUs; Megatron the bf16
   parameter shard (gradients are dropped) and the optimizer's 12 bytes / GPUs), times the GPUs of a node,
   against the 70% of the node's `mem_gb` that Ray's object store (30%, script.py) leaves.

Padding (`padded_micro_tokens`): the micro-batch's T is what the actor computes, padding included. verl packs
sequences (use_remove_padding) only with flash-attn's varlen kernels (fsdp) or TransformerEngine (megatron); with
sdpa every sequence of a micro-batch is padded to the longest (fsdp/transformer_impl.py). verl's dynamic batch
size bounds a micro-batch's real tokens (max_tokens_per_gpu), not its sequences: short ones fill it, and one long
one pads all of them. The preflight counts sequences of at least SHORTEST_SHARE of prompt + response (shorter ones
pad more: a refusal is certain, passing is not): T = min(the mini-batch's sequences on one GPU,
max_tokens_per_gpu / (SHORTEST_SHARE x prompt + response)) x prompt + response.

A layer's recomputed intermediates, attention workspaces, the optimizer step's temporaries and CUDA graphs
are not counted: a refusal means the run cannot fit; passing is necessary, not sufficient. The refusal names
the setting that would fit (a rollout tensor-parallel size, offload, entropy checkpointing, fewer tokens).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Tuple

GB = 1e9


@dataclass(frozen=True)
class Model:
    name: str
    params_b: float
    layers: int
    kv_heads: int
    head_dim: int
    heads: int
    expert_params_b: float = 0.0  # of params_b, inside the MoE experts (0: dense)
    hidden: int = 0  # hidden size (0: activations not counted)
    vocab: int = 0  # vocabulary (logits) size


@dataclass(frozen=True)
class Setup:
    gpu_gb: float
    gpus_per_node: int
    gpus: int
    utilization: float
    rollout_tp: int
    rollout_bytes: int  # per weight: 2 (bf16/fp16), 1 (fp8)
    sequence: int  # prompt + response tokens
    megatron: bool
    offload: bool
    train_tp: int = 1  # megatron: tensor parallel (1 for FSDP)
    expert_parallel: int = 1  # megatron: expert parallel (1 for FSDP)
    host_gb: Optional[float] = None  # host memory of a node's task (mem_gb); None: unknown, not checked
    micro_tokens: int = 0  # tokens of one micro-batch on one GPU (0: activations not counted)
    entropy: bool = False  # the update's backward keeps the entropy's softmax (no entropy_checkpointing)
    padding: str = ""  # why micro_tokens counts padding (padded_micro_tokens), for the refusal


def padded_micro_tokens(sequence: int, max_tokens: Optional[int], micro_batch: int, sequences_per_gpu: int,
                        packed: bool) -> Tuple[int, str]:
    """(tokens one micro-batch computes, the padding's explanation or ""): packed sequences count their real
    tokens; padded ones the full length of each sequence a micro-batch can hold."""
    if max_tokens is None:
        return micro_batch * sequence, ""
    if packed:
        return max_tokens, ""
    rows = max(1, min(sequences_per_gpu, int(max_tokens // max(1.0, SHORTEST_SHARE * sequence))))
    return rows * sequence, (f"; with attention=sdpa verl pads each micro-batch to its longest sequence: up to "
                             f"{rows} sequences x {sequence} tokens under max_tokens_per_gpu={max_tokens} (each >= "
                             f"{SHORTEST_SHARE:g} x {sequence})")


def rollout_gb(m: Model, s: Setup, tp: Optional[int] = None) -> float:
    tp = tp or s.rollout_tp
    weights = m.params_b * 1e9 * s.rollout_bytes / tp
    kv_per_token = 2 * m.layers * max(1.0, m.kv_heads / tp) * m.head_dim * 2
    return (weights + kv_per_token * s.sequence) / GB


SHORTEST_SHARE = 0.25  # padded micro-batches: the shortest sequence counted, a share of prompt + response
PADDING_HINT = ("trainer.verl.attention=flash_attention_2 packs them (a flash-attn wheel in the environment), or "
                "max_tokens_per_gpu=null with a trainer.verl.micro_batch_per_gpu that fits")
OBJECT_STORE_SHARE = 0.3  # of the job's memory, Ray's object store (script.py)


def shard_params(m: Model, s: Setup) -> float:
    """Parameters in one Megatron rank's model shard: experts over tensor x expert parallel, the rest over
    tensor parallel only."""
    experts = m.expert_params_b * 1e9
    return (m.params_b * 1e9 - experts) / s.train_tp + experts / (s.train_tp * s.expert_parallel)


def megatron_states_gb(m: Model, s: Setup) -> float:
    return (6 * shard_params(m, s) + 12 * m.params_b * 1e9 / s.gpus) / GB


def resident_gb(m: Model, s: Setup) -> float:
    """Trainer states on the GPU during the rollout (0 with offload)."""
    if s.offload:
        return 0.0
    if s.megatron:
        return megatron_states_gb(m, s)
    return 12 * m.params_b * 1e9 / s.gpus / GB


def states_gb(m: Model, s: Setup) -> float:
    """Model states on one GPU during the update."""
    if s.megatron:
        return megatron_states_gb(m, s)
    return 0.0 if s.offload else 16 * m.params_b * 1e9 / s.gpus / GB


def logits_gb(m: Model, s: Setup) -> float:
    """One bf16 [micro-batch tokens x vocabulary] tensor on one GPU (vocabulary-parallel under Megatron TP)."""
    return s.micro_tokens * m.vocab * 2 / s.train_tp / GB


def activations_gb(m: Model, s: Setup) -> float:
    """Checkpointed layer inputs, the logits and, kept for the entropy's backward, their softmax."""
    layer_inputs = m.layers * s.micro_tokens * m.hidden * 2 / s.train_tp / GB
    return layer_inputs + logits_gb(m, s) * (2 if s.entropy else 1)


def training_gb(m: Model, s: Setup) -> float:
    return states_gb(m, s) + activations_gb(m, s)


def offloaded_gb(m: Model, s: Setup) -> float:
    """Host memory one GPU's process holds for the offloaded actor (0 without offload)."""
    if not s.offload:
        return 0.0
    optimizer = 12 * m.params_b * 1e9 / s.gpus  # FSDP: fp32 shard 4 + Adam 8; Megatron: master 4 + Adam 8
    return ((2 * shard_params(m, s) if s.megatron else 0.0) + optimizer) / GB


def tp_candidates(m: Model, s: Setup) -> List[int]:
    """Rollout tensor-parallel sizes validation accepts: divide the GPUs per node and the heads."""
    return [tp for tp in range(1, s.gpus_per_node + 1) if s.gpus_per_node % tp == 0 and m.heads % tp == 0
            and (m.kv_heads % tp == 0 if tp <= m.kv_heads else tp % m.kv_heads == 0)]


def _activation_parts(m: Model, s: Setup) -> str:
    logits = f"logits {logits_gb(m, s):.1f} GB" + (f", entropy {logits_gb(m, s):.1f} GB" if s.entropy else "")
    return f"layer inputs {activations_gb(m, s) - logits_gb(m, s) * (2 if s.entropy else 1):.1f} GB, {logits}"


def _training_hint(m: Model, s: Setup) -> str:
    if s.entropy and not s.megatron and states_gb(m, s) + activations_gb(m, s) - logits_gb(m, s) <= s.gpu_gb:
        return "trainer.verl.entropy_checkpointing=true fits (the entropy recomputed in the backward)"
    if not s.megatron and not s.offload and activations_gb(m, s) <= s.gpu_gb:
        return "trainer.verl.offload=true fits"
    fits = 0
    if states_gb(m, s) < s.gpu_gb:
        fits = int(s.micro_tokens * (s.gpu_gb - states_gb(m, s)) / activations_gb(m, s))
    if states_gb(m, s) < s.gpu_gb and fits >= s.sequence:
        more = "a larger trainer.verl.train_tensor_parallel / expert_parallel or more GPUs" if s.megatron else "more GPUs"
        return f"at most {fits} tokens per micro-batch fit (trainer.verl.max_tokens_per_gpu), or {more}"
    return ("a larger trainer.verl.train_tensor_parallel / expert_parallel or more GPUs" if s.megatron else
            "trainer.verl.offload=true fits" if not s.offload else "more GPUs")


def refusal(m: Model, s: Setup, where: str) -> Optional[str]:
    """One line saying why the run cannot fit and what would, or None."""
    budget = s.utilization * s.gpu_gb
    need = rollout_gb(m, s)
    if need > budget:
        fits = [tp for tp in tp_candidates(m, s) if rollout_gb(m, s, tp) <= budget]
        hint = (f"trainer.verl.rollout_tensor_parallel={fits[0]} fits ({rollout_gb(m, s, fits[0]):.1f} GB)" if fits else
                f"no rollout tensor-parallel size up to {s.gpus_per_node} fits; use precision=fp8_rollout, a higher "
                f"trainer.verl.gpu_memory_utilization or larger GPUs")
        return (f"trainer.verl.rollout_tensor_parallel={s.rollout_tp} does not fit model={m.name}: vLLM needs "
                f"{need:.1f} GB per GPU (weights / TP + KV of one {s.sequence}-token sequence) of its "
                f"{budget:.1f} GB (gpu_memory_utilization={s.utilization} x {s.gpu_gb:g} GB, {where}); {hint}")
    beside = resident_gb(m, s)
    if beside + budget > s.gpu_gb:
        return (f"trainer.verl.offload=false does not fit model={m.name}: the trainer keeps {beside:.1f} GB per GPU "
                f"beside vLLM's {budget:.1f} GB of {s.gpu_gb:g} GB ({s.gpus} GPUs, {where}); trainer.verl.offload=true "
                f"fits (or a lower trainer.verl.gpu_memory_utilization, more GPUs)")
    train = training_gb(m, s)
    if train > s.gpu_gb:
        return (f"model={m.name} does not fit training on {s.gpus} GPUs: {states_gb(m, s):.1f} GB of model states + "
                f"{activations_gb(m, s):.1f} GB of activations of a {s.micro_tokens}-token micro-batch "
                f"({_activation_parts(m, s)}) per GPU of {s.gpu_gb:g} GB ({where}){s.padding}; "
                f"{_training_hint(m, s) if not s.padding else PADDING_HINT}")
    host = offloaded_gb(m, s) * s.gpus_per_node
    usable = (1 - OBJECT_STORE_SHARE) * (s.host_gb or 0.0)
    if s.host_gb is not None and host > usable:
        fits = math.ceil(host / (1 - OBJECT_STORE_SHARE))
        return (f"launcher.mem_gb={s.host_gb:g} does not fit trainer.verl.offload=true for model={m.name}: the "
                f"offloaded actor states take {host:.0f} GB of host memory per node ({s.gpus_per_node} GPUs x "
                f"{offloaded_gb(m, s):.1f} GB) of the {usable:.0f} GB Ray's object store leaves ({where}); "
                f"set launcher.mem_gb={fits} or more")
    return None
