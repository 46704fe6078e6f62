"""The parent run of a sweep: one parent per `multirun` invocation, the jobs nested under it (they read
`<sweep_dir>/parent_run.json` and tag themselves `mlflow.parentRunId`). Opened by the sweepers once every job
has been composed and validated (harness/sweeps/continued.py), closed when the sweep ends.

A sweep run again in its folder (continued: harness/sweeps/continued.py, or `hydra.sweep.dir=` given again)
reopens the parent run it opened there before, on the same store.

The parent holds the sweep definition (`sweep.yaml`: the task overrides), the sweep size (tag
`harness.sweep_size`, for `python -m harness status --watch`) and, when the sweep ends, its status
(FINISHED if every job finished, or was skipped / pruned / submitted, else FAILED).
Tracking trouble never fails a sweep: it is logged and the jobs run."""
from __future__ import annotations

import atexit
import json
import logging
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import yaml
from omegaconf import DictConfig

from harness.launchers.results import OK_STATUSES, JobResult
from harness.tracking.heartbeat import HEARTBEAT_TAG, Heartbeat, now_s
from harness.tracking.local_tracker import now_ms
from harness.tracking.outage import apply_client_defaults
from harness.tracking.params import common_tags, mask_overrides, scrub, sweep_id
from harness.tracking.run_tracker import PARENT_FILE
from harness.tracking.spool import SPOOL_DIR, RunRecord, Spool
from harness.tracking.store import artifact_root, ensure_experiment, experiment_name, tracking_uri
from harness.tracking.stored_uri import on_disk, reconnect
from harness.tracking.tracker import MlflowTracker, RunSpec
from harness.tracking.ui import runs_url, set_default_view

log = logging.getLogger("harness")

SWEEP_FILE = "sweep.yaml"


def job_statuses(sweep_dir: Path, results: Sequence[JobResult] = ()) -> Dict[str, str]:
    """Job folder -> status. The sweep's job `results`, when the caller has them, come first (they know
    PRUNED, SKIPPED, SUBMITTED); then the `status.txt` every job writes when it ends, on any node; a job
    folder with neither (a job killed with SIGKILL, or one that crashed before tracking) is UNKNOWN."""
    statuses = {}
    for folder in sorted(p for p in sweep_dir.iterdir() if p.is_dir()):
        if not ((folder / ".hydra").is_dir() or (folder / "config.yaml").is_file()):
            continue  # spool/, reports/, ...: not a job
        status_file = folder / "status.txt"
        status = "SKIPPED" if (folder / "skipped.json").is_file() else "UNKNOWN"
        statuses[str(folder.resolve())] = status_file.read_text().strip() if status_file.is_file() else status
    for result in results:
        statuses[str(Path(result.run_dir).resolve())] = result.status
    return statuses


def ok_statuses() -> Tuple[str, ...]:
    return tuple(OK_STATUSES)


