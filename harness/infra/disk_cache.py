"""Folders of small cache entries under the user's cache directory: atomic writes, the oldest half
dropped past a size, any unreadable entry treated as absent. A full or read-only disk only costs the
next call the work the entry would have saved."""
from __future__ import annotations

import os
from typing import Optional

OFF = ("off", "0", "false", "no")


def cache_folder(env_var: str, name: str) -> Optional[str]:
    """$env_var if set ('off' disables: None), else $XDG_CACHE_HOME/harness/<name> (~/.cache by default)."""
    setting = os.environ.get(env_var, "")
    if setting.lower() in OFF:
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return setting or os.path.join(base, "harness", name)


def read_entry(folder: Optional[str], name: str) -> Optional[bytes]:
    if folder is None:
        return None
    try:
        with open(os.path.join(folder, name), "rb") as f:
            return f.read()
    except OSError:
        return None


def write_entry(folder: Optional[str], name: str, data: bytes, max_entries: int) -> None:
    if folder is None:
        return
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        partial = os.path.join(folder, f"{name}.{os.getpid()}.tmp")
        with open(partial, "wb") as f:
            f.write(data)
        os.replace(partial, os.path.join(folder, name))
        _prune(folder, os.path.splitext(name)[1], max_entries)
    except OSError:
        pass


def _prune(folder: str, suffix: str, max_entries: int) -> None:
    entries = [e for e in os.scandir(folder) if e.name.endswith(suffix)]
    if len(entries) > max_entries:
        for entry in sorted(entries, key=lambda e: e.stat().st_mtime_ns)[:len(entries) - max_entries // 2]:
            os.remove(entry.path)
