"""`validate_verl(cfg)`: refuse a trainer=verl run that cannot work, before anything is submitted.

Registered in `harness.trainers.CHECKS` and run by `harness.config.validate.validate` on every composed config
with trainer=verl (the CLI's preflight, and again in the job). Checks the verl options, the objective, the
cluster and batch layout, the precision, the model checkpoint and the data files, then writes the completed
`trainer.verl` options back into the config (so the recorded spec shows every value). One line per problem (`ConfigError`).
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
from harness.trainers.verl.options import ATTENTIONS, ROUTER_REPLAY, STRATEGIES, VerlOptions, verl_options
from harness.trainers.verl.memory import Model, Setup, padded_micro_tokens, refusal
from harness.trainers.verl.presets import model_extras, parse_hub_ref
from harness.trainers.verl.ray_resources import check_cpus
from harness.trainers.verl.script import RAY_PORT_BLOCK
from harness.trainers.verl.site import Site, site
from harness.trainers.verl.environment import REQUIREMENTS

ROLLOUT_ENGINES = ("vllm",)  # each one has a pinned requirements set and is checked in the nodes' environment
UNSUPPORTED_ROLLOUTS = {"sglang": "no requirements set of the harness pins or checks sglang (verl 0.9.1's sglang "
                                  "extra is not tested here); use trainer.verl.rollout=vllm"}
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
        if shape.cpus_per_task is not None:
            check_cpus(shape.cpus_per_task, shape)
        layout.check_rollout_parallel(cfg, options, shape)
        layout.batches(cfg, options, shape)
        layout.precision(cfg, options)
        _check_model(cfg, options)
        _check_data(cfg, options)
        where = site(cfg, options)
        _check_site(cfg, options, where)
        _check_memory(cfg, options, shape, where)
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
    _need(o.attention in ATTENTIONS, f"{v}.attention", o.attention, f"one of {', '.join(ATTENTIONS)}")
    _need(o.rollout not in UNSUPPORTED_ROLLOUTS, f"{v}.rollout", o.rollout, UNSUPPORTED_ROLLOUTS.get(o.rollout, ""))
    _need(o.rollout in ROLLOUT_ENGINES, f"{v}.rollout", o.rollout, f"one of {', '.join(ROLLOUT_ENGINES)}")
    _need(o.step_minutes is None or o.step_minutes > 0, f"{v}.step_minutes", o.step_minutes,
          "null (measured by an earlier attempt) or minutes > 0")
    _need(o.router_replay in ROUTER_REPLAY, f"{v}.router_replay", o.router_replay, f"one of {', '.join(ROUTER_REPLAY)}")
    for key in ("rollout_tensor_parallel", "train_tensor_parallel", "expert_parallel", "micro_batch_per_gpu",
                "max_prompt_length", "eval_samples", "lora_alpha"):
        _need(getattr(o, key) >= 1, f"{v}.{key}", getattr(o, key), "must be an integer >= 1")
    _need(0 <= o.lora_rank <= 512, f"{v}.lora_rank", o.lora_rank, "0 (full fine-tuning) to 512 (vLLM's largest)")
    _need(0 < o.gpu_memory_utilization <= 1, f"{v}.gpu_memory_utilization", o.gpu_memory_utilization, "in (0, 1]")
    _need(o.eval_temperature is None or o.eval_temperature >= 0, f"{v}.eval_temperature", o.eval_temperature,
          "null (trainer.temperature) or >= 0")
    _need(o.entropy_coeff >= 0, f"{v}.entropy_coeff", o.entropy_coeff, "must be >= 0")
    _need(o.ray_port is None or 1024 <= o.ray_port <= 65535 - RAY_PORT_BLOCK, f"{v}.ray_port", o.ray_port,
          f"null (derived from the Slurm job id) or the first of {RAY_PORT_BLOCK} free ports, 1024 to {65535 - RAY_PORT_BLOCK}")
    _need(o.max_tokens_per_gpu is None or o.max_tokens_per_gpu >= 1, f"{v}.max_tokens_per_gpu", o.max_tokens_per_gpu,
          "null (micro_batch_per_gpu sequences per micro-batch) or tokens >= 1")
    _need(o.local_gpu_memory_gb is None or o.local_gpu_memory_gb > 0, f"{v}.local_gpu_memory_gb",
          o.local_gpu_memory_gb, "null (unknown) or GB > 0")
    _need(o.keep_checkpoints is None or o.keep_checkpoints >= 1, f"{v}.keep_checkpoints", o.keep_checkpoints,
          "null (keep every checkpoint) or an integer >= 1 (the newest kept)")
    _need(o.data.max_train_samples is None or o.data.max_train_samples >= 1, f"{v}.data.max_train_samples",
          o.data.max_train_samples, "null (all) or >= 1")
    if o.strategy != "megatron":
        for key in ("train_tensor_parallel", "expert_parallel"):
            _need(getattr(o, key) == 1, f"{v}.{key}", getattr(o, key), "only with trainer.verl.strategy=megatron")
    else:  # verl 0.9.1's megatron engine has no entropy checkpointing (only its fsdp engine reads the key)
        _need(not o.entropy_checkpointing, f"{v}.entropy_checkpointing", o.entropy_checkpointing,
              "false with trainer.verl.strategy=megatron (only verl's fsdp engine checkpoints the entropy)")
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
    path = layout.model_path(cfg, options)
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
    total = layout.max_model_len(cfg, options)
    if total > m.max_position_embeddings:
        raise ValueError(f"trainer.max_new_tokens={cfg.trainer.max_new_tokens} is not allowed: with "
                         f"trainer.verl.max_prompt_length={options.max_prompt_length} it exceeds model={m.name}'s "
                         f"context of {m.max_position_embeddings} tokens")
    if options.max_tokens_per_gpu is not None and options.max_tokens_per_gpu < total:
        raise ValueError(f"trainer.verl.max_tokens_per_gpu={options.max_tokens_per_gpu} is not allowed: a micro-batch "
                         f"must hold one full sequence, trainer.verl.max_prompt_length + trainer.max_new_tokens = {total}")
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
        hub = parse_hub_ref(source.ref)
        if hub is not None:
            if hub[0].startswith("/") and not Path(hub[0]).is_dir():  # a staged snapshot (harness stage)
                raise ValueError(f"{key}: the staged copy {hub[0]!r} does not exist (dataset={cfg.dataset.name})")
            continue
        path = Path(os.path.expanduser(source.ref))
        if not path.is_file():
            raise ValueError(f"{key}: {source.ref!r} does not exist (dataset={cfg.dataset.name})")
        if path.suffix not in (".parquet", ".json", ".jsonl"):
            raise ValueError(f"{key}: {source.ref!r} is not allowed: a .parquet, .json or .jsonl file or hf:<repo>")
    for name in evals:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise ValueError(f"trainer.verl.data.eval: name {name!r} is not allowed: letters, digits, _ . -")


def _check_site(cfg, options: VerlOptions, where: Site) -> None:
    """A cluster run names its verl environment; an offline cluster has every model and data file staged."""
    if where.cluster and not where.python:
        raise ValueError(f"trainer.verl.python=None is not allowed on a cluster: name the verl environment of the nodes "
                         f"(verl_python: <venv or python> in the {where.name}, or $HARNESS_VERL_PYTHON)")
    if where.cuda not in REQUIREMENTS:
        raise ValueError(f"launcher.verl_cuda={where.cuda!r} is not allowed: one of {', '.join(map(str, REQUIREMENTS))} "
                         f"(the CUDA major of the nodes' verl environment, {where.name})")
    if where.offline:
        missing = layout.hub_refs(cfg, options)
        if missing:
            key, ref = missing[0]
            folder = f"stage_dir {where.stage_dir}" if where.stage_dir else "no stage_dir"
            why = "is offline (hub_access: false)" if where.cluster else "is offline"
            raise ValueError(f"{key}: {ref!r} is neither staged nor reachable: the {where.name} {why} and has "
                             f"{folder}; run `python -m harness stage <the same overrides>` on a machine with network")


def _check_memory(cfg, options: VerlOptions, shape: layout.Cluster, where: Site) -> None:
    extras = model_extras(cfg.model.name)
    if where.gpu_memory_gb is None or extras.params_b <= 0:
        return
    m = cfg.model
    precision = layout.precision(cfg, options)
    rollout_bytes = 1 if precision.rollout_quantization == "fp8" else 2
    megatron = options.strategy == "megatron"
    model = Model(m.name, extras.params_b, m.num_layers, m.num_kv_heads, extras.head_dim, m.num_heads,
                  extras.expert_params_b, hidden=m.hidden_size, vocab=extras.vocab)
    sequence = layout.max_model_len(cfg, options)
    anchor_rollout = OmegaConf.select(cfg, "algo.anchor") == "rollout"  # the update's forward computes the entropy
    packed = megatron or options.attention == "flash_attention_2"  # use_remove_padding (overrides.py)
    micro_tokens, padding = padded_micro_tokens(sequence, options.max_tokens_per_gpu, options.micro_batch_per_gpu,
                                                layout.batches(cfg, options, shape).sequences_per_gpu, packed)
    setup = Setup(gpu_gb=float(where.gpu_memory_gb), gpus_per_node=shape.gpus_per_node, gpus=shape.gpus,
                  utilization=options.gpu_memory_utilization, rollout_tp=options.rollout_tensor_parallel,
                  rollout_bytes=rollout_bytes, sequence=sequence, megatron=megatron,
                  offload=options.offload, train_tp=options.train_tensor_parallel if megatron else 1,
                  expert_parallel=options.expert_parallel if megatron and extras.num_experts else 1,
                  host_gb=shape.mem_gb, micro_tokens=micro_tokens, padding=padding,
                  entropy=anchor_rollout and (megatron or not options.entropy_checkpointing))
    problem = refusal(model, setup, where.name)
    if problem:
        raise ValueError(problem)