class SweepParent:
    """The sweep's parent run, opened by `open` (or, for a named sweep's later round, joins=True: the heartbeat of
    the parent its first round opened) and ended by `end` with the jobs' statuses."""

    def __init__(self, config: DictConfig, size: Optional[int], joins: bool = False) -> None:
        self.config, self.size, self.joins = config, size, joins
        self.sweep_dir = Path(str(config.hydra.sweep.dir))
        self.tracker: Optional[MlflowTracker] = None
        self._pulse: Optional[Heartbeat] = None  # the parent's heartbeat while a later grid of a named sweep runs

    def open(self) -> "SweepParent":
        if self.joins and (self.sweep_dir / PARENT_FILE).is_file():
            # a later round of a named sweep: its jobs join the parent run the first round opened, and this
            # session keeps that parent's heartbeat going (else `repair` would take it for dead)
            self._pulse = _parent_pulse(self.sweep_dir, tracking_uri_of(self.config))
            return self
        try:
            self._open()
        except Exception as err:  # a tracking fault: the jobs run without a parent rather than not at all
            log.warning("sweep tracking: no parent run for %s: %s", self.sweep_dir, err)
        return self

    def _open(self) -> None:
        config, sweep_dir = self.config, self.sweep_dir
        if config.tracking.backend != "mlflow":
            return
        sweep_dir.mkdir(parents=True, exist_ok=True)
        overrides = [str(o) for o in config.hydra.overrides.task]
        tags = {**common_tags(str(sweep_dir)), "harness.role": "parent",
                "harness.sweep_dir": str(sweep_dir.resolve())}
        if self.size:
            tags["harness.sweep_size"] = str(self.size)
        shown = mask_overrides(overrides)
        uri = tracking_uri(config)
        experiment: Dict[str, str] = {}

        def experiment_id() -> str:
            experiment["id"] = ensure_experiment(config)[1]
            return experiment["id"]

        spec = RunSpec(tracking_uri=uri, experiment_name=experiment_name(config),
                       run_name=f"sweep {sweep_id(str(sweep_dir))}: {' '.join(shown)}"[:250], params={},
                       tags={k: scrub(v) for k, v in tags.items()}, artifact_location=artifact_root(config))
        earlier = _earlier_parent(sweep_dir, uri)  # a sweep continued in its folder continues its parent run
        self.tracker = MlflowTracker(sweep_dir, spec, experiment_id=experiment_id, resume_run_id=earlier.get("run_id"))
        (sweep_dir / PARENT_FILE).write_text(json.dumps({
            "run_id": self.tracker.run_id, "tracking_uri": on_disk(uri),
            "experiment_id": experiment.get("id") or self.tracker.experiment_id,
            "run_uid": earlier.get("run_uid") or self.tracker.uid}, indent=1))
        definition = {"sweep_id": sweep_id(str(sweep_dir)), "sweep_dir": str(sweep_dir.resolve()),
                      "experiment": spec.experiment_name, "jobs": self.size, "overrides": shown}
        (sweep_dir / SWEEP_FILE).write_text(yaml.safe_dump(definition, sort_keys=False))
        self.tracker.log_artifact(sweep_dir / SWEEP_FILE)
        self._refresh_view(experiment.get("id") or self.tracker.experiment_id)
        atexit.register(self._close_if_still_open)
        # the sweep's one line about tracking; each run's own line goes to its job.log (-v prints them)
        print(f"tracking: {scrub(uri)}, experiment {spec.experiment_name}: sweep {definition['sweep_id']}"
              f"{' (continued)' if earlier else ''}, parent run "
              f"{self.tracker.run_id or '(spooled until the tracking store is reachable)'}, each job a run nested "
              f"under it (its id in its folder's job.log)", flush=True)

    def _refresh_view(self, experiment_id: Optional[str]) -> None:
        """Experiments created before the harness view existed get it too; print where to look."""
        if experiment_id is None or self.tracker.offline:
            return
        try:
            set_default_view(self.tracker.client, experiment_id)
        except Exception as err:  # the view is a convenience; the store may refuse it (MLflow versions differ)
            log.debug("sweep tracking: no UI view: %s", err)
        url = runs_url(self.tracker.spec.tracking_uri, experiment_id)
        if url:
            log.info("sweep runs in the MLflow UI: %s", url)

    def end(self, results: Sequence[JobResult], keep_open: bool = False) -> bool:
        """The sweep ended with the jobs' `results`: the parent gets its status from the jobs'. False when it
        stays open: keep_open, a named sweep's (`python -m harness sweep` closes it at its end), or a detached
        one's (its last job closes it)."""
        detached = "SUBMITTED" in job_statuses(self.sweep_dir, results).values()
        if detached and self.tracker is not None:
            self.tracker.flush()
        if detached and close_parent_if_all_ended(self.sweep_dir, tracking_uri_of(self.config)) is None:
            log.info("sweep %s: detached, its parent run stays RUNNING until its last job ends", self.sweep_dir)
        if keep_open or detached:
            for pulse in (self._pulse, getattr(self.tracker, "_heartbeat", None)):
                if pulse is not None:
                    pulse.stop()
            self.tracker = self._pulse = None
            return False
        if self.tracker is not None:
            try:
                statuses = job_statuses(self.sweep_dir, results)
                failed = {Path(name).name: s for name, s in statuses.items() if s not in ok_statuses()}
                status = "FINISHED" if statuses and not failed else "FAILED"
                error = None if status == "FINISHED" else (
                    "jobs not FINISHED: " + ", ".join(f"{n}: {s}" for n, s in failed.items()) if failed
                    else "the sweep ran no job")
                self._finish(status, error)
            except Exception as err:  # a tracking fault never fails the sweep; `repair` closes the parent
                log.warning("sweep tracking: closing the parent run failed: %s", err)
        return True

    def _finish(self, status: str, error: Optional[str]) -> None:
        tracker, self.tracker = self.tracker, None
        if tracker is not None:
            tracker.finish(status, error=error)

    def _close_if_still_open(self) -> None:
        """The sweep process is exiting before the sweep ended (Ctrl-C, SIGTERM in a job, a crash)."""
        try:
            self._finish("KILLED", "the sweep stopped before all its jobs ended")
        except Exception as err:  # at interpreter exit: say it, `repair` closes the parent
            log.warning("sweep tracking: closing the parent run failed: %s", err)


