"""One job of a run or sweep: validate, open the tracking run, train, and record a truthful status.

A job never raises into Hydra's launcher: an exception marks the run FAILED (traceback attached) and the
sweep goes on; Ctrl-C / SIGTERM marks it KILLED and stops the sweep."""
from __future__ import annotations

import json
import logging
import os
import shutil
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from harness.launchers.compose import validated
from harness.infra.atomic_file import write_text_atomically
from harness.infra.claim import FolderInUse, claim, holds, release
from harness.infra.run_record import job_record
from harness.launchers.folder_guard import mask_hydra_files, mask_yaml_files
from harness.infra.stop_signals import Killed, handle_stop_signals, restore_signals
from harness.launchers.results import FINAL, JobResult, final_accuracy, finished_metrics, run_name
from harness.launchers.skip_finished import finished_twin
from harness.launchers.sweep_parent import close_parent_if_all_ended
from harness.infra.secrets import safe_run_name, scrub
from harness.trainers.pruning import Pruned
from harness.tracking import open_tracker
from harness.tracking.local_tracker import trim_metrics
from harness.tracking.outage import apply_client_defaults
from harness.tracking.quiet import verbose
from harness.tracking.store import mlflow_store
from harness.tracking.ui import experiment_of_run
from harness.trainers import trainer_class
from harness.trainers.checkpoint import (CheckpointError, checkpoint_paths, checkpoint_step, find_checkpoint,
                                         resumed_run_id)
from harness.trainers.resume import resumed_spec

log = logging.getLogger("harness")
run_log = logging.getLogger("harness.run")  # the run folder's job.log (conf/config.yaml)


def _job_identity(cfg: DictConfig) -> tuple[str, Path, Optional[str]]:
    hc = HydraConfig.get()
    run_dir = Path(hc.runtime.output_dir)
    mask_hydra_files(run_dir, hc.output_subdir)  # Hydra wrote them, secrets included, before the job started
    name = safe_run_name(run_name(hc.overrides.task) or cfg.algo.name)
    sweep_dir = hc.sweep.dir if hc.mode.name == "MULTIRUN" else None
    if sweep_dir:
        mask_yaml_files(Path(sweep_dir), ["multirun.yaml"])  # written by Hydra's sweeper, on the driver's node
    return name, run_dir, sweep_dir


def _remove_empty_run_dir(run_dir: Path) -> None:
    """Remove a skipped single run's folder (Hydra's .hydra/ and job.log only), and its date folder if that
    is now empty."""
    shutil.rmtree(run_dir, ignore_errors=True)
    for parent in (run_dir.parent, run_dir.parent.parent):  # outputs/<date>, outputs
        try:
            parent.rmdir()
        except OSError:  # not empty: other runs live there
            break


def _validated(cfg: DictConfig, spec: Optional[DictConfig]) -> DictConfig:
    """The validated run config: the one the launcher validated with the job's composition; else (a requeued
    attempt composed again with `trainer.resume`) validated here."""
    if spec is not None:
        return spec
    return validated(cfg, list(HydraConfig.get().overrides.task))


def _close(tracker, result: JobResult, status: str, error: Optional[str] = None) -> None:
    try:
        tracker.finish(status, error=error)
    except Exception as err:  # e.g. a full disk: say so in one line, the run's status stays what it is
        log.error("run %s: its end (%s) could not be fully recorded: %s", result.name, status,
                  f"{type(err).__name__}: {err}")
    refused = getattr(tracker, "refused", None)  # the store refused the run: it has no run there to name
    result.run_id = None if refused else tracker.run_id
    result.experiment_id = None if refused else getattr(tracker, "experiment_id", None)


def _log_final_accuracy(tracker, run_dir: Path, earlier: Optional[Tuple[Path, int]]) -> None:
    """The reports' final accuracy under its own name, so MLflow's columns rank runs as the reports do."""
    final = final_accuracy(run_dir, earlier)
    if final is not None:
        tracker.log_metrics({FINAL: final[1]}, step=final[0])


def _resumed_from(spec, run_dir: Path) -> Optional[Tuple[Path, int]]:
    """(the folder a run resumed from, its checkpoint's step) when that folder is not the run's own: the
    evaluations before the checkpoint are there (a sweep resumed in place keeps them in its own record)."""
    if not spec.trainer.get("resume") or spec.trainer.name != "builtin":
        return None
    try:
        source = find_checkpoint(str(spec.trainer.resume)).parent.parent
    except CheckpointError:
        return None
    if source.resolve() == Path(run_dir).resolve():
        return None
    return source, checkpoint_step(str(spec.trainer.resume))


