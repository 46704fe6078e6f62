"""Trainer-side log-probabilities of sampled response tokens."""
from __future__ import annotations

import torch


def token_logp(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log π of the sampled tokens: logits [B, T, V], tokens [B, T] -> [B, T]."""
    return torch.log_softmax(logits, dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy (nats) of each position's distribution: [B, T, V] -> [B, T]."""
    logp = torch.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(-1)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> float:
    return float((values * mask).sum() / mask.sum().clamp_min(1))


def masked_means(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each member's mean over its real tokens, on the device: values, mask [M, ...] -> [M]."""
    return (values * mask).flatten(1).sum(1) / mask.flatten(1).sum(1).clamp_min(1)
