"""Fixtures for tests that run against the Slurm test clusters (single-node, and a two-node one).

The cluster is started with ``launchers/slurm_test_cluster/start.sh`` (see the
README there).  These tests only run when ``HARNESS_SLURM_TESTS=1``.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "launchers" / "slurm_test_cluster"
PARTITION = "debug"


@dataclasses.dataclass(frozen=True)
class SlurmCluster:
    state_dir: Path
    partition: str
    slurm_conf: Path


def _pid_alive(pidfile: Path, name: str) -> bool:
    try:
        pid = int(pidfile.read_text().strip())
        return Path(f"/proc/{pid}/comm").read_text().strip() == name
    except (OSError, ValueError):
        return False


def _sinfo_answers(state_dir: Path, env: dict[str, str]) -> bool:
    # sinfo retries for ~10 s when no controller is listening; skip it then.
    if not _pid_alive(state_dir / "run" / "slurmctld.pid", "slurmctld"):
        return False
    try:
        proc = subprocess.run(
            ["sinfo", "-h", "-p", PARTITION, "-o", "%a"],
            env=env,
            capture_output=True,
            text=True,
            timeout=15,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0 and proc.stdout.strip() == "up"


def _cluster(state_dir: Path, env: dict[str, str]):
    """Start the cluster of `state_dir` unless it answers; yield it with SLURM_CONF set; stop it if started here."""
    slurm_conf = state_dir / "etc" / "slurm.conf"
    env = dict(env, HARNESS_SLURM_DIR=str(state_dir), SLURM_CONF=str(slurm_conf))

    started = False
    if not (slurm_conf.exists() and _sinfo_answers(state_dir, env)):
        proc = subprocess.run(
            ["bash", str(LAUNCHER / "start.sh")], env=env, capture_output=True, text=True, timeout=600
        )
        if proc.returncode != 0:
            pytest.fail(f"start.sh failed (rc={proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        started = True

    old_conf = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(slurm_conf)
    try:
        yield SlurmCluster(state_dir=state_dir, partition=PARTITION, slurm_conf=slurm_conf)
    finally:
        if old_conf is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old_conf
        if started:
            subprocess.run(["bash", str(LAUNCHER / "stop.sh")], env=env, timeout=300)


def _enabled() -> None:
    if os.environ.get("HARNESS_SLURM_TESTS") != "1":
        pytest.skip("Slurm cluster tests disabled; set HARNESS_SLURM_TESTS=1 to run them")


@pytest.fixture(scope="session")
def slurm_cluster():
    _enabled()
    yield from _cluster(Path(os.environ.get("HARNESS_SLURM_DIR", "/tmp/harness-slurm")), dict(os.environ))


@pytest.fixture(scope="module")
def slurm_two_nodes():
    """A second test cluster of two nodes (two slurmd on this host, start.sh with HARNESS_SLURM_NODES=2), on its
    own state dir and ports, so the single-node cluster's tests keep theirs."""
    _enabled()
    env = dict(os.environ, HARNESS_SLURM_NODES="2", HARNESS_SLURM_CTLD_PORT="6837", HARNESS_SLURM_D_PORT="6838",
               HARNESS_SLURM_DBD_PORT="6839", HARNESS_SLURM_DB_PORT="6840")
    yield from _cluster(Path(os.environ.get("HARNESS_SLURM_2N_DIR", "/tmp/harness-slurm-2nodes")), env)
