"""`report` onto a real full disk (a small tmpfs): one line naming the folder and the reason, exit 1, and no
temporary, empty or half-written file left; a disk with room for some pages keeps those pages whole."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.reports.results.synthetic import FakeRun, write_sweep
from small_disk import fill, small_disk

SWEEP = "2026-02-02/00-00-00-000000"


@pytest.fixture
def store(tmp_path) -> str:
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    write_sweep(uri, [FakeRun(objective="dppo", algo={"delta": d}, seed=s) for d in (0.1, 0.2) for s in range(3)],
                sweep_id=SWEEP)
    return uri


def report_onto(run_harness, store: str, out: Path):
    proc = run_harness("report", SWEEP, "--tracking-uri", store, "--out", str(out))
    assert proc.returncode == 1, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    line, = proc.stderr.strip().splitlines()
    assert f"reports not written to {out}: No space left on device" in line and "--out another folder" in line, line
    return proc


def leftovers(disk: Path) -> list:
    return [p for p in disk.rglob("*") if p.is_file() and p.name != "filler" and (".tmp" in p.name or not p.stat().st_size)]


@pytest.mark.slow
def test_report_onto_a_full_disk_is_one_line_and_leaves_no_file(run_harness, store, tmp_path):
    with small_disk(tmp_path / "disk", "64k") as disk:
        fill(disk)
        report_onto(run_harness, store, disk / "reports")
        assert [p for p in disk.rglob("*") if p.name != "filler"] in ([], [disk / "reports"])


@pytest.mark.slow
def test_report_onto_a_disk_that_fills_up_keeps_what_it_wrote_whole(run_harness, store, tmp_path):
    with small_disk(tmp_path / "disk", "200k") as disk:
        report_onto(run_harness, store, disk / "reports")
        assert not leftovers(disk), leftovers(disk)
        for page in (disk / "reports").glob("*/index.html"):
            assert page.read_text().rstrip().endswith("</html>"), page
