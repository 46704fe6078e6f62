"""`validate_verl(cfg)`: refuse a trainer=verl run that cannot work, before anything is submitted.

Called by `harness.config.validate.validate` on every composed config with trainer=verl (the CLI's
preflight, and again in the job). Checks the verl options, the objective, the cluster and batch layout,
the precision, the model checkpoint and the data files, then writes the completed `trainer.verl` options
back into the config (so the recorded spec shows every value). One line per problem (`ConfigError`).
"""
from __future__ import annotations

import os
import re
from dataclasses import asdict
from pathlib import Path

from omegaconf import OmegaConf, open_dict

from harness.config.errors import ConfigError
from harness.trainers.verl import layout
from harness.trainers.verl.objective import unsupported_reason
from harness.trainers.verl.options import ROUTER_REPLAY, STRATEGIES, VerlOptions, verl_options
from harness.trainers.verl.presets import model_extras, parse_hub_ref

ROLLOUT_ENGINES = ("vllm", "sglang")
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
OVERRIDE = re.compile(r"[+~]{0,2}[A-Za-z_][\w.\[\]-]*=.*")


def validate_verl(cfg) -> None:
    """Check a trainer=verl run config in place; ConfigError (one line) on the first problem."""
    try:
        options = verl_options(cfg)
        _check_options(options)
        _check_trainer(cfg)
        _check_objective(cfg, options)
        shape = layout.cluster(cfg, options)
        layout.check_rollout_parallel(cfg, options, shape)
        layout.batches(cfg, options, shape)
        layout.precision(cfg, options)
        _check_model(cfg, options)
        _check_data(cfg, options)
    except ValueError as err:
        raise ConfigError(str(err).splitlines()[0]) from None
    with open_dict(cfg):
        cfg.trainer.verl = OmegaConf.create(asdict(options))


def _need(ok: bool, key: str, value, allowed: str) -> None:
    if not ok:
        raise ValueError(f"{key}={value!r} is not allowed: {allowed}")


def _check_options(o: VerlOptions) -> None:
    v = "trainer.verl"
    _need(o.strategy in STRATEGIES, f"{v}.strategy", o.strategy, f"one of {', '.join(STRATEGIES)}")
    _need(o.rollout in ROLLOUT_ENGINES, f"{v}.rollout", o.rollout, f"one of {', '.join(ROLLOUT_ENGINES)}")
    _need(o.router_replay in ROUTER_REPLAY, f"{v}.router_replay", o.router_replay, f"one of {', '.join(ROUTER_REPLAY)}")
    for key in ("rollout_tensor_parallel", "train_tensor_parallel", "expert_parallel", "micro_batch_per_gpu",
                "max_prompt_length", "eval_samples", "lora_alpha"):
        _need(getattr(o, key) >= 1, f"{v}.{key}", getattr(o, key), "must be an integer >= 1")
    _need(0 <= o.lora_rank <= 512, f"{v}.lora_rank", o.lora_rank, "0 (full fine-tuning) to 512 (vLLM's largest)")
    _need(0 < o.gpu_memory_utilization <= 1, f"{v}.gpu_memory_utilization", o.gpu_memory_utilization, "in (0, 1]")
    _need(o.eval_temperature is None or o.eval_temperature >= 0, f"{v}.eval_temperature", o.eval_temperature,
          "null (trainer.temperature) or >= 0")
    _need(o.entropy_coeff >= 0, f"{v}.entropy_coeff", o.entropy_coeff, "must be >= 0")
    _need(1 <= o.ray_port <= 65535, f"{v}.ray_port", o.ray_port, "a TCP port")
    _need(o.data.max_train_samples is None or o.data.max_train_samples >= 1, f"{v}.data.max_train_samples",
          o.data.max_train_samples, "null (all) or >= 1")
    if o.strategy != "megatron":
        for key in ("train_tensor_parallel", "expert_parallel"):
            _need(getattr(o, key) == 1, f"{v}.{key}", getattr(o, key), "only with trainer.verl.strategy=megatron")
    for item in o.extra:
        _need(bool(OVERRIDE.fullmatch(item)), f"{v}.extra", item, "each item is a main_ppo override key=value")
    for key in o.env:
        _need(bool(re.fullmatch(r"[A-Za-z_]\w*", key)), f"{v}.env", key, "environment variable names")