def _traceback_to_log_file(name: str, text: str, run_dir: Path) -> None:
    """The traceback goes to the run's log file (its folder's job.log, Hydra's job log), not to the terminal."""
    try:
        with open(run_dir / "job.log", "a") as handle:
            handle.write(f"run {name} FAILED:\n{text}")
    except OSError:  # a full disk: error.txt (or MLflow) holds it
        pass


def _reason(err: BaseException) -> str:
    """One line for a failure: the exception, and the root of its chain when that differs (torch's
    RuntimeError over the OSError of a full disk)."""
    root = err
    while (root.__cause__ or root.__context__) is not None:
        root = root.__cause__ or root.__context__
    reason = f"{type(err).__name__}: {err}"
    return reason if root is err else f"{reason} (caused by {type(root).__name__}: {root})"


def _close_detached_parent(sweep_dir: str, tracking_uri: Optional[str]) -> None:
    """The last job of a detached sweep to end closes the sweep's parent run (its driver has long exited)."""
    try:
        close_parent_if_all_ended(Path(sweep_dir), tracking_uri)
    except Exception as err:  # `repair` closes it from the jobs' statuses
        log.warning("could not close the sweep's parent run: %s", err)


@dataclass
class StartedRun:
    """A run whose folder and tracking run are open, before it trains (`start_run`); `finish_run` ends it."""
    cfg: DictConfig
    spec: DictConfig
    name: str
    run_dir: Path
    sweep_dir: Optional[str]
    tracker: object
    result: JobResult
    claimed: bool = False  # its folder's claim was taken by `start_run` (released by `finish_run`)


def start_run(cfg: DictConfig, spec: Optional[DictConfig] = None) -> "StartedRun | JobResult":
    """Everything before training (`spec`: the job's validated config, if the launcher has it): the validated
    spec, skip-finished (a SKIPPED JobResult), the run folder and its record, the tracking run. Call inside
    the job's Hydra context (`run_job` does)."""
    spec = resumed_spec(_validated(cfg, spec))  # a resumed run continues with its own spec
    name, run_dir, sweep_dir = _job_identity(cfg)
    store = _store_of(spec)
    if sweep_dir and _status(run_dir) == "FINISHED":  # a sweep run again in its folder: this job is done
        run_id = _checkpoint_run_id(run_dir)
        print(f"run {name}: FINISHED earlier in this sweep" + (f" (mlflow run {run_id})" if run_id else "") +
              ", skipped", flush=True)
        return JobResult(name=name, status="SKIPPED", run_dir=str(run_dir), run_id=run_id, tracking_uri=store)
    apply_client_defaults()  # before any MLflow client: seconds, not minutes, against a store that is down
    twin = finished_twin(spec)
    if twin:
        print(f"run {name}: SKIPPED, an identical config already FINISHED as mlflow run {twin} "
              f"(--force reruns it)", flush=True)
        if sweep_dir is None:  # a single run: the folder Hydra made for it would only say "skipped"
            _remove_empty_run_dir(run_dir)
            return JobResult(name=name, status="SKIPPED", run_dir="", run_id=twin, tracking_uri=store,
                             experiment_id=experiment_of_run(mlflow_store(spec), twin))
        run_dir.mkdir(parents=True, exist_ok=True)  # the sweep's reports use the twin in this job's place
        (run_dir / "skipped.json").write_text(json.dumps({"twin_run_id": twin, "name": name}))
        return JobResult(name=name, status="SKIPPED", run_dir=str(run_dir), run_id=twin)
    # the training process holds its run folder for as long as the run is open: `repair` and `clean` see a
    # live run by its claim, whatever the process's command line (an ensemble's pool worker is `python -c`)
    claimed = not holds(run_dir)
    try:
        claim(run_dir, "run folder")
    except FolderInUse as err:
        log.error("run %s FAILED: %s", name, err)
        return JobResult(name=name, status="FAILED", run_dir=str(run_dir), error=str(err), tracking_uri=store)
    write_text_atomically(run_dir / "job.json", json.dumps({**job_record(), "name": name}))
    run_log.info("run %s: %s, %s, %s, seed %s -> %s", name, spec.algo.name, spec.dataset.name,
                 spec.precision.name, spec.seed, run_dir)
    resumed = ""
    if spec.trainer.get("resume") and spec.trainer.name == "builtin":
        step = checkpoint_step(str(spec.trainer.resume))
        trim_metrics(run_dir, step)  # the steps after the checkpoint are computed again, and recorded once
        resumed = f"resumed from step {step} of {spec.trainer.steps}, "
        run_log.info("run %s: resumed from its checkpoint at step %d (%s)", name, step, spec.trainer.resume)
    tracker = open_tracker(spec, run_dir, run_name=name, sweep_dir=sweep_dir,
                           resume_run_id=resumed_run_id(spec.trainer.get("resume")))
    line = f"run {name}: {resumed}{tracker.where()}"
    if sweep_dir is None or resumed or verbose():  # a sweep's runs: one line for them all, but each resume said
        print(line, flush=True)
    else:
        run_log.info(line)
    result = JobResult(name=name, status="RUNNING", run_dir=str(run_dir), tracking_uri=store)
    return StartedRun(cfg=cfg, spec=spec, name=name, run_dir=run_dir, sweep_dir=sweep_dir, tracker=tracker,
                      result=result, claimed=claimed)


