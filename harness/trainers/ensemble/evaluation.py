"""The ensemble's evaluation: every member's held-out accuracy, sampled at its training temperature (a fixed
seed) and greedy. A member whose sampling or rewards fail ends alone."""
from __future__ import annotations

from typing import Dict, List, Optional

import torch

from harness.trainers.builtin.completions import completions_text
from harness.trainers.builtin.tokenizer import encode_batch

EVAL_BATCH = 256  # as `rollout.evaluate_accuracy`: the eval generator's draws depend on the chunking


def evaluate(trainer) -> Dict[int, Dict[str, float]]:
    """trainer: an `EnsembleTrainer`; {member index: its evaluation metrics} of the members still alive."""
    trainer.engine.sync()
    seeds = [int(m.spec.dataset.seed) for m in trainer.members]
    sampled = _accuracy(trainer, [torch.Generator().manual_seed(s) for s in seeds], greedy=False)
    greedy = _accuracy(trainer, [None] * len(trainer.members), greedy=True)
    out = {}
    for k, member in enumerate(trainer.members):
        if member.alive:
            member.best_eval = max(member.best_eval, sampled[k])
            out[k] = {"eval/accuracy": sampled[k], "eval/greedy_accuracy": greedy[k],
                      "eval/best_accuracy": member.best_eval}
    return out


def _accuracy(trainer, generators: List[Optional[torch.Generator]], greedy: bool) -> List[float]:
    problems, members = trainer.eval_problems, trainer.members
    max_new_tokens = trainer.task.max_answer_length + 1
    rewards: List[List[float]] = [[] for _ in members]
    failed = trainer.sampling_failed(f"in the evaluation at step {trainer.step}")
    for start in range(0, len(problems), EVAL_BATCH):
        chunk = problems[start:start + EVAL_BATCH]
        prompts = encode_batch(trainer.tokenizer, [p.prompt for p in chunk]).unsqueeze(0).expand(len(members), -1, -1)
        rollouts = trainer.engine.generate(prompts, max_new_tokens, [m.t.temperature for m in members],
                                           [g if m.alive else None for g, m in zip(generators, members)],
                                           greedy=greedy, on_failure=failed)
        for k, (member, rollout) in enumerate(zip(members, rollouts)):
            if member.alive:
                with member.alone():
                    rewards[k] += [trainer.task.reward(p, c)
                                   for p, c in zip(chunk, completions_text(trainer.tokenizer, rollout))]
    return [float(sum(r) / len(r)) if r else float("nan") for r in rewards]
