"""`trainer=builtin` for one run: the ensemble trainer with one member (a run alone is the ensemble of one,
so a member of any ensemble computes what its run computes alone, to float rounding). It is the only RL
loop of the built-in trainer: a policy the stacked model does not cover (a `model.path` checkpoint of
another architecture) is refused in one line."""
from __future__ import annotations

from pathlib import Path
from typing import Dict

from omegaconf import DictConfig

from harness.trainers.ensemble import loop
from harness.trainers.ensemble.trainer import EnsembleTrainer, stackable
from harness.trainers.pruning import pruning_hook


class SoloTrainer:
    def __init__(self, cfg: DictConfig, run_dir: Path, tracker):
        if not stackable(cfg):
            raise ValueError(f"model.path={cfg.model.path}: the built-in trainer trains plain Qwen3 decoder "
                             "checkpoints only (Qwen3ForCausalLM without attention bias, sliding window or "
                             "scaled RoPE); use trainer=verl for other architectures")
        self.ensemble = EnsembleTrainer([(cfg, run_dir, tracker, pruning_hook(cfg))])

    def train(self) -> Dict[str, float]:
        loop.train(self.ensemble)
        member = self.ensemble.members[0]
        if member.error is not None:
            raise member.error
        return member.final
