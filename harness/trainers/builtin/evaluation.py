"""Held-out accuracy: greedy decoding by the rollout engine, scored by the task's verifier."""
from __future__ import annotations

import torch

from harness.trainers.builtin.rollout import completions_text
from harness.trainers.builtin.tokenizer import encode_batch


@torch.no_grad()
def evaluate(engine, tokenizer, task, problems, max_new_tokens: int, batch_size: int = 256) -> float:
    correct = 0.0
    for start in range(0, len(problems), batch_size):
        chunk = problems[start:start + batch_size]
        prompt_ids = encode_batch(tokenizer, [p.prompt for p in chunk])
        rollout = engine.generate(prompt_ids, max_new_tokens, temperature=1.0,
                                  generator=torch.Generator().manual_seed(0), greedy=True)
        correct += sum(task.reward(p, text) for p, text in zip(chunk, completions_text(tokenizer, rollout)))
    return correct / max(len(problems), 1)
