"""Trainer backends, selected by `trainer=<name>`. A backend is a class with `train() -> final metrics`,
built from the validated run config, its run folder and its tracker. Registered by import path so that
composing a config never imports torch."""
from __future__ import annotations

import importlib
from pathlib import Path

TRAINERS = {
    "builtin": "harness.trainers.ensemble.solo:SoloTrainer",
    "verl": "harness.trainers.verl.trainer:VerlTrainer",
}


def build_trainer(cfg, run_dir: Path, tracker):
    name = cfg.trainer.name
    if name not in TRAINERS:
        raise ValueError(f"trainer.name={name!r} is not allowed: one of {', '.join(sorted(TRAINERS))}")
    module, cls = TRAINERS[name].split(":")
    return getattr(importlib.import_module(module), cls)(cfg, run_dir=run_dir, tracker=tracker)
