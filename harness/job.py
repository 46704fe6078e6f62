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
from pathlib import Path
from typing import Optional

from omegaconf import DictConfig

from harness.results import OK_STATUSES, RESULTS, JobResult, run_name, summarize  # noqa: F401 (re-exported)

log = logging.getLogger("harness")


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


def _spec(cfg: DictConfig) -> DictConfig:
    """The validated run config: the preflight's, when this process composed the job (the launch does not
    compose or validate it again); else (an Optuna trial, a resumed attempt) validated here."""
    from hydra.core.hydra_config import HydraConfig

    from harness.config import composed
    from harness.config.validate import validate

    task = list(HydraConfig.get().overrides.task)
    spec = composed.spec_for(task)
    return spec if spec is not None else validate(cfg, task)


def _close(tracker, result: JobResult, status: str, error: Optional[str] = None) -> None:
    tracker.finish(status, error=error)
    result.run_id = tracker.run_id


def run_job(cfg: DictConfig) -> JobResult:
    from harness.tracking import open_tracker
    from harness.trainers import build_trainer

    from harness.launchers.skip_finished import finished_twin
    from harness.sweeps.pruning import Pruned
    from harness.tracking.outage import apply_client_defaults

    spec = _spec(cfg)
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
    tracker = open_tracker(spec, run_dir, run_name=name, sweep_dir=sweep_dir)
    # the run id is read once the run is closed: the tracking sidecar may still be opening it meanwhile
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
