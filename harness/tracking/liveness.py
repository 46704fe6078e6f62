"""Is a RUNNING run's process alive? Its heartbeat's age says so across hosts, within a tolerance for their
clocks' skew; on the run's own host its process says so directly (its folder's claim is held, or its
`job.json` names the live process that started it: its pid with that pid's start token), whatever the clocks
say. `repair` marks KILLED runs that are stale by their heartbeat and not alive on this host, and at once a
run proved dead on this host (`dead_here`): a SIGKILLed process leaves no doubt there, nothing to wait for."""
from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Optional

import yaml

from harness.infra.claim import LOCK_FILE, held_by
from harness.infra.run_record import live_job, process_start

# Hosts' clocks may disagree by this much without a live run being taken for dead (NTP keeps them far
# closer; a host without it is what this allows for).
CLOCK_SKEW_TOLERANCE_S = 300.0
STUDY_LOCK = ".study.lock"  # an adaptive study's driver's (harness/sweeps/study_state.py)


def alive_here(run) -> Optional[str]:
    """Who runs `run` on this host ("pid 12 on node1 since ..."), or None when it does not run here (or its
    host is another one, where only the heartbeat can tell)."""
    tags = run.data.tags
    folder = tags.get("harness.run_dir")
    if not folder or tags.get("harness.host") != socket.gethostname():
        return None
    folder = Path(folder)
    if (folder / LOCK_FILE).is_file():
        holder = held_by(folder)
        if holder:
            return holder
    return live_job(folder)


def dead_here(run) -> bool:
    """Whether `run` was run on this host and its process is proved gone: its folder was claimed and no
    process holds the claim now (the kernel drops the lock of a process that dies, even by SIGKILL), and no
    live process started it. A sweep's parent: its folder's claims are free and the driver that claimed it
    is gone (not a detached sweep's, whose driver leaves on purpose)."""
    tags = run.data.tags
    if tags.get("harness.host") != socket.gethostname():
        return False
    if tags.get("harness.role") == "parent":
        folder = tags.get("harness.sweep_dir")
        return bool(folder) and _driver_gone(Path(folder))
    folder = tags.get("harness.run_dir")
    if not folder or not (Path(folder) / LOCK_FILE).is_file():
        return False  # never claimed here (or its folder is gone): only the heartbeat can tell
    return held_by(Path(folder)) is None and live_job(Path(folder)) is None


def _driver_gone(folder: Path) -> bool:
    if not (folder / LOCK_FILE).is_file() or held_by(folder) or held_by(folder, STUDY_LOCK) or _detached(folder):
        return False
    try:  # the claim's record: who held the folder last; alive (between a named sweep's grids) is not gone
        holder = json.loads((folder / LOCK_FILE).read_text())
        pid = int(holder["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return process_start(pid) is None


def _detached(folder: Path) -> bool:
    """A detached sweep's driver returned once its jobs were submitted; its parent waits for them."""
    try:
        config = yaml.safe_load((folder / "multirun.yaml").read_text())
        return bool(((config or {}).get("launcher") or {}).get("detach"))
    except (OSError, yaml.YAMLError, AttributeError):
        return True  # unknown: not proved gone
