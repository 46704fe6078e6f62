"""What a run folder records about its own run, read without MLflow: the tracking run its checkpoint
continues, and whether the process named in its `job.json` still runs on this host. Imports nothing from
harness (the tracking tools, the reports and the folder claims all read it)."""
from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import List, Optional

START_TOKEN = "pid_started"  # job.json's key for the pid's start time (process_start)


def run_id_of(folder: Path) -> Optional[str]:
    """The tracking run a run folder recorded to, from its checkpoint's record (None when it has none)."""
    try:
        return json.loads((Path(folder) / "checkpoints" / "last.json").read_text()).get("run_id") or None
    except (OSError, ValueError, AttributeError):
        return None


def live_job(folder: Path) -> Optional[str]:
    """"pid N on host" when the job's process, on this host, is alive and has not ended the run; else None.
    Alive means the pid runs and started when the job recorded (its start token), not any process the pid
    was given to since."""
    folder = Path(folder)
    try:
        job = json.loads((folder / "job.json").read_text())
        pid, host = int(job["pid"]), str(job["host"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if (folder / "status.txt").is_file() or host != socket.gethostname() or pid == os.getpid():
        return None
    token = job.get(START_TOKEN)
    if token is not None:  # the pid's start time, recorded at start: a pid reused since is another process
        return f"pid {pid} on {host}" if process_start(pid) == str(token) else None
    try:  # a record written before the token was (an older harness): the command line is all there is
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None  # no such process (or no /proc: the folder's lock decides)
    return f"pid {pid} on {host}" if b"harness" in command else None


def process_start(pid: int) -> Optional[str]:
    """The process's start time since boot, in clock ticks (`/proc/<pid>/stat`, field 22): with the pid, it
    names one process for the host's uptime, where a pid alone is reused. None: no such process (or no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # the command name, in parentheses, may hold spaces
    return fields[19] if len(fields) > 19 and fields[0] != "Z" else None


def job_record() -> dict:
    """Who runs a job, as it writes into its folder's `job.json` when it starts (beside the run's name): the
    pid, the host, the pid's start token (which `live_job` checks) and since when."""
    return {"pid": os.getpid(), "host": socket.gethostname(), START_TOKEN: process_start(os.getpid()),
            "started": time.time()}


def job_folders(folder: Path) -> List[Path]:
    """A sweep folder's job folders (sub-folders with a config.yaml), or the run folder itself."""
    folder = Path(folder)
    jobs = sorted(d for d in folder.iterdir() if d.is_dir() and not d.name.startswith(".")
                  and (d / "config.yaml").is_file()) if folder.is_dir() else []
    return jobs or [folder]
