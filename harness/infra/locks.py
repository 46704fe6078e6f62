"""Locks held across processes (and NFS nodes with lockd): `flock(2)` on a lock file. The kernel drops the
lock when the holder's descriptor closes, so a process that dies, even by SIGKILL, leaves no stale lock.

The one lock helper of the harness: the folder claims, the store's creation and the spool uploads use it.
(Not the `filelock` package: it has no shared lock to ask "is this held?" without taking it, and it owns
the lock file, where a folder claim keeps the holder's pid, host and start time.)"""
from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class LockHeld(Exception):
    """Another descriptor holds the lock (raised only by a non-blocking attempt)."""


def open_lock_file(path: Path, mode: int = 0o666) -> int:
    """A read-write descriptor of `path`, created (with `mode`, less the umask) if missing; content kept."""
    return os.open(path, os.O_RDWR | os.O_CREAT, mode)


def lock(fd: int, *, blocking: bool = True, shared: bool = False) -> None:
    """Lock `fd` (exclusive unless `shared`); waits while another holds it, or raises LockHeld at once when
    not `blocking`. Locking again what this descriptor holds succeeds (it may change the kind)."""
    flags = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if blocking else fcntl.LOCK_NB)
    try:
        fcntl.flock(fd, flags)
    except BlockingIOError:
        raise LockHeld() from None


def unlock(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)


def is_locked(fd: int) -> bool:
    """True when another descriptor holds an exclusive lock on `fd`'s file; takes and drops a shared lock to
    tell (fd may be read-only)."""
    try:
        lock(fd, blocking=False, shared=True)
    except LockHeld:
        return True
    unlock(fd)
    return False


@contextmanager
def locked(path: Path, *, blocking: bool = True) -> Iterator[int]:
    """Hold an exclusive lock on `path` (created if missing) for the block; yields its descriptor. LockHeld,
    before the block runs, when another holds it and not `blocking`."""
    fd = open_lock_file(path)
    try:
        lock(fd, blocking=blocking)
        try:
            yield fd
        finally:
            unlock(fd)
    finally:
        os.close(fd)
