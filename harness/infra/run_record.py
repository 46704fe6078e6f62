"""What a run folder records about its own run, read without MLflow: the tracking run its checkpoint
continues, and whether the process named in its `job.json` still runs on this host. Imports nothing from
harness (the tracking tools, the reports and the folder claims all read it)."""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import List, Optional


def run_id_of(folder: Path) -> Optional[str]:
    """The tracking run a run folder recorded to, from its checkpoint's record (None when it has none)."""
    try:
        return json.loads((Path(folder) / "checkpoints" / "last.json").read_text()).get("run_id") or None
    except (OSError, ValueError, AttributeError):
        return None


def live_job(folder: Path) -> Optional[str]:
    """"pid N on host" when the job's process, on this host, is alive and has not ended the run; else None."""
    folder = Path(folder)
    try:
        job = json.loads((folder / "job.json").read_text())
        pid, host = int(job["pid"]), str(job["host"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if (folder / "status.txt").is_file() or host != socket.gethostname() or pid == os.getpid():
        return None
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None  # no such process (or no /proc: the folder's lock decides)
    return f"pid {pid} on {host}" if b"harness" in command else None


def job_folders(folder: Path) -> List[Path]:
    """A sweep folder's job folders (sub-folders with a config.yaml), or the run folder itself."""
    folder = Path(folder)
    jobs = sorted(d for d in folder.iterdir() if d.is_dir() and not d.name.startswith(".")
                  and (d / "config.yaml").is_file()) if folder.is_dir() else []
    return jobs or [folder]
