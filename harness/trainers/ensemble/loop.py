"""The ensemble's training loop: every member at once, the only RL loop of the built-in trainer (step-0 evaluation and
checkpoint, a step, evaluations every `eval_every`, logging to each member's own tracker, checkpoints every
`checkpoint_every` into each member's own folder). A member that fails (its sampling, a non-finite loss, its
tracker's logging, a checkpoint that cannot be written, its evaluation hook) ends alone with its error; the
others go on.

`SoloTrainer` is `trainer=builtin` for one run: this loop over the ensemble of one (so a member of any ensemble
computes what its run computes alone). A policy the stacked model does not cover (a `model.path` checkpoint of
another architecture) is refused in one line."""
from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path
from typing import Dict, List

from omegaconf import DictConfig

from harness.infra.stop_signals import raise_if_stopped
from harness.trainers.checkpoint import CheckpointWriter
from harness.trainers.ensemble.trainer import EnsembleTrainer, stackable
from harness.trainers.pruning import pruning_hook

log = logging.getLogger("harness")
run_log = logging.getLogger("harness.run")


def _injected_kill(step: int, writers: List[CheckpointWriter]) -> None:
    """Fault injection for the resume tests (HARNESS_FAULT_KILL_AT_STEP), for the whole ensemble process."""
    if os.environ.get("HARNESS_FAULT_KILL_AT_STEP") == str(step):
        for writer in writers:
            writer.wait(raise_error=False)
        os.kill(os.getpid(), signal.SIGKILL)


def _record(trainer: EnsembleTrainer, member, text: str) -> None:
    """A line of the member's own record (its folder's job.log). A run alone has Hydra's job.log handler on
    the `harness.run` logger; members of an ensemble share one process, so each writes its own file."""
    if len(trainer.members) == 1:
        run_log.info(text)
        return
    try:
        with open(member.run_dir / "job.log", "a") as handle:
            handle.write(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}][harness.run][INFO] {text}\n")
    except OSError:  # a full disk: metrics.jsonl and the tracker hold the record
        pass


def _save(trainer: EnsembleTrainer, writers: List[CheckpointWriter], step: int) -> None:
    for member, writer in zip(trainer.members, writers):
        if not member.alive:
            continue
        try:
            writer.save(trainer.member_state(member), step)
        except OSError as err:  # e.g. a full disk: this member's checkpoint failed, not the others'
            member.fail(err)


def _after_evaluation(trainer: EnsembleTrainer, metrics: Dict[int, Dict[str, float]]) -> None:
    """Each member's evaluation hook (an Optuna trial's pruner): what it raises ends that member alone."""
    for k, values in metrics.items():
        member = trainer.members[k]
        if member.alive and member.on_eval is not None and "eval/accuracy" in values:
            try:
                member.on_eval(trainer.step, values)
            except Exception as err:  # a member's boundary (Pruned, a store failing): its end, not the others'
                member.fail(err)


def train(trainer: EnsembleTrainer, progress: bool = True) -> None:
    """Train every member to `trainer.steps`; each member's `final` holds its last metrics, `error` its failure.
    progress=False: no progress bar (a worker of a sweep that shows its own)."""
    writers = trainer.checkpoint_writers()
    try:
        _loop(trainer, writers, progress)
    except BaseException:
        for writer in writers:
            writer.wait(raise_error=False)  # a stopped ensemble leaves each member's latest checkpoint whole
        raise
    for member, writer in zip(trainer.members, writers):
        try:
            writer.wait()
        except OSError as err:
            if member.alive:
                member.fail(err)


def _loop(trainer: EnsembleTrainer, writers: List[CheckpointWriter], progress: bool) -> None:
    from tqdm import tqdm

    t = trainer.t
    for member, stats in trainer.warm_start_stats.items():
        _record(trainer, member, "warm start: " + ", ".join(f"{k.split('/')[-1]}={float(v):.4g}" for k, v in stats.items()))
    # a run resumed from its step-0 checkpoint logged its step-0 evaluation before that checkpoint: not twice
    fresh = {m.index for m in trainer.members if not m.t.get("resume")}
    if trainer.step == 0 and fresh:
        for k, evaluation in trainer.evaluate().items():
            member = trainer.members[k]
            if k not in fresh:
                continue
            with member.alone():
                member.tracker.log_metrics(evaluation, step=0)
            _record(trainer, member, f"step 0/{t.steps}: eval/accuracy={evaluation['eval/accuracy']:.4f}")
        _save(trainer, writers, 0)
    metrics: Dict[int, Dict[str, float]] = {}
    desc = trainer.members[0].spec.algo.name if len(trainer.members) == 1 else f"ensemble of {len(trainer.members)}"
    bar = tqdm(total=t.steps, initial=trainer.step, desc=desc, unit="step",
               disable=None if t.progress and progress else True, dynamic_ncols=True)
    while trainer.step < t.steps and trainer.alive:
        raise_if_stopped()  # a stop signal that came during garbage collection (harness/infra/stop_signals.py)
        metrics = trainer.rl_step()
        trainer.step += 1
        evaluated = trainer.step % t.eval_every == 0 or trainer.step == t.steps
        if evaluated:
            for k, evaluation in trainer.evaluate().items():
                metrics.setdefault(k, {}).update(evaluation)
        for k, values in metrics.items():
            member = trainer.members[k]
            if not member.alive:
                continue
            if evaluated:
                _record(trainer, member, f"step {trainer.step}/{t.steps}: train/reward={values['train/reward']:.4f} "
                        f"train/loss={values['train/loss']:.4g} eval/accuracy={values['eval/accuracy']:.4f} "
                        f"({values['perf/step_time_s']:.2f} s/step)")
            with member.alone():
                member.tracker.log_metrics(values, step=trainer.step)
                member.final = dict(values)
        if trainer.step % t.checkpoint_every == 0 or trainer.step == t.steps:
            _save(trainer, writers, trainer.step)
        _injected_kill(trainer.step, writers)
        if evaluated:
            _after_evaluation(trainer, metrics)
        bar.update(1)
        best = max((m.best_eval for m in trainer.alive), default=float("nan"))
        bar.set_postfix(alive=len(trainer.alive), best_eval=f"{best:.2f}")
    bar.close()
    for member in trainer.members:
        member.final["eval/best_accuracy"] = member.best_eval


class SoloTrainer:
    """One run: the ensemble trainer with one member, trained by `train`."""

    def __init__(self, cfg: DictConfig, run_dir: Path, tracker):
        if not stackable(cfg):
            raise ValueError(f"model.path={cfg.model.path}: the built-in trainer trains plain Qwen3 decoder "
                             "checkpoints only (Qwen3ForCausalLM without attention bias, sliding window or "
                             "scaled RoPE); use trainer=verl for other architectures")
        self.ensemble = EnsembleTrainer([(cfg, run_dir, tracker, pruning_hook(cfg.get("optuna")))])

    def train(self) -> Dict[str, float]:
        train(self.ensemble)
        member = self.ensemble.members[0]
        if member.error is not None:
            raise member.error
        return member.final
