"""Trainer backends, selected by `trainer=<name>`. A backend is a class with `train() -> final metrics`,
built (by the job, from `trainer_class`) from the validated run config, its run folder and its tracker, and may
register its own checks of a run config (`checks_for`: validation runs them, handed in by the layer that validates). Registered by import path
so that composing a config never imports torch."""
from __future__ import annotations

import importlib
from typing import Any, Callable, List

TRAINERS = {
    "builtin": "harness.trainers.ensemble.loop:SoloTrainer",
    "verl": "harness.trainers.verl.trainer:VerlTrainer",
}
# a trainer's own checks of a run config that selects it (its layout, site, memory model): ConfigError, one line
CHECKS = {
    "verl": ["harness.trainers.verl.validate:validate_verl"],
}


def _load(target: str) -> Any:
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def checks_for(name: str) -> List[Callable]:
    """The checks trainer `name` registered (none for an unknown name: validation refuses it by itself)."""
    return [_load(target) for target in CHECKS.get(name, [])]


def trainer_class(name: str) -> Callable[..., Any]:
    """The backend of `trainer=<name>`: called with (validated run config, run_dir=, tracker=), it returns an
    object whose `train()` runs the run and returns its final metrics."""
    if name not in TRAINERS:
        raise ValueError(f"trainer.name={name!r} is not allowed: one of {', '.join(sorted(TRAINERS))}")
    return _load(TRAINERS[name])
