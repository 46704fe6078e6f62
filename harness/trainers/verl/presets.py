"""What the verl backend needs to know about the model and dataset presets beyond their YAML (torch-free).

Keyed by `model.name` / `dataset.name` (= the preset's file name in conf/model, conf/dataset). The run
schema types `model` and `dataset` for the builtin trainer, so the data sources of a dataset preset and
the MoE layout of a model live here; `trainer.verl.data.*` overrides any source.

A source is a local file (.parquet, .json, .jsonl) or a Hugging Face dataset `hf:<repo>[:<config>][@<split>]`,
read by `prepare_data.py` inside the job (the HF cache or network of the cluster). Validation checks
that local files exist; hub references cannot be checked before the job runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, Optional, Tuple


@dataclass(frozen=True)
class Source:
    ref: str
    problem_column: str = "problem"
    answer_column: str = "answer"  # a worked solution is fine: its last \boxed{...} is taken as the answer
    levels: Tuple[str, ...] = ()  # MATH: keep only these `level` values (empty: all rows)


@dataclass(frozen=True)
class DatasetPreset:
    train: Tuple[Source, ...]
    eval: Dict[str, Tuple[Source, ...]] = field(default_factory=dict)
    max_train_samples: Optional[int] = None  # seeded random subset (dataset.seed)
    note: str = ""


@dataclass(frozen=True)
class ModelExtras:
    num_experts: int = 0  # > 0: a mixture-of-experts model (router replay applies)
    experts_per_token: int = 0
    params_b: float = 0.0  # total parameters, billions (the memory preflight; 0: unknown, not checked)
    expert_params_b: float = 0.0  # of those, inside the experts (sharded by expert parallel; the rest is not)
    head_dim: int = 128  # attention head width (KV-cache size)
    vocab: int = 151936  # output vocabulary (the logits in the memory preflight): every preset's Qwen tokenizer


AIME_2024 = Source("hf:HuggingFaceH4/aime_2024@train")
AIME_2025 = Source("hf:MathArena/aime_2025@train")
MATH_TRAIN = Source("hf:DigitalLearningGmbH/MATH-lighteval@train", answer_column="solution")
DAPO_MATH = Source("hf:open-r1/DAPO-Math-17k-Processed:en@train", problem_column="prompt", answer_column="solution")
AIME_EVAL = {"aime2024": (AIME_2024,), "aime2025": (AIME_2025,)}

DATASETS: Dict[str, DatasetPreset] = {
    "math_sanity": DatasetPreset(
        train=(MATH_TRAIN,), eval=AIME_EVAL, max_train_samples=1460,
        note="a seeded 1,460-problem MATH subset; the papers' set (problems DeepSeek-R1-Distill-Qwen-1.5B "
             "solves 20-80% of the time, Qi et al. 2025b) is not public in the seed text: give it with "
             "trainer.verl.data.train for an exact reproduction"),
    "dapo_math": DatasetPreset(
        train=(DAPO_MATH,), eval=AIME_EVAL,
        note="DAPO-Math-17k de-duplicated, English (~14k); the papers use a ~13k filtered subset"),
    "dapo_math_math_l3_5": DatasetPreset(
        train=(DAPO_MATH, replace(MATH_TRAIN, levels=("Level 3", "Level 4", "Level 5"))), eval=AIME_EVAL,
        note="BandPO's training mix: DAPO-Math + MATH levels 3-5 (its AMC 2023 eval set is not included)"),
}

# Parameter counts and head widths from the models' Hugging Face model cards and config.json (head_dim).
MODELS: Dict[str, ModelExtras] = {
    "Qwen3-1.7B-Base": ModelExtras(params_b=1.7),
    "Qwen3-4B-Base": ModelExtras(params_b=4.0),
    "Qwen3-8B-Base": ModelExtras(params_b=8.2),
    # experts: 48 layers x 128 experts x 3 x 2048 x 768 (moe_intermediate_size) = 29.0B; the other 1.5B are
    # attention (0.91B), embeddings and the untied output layer (0.62B), routers and norms
    "Qwen3-30B-A3B-Base": ModelExtras(num_experts=128, experts_per_token=8, params_b=30.5, expert_params_b=29.0),
    "DeepSeek-R1-Distill-Qwen-1.5B": ModelExtras(params_b=1.78),
    "Qwen2.5-3B-Instruct": ModelExtras(params_b=3.09),
}

PROMPT = "{problem}\n\nPlease reason step by step, and put your final answer within \\boxed{{}}."


def dataset_preset(name: str) -> DatasetPreset:
    if name not in DATASETS:
        raise ValueError(f"dataset={name!r} has no data for trainer=verl; verl datasets: {', '.join(sorted(DATASETS))} "
                         f"(or give trainer.verl.data.train and trainer.verl.data.eval)")
    return DATASETS[name]


def model_extras(name: str) -> ModelExtras:
    return MODELS.get(name, ModelExtras())


def parse_hub_ref(ref: str) -> Optional[Tuple[str, Optional[str], str]]:
    """`hf:<repo>[:<config>][@<split>]` -> (repo, config, split); None for a local path."""
    if not ref.startswith("hf:"):
        return None
    body, _, split = ref[3:].partition("@")
    repo, _, config = body.partition(":")
    return repo, config or None, split or "train"
