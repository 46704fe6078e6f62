"""Cluster profiles: where Slurm jobs go and what they ask for, one YAML file each.

Looked up, first match wins, in: the folders of $HARNESS_LAUNCHER_PROFILES (colon-separated), the
user's `./launchers/profiles/`, then the profiles shipped with harness (`launchers/profiles/` of the
repository). A site adds its own profile by dropping a file in one of those folders."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

from harness.config.schema import ClusterResources as ClusterProfile  # the fields a profile sets
from harness.infra.resources import available, find_yaml, search_dirs


PROFILE_ENV = "HARNESS_LAUNCHER_PROFILE"  # the profile a launcher=slurm without launcher.profile uses
TEST_PROFILE = "test_cluster"  # the Slurm test cluster's (launchers/slurm_test_cluster): submitit_local's default


def profile_dirs() -> List[Path]:
    return search_dirs("HARNESS_LAUNCHER_PROFILES", "launchers/profiles", "harness.launcher_profiles")


def available_profiles() -> List[str]:
    return available(profile_dirs())


def load_profile(name: str, overrides: Optional[Dict[str, Any]] = None) -> ClusterProfile:
    """The named profile with `overrides` (launcher.params) applied; ValueError names what is wrong."""
    path = find_yaml(name, profile_dirs())
    if path is None:
        raise ValueError(f"launcher.profile={name!r} is not a known profile; available: "
                         f"{', '.join(available_profiles()) or 'none'} (folders: {', '.join(map(str, profile_dirs()))})")
    data = yaml.safe_load(path.read_text()) or {}
    allowed = {f.name for f in fields(ClusterProfile)}
    merged = {**data, **(overrides or {})}
    if (overrides or {}).get("additional_parameters"):  # a run's #SBATCH options add to the profile's
        merged["additional_parameters"] = {**(data.get("additional_parameters") or {}),
                                           **overrides["additional_parameters"]}
    unknown = sorted(set(merged) - allowed)
    if unknown:
        raise ValueError(f"launcher profile key {unknown[0]!r} (profile {name!r}) is not allowed; "
                         f"allowed: {', '.join(sorted(allowed))}")
    return ClusterProfile(**merged)


def profile_for(launcher_cfg) -> ClusterProfile:
    """The profile a run's `launcher` node selects, with the fields it overrides (non-null, non-empty) applied."""
    overrides = {f.name: launcher_cfg.get(f.name) for f in fields(ClusterProfile)
                 if launcher_cfg.get(f.name) is not None and not _empty(launcher_cfg.get(f.name))}
    for key in ("setup", "additional_parameters"):
        if key in overrides and not isinstance(overrides[key], (list, dict)):
            from omegaconf import OmegaConf

            overrides[key] = OmegaConf.to_container(overrides[key])
    return load_profile(chosen_profile(launcher_cfg) or TEST_PROFILE, overrides)


def chosen_profile(launcher_cfg) -> Optional[str]:
    """The profile named by `launcher.profile`, else by $HARNESS_LAUNCHER_PROFILE (the test suite sets it to the
    Slurm test cluster's: tests/conftest.py); None: none chosen (launcher=slurm refuses to guess)."""
    return launcher_cfg.get("profile") or os.environ.get(PROFILE_ENV) or None


def _empty(value) -> bool:
    try:
        return len(value) == 0 and not isinstance(value, str)
    except TypeError:
        return False


def submitit_parameters(profile: ClusterProfile, cluster: str) -> Dict[str, Any]:
    """Translate a profile into submitit's `update_parameters` keywords for `cluster`."""
    params: Dict[str, Any] = {"timeout_min": profile.timeout_min, "nodes": profile.nodes,
                              "cpus_per_task": profile.cpus_per_task, "mem_gb": profile.mem_gb,
                              "tasks_per_node": 1}
    if profile.gpus_per_node:
        params["gpus_per_node"] = profile.gpus_per_node
    if cluster != "slurm":
        return params
    slurm = {"slurm_partition": profile.partition, "slurm_account": profile.account, "slurm_qos": profile.qos,
             "slurm_array_parallelism": profile.array_parallelism, "slurm_setup": list(profile.setup),
             "slurm_additional_parameters": dict(profile.additional_parameters)}
    if not profile.use_srun:
        slurm["slurm_use_srun"] = False
        slurm["slurm_additional_parameters"] = {"signal": batch_shell_signal(), **slurm["slurm_additional_parameters"]}
    params.update({k: v for k, v in slurm.items() if v not in (None, [], {})})
    return params


def batch_shell_signal() -> str:
    """`#SBATCH --signal` for a job without srun: Slurm's default sends the time-limit signal to job steps only,
    and without srun submitit's python (the one process that checkpoints and requeues) runs in the batch shell,
    so it needs `B:` (the batch shell only; the job's own `srun` steps, e.g. Ray workers, are not signalled)."""
    from submitit import JobEnvironment

    return f"B:{JobEnvironment.USR_SIG}@{SIGNAL_DELAY_S}"


SIGNAL_DELAY_S = 90  # submitit's default signal_delay_s: the signal comes this long before the time limit


def executor_arguments(profile: ClusterProfile, cluster: str) -> Dict[str, Any]:
    """submitit.AutoExecutor's keywords: without srun, the batch shell execs submitit's python, so that the
    `B:` signal (sent to the batch shell's process only) reaches submitit's handler instead of killing bash."""
    if cluster != "slurm":
        return {}
    # how often submitit requeues a job that reached its time limit (submitit's default, 3, ends a multi-day run)
    requeue = {"slurm_max_num_timeout": profile.max_num_timeout}
    if profile.use_srun:
        return requeue
    return {**requeue, "slurm_python": f"exec {shlex.quote(sys.executable)}"}


def check_partition(partition: Optional[str]) -> None:
    """Refuse a partition Slurm does not know, before anything is submitted."""
    if not partition:
        return
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%R"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ValueError(f"launcher=slurm: cannot reach Slurm to check partition {partition!r}: {err}") from None
    if out.returncode != 0:
        raise ValueError(f"launcher=slurm: sinfo failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
    known = sorted(set(out.stdout.split()))
    if partition not in known:
        raise ValueError(f"launcher partition={partition!r} does not exist on this cluster; available: {', '.join(known)}")


def describe(profile: ClusterProfile) -> Dict[str, Any]:
    return asdict(profile)
