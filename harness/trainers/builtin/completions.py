"""What the rollout engine (harness/trainers/ensemble/stacked_rollout.py) returns per run, and its text."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Rollout:
    """Sampled continuations of a batch of prompts (B rows, T = max_new_tokens columns).

    tokens: LongTensor [B, T], generated tokens only, `<pad>` after `<eos>`.
    logp: FloatTensor [B, T] float32, log μ(token) = log_softmax(logits / temperature) under the engine, 0 at padding.
    mask: FloatTensor [B, T], 1 for real tokens (the `<eos>` included), 0 after it.
    lengths: LongTensor [B], number of real tokens per row (= mask.sum(1)).
    topk_logp, topk_ids: [B, T, K] float32 / long, the engine's K most likely tokens per position
    (same temperature; rows of padding positions are meaningless), or None when topk == 0.
    """

    tokens: torch.LongTensor
    logp: torch.FloatTensor
    mask: torch.FloatTensor
    lengths: torch.LongTensor
    topk_logp: torch.FloatTensor | None = None
    topk_ids: torch.LongTensor | None = None


def completions_text(tokenizer, rollout: Rollout) -> list[str]:
    """Decoded text of each row's real tokens, `<eos>` and padding dropped: list of B strings."""
    return [
        tokenizer.decode(row[:length], skip_special_tokens=True)
        for row, length in zip(rollout.tokens.tolist(), rollout.lengths.tolist())
    ]
