"""Processes the safety tests start and watch: a process that holds a folder's claim, and /proc checks of
which processes live and whose children they are."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = str(Path(__file__).parents[2])


def hold_claim(folder: Path, what: str = "folder") -> subprocess.Popen:
    """Another process that claims `folder` (as a running run or sweep does) and holds it until killed."""
    holder = subprocess.Popen([sys.executable, "-c", f"import sys; sys.path[:0] = {[ROOT]!r}\n"
                               "from harness.infra.claim import claim; import time\n"
                               f"claim({str(folder)!r}, {what!r}); print('held', flush=True); time.sleep(600)"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def children(pid: int) -> list:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(predicate, timeout: float, every: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False
