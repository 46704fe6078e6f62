"""The shape of a verl run (torch-free): cluster, batch split, precision and data sources.

Pure functions of the validated run config; `validate.py` calls them to refuse impossible runs and
`overrides.py` / `script.py` read the same values, so what is checked is what is launched.
Every failure is a ValueError with one line naming the key, the value and what is allowed.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from harness.config.profiles import profile_for
from harness.trainers.verl.options import VerlOptions
from harness.trainers.verl.presets import DatasetPreset, Source, dataset_preset, parse_hub_ref
from harness.trainers.verl.site import on_cluster, site
from harness.trainers.verl.staging import staged_model, staged_source


@dataclass(frozen=True)
class Cluster:
    nodes: int
    gpus_per_node: int
    source: str  # where the shape comes from, for messages
    cpus_per_task: Optional[int] = None  # CPUs of each node's task (Slurm: the profile's); None: this machine's
    mem_gb: Optional[float] = None  # host memory of each node's task (Slurm: the profile's); None: unknown

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass(frozen=True)
class Batches:
    prompts: int  # data.train_batch_size
    mini_prompts: int  # actor.ppo_mini_batch_size (verl counts prompts; it multiplies by rollout.n)
    data_parallel: int
    sequences_per_gpu: int  # per optimizer step


@dataclass(frozen=True)
class Precision:
    rollout_dtype: str  # vLLM dtype
    train_dtype: str  # trainer compute dtype: bf16 | fp16 | fp8
    rollout_quantization: Optional[str] = None  # vLLM weight quantisation


PRECISIONS: Dict[str, Precision] = {
    "bf16": Precision("bfloat16", "bf16"),
    "fp16": Precision("float16", "fp16"),
    "fp8_rollout": Precision("bfloat16", "bf16", "fp8"),
    "fp8_e2e": Precision("bfloat16", "fp8", "fp8"),
}


def cluster(cfg, options: VerlOptions) -> Cluster:
    """Cluster runs: the allocation the launcher profile asks for; local runs: this machine."""
    if on_cluster(cfg):
        profile = profile_for(cfg.launcher)
        shape = Cluster(profile.nodes, profile.gpus_per_node, f"launcher profile {cfg.launcher.profile!r}",
                        profile.cpus_per_task, profile.mem_gb)
        if shape.gpus_per_node < 1:
            raise ValueError(f"launcher.gpus_per_node={shape.gpus_per_node} is not allowed with trainer=verl: it "
                             f"needs GPUs ({shape.source} has none); set launcher.gpus_per_node or a GPU profile")
        if shape.nodes > 1 and getattr(profile, "use_srun", True):
            raise ValueError(f"launcher.nodes={shape.nodes} is not allowed with trainer=verl yet: the Slurm launcher "
                             f"starts one harness task per node, verl needs one per allocation (a profile with "
                             f"use_srun: false; see launchers/verl/README.md)")
        return shape
    if options.local_gpus < 1:
        raise ValueError(f"trainer.verl.local_gpus={options.local_gpus} is not allowed: must be >= 1")
    return Cluster(1, options.local_gpus, "trainer.verl.local_gpus")


def batches(cfg, options: VerlOptions, shape: Cluster) -> Batches:
    t = cfg.trainer
    if t.prompts_per_step % t.mini_batches:
        raise ValueError(f"trainer.mini_batches={t.mini_batches} is not allowed: must divide trainer.prompts_per_step="
                         f"{t.prompts_per_step} (verl's mini-batch is prompts_per_step / mini_batches prompts)")
    mini = t.prompts_per_step // t.mini_batches
    model_parallel = options.train_tensor_parallel if options.strategy == "megatron" else 1
    if shape.gpus % model_parallel:
        raise ValueError(f"trainer.verl.train_tensor_parallel={model_parallel} is not allowed: must divide the "
                         f"{shape.gpus} GPUs ({shape.nodes} nodes x {shape.gpus_per_node}, {shape.source})")
    if options.strategy == "megatron" and shape.gpus % options.expert_parallel:
        raise ValueError(f"trainer.verl.expert_parallel={options.expert_parallel} is not allowed: must divide the "
                         f"{shape.gpus} GPUs ({shape.nodes} nodes x {shape.gpus_per_node}, {shape.source})")
    dp = shape.gpus // model_parallel
    sequences = mini * t.group_size
    if sequences % dp:
        raise ValueError(f"trainer.mini_batches={t.mini_batches} is not allowed: a mini-batch of {sequences} sequences "
                         f"(prompts_per_step/mini_batches x group_size) must split evenly over {dp} data-parallel GPUs")
    per_gpu = sequences // dp
    if options.max_tokens_per_gpu is None and per_gpu % options.micro_batch_per_gpu:
        raise ValueError(f"trainer.verl.micro_batch_per_gpu={options.micro_batch_per_gpu} is not allowed: must divide "
                         f"the {per_gpu} sequences each GPU gets per mini-batch")
    return Batches(t.prompts_per_step, mini, dp, per_gpu)


def max_model_len(cfg, options: VerlOptions) -> int:
    """Prompt + response tokens: vLLM's max_model_len (verl leaves it unset, and vLLM then sizes for the
    model's whole context) and the sequence the memory preflight holds KV for."""
    return options.max_prompt_length + cfg.trainer.max_new_tokens


