"""Rewards from token ids (the trainer's, on the device) equal the task's reward of the decoded text, on
responses built to hit every case: the answer with spaces around it, special tokens sampled inside it, no
<eos>, a longer or shorter text, random tokens."""
from __future__ import annotations

import torch

from types import SimpleNamespace

from harness.trainers.builtin.completions import Rollout, completions_text
from harness.trainers.builtin.tasks import build_task
from harness.trainers.builtin.tasks.token_rewards import answer_ids, token_rewards
from harness.trainers.builtin.tokenizer import fixed_vocab


def _responses(answers, length: int, seed: int):
    vocab, g = fixed_vocab(), torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, len(vocab), (len(answers), length), generator=g)
    for i, answer in enumerate(answers):
        kind = i % 6
        if kind < 4:
            ids = [vocab[c] for c in answer]
            if kind == 1:
                ids = [vocab[" "]] + ids + [vocab[" "], vocab[" "]]
            if kind == 2:
                special = int(torch.randint(0, 2, (1,), generator=g))  # <pad> or <bos> sampled inside the answer
                ids.insert(int(torch.randint(0, len(ids) + 1, (1,), generator=g)), special)
            if kind == 3:
                ids = ids[:-1] if len(ids) > 1 else ids + [vocab["7"]]
            sequence = (ids + [vocab["<eos>"]])[:length]
            tokens[i, :len(sequence)] = torch.tensor(sequence)
    ends = [row.index(2) + 1 if 2 in row else length for row in tokens.tolist()]
    mask = (torch.arange(length).view(1, -1) < torch.tensor(ends).view(-1, 1)).float()
    return torch.where(mask.bool(), tokens, 0), mask


def test_token_rewards_equal_the_reward_of_the_decoded_text(tokenizer):
    for name, difficulty in (("arithmetic", 2), ("sorting", 4)):
        task = build_task(SimpleNamespace(name=name, difficulty=difficulty, eval_size=50, seed=0))
        problems = task.eval_set() * 12
        length = task.max_answer_length + 1
        tokens, mask = _responses([p.answer for p in problems], length, seed=difficulty)
        texts = completions_text(tokenizer, Rollout(tokens=tokens, logp=mask, mask=mask, lengths=mask.sum(1).long()))
        expected = torch.tensor([task.reward(p, text) for p, text in zip(problems, texts)])
        answers = answer_ids([p.answer for p in problems]).view(12, 50, -1)
        got = token_rewards(tokens.view(12, 50, -1), mask.view(12, 50, -1), answers)  # [members, rows] at once
        assert 0.2 < expected.mean() < 0.8, name
        assert torch.equal(got.flatten(), expected), name
