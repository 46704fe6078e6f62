"""Files that other processes read while they may be rewritten (a job's `status.txt`, `job.json`, a
checkpoint's record): written beside their place, then renamed over it, so a reader sees the old file or
the new one whole, never an empty or half-written one. A failed write (a full disk) leaves no temporary file."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable


def write_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """`write(tmp)`, then rename the temporary file over `path`."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # one per process: two writers never share it
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomically(path: Path, text: str, encoding: str = "utf-8") -> None:
    write_atomically(path, lambda tmp: tmp.write_text(text, encoding=encoding))
