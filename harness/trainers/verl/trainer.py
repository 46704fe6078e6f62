"""`trainer=verl`: run the validated spec as a verl job and bring its metrics into the harness run.

`VerlTrainer(cfg, run_dir, tracker).train()` writes the plan (plan.py) into `<run_dir>/verl/`, then, unless
`trainer.verl.dry_run`, executes its batch script (Ray + verl main_ppo) in its own process group, forwards
verl's metrics to the tracker as they appear (metrics.py), and marks each verl checkpoint with a harness
checkpoint record (`checkpoints/last.json`: step + tracking run), so a requeued or resumed job continues
the same MLflow run while verl resumes its own checkpoint. verl recomputes the steps an earlier attempt
logged after that checkpoint: they are skipped (the run keeps what it recorded first, in its metrics.jsonl
and MLflow alike), and the earlier attempt's verl log is set aside (`verl/metrics.previous.jsonl`), not
read again. A non-zero exit of the script fails the run.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

from harness.trainers.checkpoint import checkpoint_paths, save_checkpoint
from harness.trainers.verl.metrics import MetricsFollower, last_logged_step, translate
from harness.trainers.verl.options import verl_options
from harness.trainers.verl.plan import Plan, build_plan
from harness.trainers.verl.attempt import attempt_of
from harness.trainers.verl.overrides import RunPaths

POLL_S = 5.0
STOP_GRACE_S = 30.0
_STEP_DIR = re.compile(r"global_step_(\d+)")


def latest_verl_checkpoint(folder: Path) -> Optional[Path]:
    """verl's latest checkpoint folder (global_step_N) under `folder`, from its tracker file."""
    marker = Path(folder) / "latest_checkpointed_iteration.txt"
    if not marker.is_file():
        return None
    step_dir = Path(folder) / f"global_step_{marker.read_text().strip()}"
    return step_dir if step_dir.is_dir() else None


def prune_checkpoints(folder: Path, keep: Optional[int]) -> List[Path]:
    """Remove the checkpoints of earlier attempts beyond `keep` (verl prunes only those its own process saved,
    so a requeued job would keep every attempt's): the latest (what verl resumes) and the keep - 1 before it
    stay, and so does anything after the latest (a save cut short, which verl overwrites)."""
    latest = latest_verl_checkpoint(folder)
    newest = _STEP_DIR.fullmatch(latest.name) if latest is not None else None
    if keep is None or newest is None:
        return []
    step = int(newest.group(1))
    older = sorted((int(m.group(1)), d) for d in Path(folder).iterdir()
                   if d.is_dir() and (m := _STEP_DIR.fullmatch(d.name)) and int(m.group(1)) < step)
    doomed = [d for _, d in older[::-1][keep - 1:]]
    for d in doomed:
        shutil.rmtree(d, ignore_errors=True)
    return doomed


