"""`trainer.verl.*`: the settings only the verl backend has (torch-free).

The run schema types `trainer.verl` as an open dict (the builtin trainer has no use for it), so this
dataclass is where its keys, types and defaults live: `verl_options(cfg)` merges the run's dict onto it
and turns OmegaConf's errors into one line. Everything else — batch sizes, lr, temperature, max
response length, advantage, aggregation, steps — comes from the shared `trainer.*` keys.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Dict, List, Optional, get_type_hints

STRATEGIES = ("fsdp", "megatron")
ROUTER_REPLAY = ("disabled", "R2", "R3")
ATTENTIONS = ("sdpa", "flash_attention_2")


@dataclass
class VerlData:
    """Data files; null keeps the dataset preset's (harness/trainers/verl/presets.py)."""

    train: Optional[List[str]] = None  # local json/jsonl/parquet files or hf:<repo>[:<config>][@<split>]
    eval: Optional[Dict[str, List[str]]] = None  # eval set name (its metrics key) -> sources
    problem_column: Optional[str] = None  # column with the problem text
    answer_column: Optional[str] = None  # column with the reference answer (or a solution with \boxed{})
    max_train_samples: Optional[int] = None  # a seeded random subset of the training set (dataset.seed)


@dataclass
class VerlOptions:
    dry_run: bool = False  # print the verl command and batch script; launch nothing (`--dry-run`)
    python: Optional[str] = None  # the verl environment's python or venv folder (null: the profile's verl_python)
    strategy: str = "fsdp"  # training engine: fsdp | megatron (megatron for router replay, fp8_e2e)
    local_gpus: int = 8  # GPUs of this machine with launcher=local (Slurm runs use the launcher profile)
    local_gpu_memory_gb: Optional[float] = None  # launcher=local: one GPU's memory (the memory preflight)
    attention: str = "sdpa"  # the actor's attention: sdpa (torch's, padded micro-batches) | flash_attention_2
    # (packed sequences; needs flash-attn in the verl environment, which has no wheel for torch 2.11 / CUDA 13)
    rollout: str = "vllm"  # rollout engine (actor_rollout_ref.rollout.name)
    rollout_tensor_parallel: int = 1  # vLLM tensor-parallel size (must divide the GPUs per node)
    train_tensor_parallel: int = 1  # megatron only: tensor-model-parallel size of the trainer
    expert_parallel: int = 1  # megatron only: expert-model-parallel size (MoE)
    gpu_memory_utilization: float = 0.6  # vLLM's share of GPU memory
    micro_batch_per_gpu: int = 4  # sequences per forward/backward on one GPU (without max_tokens_per_gpu)
    max_tokens_per_gpu: Optional[int] = None  # verl's dynamic batch size: micro-batches packed up to this many
    # tokens per GPU (use_dynamic_bsz; >= prompt + response); null: micro_batch_per_gpu sequences each
    max_prompt_length: int = 2048  # data.max_prompt_length (prompts longer than this are dropped)
    eval_samples: int = 16  # responses per eval problem (avg@k metrics)
    eval_temperature: Optional[float] = None  # null: trainer.temperature
    lora_rank: int = 0  # 0: full fine-tuning
    lora_alpha: int = 32
    router_replay: str = "disabled"  # MoE router replay: disabled | R2 | R3 (megatron, MoE models)
    entropy_coeff: float = 0.0
    entropy_checkpointing: bool = False  # fsdp: recompute the update's entropy in the backward instead of keeping
    # its [tokens x vocabulary] softmax (anchor=rollout computes the entropy in the update; the memory preflight)
    offload: bool = False  # actor parameters and optimizer states on the CPU between uses (verl's *_offload)
    # expected minutes per training step: with a cluster time limit, checkpoints come often enough that a timeout
    # loses at most ~30 minutes (attempt.py); null: measured by an earlier attempt, else a high estimate
    step_minutes: Optional[float] = None
    keep_checkpoints: Optional[int] = 2  # newest verl checkpoints kept (max_actor_ckpt_to_keep); null: all
    ray_port: Optional[int] = None  # first of the job's block of Ray ports (null: derived from the Slurm job id)
    data: VerlData = field(default_factory=VerlData)
    env: Dict[str, str] = field(default_factory=dict)  # exported in the batch script (HF_HOME, NCCL_*)
    extra: List[str] = field(default_factory=list)  # raw main_ppo overrides appended last (escape hatch)


OPTION_NAMES = tuple(f.name for f in fields(VerlOptions))


def verl_options(cfg) -> VerlOptions:
    """The run's `trainer.verl` dict checked against `VerlOptions`; ValueError (one line) otherwise."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    given = cfg.trainer.get("verl") or {}
    try:
        merged = OmegaConf.merge(OmegaConf.structured(VerlOptions), given)
        return OmegaConf.to_object(merged)
    except OmegaConfBaseException as err:
        key = str(getattr(err, "full_key", "") or "")
        if "not in struct" in str(err) or "Key '" in str(err) and "not in" in str(err):
            raise ValueError(f"unknown key 'trainer.verl.{key}'; allowed: {', '.join(sorted(_fields_of(key)))}") from None
        value = OmegaConf.select(OmegaConf.create(given), key, default=None) if key else None
        raise ValueError(f"trainer.verl.{key}={value!r} has the wrong type: expected {_expected(key)}") from None


def _fields_of(key: str):
    cls = VerlData if key.rpartition(".")[0] == "data" else VerlOptions
    return [f.name for f in fields(cls)]


def _expected(key: str) -> str:
    parent, _, name = key.rpartition(".")
    hint = get_type_hints(VerlData if parent == "data" else VerlOptions).get(name)
    return getattr(hint, "__name__", None) if isinstance(hint, type) else str(hint).replace("typing.", "")
