"""Spec -> verl: the `main_ppo` Hydra overrides of a validated trainer=verl run (a pure function).

`verl_overrides(cfg, paths)` reads only the validated config and the run's file locations, so a dry run
prints exactly what a real run launches. Names are verl 0.9.1's (trainer/config/ppo_trainer.yaml and
ppo_megatron_trainer.yaml); tests/verl composes the result against verl's own config with Hydra.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

from omegaconf import OmegaConf

from harness.trainers.verl import layout
from harness.trainers.verl.objective import ENV_VAR, anchor_overrides, loss_mode
from harness.trainers.verl.options import verl_options
from harness.trainers.verl.ray_resources import TQ_STORAGE_UNITS, TQ_STORAGE_UNITS_KEY
from harness.config.profiles import profile_for
from harness.trainers.verl.attempt import Attempt, save_freq, step_seconds
from harness.trainers.verl.site import on_cluster, site

PLUGIN_MODULE = "harness.trainers.verl.plugin"
ADVANTAGES = {"grpo": ("grpo", True), "drgrpo": ("grpo", False), "rloo": ("rloo", True)}
_PLAIN = re.compile(r"[\w./:@+-]*")


@dataclass(frozen=True)
class RunPaths:
    """Where a run's verl files live (all under the harness run folder)."""

    run_dir: Path

    @property
    def verl_dir(self) -> Path:
        return self.run_dir / "verl"

    @property
    def objective(self) -> Path:
        return self.verl_dir / "objective.json"

    @property
    def data_spec(self) -> Path:
        return self.verl_dir / "data.json"

    @property
    def data_dir(self) -> Path:
        return self.verl_dir / "data"

    @property
    def metrics(self) -> Path:
        return self.verl_dir / "metrics.jsonl"

    @property
    def script(self) -> Path:
        return self.verl_dir / "launch.sh"

    @property
    def checkpoints(self) -> Path:
        return self.run_dir / "checkpoints" / "verl"

    def train_file(self) -> Path:
        return self.data_dir / "train.parquet"

    def eval_file(self, name: str) -> Path:
        return self.data_dir / f"eval_{name}.parquet"


def harness_root() -> Path:
    """The folder that holds the `harness` package (put on PYTHONPATH of every verl process)."""
    return Path(__file__).resolve().parents[3]


def job_env(cfg, paths: RunPaths, root: Path) -> Dict[str, str]:
    """Environment of every verl process: exported before Ray starts and set in Ray's runtime env."""
    options = verl_options(cfg)
    env = {"PYTHONPATH": str(root), ENV_VAR: str(paths.objective), "VERL_FILE_LOGGER_PATH": str(paths.metrics)}
    if hub_offline(cfg, options):
        env.update(OFFLINE_ENV)
    where = site(cfg, options)
    if where.cluster and where.stage_dir is not None:  # the hub libraries' cache on the shared stage, not in $HOME
        env["HF_HOME"] = str(where.stage_dir / HF_HOME_DIR)
    if where.interface:  # the profile's network interface (else the script finds the route's, script.py)
        env.update({name: where.interface for name in SOCKET_IFNAME_VARS})
    if layout.precision(cfg, options).train_dtype == "fp8":
        env.update(FP8_TRAINING_ENV)
    env.update({str(k): str(v) for k, v in options.env.items()})
    return env


# TransformerEngine's block-wise FP8 with fp32 scales, which verl-recipe's FP8 end-to-end run requires on every
# node (low_precision/README.md, "Required environment variables")
FP8_TRAINING_ENV = {"NVTE_FP8_BLOCK_SCALING_FP32_SCALES": "1"}

HF_HOME_DIR = "hf-home"  # under the stage folder: the cache every node of a cluster run shares
SOCKET_IFNAME_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")  # torch.distributed's and NCCL's interface

