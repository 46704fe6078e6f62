"""Paths that lead nowhere: a folder given through a symlink loop (`a -> b -> a`) fails every later mkdir,
resolve and stat with ELOOP; found once, up front, and said in one line (`LoopedPath`)."""
from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Optional

OUTPUT_ROOT_ENV = "HARNESS_OUTPUT_ROOT"


class LoopedPath(ValueError):
    """A path through a symlink loop; the message is one line naming the setting and the loop."""


def loop_in(path) -> Optional[Path]:
    """The first part of `path` (from the root down) whose lookup loops, None when none does (also when a part
    does not exist yet: nothing below it can loop)."""
    absolute = Path(os.path.abspath(os.path.expanduser(str(path))))
    for part in [*reversed(absolute.parents), absolute]:
        try:
            os.stat(part)
        except OSError as err:
            return part if err.errno == errno.ELOOP else None
    return None


def check_no_loop(path, setting: str) -> None:
    """LoopedPath when `path`, given as `setting` (e.g. `HARNESS_OUTPUT_ROOT=...`), runs through a symlink loop."""
    looped = loop_in(path)
    if looped is not None:
        raise LoopedPath(f"{setting} runs through a symlink loop at {looped} ({os.strerror(errno.ELOOP)}): give a "
                         "folder path without one")


def tools_output_root() -> Path:
    """The tools' output root: $HARNESS_OUTPUT_ROOT, else the current folder, resolved (LoopedPath for a loop)."""
    root = os.environ.get(OUTPUT_ROOT_ENV) or "."
    check_no_loop(root, f"{OUTPUT_ROOT_ENV}={root}" if os.environ.get(OUTPUT_ROOT_ENV) else f"the current folder {root}")
    return Path(root).expanduser().resolve()
