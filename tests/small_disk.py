"""A real small file system for full-disk tests: a tmpfs of a given size (mounting needs root; the test is
skipped elsewhere), filled to the last byte on demand."""
from __future__ import annotations

import errno
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_disk(mount: Path, size: str = "256k"):
    """A tmpfs of `size` at `mount` for the duration of the block."""
    mount.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(disk: Path) -> None:
    """Take every free byte of `disk` (a file `filler` in it): the next write fails with ENOSPC."""
    with open(disk / "filler", "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError as err:
            assert err.errno == errno.ENOSPC, err