# The hub libraries' own switches: read local files and the cache only, never the network
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def hub_offline(cfg, options) -> bool:
    """The job runs with the hub offline: the nodes have no network (validation has refused anything
    unstaged then), or everything it reads is staged or local."""
    where = site(cfg, options)
    return where.offline or (where.stage_dir is not None and not layout.hub_refs(cfg, options))


def value(v: Any) -> str:
    """A Hydra override value: bools/None as YAML, lists as [a,b], odd strings single-quoted."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(value(x) for x in v) + "]"
    text = str(v)
    if _PLAIN.fullmatch(text) and text not in ("true", "false", "null", ""):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def config_name(cfg) -> str:
    """verl's trainer config: ppo_trainer (FSDP) or ppo_megatron_trainer."""
    return "ppo_megatron_trainer" if verl_options(cfg).strategy == "megatron" else "ppo_trainer"


def verl_overrides(cfg, paths: RunPaths, run_name: str = "run", resume_from: Optional[str] = None,
                   root: Optional[Path] = None, attempt: Attempt = Attempt()) -> List[str]:
    """The main_ppo overrides, in a stable order (model, data, actor, rollout, algorithm, reward, trainer).

    resume_from: a verl checkpoint folder (…/global_step_N) of another run to start from; by default verl
    resumes from this run's own latest checkpoint, if any (a requeued job continues where it stopped).
    attempt: which attempt of the run this is (attempt.py): validation before training and the checkpoint
    frequency follow from it.
    """
    o = verl_options(cfg)
    t = cfg.trainer
    root = root or harness_root()
    shape = layout.cluster(cfg, o)
    b = layout.batches(cfg, o, shape)
    p = layout.precision(cfg, o)
    _, evals, _ = layout.data_sources(cfg, o)
    algo = OmegaConf.to_container(cfg.algo, resolve=True)
    megatron = o.strategy == "megatron"
    estimator, norm_by_std = ADVANTAGES[t.advantage]
    eval_temperature = float(o.eval_temperature if o.eval_temperature is not None else t.temperature)
    ar = "actor_rollout_ref"
    out: List[tuple] = [
        (f"{ar}.model.path", layout.model_path(cfg, o)),
        (f"{ar}.model.external_lib", PLUGIN_MODULE),
        # verl's default is flash_attention_2 (workers/config/model.py); its packed sequences (use_remove_padding)
        # run through flash-attn's varlen kernels on fsdp, so sdpa trains on padded micro-batches. Megatron packs
        # with TransformerEngine's attention, which needs no flash-attn.
        (f"+{ar}.model.override_config.attn_implementation", o.attention),
        (f"{ar}.model.use_remove_padding", megatron or o.attention == "flash_attention_2"),
        (f"{ar}.model.enable_gradient_checkpointing", True),
        ("data.train_files", [str(paths.train_file())]),
        ("data.val_files", [str(paths.eval_file(name)) for name in evals]),
        ("data.prompt_key", "prompt"),
        ("data.max_prompt_length", o.max_prompt_length),
        ("data.max_response_length", t.max_new_tokens),
        ("data.train_batch_size", b.prompts),
        ("data.filter_overlong_prompts", True),
        ("data.truncation", "error"),
        ("data.shuffle", True),
        ("data.seed", cfg.seed),
        (f"{ar}.actor.strategy", o.strategy),
        (f"{ar}.actor.ppo_mini_batch_size", b.mini_prompts),
        (f"{ar}.actor.ppo_micro_batch_size_per_gpu", o.micro_batch_per_gpu),
        *_batch_size(o),
        (f"{ar}.actor.ppo_epochs", 1),
        (f"{ar}.actor.optim.lr", float(t.lr)),
        (f"{ar}.actor.optim.weight_decay", float(t.weight_decay)),
        (f"{ar}.actor.optim.clip_grad", float(t.grad_clip)),
        (f"{ar}.actor.loss_agg_mode", t.loss_agg),
        (f"{ar}.actor.loss_scale_factor", t.max_new_tokens if t.loss_agg == "seq-mean-token-sum-norm" else None),
        (f"{ar}.actor.policy_loss.loss_mode", loss_mode(algo["name"])),
        (f"{ar}.actor.use_kl_loss", False),
        (f"{ar}.actor.entropy_coeff", float(o.entropy_coeff)),
        # anchor=rollout (bypass mode) skips the old-log-prob forward that computes actor/entropy: the update's
        # forward computes it instead (actor/entropy_loss, metrics.py -> train/entropy)
        (f"{ar}.actor.calculate_entropy", algo["anchor"] == "rollout"),
        *([(f"{ar}.actor.entropy_checkpointing", o.entropy_checkpointing)] if not megatron else []),
        (f"{ar}.actor.data_loader_seed", cfg.seed),
    ]
    out += _engine(o, p, megatron, t.grad_clip)
    out += _offload(o, megatron)
    out += _lora(o, megatron)
    out += [
        (f"{ar}.rollout.name", o.rollout),
        (f"{ar}.rollout.n", t.group_size),
        (f"{ar}.rollout.temperature", float(t.temperature)),
        (f"{ar}.rollout.top_p", 1.0),
        (f"{ar}.rollout.tensor_model_parallel_size", o.rollout_tensor_parallel),
        (f"{ar}.rollout.gpu_memory_utilization", float(o.gpu_memory_utilization)),
        (f"{ar}.rollout.max_model_len", layout.max_model_len(cfg, o)),  # else vLLM sizes for the whole context
        (f"{ar}.rollout.dtype", p.rollout_dtype),
        (f"{ar}.rollout.quantization", p.rollout_quantization),
        (f"{ar}.rollout.calculate_log_probs", True),
        (f"{ar}.rollout.log_prob_micro_batch_size_per_gpu", o.micro_batch_per_gpu),
        (f"{ar}.rollout.enable_rollout_routing_replay", o.router_replay == "R3"),
        (f"{ar}.rollout.seed", cfg.seed),
        (f"{ar}.rollout.val_kwargs.n", o.eval_samples),
        (f"{ar}.rollout.val_kwargs.do_sample", eval_temperature > 0),
        (f"{ar}.rollout.val_kwargs.temperature", eval_temperature),
        (f"{ar}.rollout.val_kwargs.top_p", 1.0),
        ("algorithm.adv_estimator", estimator),
        ("algorithm.norm_adv_by_std_in_grpo", norm_by_std),
        ("algorithm.use_kl_in_reward", False),
    ]
    out += anchor_overrides(algo)
    out += [
        ("reward.custom_reward_function.path", str(root / "harness" / "trainers" / "verl" / "reward.py")),
        ("reward.custom_reward_function.name", "compute_score"),
        (TQ_STORAGE_UNITS_KEY, TQ_STORAGE_UNITS),  # what ray_resources.py counts
        ("trainer.use_v1", True),  # the legacy trainer would swap the harness loss for its own bypass-mode loss
        ("trainer.nnodes", shape.nodes),
        ("trainer.n_gpus_per_node", shape.gpus_per_node),
        ("trainer.total_training_steps", t.steps),
        ("trainer.total_epochs", 100000),  # steps bound the run, not epochs
        ("trainer.test_freq", t.eval_every),
        ("trainer.save_freq", save_freq(t.checkpoint_every, _time_limit(cfg),
                                        step_seconds(attempt, cfg, o, shape.gpus))),
        ("trainer.max_actor_ckpt_to_keep", o.keep_checkpoints),  # no critic: GRPO/RLOO advantages
        ("trainer.val_before_train", attempt.first),  # a requeued attempt's step-0 evaluation is recorded
        ("trainer.logger", ["console", "file"]),
        ("trainer.project_name", cfg.experiment_name),
        ("trainer.experiment_name", run_name),
        ("trainer.default_local_dir", str(paths.checkpoints)),
        ("trainer.resume_mode", "resume_path" if resume_from else "auto"),
        ("trainer.resume_from_path", resume_from),
    ]
    # Ray workers inherit the environment the batch script starts Ray with; the job's variables are also set
    # in Ray's runtime env (except PYTHONPATH, which the script prepends to rather than replaces).
    env = job_env(cfg, paths, root)
    out += [(f"+ray_kwargs.ray_init.runtime_env.env_vars.{k}", v) for k, v in env.items() if k != "PYTHONPATH"]
    return [f"{key}={value(v)}" for key, v in out] + list(o.extra)


