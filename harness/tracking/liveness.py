"""Is a RUNNING run's process alive? Its heartbeat's age says so across hosts, within a tolerance for their
clocks' skew; on the run's own host its process says so directly (its folder's claim is held, or its
`job.json` names a live harness process), whatever the clocks say. `repair` marks KILLED only runs that
are stale by their heartbeat and not alive on this host."""
from __future__ import annotations

import socket
from pathlib import Path
from typing import Optional

from harness.infra.claim import LOCK_FILE, held_by
from harness.infra.run_record import live_job

# Hosts' clocks may disagree by this much without a live run being taken for dead (NTP keeps them far
# closer; a host without it is what this allows for).
CLOCK_SKEW_TOLERANCE_S = 300.0


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
