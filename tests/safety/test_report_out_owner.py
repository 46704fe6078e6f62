"""`report --out` writes over its own sweep's reports only: a folder holding another sweep's reports, or a page
that `report` did not write (at the top or in a report's subfolder), is one line and exit 2, nothing changed."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from harness.reports.results.synthetic import FakeRun, write_sweep

SWEEPS = ("2026-03-03/00-00-00-00000a", "2026-03-03/00-00-00-00000b")


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(proc, *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    line, = proc.stderr.strip().splitlines()
    for word in words:
        assert word in line, line


@pytest.mark.slow
def test_report_out_takes_only_its_own_sweeps_reports(run_harness, tmp_path):
    store = f"sqlite:///{tmp_path / 'mlruns.db'}"
    for sweep in SWEEPS:
        write_sweep(store, [FakeRun(objective="dppo", algo={"delta": d}, seed=s) for d in (0.1, 0.2) for s in (0, 1)],
                    sweep_id=sweep)

    def report(sweep: str, out: Path):
        return run_harness("report", sweep, "--tracking-uri", store, "--out", str(out))

    out = tmp_path / "reports"
    assert report(SWEEPS[0], out).returncode == 0
    assert report(SWEEPS[0], out).returncode == 0, "its own sweep's reports are rebuilt in place"
    before = snapshot(out)
    refused(report(SWEEPS[1], out), f"holds the reports of sweep {SWEEPS[0]}", f"not of sweep {SWEEPS[1]}")
    assert snapshot(out) == before

    site = tmp_path / "site"  # somebody's web page
    site.mkdir()
    (site / "index.html").write_text("<html><body>my page</body></html>")
    refused(report(SWEEPS[1], site), "holds a page that harness report did not write (index.html")
    (site / "README.md").write_text("# My site\n")
    refused(report(SWEEPS[1], site), "did not write (README.md)")
    assert snapshot(site) == {"index.html": hashlib.sha256(b"<html><body>my page</body></html>").hexdigest(),
                              "README.md": hashlib.sha256(b"# My site\n").hexdigest()}

    nested = tmp_path / "nested"  # a report's subfolder holding a page of its own
    (nested / "overview").mkdir(parents=True)
    (nested / "overview" / "index.html").write_text("<html>mine</html>")
    refused(report(SWEEPS[1], nested), "overview/index.html")
    assert snapshot(nested) == {"overview/index.html": hashlib.sha256(b"<html>mine</html>").hexdigest()}
