"""`harness report <folder>` on a folder that is neither a sweep nor a run exits 2 with one line and writes
nothing into it."""
from __future__ import annotations


def test_report_on_a_folder_that_is_not_a_sweep(run_harness, tmp_path):
    folder = tmp_path / "holiday_photos"
    folder.mkdir()
    (folder / "beach.jpg").write_bytes(b"\xff\xd8")
    proc = run_harness("report", str(folder))
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(proc.stderr.strip().splitlines()) == 1 and "is not a sweep or run folder" in proc.stderr
    assert sorted(p.name for p in folder.rglob("*")) == ["beach.jpg"], "nothing may be written into it"