def _check_trainer(cfg) -> None:
    t = cfg.trainer
    _need(t.max_new_tokens is not None, "trainer.max_new_tokens", t.max_new_tokens,
          "trainer=verl needs the maximum response length (an integer >= 1)")
    _need(t.group_size >= 2, "trainer.group_size", t.group_size, "must be >= 2")


def _check_objective(cfg, options: VerlOptions) -> None:
    algo = OmegaConf.to_container(cfg.algo, resolve=True)
    reason = unsupported_reason(algo)
    if reason:
        raise ValueError(reason)
    if options.router_replay == "R2" and algo["anchor"] == "rollout":
        raise ValueError("trainer.verl.router_replay='R2' is not allowed with anchor=rollout: R2 records routes in "
                         "the old-log-prob forward that anchor=rollout (verl's bypass mode) skips; use R3")


def _check_model(cfg, options: VerlOptions) -> None:
    m = cfg.model
    path = m.path
    if not path:
        raise ValueError(f"model.path={path!r} is not allowed with trainer=verl: give a Hugging Face checkpoint "
                         f"(a local folder or a hub id such as Qwen/Qwen3-8B-Base)")
    local = Path(os.path.expanduser(path))
    if path.startswith(("/", "./", "../", "~")) or local.exists():
        if not local.is_dir():
            raise ValueError(f"model.path={path!r} does not exist (model={m.name})")
        if not (local / "config.json").is_file():
            raise ValueError(f"model.path={path!r} has no config.json: not a Hugging Face checkpoint (model={m.name})")
    elif not HUB_ID.fullmatch(path):
        raise ValueError(f"model.path={path!r} is neither an existing folder nor a hub id <org>/<name>")
    total = options.max_prompt_length + cfg.trainer.max_new_tokens
    if total > m.max_position_embeddings:
        raise ValueError(f"trainer.max_new_tokens={cfg.trainer.max_new_tokens} is not allowed: with "
                         f"trainer.verl.max_prompt_length={options.max_prompt_length} it exceeds model={m.name}'s "
                         f"context of {m.max_position_embeddings} tokens")
    if options.router_replay != "disabled":
        if model_extras(m.name).num_experts < 1:
            raise ValueError(f"trainer.verl.router_replay={options.router_replay!r} is not allowed for model={m.name}: "
                             f"router replay needs a mixture-of-experts model")
        if options.strategy != "megatron":
            raise ValueError(f"trainer.verl.router_replay={options.router_replay!r} is not allowed with "
                             f"strategy={options.strategy}: verl implements router replay in its megatron engine")


def _check_data(cfg, options: VerlOptions) -> None:
    train, evals, _ = layout.data_sources(cfg, options)
    named = [("trainer.verl.data.train", s) for s in train]
    named += [(f"trainer.verl.data.eval.{name}", s) for name, srcs in evals.items() for s in srcs]
    for key, source in named:
        if parse_hub_ref(source.ref) is not None:
            continue
        path = Path(os.path.expanduser(source.ref))
        if not path.is_file():
            raise ValueError(f"{key}: {source.ref!r} does not exist (dataset={cfg.dataset.name})")
        if path.suffix not in (".parquet", ".json", ".jsonl"):
            raise ValueError(f"{key}: {source.ref!r} is not allowed: a .parquet, .json or .jsonl file or hf:<repo>")
    for name in evals:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise ValueError(f"trainer.verl.data.eval: name {name!r} is not allowed: letters, digits, _ . -")
