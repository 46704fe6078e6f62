"""The built-in tasks' 0/1 reward computed from token ids, on the device, for a whole batch at once: what
`Task.reward(problem, text)` gives for the decoded text (`completions_text`: a row's real tokens with the
special ones dropped; then stripped of spaces and compared with the answer), without decoding."""
from __future__ import annotations

from typing import Sequence

import torch

from harness.trainers.builtin.tokenizer import SPECIAL_TOKENS, char_ids, fixed_vocab

_VOCAB = fixed_vocab()
_SPACE = _VOCAB[" "]


def answer_ids(answers: Sequence[str], device=None) -> torch.Tensor:
    """Token ids [N, A] of each answer, right-padded with <pad> (id 0) to the longest (A >= 1)."""
    return torch.from_numpy(answer_array(answers)).to(device)


def answer_array(answers: Sequence[str]):
    """`answer_ids` as a numpy int64 array (made on the host in a few numpy calls)."""
    return char_ids(list(answers), max([len(a) for a in answers] + [1]))


def token_rewards(tokens: torch.Tensor, mask: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
    """Rewards [...] (float32, 1.0 for an exact answer) of responses tokens [..., T] with mask [..., T] (1 for
    a real token, the <eos> included) against answers [..., A] from `answer_ids` (broadcast to tokens')."""
    kept = mask.bool() & (tokens >= len(SPECIAL_TOKENS))  # what the decoded text holds
    solid = kept & (tokens != _SPACE)
    before = solid.long().cumsum(dim=-1) - solid.long()  # solid tokens before each position
    after = solid.long().flip(-1).cumsum(dim=-1).flip(-1) - solid.long()
    kept = kept & (solid | ((before > 0) & (after > 0)))  # str.strip(): spaces at either end dropped
    count = kept.sum(dim=-1)
    width = max(tokens.shape[-1], answers.shape[-1]) + 1
    # the kept tokens moved to the front; the others land in a last column that is cut off
    slots = torch.where(kept, kept.long().cumsum(dim=-1) - 1, width - 1)
    text = torch.zeros(*tokens.shape[:-1], width, dtype=torch.long, device=tokens.device)
    text.scatter_(-1, slots, torch.where(kept, tokens, 0))
    answers = answers.expand(*tokens.shape[:-1], answers.shape[-1])
    length = (answers != 0).sum(dim=-1)
    return ((text[..., :answers.shape[-1]] == answers).all(dim=-1) & (count == length)).float()