def check_rollout_parallel(cfg, options: VerlOptions, shape: Cluster) -> None:
    tp = options.rollout_tensor_parallel
    if tp < 1 or shape.gpus_per_node % tp:
        raise ValueError(f"trainer.verl.rollout_tensor_parallel={tp} is not allowed: must divide the GPUs per node "
                         f"({shape.gpus_per_node}, {shape.source})")
    heads, kv = cfg.model.num_heads, cfg.model.num_kv_heads
    if heads % tp or (kv % tp if tp <= kv else tp % kv):
        raise ValueError(f"trainer.verl.rollout_tensor_parallel={tp} is not allowed for model={cfg.model.name}: "
                         f"must divide its {heads} attention heads and fit its {kv} KV heads")


def precision(cfg, options: VerlOptions) -> Precision:
    name = cfg.precision.name
    if name == "fp32":
        raise ValueError(f"precision=fp32 is not allowed with trainer=verl: runs are set up for 16-bit compute only "
                         f"(verl's mixed precision, vLLM's dtype; flash_attention_2 computes in fp16/bf16 only); one of "
                         f"{', '.join(PRECISIONS)}")
    if name not in PRECISIONS:
        raise ValueError(f"precision={name!r} is not allowed with trainer=verl: one of {', '.join(PRECISIONS)}")
    p = PRECISIONS[name]
    if cfg.precision.get("weight_sync", "full") != "full":
        raise ValueError(f"precision.weight_sync={cfg.precision.weight_sync} is not allowed with trainer=verl: verl "
                         "loads the actor's full weights into its rollout engine at every step; one of full")
    if p.train_dtype == "fp8" and options.strategy != "megatron":
        raise ValueError(f"precision={name} is not allowed with trainer.verl.strategy={options.strategy}: FP8 "
                         f"training needs strategy=megatron (TransformerEngine)")
    return p


def data_sources(cfg, options: VerlOptions, staged: bool = True
                 ) -> Tuple[List[Source], Dict[str, List[Source]], Optional[int]]:
    """(train sources, eval set -> sources, max train samples): the preset's unless trainer.verl.data gives them;
    `staged`: each read from its staged copy where there is one (harness stage)."""
    d = options.data
    preset: Optional[DatasetPreset] = None
    if d.train is None or d.eval is None:
        preset = dataset_preset(cfg.dataset.name)
    keys = {"problem_column": d.problem_column or "problem", "answer_column": d.answer_column or "answer"}
    train = [Source(ref, **keys) for ref in d.train] if d.train is not None else list(preset.train)
    evals = ({name: [Source(ref, **keys) for ref in refs] for name, refs in d.eval.items()}
             if d.eval is not None else {name: list(srcs) for name, srcs in preset.eval.items()})
    limit = d.max_train_samples if d.max_train_samples is not None else (preset.max_train_samples if preset else None)
    if not train:
        raise ValueError("trainer.verl.data.train=[] is not allowed: give at least one training source")
    stage_dir = site(cfg, options).stage_dir if staged else None
    if stage_dir is not None:  # read the staged copies where `harness stage` made them
        train = [staged_source(stage_dir, s) or s for s in train]
        evals = {name: [staged_source(stage_dir, s) or s for s in srcs] for name, srcs in evals.items()}
    return train, evals, limit


def model_path(cfg, options: VerlOptions) -> str:
    """model.path, or its staged copy."""
    staged = staged_model(site(cfg, options).stage_dir, cfg.model.path) if cfg.model.path else None
    return str(staged) if staged is not None else cfg.model.path


def hub_refs(cfg, options: VerlOptions) -> List[Tuple[str, str]]:
    """(key, reference) of what the job would still fetch from the hub: the model and data sources that are
    hub references with no staged or local copy."""
    refs = []
    path = model_path(cfg, options)
    if path and not path.startswith(("/", "./", "../", "~")) and not Path(os.path.expanduser(path)).exists():
        refs.append(("model.path", path))
    train, evals, _ = data_sources(cfg, options)
    named = [("trainer.verl.data.train", s) for s in train]
    named += [(f"trainer.verl.data.eval.{name}", s) for name, srcs in evals.items() for s in srcs]
    for key, source in named:
        hub = parse_hub_ref(source.ref)
        if hub is not None and not hub[0].startswith("/"):
            refs.append((key, source.ref))
    return refs