def _time_limit(cfg) -> Optional[float]:
    """The job's time limit in minutes (a cluster profile's timeout_min), None for a run here."""
    return float(profile_for(cfg.launcher).timeout_min) if on_cluster(cfg) else None


def _batch_size(o) -> List[tuple]:
    """Fixed micro-batches of micro_batch_per_gpu sequences, or verl's dynamic batch size: sequences packed up
    to max_tokens_per_gpu tokens per forward, for the update and the log-prob forwards alike."""
    ar = "actor_rollout_ref"
    if o.max_tokens_per_gpu is None:
        return [(f"{ar}.actor.use_dynamic_bsz", False)]
    return [(f"{ar}.actor.use_dynamic_bsz", True), (f"{ar}.actor.ppo_max_token_len_per_gpu", o.max_tokens_per_gpu),
            (f"{ar}.rollout.log_prob_use_dynamic_bsz", True),
            (f"{ar}.rollout.log_prob_max_token_len_per_gpu", o.max_tokens_per_gpu)]


def _engine(o, p: layout.Precision, megatron: bool, grad_clip: float) -> List[tuple]:
    """Trainer-side precision and parallelism (FSDP mixed precision, or the megatron engine)."""
    ar = "actor_rollout_ref.actor"
    if not megatron:
        return [(f"+{ar}.fsdp_config.mixed_precision.param_dtype", p.train_dtype),
                (f"+{ar}.fsdp_config.mixed_precision.reduce_dtype", "fp32"),
                (f"+{ar}.fsdp_config.mixed_precision.buffer_dtype", "fp32"),
                (f"{ar}.grad_clip", float(grad_clip))]
    out = [(f"{ar}.megatron.tensor_model_parallel_size", o.train_tensor_parallel),
           (f"{ar}.megatron.expert_model_parallel_size", o.expert_parallel),
           (f"{ar}.megatron.dtype", "float16" if p.train_dtype == "fp16" else "bfloat16"),
           (f"{ar}.megatron.router_replay.mode", o.router_replay)]
    if p.train_dtype == "fp8":  # verl-recipe low_precision (FP8 end-to-end, Qwen3-30B-A3B Megatron); conf/precision/fp8_e2e.yaml
        out += [(f"+{ar}.megatron.override_transformer_config.fp8", "e4m3"),
                (f"+{ar}.megatron.override_transformer_config.fp8_recipe", "blockwise"),
                (f"+{ar}.optim.override_optimizer_config.fp8_recipe", "blockwise")]
    return out


def _offload(o, megatron: bool) -> List[tuple]:
    """Actor parameters and optimizer states on the CPU between uses (verl's offload switches)."""
    if not o.offload:
        return []
    if megatron:
        ar = "actor_rollout_ref.actor.megatron"
        return [(f"{ar}.param_offload", True), (f"{ar}.optimizer_offload", True)]
    ar = "actor_rollout_ref.actor.fsdp_config"
    return [(f"{ar}.param_offload", True), (f"{ar}.optimizer_offload", True)]


def _lora(o, megatron: bool) -> List[tuple]:
    if o.lora_rank == 0:
        return []
    m = "actor_rollout_ref.model"
    if megatron:
        return [(f"{m}.lora.rank", o.lora_rank), (f"{m}.lora.alpha", o.lora_alpha)]
    return [(f"{m}.lora_rank", o.lora_rank), (f"{m}.lora_alpha", o.lora_alpha), (f"{m}.target_modules", "all-linear")]
