"""Typed schema of one run. Hydra merges the YAML groups in conf/ onto these dataclasses, so a value of
the wrong type or an unknown key fails at composition. Ranges are checked in `validate.py`.

The `algo` node is left untyped here: its fields depend on the objective and are validated against
`harness.algorithms.specs` (one source of truth for objective parameters and defaults)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from omegaconf import MISSING


@dataclass
class ModelConfig:
    name: str = MISSING
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 128
    max_position_embeddings: int = 64
    tie_word_embeddings: bool = True
    path: Optional[str] = None  # a local HF checkpoint; None builds the architecture from this config


@dataclass
class DatasetConfig:
    name: str = MISSING  # task registry key: arithmetic | sorting
    difficulty: int = 2
    ops: str = "+"
    eval_size: int = 128
    seed: int = 1234  # fixes the eval set and the train/eval split, independent of the run seed


@dataclass
class PrecisionConfig:
    name: str = MISSING  # fp32 | bf16 | fp16 | fp8_rollout | fp8_e2e


@dataclass
class WarmStartConfig:
    """Supervised pre-training that makes the initial policy a 'base model' solving some problems. Shared
    by every RL seed (its own seed), like one base checkpoint, and cached on disk by config hash."""
    seed: int = 0
    steps: int = 300
    batch_size: int = 64
    lr: float = 3e-3


@dataclass
class TrainerConfig:
    name: str = MISSING
    steps: int = 40
    prompts_per_step: int = 16
    group_size: int = 8
    mini_batches: int = 2  # optimizer steps per rollout batch: >1 makes the policy stale w.r.t. its rollouts
    lr: float = 1e-4
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    temperature: float = 1.0
    max_new_tokens: Optional[int] = None  # None: the task's longest answer + <eos>
    advantage: str = "grpo"
    loss_agg: str = "token-mean"
    topk: int = 20  # rollout top-K log-probs, requested only by Top-K objectives
    eval_every: int = 10
    checkpoint_every: int = 10
    torch_threads: int = 1
    progress: bool = True
    resume: Optional[str] = None  # a run folder or checkpoint file to continue from
    warmstart: WarmStartConfig = field(default_factory=WarmStartConfig)


@dataclass
class LauncherConfig:
    name: str = MISSING


@dataclass
class TrackingConfig:
    backend: str = "mlflow"  # mlflow | none
    uri: Optional[str] = None  # None: sqlite:///<output_root>/mlruns.db
    experiment: Optional[str] = None  # None: the `experiment_name` of the run


@dataclass
class RunConfig:
    model: ModelConfig = MISSING
    dataset: DatasetConfig = MISSING
    precision: PrecisionConfig = MISSING
    algo: Dict[str, Any] = MISSING
    trainer: TrainerConfig = MISSING
    launcher: LauncherConfig = MISSING
    tracking: TrackingConfig = MISSING
    # Shortcuts mapped onto whichever objective is selected; None keeps the objective's default.
    delta: Optional[float] = None
    alpha: Optional[float] = None
    anchor: Optional[str] = None
    seed: int = 0
    experiment_name: str = "harness"
    output_root: str = "."
    cache_dir: Optional[str] = None  # None: <output_root>/.harness/cache


def register_schemas() -> None:
    """Register the schemas with Hydra's ConfigStore (idempotent)."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name="run_schema", node=RunConfig)
