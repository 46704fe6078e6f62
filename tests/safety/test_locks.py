"""The one lock helper (harness.infra.locks): exclusive between processes, a non-blocking attempt refused at
once, a blocking one served when the holder lets go, and no stale lock after its holder is killed."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.infra.locks import LockHeld, is_locked, locked

REPO = Path(__file__).resolve().parents[2]


def hold(path: Path, seconds: float) -> subprocess.Popen:
    """A process holding `path`'s lock for `seconds` (once it printed "held"), then writing `<path>.done`
    before it lets go."""
    code = (f"import sys, time; sys.path[:0] = [{str(REPO)!r}]\nfrom harness.infra.locks import locked\n"
            f"with locked(__import__('pathlib').Path({str(path)!r})):\n"
            f"    print('held', flush=True); time.sleep({seconds}); open({str(path)!r} + '.done', 'w').close()\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    path = tmp_path / ".lock"
    holder = hold(path, 600)
    try:
        with pytest.raises(LockHeld):
            with locked(path, blocking=False):
                pytest.fail("the block ran while another process held the lock")
        fd = os.open(path, os.O_RDONLY)
        try:
            assert is_locked(fd)
        finally:
            os.close(fd)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with locked(path, blocking=False):  # the kernel dropped the killed holder's lock
        fd = os.open(path, os.O_RDONLY)
        try:
            assert is_locked(fd), "held by this process's other descriptor"
        finally:
            os.close(fd)


def test_a_blocking_lock_waits_for_the_holder(tmp_path):
    path = tmp_path / ".lock"
    holder = hold(path, 1.0)
    with locked(path):
        assert Path(f"{path}.done").is_file(), "got the lock while another process held it"
    assert holder.wait(60) == 0
