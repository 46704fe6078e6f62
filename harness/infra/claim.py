"""Claiming a run or sweep folder for one process: an exclusive lock (`harness.infra.locks`) on
`<folder>/.harness.lock`, held until the claim is released or the process ends. The kernel drops the lock
of a process that dies (even by SIGKILL), so no stale claim is left; the file says who holds it."""
from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Dict, Optional

from harness.infra.locks import LockHeld, is_locked, lock, open_lock_file, unlock

LOCK_FILE = ".harness.lock"
_HELD: Dict[str, int] = {}  # folder -> descriptor holding its lock (a process may claim again what it holds)
_CLAIMED: set = set()  # every folder this process has claimed, released or not


class FolderInUse(Exception):
    """Another process holds the folder (or its lock file cannot be one); the message is one line."""


def _check_lock_file(path: Path, what: str) -> None:
    """FolderInUse naming `path` when something other than a lock file stands there (a folder): the claim cannot be
    made, and it is that path's doing, not the folder's."""
    try:
        odd = path.exists() and not path.is_file()
    except OSError:  # a path the file system refuses (too long): the claim's own error says so
        return
    if odd:
        kind = "a folder" if path.is_dir() else "not a regular file"
        raise FolderInUse(f"{path} is {kind}, not the lock file that claims the {what}: remove it, or choose "
                          "another folder")


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["started"]))
        return f"pid {info['pid']} on {info['host']} since {started}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


def claim(folder: Path, what: str = "folder", lock_file: str = LOCK_FILE) -> None:
    """Hold `folder` for this process, or raise FolderInUse naming the holder. `lock_file`: another claim on
    the same folder (an adaptive study's driver holds its folder while each round's sweep claims it too)."""
    folder = Path(folder).expanduser().resolve()
    if _key(folder, lock_file) in _HELD:
        return
    folder.mkdir(parents=True, exist_ok=True)
    _check_lock_file(folder / lock_file, what)
    fd = open_lock_file(folder / lock_file, 0o644)
    try:
        lock(fd, blocking=False)
    except LockHeld:
        holder = _holder(fd)
        os.close(fd)
        raise FolderInUse(_in_use(folder, what, holder)) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}).encode(), 0)
    _HELD[_key(folder, lock_file)] = fd
    _CLAIMED.add(_key(folder, lock_file))


def claimed_any() -> bool:
    """Whether this process has claimed a run or sweep folder: a run or sweep was started (not only checked)."""
    return bool(_CLAIMED)


def _key(folder: Path, lock_file: str) -> str:
    return str(folder) if lock_file == LOCK_FILE else str(folder / lock_file)


def _in_use(folder: Path, what: str, holder: str) -> str:
    return f"{what} {folder} is in use by {holder}: wait for it to end, or choose another folder"


def check_free(folder: Path, what: str = "folder") -> None:
    """Raise FolderInUse if another live process holds `folder` (creates nothing; `claim` is what holds it)."""
    folder = Path(folder).expanduser().resolve()
    _check_lock_file(folder / LOCK_FILE, what)
    holder = None if str(folder) in _HELD else held_by(folder)
    if holder:
        raise FolderInUse(_in_use(folder, what, holder))


def held_by(folder: Path, lock_file: str = LOCK_FILE) -> Optional[str]:
    """Who holds `folder`'s claim ("pid 12 on host since ..."), or None if no live process does. Creates nothing."""
    path = Path(folder).expanduser() / lock_file
    if _key(Path(folder).expanduser().resolve(), lock_file) in _HELD:
        return f"this process (pid {os.getpid()})"
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # no lock file: never claimed
        return None
    try:
        return _holder(fd) if is_locked(fd) else None
    finally:
        os.close(fd)


def holds(folder: Path, lock_file: str = LOCK_FILE) -> bool:
    """Whether this process holds `folder`'s claim."""
    return _key(Path(folder).expanduser().resolve(), lock_file) in _HELD


def release(folder: Path, lock_file: str = LOCK_FILE) -> None:
    fd = _HELD.pop(_key(Path(folder).expanduser().resolve(), lock_file), None)
    if fd is not None:
        unlock(fd)
        os.close(fd)
