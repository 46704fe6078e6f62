"""Where `python -m harness report --out` may write: a new (or empty) folder, or one holding reports already,
of the same sweep; and a disk that refuses the reports said in one line: full or over quota (free some space), or
read-only or not this user's to write (another folder; space would not help)."""
from __future__ import annotations

import errno
import re
import shutil
from pathlib import Path
from typing import Optional

from harness.launchers.folder_claims import REPORT_FILES, FolderTaken, contents
from harness.reports.rendering.page import HTML_NAME, MD_NAME
from harness.reports.rendering.registry import list_kinds
from harness.reports.rendering.verdicts import FILE as VERDICTS_FILE


def check_report_out(out: Path) -> None:
    """`report --out`: a new (or empty) folder, or one holding reports already (only report files in it)."""
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise FolderTaken(f"--out {out} is a file; give a folder for the reports")
    others = [name for name in contents(out) if name not in (*REPORT_FILES, VERDICTS_FILE, *list_kinds())]
    if others:
        raise FolderTaken(f"--out {out} holds other files ({', '.join(others[:3])}{', ...' if len(others) > 3 else ''});"
                          " reports go only into a new folder or one that holds reports: choose another")


FINDINGS_NAME = "FINDINGS.md"
FINDINGS_HEADING = "# Findings at toy scale"  # the first line of every page `findings` writes (findings_doc.py)


def check_findings_out(out: Path) -> None:
    """`findings --out`, as `report --out`: never over a FINDINGS.md that `findings` did not write (a user's
    own page of that name), nor into a file. FolderTaken, one line."""
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise FolderTaken(f"--out {out} is a file; give a folder for {FINDINGS_NAME}")
    page = out / FINDINGS_NAME
    if page.exists() and _first_line(page) != FINDINGS_HEADING:
        raise FolderTaken(f"--out {out} holds a {FINDINGS_NAME} that harness findings did not write; it is never "
                          "overwritten: give --out a new folder or one holding an earlier findings page")


def _first_line(path: Path) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.readline().rstrip("\n")
    except OSError:  # a folder of that name, or unreadable: not a page findings wrote
        return None


# Who wrote a reports folder: its index's heading (build._write_index) and each page's line under its title (Page)
INDEX_HEADING = re.compile(r"# Reports of sweep (.*)")
PAGE_LINE = re.compile(r"_sweep (.*?) · \d+ runs · ")


def check_report_owner(out: Path, sweep_id: str) -> None:
    """FolderTaken (one line) when `out` holds pages of another sweep, or pages `report` did not write: a rebuild
    writes only over the same sweep's reports, never mixes two sweeps' pages in one index."""
    out = Path(out)
    pages = [(out / "README.md", out / HTML_NAME, INDEX_HEADING)]
    pages += [(out / kind / MD_NAME, out / kind / HTML_NAME, PAGE_LINE) for kind in list_kinds()]
    owners = set()
    for summary, html_page, pattern in pages:
        if not summary.is_file():
            if html_page.exists():
                raise FolderTaken(f"--out {out} holds a page that harness report did not write "
                                  f"({html_page.relative_to(out)}, without its {summary.name}); reports go only into "
                                  "a new folder or one holding their own sweep's reports: choose another")
            continue
        found = _owner(summary, pattern)
        if found is None:
            raise FolderTaken(f"--out {out} holds a page that harness report did not write ({summary.relative_to(out)}); "
                              "reports go only into a new folder or one holding their own sweep's reports: choose another")
        owners.add(found)
    others = sorted(owners - {str(sweep_id)})
    if others:
        raise FolderTaken(f"--out {out} holds the reports of sweep {others[0]}, not of sweep {sweep_id}; reports go "
                          "only into a new folder or one holding their own sweep's reports: choose another")


def _owner(summary: Path, pattern: re.Pattern) -> Optional[str]:
    try:
        with open(summary, encoding="utf-8", errors="replace") as handle:
            head = [handle.readline().rstrip("\n") for _ in range(3)]
    except OSError:
        return None
    for line in head:
        found = pattern.match(line)
        if found:
            return found.group(1)
    return None


NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)  # no room is not what is wrong: space would not help


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
        if isinstance(seen, OSError) and seen.errno in NOT_WRITABLE:
            what = "is on a read-only file system" if seen.errno == errno.EROFS else "is not writable by this user"
            return ReportsNotWritten(f"reports not written to {out}: {seen.strerror}: the folder {what}; give --out "
                                     "a writable folder")
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
