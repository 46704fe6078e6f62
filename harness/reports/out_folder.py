"""Where `python -m harness report --out` may write: a new (or empty) folder, or one holding reports already."""
from __future__ import annotations

from pathlib import Path

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
