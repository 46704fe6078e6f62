"""A lower bound on the memory a built-in trainer run needs, checked at preflight against this machine's RAM,
so a shape that cannot fit (`model.hidden_size=1000000000`, `trainer.max_new_tokens=100000000`) is refused
in one line before a run folder or a tracking run exists, not by a failed allocation inside the run.

Counted, in float32: the parameters four times (weights, gradients, AdamW's two moments) plus the rollout
engine's copy, and the rollout's key/value cache for every sequence of a step at its longest. Activations,
logits and the tokenizer's vocabulary are left out: the bound stays below what the run really takes."""
from __future__ import annotations

import os

from omegaconf import DictConfig

from harness.config.errors import ConfigError

FLOAT_BYTES = 4
PARAMETER_COPIES = 5  # weights, gradients, AdamW exp_avg and exp_avg_sq, the rollout engine's weights
PROMPT_TOKENS = 16  # a built-in task's prompt is at least this long


def machine_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def parameter_count(model: DictConfig) -> int:
    """The transformer blocks' parameters (attention and MLP); embeddings and norms left out."""
    h, heads, kv = model.hidden_size, model.num_heads, model.num_kv_heads
    head_dim = h // heads
    attention = h * heads * head_dim * 2 + h * kv * head_dim * 2  # q and o, k and v
    mlp = 3 * h * model.intermediate_size  # gate, up, down
    return model.num_layers * (attention + mlp)


def kv_cache_bytes(model: DictConfig, trainer: DictConfig) -> int:
    """The rollout's key/value cache of one step."""
    sequences = trainer.prompts_per_step * trainer.group_size
    tokens = PROMPT_TOKENS + (trainer.max_new_tokens or 0)
    head_dim = model.hidden_size // model.num_heads
    return sequences * tokens * model.num_layers * 2 * model.num_kv_heads * head_dim * FLOAT_BYTES


def check_builtin_memory(model: DictConfig, trainer: DictConfig) -> None:
    """ConfigError naming the keys when a run of this `model` and `trainer` cannot fit in this machine's memory."""
    if model.get("path"):
        return  # a real checkpoint's shape is its own
    available = machine_memory_bytes()
    weights = parameter_count(model) * FLOAT_BYTES * PARAMETER_COPIES
    cache = kv_cache_bytes(model, trainer)
    if weights + cache <= available:
        return
    if weights >= cache:
        keys = (f"model.hidden_size={model.hidden_size}, model.intermediate_size={model.intermediate_size}, "
                f"model.num_layers={model.num_layers}")
        what = "its parameters, gradients and optimizer state"
    else:
        keys = (f"trainer.max_new_tokens={trainer.max_new_tokens}, "
                f"trainer.prompts_per_step={trainer.prompts_per_step}, trainer.group_size={trainer.group_size}")
        what = "the rollout's key/value cache"
    raise ConfigError(f"{keys}: the built-in trainer would need at least {_gib(weights + cache)} of memory for "
                      f"{what}, more than this machine's {_gib(available)}; choose a smaller shape")


def _gib(size: int) -> str:
    return f"{size / 2**30:,.1f} GiB"
