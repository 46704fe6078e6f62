"""CPU seconds a process (or a process group) has used, read from /proc: what a bound on "how much work" means,
where wall time on a shared 2-core machine would also count every other process's turn on the CPU."""
from __future__ import annotations

import os
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(stat: Path) -> list:
    return stat.read_text().rsplit(")", 1)[1].split()  # after "pid (comm)"; comm may hold spaces


def process_cpu_seconds(pid: int, children: bool = True) -> float:
    """User + system CPU seconds of a live process, with those of its children it has waited for."""
    fields = _stat_fields(Path(f"/proc/{pid}/stat"))
    ticks = int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if children else 0)
    return ticks / TICKS


def group_cpu_seconds(group: int) -> float:
    """CPU seconds of the live processes of a process group, each with its waited-for children."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(_stat_fields(stat)[2]) == group:
                total += process_cpu_seconds(int(stat.parent.name))
        except (OSError, ValueError, IndexError):  # the process ended meanwhile
            continue
    return total
