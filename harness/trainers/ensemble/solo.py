"""`trainer=builtin` for one run: the ensemble trainer with one member (a run alone is the ensemble of one,
so a member of any ensemble computes what its run computes alone, to float rounding). A policy the stacked
model does not cover (a `model.path` checkpoint of another architecture) trains on the Hugging Face reference
trainer, `harness.trainers.builtin.trainer.BuiltinTrainer`."""
from __future__ import annotations

from pathlib import Path
from typing import Dict

from omegaconf import DictConfig

from harness.trainers.builtin.trainer import BuiltinTrainer
from harness.trainers.ensemble import loop
from harness.trainers.ensemble.trainer import EnsembleTrainer, stackable
from harness.trainers.pruning import pruning_hook


class SoloTrainer:
    def __init__(self, cfg: DictConfig, run_dir: Path, tracker):
        if not stackable(cfg):
            self.reference = BuiltinTrainer(cfg, run_dir=run_dir, tracker=tracker)
            return
        self.reference = None
        self.ensemble = EnsembleTrainer([(cfg, run_dir, tracker, pruning_hook(cfg))])

    def train(self) -> Dict[str, float]:
        if self.reference is not None:
            return self.reference.train()
        loop.train(self.ensemble)
        member = self.ensemble.members[0]
        if member.error is not None:
            raise member.error
        return member.final
