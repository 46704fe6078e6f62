"""Where `python -m harness report --out` may write: a new (or empty) folder, or one holding reports already;
and a disk that refuses the reports (full, over quota, read-only) said in one line."""
from __future__ import annotations

import errno
import shutil
from pathlib import Path
from typing import Optional

from harness.launchers.folder_claims import REPORT_FILES, FolderTaken, contents
from harness.reports.registry import list_kinds
from harness.reports.verdicts import FILE as VERDICTS_FILE


def check_report_out(out: Path) -> None:
    """`report --out`: a new (or empty) folder, or one holding reports already (only report files in it)."""
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise FolderTaken(f"--out {out} is a file; give a folder for the reports")
    others = [name for name in contents(out) if name not in (*REPORT_FILES, VERDICTS_FILE, *list_kinds())]
    if others:
        raise FolderTaken(f"--out {out} holds other files ({', '.join(others[:3])}{', ...' if len(others) > 3 else ''});"
                          " reports go only into a new folder or one that holds reports: choose another")


NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)


class ReportsNotWritten(Exception):
    """The disk of the reports folder refused a write; the message is one line."""


def disk_refusal(err: BaseException, out: Path) -> Optional[ReportsNotWritten]:
    """ReportsNotWritten when `err` (or an error it was raised from: PIL wraps the disk's) is the disk refusing a
    write, else None."""
    seen: Optional[BaseException] = err
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in NO_ROOM:
            return ReportsNotWritten(f"reports not written to {out}: {seen.strerror}{_free(out)}; free some space "
                                     "there or give --out another folder")
        seen = seen.__cause__ or seen.__context__
    return None


def _free(out: Path) -> str:
    place = Path(out)
    while not place.exists() and place != place.parent:
        place = place.parent
    try:
        return f" ({shutil.disk_usage(place).free // 1024} KiB free)"
    except OSError:
        return ""
