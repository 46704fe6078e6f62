"""Trainer-side log-probabilities of sampled response tokens."""
from __future__ import annotations

import functools
import inspect

import torch


def response_logits(model, prompts: torch.Tensor, prompt_index: torch.Tensor, responses: torch.Tensor,
                    temperature: float) -> torch.Tensor:
    """Logits that predict each response token, divided by the sampling temperature so log-probs match the
    rollout's: prompts [U, P] (distinct prompts), prompt_index [B] (each row's prompt), responses [B, T] ->
    [B, T, V] float32.

    The rows of a group share their prompt, and a causal model's prompt positions do not depend on what
    follows them: the prompt runs once per distinct prompt (its KV cache then indexed out to the rows), and
    only the response positions run per row. The logits are those of one forward of cat(prompt, response) per
    row, to float rounding, with a group of G rows paying for its prompt once instead of G times; gradients
    reach the prompt positions through the cache. The last response token predicts nothing and is not fed.
    """
    used, rows = torch.unique(prompt_index, return_inverse=True)
    prefix = model(input_ids=prompts[used], use_cache=True, logits_to_keep=1)
    logits = prefix.logits[rows]  # [B, 1, V]: predicts the first response token
    if responses.shape[1] > 1:
        name = cache_argument(model)
        cache = getattr(prefix, name)
        cache.reorder_cache(rows)
        rest = model(input_ids=responses[:, :-1], use_cache=True, **{name: cache}).logits
        logits = torch.cat([logits, rest], dim=1)
    return logits.float() / temperature


@functools.lru_cache(maxsize=None)
def _cache_argument(forward) -> str:
    # transformers renamed `past_key_values` to `cache` (5.x); accept both so older versions keep working
    return "cache" if "cache" in inspect.signature(forward).parameters else "past_key_values"


def cache_argument(model) -> str:
    """The name of `model.forward`'s KV-cache argument."""
    return _cache_argument(type(model).forward)


def token_logp(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log π of the sampled tokens: logits [B, T, V], tokens [B, T] -> [B, T]."""
    return torch.log_softmax(logits, dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy (nats) of each position's distribution: [B, T, V] -> [B, T]."""
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(-1)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> float:
    return float((values * mask).sum() / mask.sum().clamp_min(1))
