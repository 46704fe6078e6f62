"""One job of a run or sweep: validate, open the tracking run, train, and record a truthful status.

A job never raises into Hydra's launcher: an exception marks the run FAILED (traceback attached) and the
sweep goes on; Ctrl-C / SIGTERM marks it KILLED and stops the sweep."""
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from omegaconf import DictConfig

log = logging.getLogger("harness")


@dataclass
class JobResult:
    name: str
    status: str  # FINISHED | FAILED | KILLED
    run_dir: str
    run_id: Optional[str] = None
    error: Optional[str] = None
    final_metrics: Optional[dict] = None


RESULTS: List[JobResult] = []
OK_STATUSES = ("FINISHED", "SKIPPED", "SUBMITTED", "PRUNED")


# Overrides that say how a job runs rather than what it computes, left out of its run name.
NOT_IN_RUN_NAME = ("hydra.", "launcher", "trainer.torch_threads=", "trainer.progress=", "force=", "cache_dir=",
                   "trainer.resume=", "optuna.", "sweeper=", "trainer.verl.dry_run=", "tracking")


def run_name(overrides) -> str:
    """A run's name: the overrides that say what it computes, e.g. 'algo=drpo,delta=0.1'."""
    return ",".join(o for o in overrides if not o.startswith(NOT_IN_RUN_NAME))


class Killed(BaseException):
    """SIGTERM turned into an exception so the run can be closed as KILLED."""


def _raise_killed(signum, _frame):
    raise Killed(f"received signal {signal.Signals(signum).name}")


def _job_identity(cfg: DictConfig) -> tuple[str, Path, Optional[str]]:
    from hydra.core.hydra_config import HydraConfig

    hc = HydraConfig.get()
    run_dir = Path(hc.runtime.output_dir)
    name = run_name(hc.overrides.task) or cfg.algo.name
    sweep_dir = hc.sweep.dir if hc.mode.name == "MULTIRUN" else None
    return name, run_dir, sweep_dir


def _close(tracker, result: JobResult, status: str, error: Optional[str] = None) -> None:
    tracker.finish(status, error=error)
    result.run_id = tracker.run_id


def run_job(cfg: DictConfig) -> JobResult:
    from harness.config.validate import validate
    from harness.tracking import open_tracker
    from harness.trainers import build_trainer
    from harness.trainers.checkpoint import resumed_run_id

    from harness.launchers.skip_finished import finished_twin
    from harness.sweeps.pruning import Pruned
    from harness.tracking.outage import apply_client_defaults

    spec = validate(cfg)
    name, run_dir, sweep_dir = _job_identity(cfg)
    apply_client_defaults()  # before any MLflow client: seconds, not minutes, against a store that is down
    twin = finished_twin(spec)
    if twin:
        print(f"run {name}: SKIPPED, an identical config already FINISHED as mlflow run {twin} "
              f"(--force reruns it)", flush=True)
        run_dir.mkdir(parents=True, exist_ok=True)  # the sweep's reports use the twin in this job's place
        (run_dir / "skipped.json").write_text(json.dumps({"twin_run_id": twin, "name": name}))
        RESULTS.append(JobResult(name=name, status="SKIPPED", run_dir=str(run_dir), run_id=twin))
        return RESULTS[-1]
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "job.json").write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                                   "started": time.time(), "name": name}))
    previous = signal.signal(signal.SIGTERM, _raise_killed)
    tracker = open_tracker(spec, run_dir, run_name=name, sweep_dir=sweep_dir, resume_run_id=resumed_run_id(spec))
    print(f"run {name}: {tracker.where()}", flush=True)
    result = JobResult(name=name, status="RUNNING", run_dir=str(run_dir))
    try:
        trainer = build_trainer(spec, run_dir=run_dir, tracker=tracker)
        result.final_metrics = trainer.train()
        result.status = "FINISHED"
    except Pruned as err:
        result.status, result.error = "PRUNED", str(err)
        _close(tracker, result, "KILLED", str(err))
        print(f"run {name}: {err}", flush=True)
    except (KeyboardInterrupt, Killed) as err:
        result.status, result.error = "KILLED", str(err) or type(err).__name__
        _close(tracker, result, "KILLED", result.error)
        RESULTS.append(result)
        raise
    except Exception as err:  # a failing run must not take down the sweep
        result.status, result.error = "FAILED", f"{type(err).__name__}: {err}"
        _close(tracker, result, "FAILED", traceback.format_exc())
        log.error("run %s FAILED: %s", name, result.error)
    else:
        _close(tracker, result, "FINISHED")
        shown = {k: round(v, 4) for k, v in (result.final_metrics or {}).items() if k.startswith("eval/")}
        print(f"run {name}: FINISHED {shown} -> {run_dir}" + (f" (mlflow run {result.run_id})"
                                                               if result.run_id else ""), flush=True)
    finally:
        signal.signal(signal.SIGTERM, previous)
    RESULTS.append(result)
    return result


def summarize(results: List[JobResult]) -> str:
    counts = {s: sum(r.status == s for r in results) for s in ("FINISHED", "FAILED", "KILLED")}
    counts.update({s: n for s in ("SKIPPED", "SUBMITTED", "PRUNED") if (n := sum(r.status == s for r in results))})
    lines = [f"sweep: {len(results)} runs: " + ", ".join(f"{n} {s.lower()}" for s, n in counts.items())]
    for r in results:
        if r.status not in OK_STATUSES:
            lines.append(f"  {r.status}: {r.name} ({r.run_dir}): {r.error}")
    return "\n".join(lines)