def _earlier_parent(sweep_dir: Path, uri: str) -> Dict[str, str]:
    """The parent run an earlier invocation of this sweep opened in its folder, on the same store ({} if none)."""
    try:
        info = json.loads((sweep_dir / PARENT_FILE).read_text())
    except (OSError, ValueError):
        return {}
    same = isinstance(info, dict) and info.get("run_id") and info.get("tracking_uri") == on_disk(uri)
    return info if same else {}


def tracking_uri_of(config: DictConfig) -> Optional[str]:
    """The store's full URI as this process's config gives it (`parent_run.json` holds it masked)."""
    try:
        return tracking_uri(config)
    except Exception:  # a config without the harness's keys: MLFLOW_TRACKING_URI is still tried
        return None


def _parent_pulse(sweep_dir: Path, tracking_uri: Optional[str] = None):
    """A heartbeat for the parent run recorded in `<sweep_dir>/parent_run.json` (None if it has no id)."""
    from mlflow.tracking import MlflowClient  # mlflow loads only where a sweep talks to its store

    info = json.loads((sweep_dir / PARENT_FILE).read_text())
    if not info.get("run_id"):
        return None
    apply_client_defaults()
    client = MlflowClient(tracking_uri=reconnect(info["tracking_uri"], tracking_uri))
    return Heartbeat(lambda: client.set_tag(info["run_id"], HEARTBEAT_TAG, str(now_s())), name="parent").start()


def close_parent(sweep_dir: Path, tracking_uri: Optional[str] = None) -> Optional[str]:
    """Terminate a sweep's parent run from its jobs' statuses (for sweeps made of several multiruns).

    With the store away (or the parent never created), the status goes to the parent's spool, for
    `python -m harness sync <sweep_dir>`. `tracking_uri`: the store's full URI, if this process knows it."""
    from mlflow.tracking import MlflowClient  # mlflow loads only where a sweep talks to its store

    info = json.loads((sweep_dir / PARENT_FILE).read_text())
    statuses = job_statuses(sweep_dir)
    status = "FINISHED" if statuses and all(s in ok_statuses() for s in statuses.values()) else "FAILED"
    end = now_ms()
    try:
        if not info.get("run_id"):
            raise LookupError("the parent run was never created on the store")
        apply_client_defaults()
        client = MlflowClient(tracking_uri=reconnect(info["tracking_uri"], tracking_uri))
        client.set_terminated(info["run_id"], status=status, end_time=end)
    except Exception as err:  # the store is away (any client error): the status waits in the spool for `sync`
        spool = Spool(sweep_dir / SPOOL_DIR)
        if not spool.exists:
            spool.open(RunRecord(uid=info.get("run_uid") or "", tracking_uri=info["tracking_uri"],
                                 experiment_name="", run_name="", start_time=0, run_id=info.get("run_id")))
        spool.append({"op": "terminate", "status": status, "end_time": end})
        log.warning("sweep parent status %s spooled (%s): python -m harness sync %s", status, err, sweep_dir)
    return status


ENDED = ("FINISHED", "FAILED", "KILLED", "SKIPPED", "PRUNED")


def close_parent_if_all_ended(sweep_dir: Path, tracking_uri: Optional[str] = None) -> Optional[str]:
    """Close a sweep's parent run once every one of its jobs has ended (from the job folders' own records,
    which every node sees); the status it got, or None while a job is queued or running."""
    sweep_dir = Path(sweep_dir)
    if not (sweep_dir / PARENT_FILE).is_file() or not (sweep_dir / SWEEP_FILE).is_file():
        return None
    size = (yaml.safe_load((sweep_dir / SWEEP_FILE).read_text()) or {}).get("jobs")
    statuses = job_statuses(sweep_dir)
    if not size or len(statuses) < size or any(s not in ENDED for s in statuses.values()):
        return None
    return close_parent(sweep_dir, tracking_uri)
