"""`report` onto a read-only folder says it is read-only, not "free some space there" with gigabytes free (issue
#50, case 22): one line naming the folder and the reason, exit 1, nothing left. A real read-only file system (a tmpfs
remounted read-only; needs root), a real MLflow store, the command line in a real process."""
from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.reports.rendering.out_folder import disk_refusal
from harness.reports.results.synthetic import FakeRun, write_sweep
from small_disk import small_disk

SWEEP = "2026-07-07/00-00-00-000000"
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # a report built by the command line in a real process
def test_report_onto_a_read_only_folder_says_read_only(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    write_sweep(uri, [FakeRun(objective="dppo", algo={"delta": d}, seed=s) for d in (0.1, 0.2) for s in range(2)],
                sweep_id=SWEEP)
    with small_disk(tmp_path / "disk", "1m") as disk:
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        out = disk / "reports"
        done = subprocess.run([sys.executable, "-m", "harness", "report", SWEEP, "--tracking-uri", uri, "--out",
                               str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "HARNESS_OUTPUT_ROOT": str(tmp_path), "PYTHONPATH": str(REPO)})
        assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
        assert done.stderr.splitlines() == [f"harness report: error: reports not written to {out}: Read-only file "
                                            "system: the folder is on a read-only file system; give --out a writable "
                                            "folder"]
        assert list(disk.iterdir()) == []


def test_each_refusal_of_the_disk_says_its_own_remedy(tmp_path):
    def said(code: int) -> str:
        return str(disk_refusal(OSError(code, os.strerror(code)), tmp_path / "reports"))

    assert said(errno.ENOSPC).endswith("free some space there or give --out another folder")
    for code in (errno.EROFS, errno.EACCES, errno.EPERM):
        assert "free some space" not in said(code) and said(code).endswith("give --out a writable folder")
    assert "not writable by this user" in said(errno.EACCES)
    assert disk_refusal(OSError(errno.ENOENT, "No such file or directory"), tmp_path) is None