def finish_run(run: StartedRun, final: Optional[dict], err: Optional[BaseException]) -> JobResult:
    """End a started run truthfully: FINISHED (err None), PRUNED, KILLED (Ctrl-C / SIGTERM: the caller
    re-raises) or FAILED (any other error: the sweep goes on); its JobResult."""
    result, name, tracker, run_dir = run.result, run.name, run.tracker, run.run_dir
    try:
        if err is None:
            result.final_metrics, result.status = final, "FINISHED"
            earlier = _resumed_from(run.spec, run_dir)
            _log_final_accuracy(tracker, run_dir, earlier)
            _close(tracker, result, "FINISHED")
            line = (f"run {name}: FINISHED {finished_metrics(result.final_metrics, run_dir, earlier)} -> {run_dir}"
                    + (f" (mlflow run {result.run_id})" if result.run_id else ""))
            run_log.info(line)  # the run folder's job.log keeps it; a sweep's terminal folds it (sweep_console)
            print(line, flush=True)
        elif isinstance(err, Pruned):
            result.status, result.error = "PRUNED", str(err)
            _close(tracker, result, "KILLED", str(err))
            print(f"run {name}: {err}", flush=True)
        elif isinstance(err, (KeyboardInterrupt, Killed)):
            result.status, result.error = "KILLED", str(err) or type(err).__name__
            _close(tracker, result, "KILLED", result.error)
        else:
            text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
            result.status, result.error = "FAILED", scrub(_reason(err))
            _close(tracker, result, "FAILED", text)
            _traceback_to_log_file(name, scrub(text), run_dir)
            log.error("run %s FAILED: %s (traceback: %s)", name, result.error, run_dir / "error.txt")
    finally:
        run_log.info("run %s: %s%s", name, result.status, f": {result.error}" if result.error else "")
        if run.claimed:
            release(run_dir)
        if result.status != "RUNNING" and run.cfg.launcher.get("detach") and run.sweep_dir:
            _close_detached_parent(run.sweep_dir, mlflow_store(run.spec))
    return result


def run_job(cfg: DictConfig, spec: Optional[DictConfig] = None) -> JobResult:
    """Hydra's task function: one run, start to end (`spec`: its validated config, given by the launcher)."""
    previous = handle_stop_signals()
    try:
        started = start_run(cfg, spec)
        if isinstance(started, JobResult):
            return started
        try:
            backend = trainer_class(str(started.spec.trainer.name))
            final = backend(started.spec, run_dir=started.run_dir, tracker=started.tracker).train()
        except (KeyboardInterrupt, Killed) as err:
            finish_run(started, None, err)
            raise
        except Exception as err:  # a failing run must not take down the sweep
            return finish_run(started, None, err)
        return finish_run(started, final, None)
    finally:
        restore_signals(previous)


def _status(run_dir: Path) -> str:
    try:
        return (run_dir / "status.txt").read_text().strip()
    except OSError:
        return ""


def _checkpoint_run_id(run_dir: Path) -> Optional[str]:
    """The MLflow run a job folder's checkpoint names (None without one)."""
    try:
        return json.loads(checkpoint_paths(run_dir)[1].read_text()).get("run_id")
    except (OSError, ValueError, AttributeError):
        return None


def _store_of(spec) -> Optional[str]:
    """The run's store as shown and recorded (masked)."""
    full = mlflow_store(spec)
    return None if full is None else scrub(full)
