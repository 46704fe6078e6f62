"""The policy network: a small Qwen3 decoder built from a config (no download), or a local checkpoint."""

from __future__ import annotations

import torch
import torch.nn.functional as F

# Measured on 1 CPU thread for 0.1M-1M parameter models: "sdpa" beats "eager" for both generation and
# forward+backward (see the report of the component that introduced this file).
ATTENTION_IMPLEMENTATION = "sdpa"


def build_model(model_cfg, vocab_size: int, seed: int):
    """A float32 `transformers.Qwen3ForCausalLM`, identical for identical (model_cfg, vocab_size, seed).

    model_cfg: any object with `hidden_size`, `num_layers`, `num_heads`, `num_kv_heads`, `intermediate_size`,
    `max_position_embeddings`, `tie_word_embeddings` and optionally `path`. When `path` is set the checkpoint is
    loaded from disk (`local_files_only`) and the size fields are ignored.
    """
    from transformers import AutoModelForCausalLM, Qwen3Config, Qwen3ForCausalLM

    path = getattr(model_cfg, "path", None)
    if path is not None:
        model = AutoModelForCausalLM.from_pretrained(
            str(path), local_files_only=True, dtype=torch.float32, attn_implementation=ATTENTION_IMPLEMENTATION
        )
        return model.train()

    if model_cfg.hidden_size % model_cfg.num_heads != 0:
        raise ValueError(
            f"model.hidden_size={model_cfg.hidden_size} must be divisible by model.num_heads={model_cfg.num_heads}"
        )
    if model_cfg.num_heads % model_cfg.num_kv_heads != 0:
        raise ValueError(
            f"model.num_heads={model_cfg.num_heads} must be a multiple of model.num_kv_heads={model_cfg.num_kv_heads}"
        )
    config = Qwen3Config(
        vocab_size=vocab_size,
        hidden_size=model_cfg.hidden_size,
        intermediate_size=model_cfg.intermediate_size,
        num_hidden_layers=model_cfg.num_layers,
        num_attention_heads=model_cfg.num_heads,
        num_key_value_heads=model_cfg.num_kv_heads,
        head_dim=model_cfg.hidden_size // model_cfg.num_heads,
        max_position_embeddings=model_cfg.max_position_embeddings,
        tie_word_embeddings=bool(model_cfg.tie_word_embeddings),
        # Ids of the character tokenizer (tokenizer.SPECIAL_TOKENS order).
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    config._attn_implementation = ATTENTION_IMPLEMENTATION
    # Seed a private RNG stream so building a model neither depends on nor disturbs the caller's global RNG.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen3ForCausalLM(config)
    return model.to(torch.float32).train()


def plain_qwen3(policy) -> bool:
    """Whether `policy` is a transformers Qwen3ForCausalLM with only the settings the stacked model
    (harness/trainers/ensemble/stacked_model.py) computes: no attention bias, sliding window or scaled RoPE,
    SiLU, SDPA or eager attention. A `model.path` checkpoint may be anything `AutoModelForCausalLM` loads."""
    try:
        return _plain_qwen3(policy)
    except (AttributeError, TypeError, ValueError):  # a config laid out otherwise is not the plain Qwen3
        return False


def _plain_qwen3(policy) -> bool:
    if type(policy).__name__ != "Qwen3ForCausalLM":
        return False
    cfg = policy.config
    layer_types = getattr(cfg, "layer_types", None) or []
    rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
    rotary = getattr(getattr(policy, "model", None), "rotary_emb", None)
    return (
        not getattr(cfg, "attention_bias", False)
        and not getattr(cfg, "use_sliding_window", False)
        and all(t == "full_attention" for t in layer_types)
        and getattr(cfg, "hidden_act", "silu") == "silu"
        and rope.get("rope_type", "default") == "default"
        and rotary is not None
        and float(getattr(rotary, "attention_scaling", 1.0)) == 1.0
        and getattr(cfg, "_attn_implementation", "sdpa") in ("sdpa", "eager")
    )


def token_logprobs(model, prompt_ids: torch.LongTensor, tokens: torch.LongTensor, temperature: float = 1.0):
    """Teacher-forced log-probs of `tokens` continuing `prompt_ids`, by one full forward.

    prompt_ids: LongTensor [B, P]; tokens: LongTensor [B, T] (e.g. `Rollout.tokens`; padding is scored too,
    mask it yourself). Returns (logp FloatTensor [B, T] = log_softmax(logits / temperature) at each token,
    logits FloatTensor [B, T, V] float32, already divided by temperature). Differentiable; call under
    torch.no_grad() for recomputation only.
    """
    input_ids = torch.cat([prompt_ids, tokens], dim=1)
    prompt_length = prompt_ids.shape[1]
    # The logit at position i predicts token i+1, so the T predictions for `tokens` start at P-1.
    logits = model(input_ids=input_ids, use_cache=False).logits[:, prompt_length - 1 : -1]
    logits = logits.float() / temperature
    logp = torch.gather(F.log_softmax(logits, dim=-1), 2, tokens.unsqueeze(-1)).squeeze(-1)
    return logp, logits