class VerlTrainer:
    def __init__(self, cfg, run_dir: Path, tracker):
        self.cfg, self.run_dir, self.tracker = cfg, Path(run_dir).resolve(), tracker  # absolute: Ray workers
        self.options = verl_options(cfg)
        self.resume_from = self._resume_source()
        paths = RunPaths(self.run_dir)
        self.plan: Plan = build_plan(cfg, self.run_dir, resume_from=self.resume_from,
                                     attempt=attempt_of(paths.metrics, paths.checkpoints))
        self.last_step = self._recorded_step()
        self.checkpointed: Optional[Path] = latest_verl_checkpoint(self.plan.paths.checkpoints)
        self.final: Dict[str, float] = {}
        self.best_eval: Optional[float] = None

    def _resume_source(self) -> Optional[str]:
        """trainer.resume naming another run: start from its latest verl checkpoint (own run: verl's auto)."""
        resume = self.cfg.trainer.get("resume")
        if not resume:
            return None
        folder = Path(resume).expanduser()
        folder = folder.parent.parent if folder.suffix == ".pt" else folder  # <run>/checkpoints/last.pt
        if folder.resolve() == self.run_dir.resolve():
            return None
        found = latest_verl_checkpoint(folder / "checkpoints" / "verl")
        if found is None:
            raise FileNotFoundError(f"trainer.resume={resume!r}: no verl checkpoint under {folder}/checkpoints/verl")
        return str(found)

    def _recorded_step(self) -> int:
        """The last step this run recorded, when it continues its own earlier attempt (else -1): at least its
        checkpoint's, and the steps logged after it. verl recomputes those from the checkpoint with other
        samples; the run keeps the values it recorded first, so every step is in it once."""
        meta = checkpoint_paths(self.run_dir)[1]
        if not (self.cfg.trainer.get("resume") and meta.is_file()):
            return -1
        checkpoint = int(json.loads(meta.read_text()).get("step", 0))
        return max(checkpoint, last_logged_step(self.run_dir / "metrics.jsonl"),
                   getattr(self.tracker, "skip_through_step", -1))

    def train(self) -> Dict[str, float]:
        script = self.plan.write()
        self.tracker.log_artifact(self.plan.paths.objective, "verl")
        self.tracker.log_artifact(script, "verl")
        if self.options.dry_run:
            print(self.plan.describe(), flush=True)
            return {}
        pruned = prune_checkpoints(self.plan.paths.checkpoints, self.options.keep_checkpoints)
        if pruned:
            print(f"verl: removed {len(pruned)} earlier checkpoint(s) beyond trainer.verl.keep_checkpoints="
                  f"{self.options.keep_checkpoints}: {', '.join(d.name for d in pruned)}", flush=True)
        metrics = self.plan.paths.metrics
        if metrics.is_file():  # an earlier attempt's: the follower reads only what this verl writes
            metrics.replace(metrics.with_name("metrics.previous.jsonl"))
        log_path = self.plan.paths.verl_dir / "launch.log"
        proc = subprocess.Popen(["bash", str(script)], cwd=self.run_dir, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        tail = _Tee(proc, log_path)
        follower = MetricsFollower(self.plan.paths.metrics)
        try:
            while proc.poll() is None:
                self._forward(follower)
                time.sleep(POLL_S)
        except BaseException:
            _stop(proc)
            raise
        finally:
            tail.join()
        self._forward(follower)
        if proc.returncode != 0:
            raise RuntimeError(f"verl exited with code {proc.returncode}: {tail.last_error() or 'see ' + str(log_path)}")
        if self.best_eval is not None:
            self.final["eval/best_accuracy"] = self.best_eval
        return self.final

    def _forward(self, follower: MetricsFollower) -> None:
        for step, data in follower.poll():
            metrics = translate(data)
            if not metrics or step <= self.last_step:  # recorded by an earlier attempt
                continue
            self.tracker.log_metrics(metrics, step=step)
            self.final.update(metrics)
            if "eval/accuracy" in metrics:
                self.best_eval = max(self.best_eval or 0.0, metrics["eval/accuracy"])
        self._mark_checkpoint()

    def _mark_checkpoint(self) -> None:
        """A new verl checkpoint -> a harness checkpoint record naming its step and the tracking run."""
        latest = latest_verl_checkpoint(self.plan.paths.checkpoints)
        if latest is None or latest == self.checkpointed:
            return

        step = int(latest.name.rpartition("_")[2])
        save_checkpoint(self.run_dir, {"trainer": "verl", "verl_checkpoint": str(latest), "step": step}, step,
                        getattr(self.tracker, "run_id", None))
        self.checkpointed = latest


class _Tee:
    """Copies the script's output to launch.log and to this process's stdout (the job log)."""

    def __init__(self, proc: subprocess.Popen, path: Path):
        self.path, self.errors = path, []
        self.thread = threading.Thread(target=self._run, args=(proc,), daemon=True)
        self.thread.start()

    def _run(self, proc: subprocess.Popen) -> None:
        with self.path.open("ab") as log:
            for line in iter(proc.stdout.readline, b""):
                log.write(line)
                log.flush()
                sys.stdout.write(line.decode(errors="replace"))
                sys.stdout.flush()
                text = line.decode(errors="replace").strip()
                if "Error" in text or text.startswith("harness:"):
                    self.errors = (self.errors + [text])[-5:]

    def join(self) -> None:
        self.thread.join(timeout=STOP_GRACE_S)

    def last_error(self) -> str:
        return self.errors[-1] if self.errors else ""


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the script's process group (its trap stops Ray), SIGKILL after a grace period."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
