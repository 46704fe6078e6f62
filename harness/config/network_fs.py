"""Is a path on a network filesystem? Read from the mount table (/proc/mounts): the longest mount point that
holds the path names its filesystem type. A cluster's SQLite tracking store there locks badly (SQLite's own
documentation advises against NFS), so cluster runs get one warning naming the alternatives."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

MOUNTS = Path("/proc/mounts")
NETWORK_TYPES = ("nfs", "nfs4", "lustre", "gpfs", "cifs", "smb3", "smbfs", "beegfs", "ceph", "glusterfs",
                 "fuse.glusterfs", "fuse.sshfs", "fuse.ceph", "9p", "afs", "pvfs2", "orangefs", "wekafs", "panfs")


def filesystem_of(path: str, mounts: Path = MOUNTS) -> Optional[str]:
    """The filesystem type of the mount that holds `path` (it need not exist yet), or None without a table."""
    try:
        table = mounts.read_text().splitlines()
    except OSError:
        return None
    target = os.path.realpath(os.path.abspath(os.path.expanduser(path)))
    best, kind = "", None
    for line in table:
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, parts[2]
    return kind


def sqlite_warning(uri: str, mounts: Path = MOUNTS) -> Optional[str]:
    """One line when `uri` is a SQLite store on a network filesystem, else None."""
    if not uri.startswith("sqlite:///"):
        return None
    path = uri[len("sqlite:///"):].split("?")[0]
    path = path if path.startswith("/") else os.path.join(os.getcwd(), path)
    kind = filesystem_of(path, mounts)
    if kind not in NETWORK_TYPES:
        return None
    return (f"harness: warning: the tracking store {uri} is SQLite on a network filesystem ({kind}), where SQLite's "
            f"locks are unreliable with many jobs writing; use a tracking server (tracking=server, `python -m harness "
            f"server` on a shared host) or PostgreSQL (tracking.uri=postgresql://...)")
