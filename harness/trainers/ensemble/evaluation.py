"""The ensemble's evaluation: every member's held-out accuracy, sampled at its training temperature (a fixed
stream: its dataset seed's, the same at every evaluation) and greedy, with rewards computed from token ids on
the device. A member whose sampling fails ends alone."""
from __future__ import annotations

from dataclasses import replace
from typing import Dict, List, Optional

import torch

from harness.trainers.builtin.tasks.token_rewards import token_rewards
from harness.trainers.ensemble.sampling import EVAL, Draws

EVAL_BATCH = 256  # rows per generate call (a problem's draws are keyed by its index: the chunking changes none)


def evaluate(trainer) -> Dict[int, Dict[str, float]]:
    """trainer: an `EnsembleTrainer`; {member index: its evaluation metrics} of the members still alive."""
    trainer.engine.sync()
    seeds = torch.tensor([int(m.spec.dataset.seed) for m in trainer.members], dtype=torch.long,
                         device=trainer.device)
    sampled = _accuracy(trainer, Draws(seeds, EVAL, 0))
    greedy = _accuracy(trainer, None)
    out = {}
    for k, member in enumerate(trainer.members):
        if member.alive:
            member.best_eval = max(member.best_eval, sampled[k])
            out[k] = {"eval/accuracy": sampled[k], "eval/greedy_accuracy": greedy[k],
                      "eval/best_accuracy": member.best_eval}
    return out


def _accuracy(trainer, draws: Optional[Draws]) -> List[float]:
    """Each member's accuracy on the eval set: sampled from `draws`, greedy when None."""
    members, count = trainer.members, len(trainer.eval_problems)
    max_new_tokens = trainer.task.max_answer_length + 1
    correct = torch.zeros(len(members), device=trainer.device)
    failed = trainer.sampling_failed(f"in the evaluation at step {trainer.step}")
    for start in range(0, count, EVAL_BATCH):
        prompts = trainer.eval_prompts[start:start + EVAL_BATCH]
        batch = trainer.engine.generate(prompts.unsqueeze(0).expand(len(members), -1, -1), max_new_tokens,
                                        [m.temperature for m in members],
                                        None if draws is None else replace(draws, row_offset=start),
                                        [m.alive for m in members], greedy=draws is None, on_failure=failed)
        correct += token_rewards(batch.tokens, batch.mask, trainer.eval_answers[start:start + EVAL_BATCH]).sum(dim=1)
    return (correct / count).tolist()
