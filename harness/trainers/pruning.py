"""The job side of Optuna pruning: report intermediate eval accuracy to the job's trial and stop the run
when the study's pruner says so."""
from __future__ import annotations

from typing import Callable, Dict, Optional

from omegaconf import DictConfig


class Pruned(Exception):
    """The Optuna pruner stopped this run early (not a failure)."""


def make_pruner(prune: bool, n_startup_trials: int, n_warmup_steps: int):
    import optuna

    if not prune:
        return optuna.pruners.NopPruner()
    return optuna.pruners.MedianPruner(n_startup_trials=n_startup_trials, n_warmup_steps=n_warmup_steps)


def pruning_hook(opt: Optional[DictConfig],
                 metric: str = "eval/accuracy") -> Optional[Callable[[int, Dict[str, float]], None]]:
    """A callback for each evaluation, or None when the run is not an Optuna trial (`opt`: the run's `optuna`
    node, set by sweeper=optuna)."""
    if not opt or opt.get("trial_id") is None:
        return None
    import optuna

    pruner = make_pruner(opt.get("prune", True), opt.get("n_startup_trials", 2), opt.get("n_warmup_steps", 0))
    study = optuna.load_study(study_name=opt.study, storage=opt.storage, pruner=pruner)
    trial = optuna.trial.Trial(study, int(opt.trial_id))

    def report(step: int, metrics: Dict[str, float]) -> None:
        if metric not in metrics or step == 0:
            return
        trial.report(float(metrics[metric]), step)
        if trial.should_prune():
            raise Pruned(f"pruned by Optuna at step {step} ({metric}={metrics[metric]:.4f})")

    return report
