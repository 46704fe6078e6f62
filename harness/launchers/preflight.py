"""The checks that need every job of a run or sweep composed and validated, before anything is created or
submitted: the output folders, the cluster, the built-in tasks, resumes, and the tracking stores; and
`--dry-run`'s plans instead of a launch. A failed check is one line (`Refused`, exit code 2)."""
from __future__ import annotations

import sys
from typing import List, Sequence

from omegaconf import DictConfig, OmegaConf

from harness.launchers.compose import Job, composed_spec
from harness.launchers.folder_claims import check_output_folders, check_resume_source
from harness.launchers.gpu_workers import check_devices
from harness.launchers.registry import runs_here
from harness.config.profiles import check_partition, profile_for
from harness.infra.refused import Refused
from harness.tracking.store import prepare_stores, tracking_uri
from harness.config.network_fs import sqlite_warning
from harness.trainers.builtin.tasks import check_task
from harness.trainers.resume import check_resumes
from harness.trainers.verl.dry_run import print_plans
from harness.trainers.verl.environment import check_runs


def check_jobs(jobs: Sequence[Job], multirun: bool) -> None:
    """Refused (one line) for the first check that fails; then the jobs' stores are made ready."""
    specs = [job.spec for job in jobs]
    check_devices(jobs)
    try:
        check_output_folders(jobs, multirun)
        _check_cluster(specs)
        _check_tasks(specs)
        _check_resumes(jobs)
    except ValueError as err:
        raise Refused(str(err).splitlines()[0]) from None
    prepare_stores([spec for spec in specs if not runs_here(str(spec.launcher.name))])  # jobs here create their own


def print_dry_run(jobs: Sequence[Job]) -> bool:
    """`--dry-run` (trainer.verl.dry_run): print each verl job's plan instead of running anything."""
    specs = [job.spec for job in jobs]
    if not any(spec.trainer.get("verl", {}).get("dry_run") for spec in specs):
        return False
    print_plans(specs)
    return True


def _check_cluster(specs: List[DictConfig]) -> None:
    """Things only the cluster can answer, asked before anything is submitted."""
    on_slurm = [s for s in specs if s.launcher.get("cluster") == "slurm"]
    for partition in sorted({profile_for(s.launcher).partition for s in on_slurm} - {None}):
        check_partition(partition)
    for uri in sorted({tracking_uri(s) for s in specs if s.launcher.get("cluster") is not None}):
        warning = sqlite_warning(uri)  # SQLite over NFS, Lustre, GPFS: one warning naming the alternatives
        if warning:
            print(warning, file=sys.stderr, flush=True)
    if any(s.trainer.name == "verl" for s in specs):
        check_runs(specs)  # the verl environment each run names imports verl and ray at the expected versions


def _check_tasks(specs: List[DictConfig]) -> None:
    """The built-in tasks' splits can hold each run's eval set and train pool (asked once per dataset)."""
    datasets = {OmegaConf.to_yaml(s.dataset): s.dataset for s in specs if s.trainer.name == "builtin"}
    for dataset in datasets.values():
        check_task(dataset)


def _check_resumes(jobs: Sequence[Job]) -> None:
    """trainer.resume / trainer.branch_from name an intact run, and a resume keeps that run's spec."""
    specs = [job.spec for job in jobs]
    if any(s.trainer.get("resume") or s.trainer.get("branch_from") for s in specs):
        for spec in specs:
            if spec.trainer.get("resume") and spec.trainer.name == "builtin":
                check_resume_source(str(spec.trainer.resume))  # not running, and its checkpoint is its own
        check_resumes(specs, [list(job.overrides) for job in jobs], composed_spec)
