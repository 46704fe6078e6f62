"""Faults end truthfully in one line: a full disk (a 2 MB tmpfs) ends the run FAILED with the reason in
error.txt, status.txt and MLflow, the traceback in error.txt rather than on the terminal, and no temporary
or partial file left; a read-only working folder is one line; SIGTERM / Ctrl-C end the run KILLED without
a traceback."""
from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest


def mlflow_statuses(root: Path) -> list:
    with sqlite3.connect(root / "mlruns.db") as conn:
        return [row[0] for row in conn.execute("SELECT status FROM runs ORDER BY start_time")]


@pytest.fixture
def tmpfs(tmp_path):
    """A 2 MB tmpfs (root only): a disk that fills up, or that can be made read-only."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=True)


def assert_one_line_no_traceback(proc) -> None:
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text, text[-3000:]
    # what every run prints whatever its end: where it is tracked (first line), its folder and MLflow run (last)
    usual = (": tracked in ", "  folder: ", "  mlflow: ")
    harness_lines = [line for line in text.splitlines() if "INFO" not in line and not any(u in line for u in usual)]
    assert len(harness_lines) <= 2, text[-3000:]


def test_disk_full_ends_failed_in_one_line_and_leaves_no_partial_file(run_harness, tmpfs):
    run_dir = tmpfs / "run"
    proc = run_harness("debug=quick", "trainer.steps=3", "trainer.checkpoint_every=1", f"hydra.run.dir={run_dir}")
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert_one_line_no_traceback(proc)
    assert "FAILED" in proc.stdout + proc.stderr and "No space left on device" in proc.stdout + proc.stderr
    assert (run_dir / "status.txt").read_text().strip() == "FAILED"
    error = (run_dir / "error.txt").read_text()
    assert "No space left on device" in error and "Traceback" in error
    assert "Traceback" in (run_dir / "job.log").read_text(), "the traceback belongs in the run's log file"
    assert mlflow_statuses(run_harness.root) == ["FAILED"]
    leftovers = [p for p in run_dir.rglob("*") if ".tmp" in p.name or (p.suffix in (".pt", ".npz") and not p.stat().st_size)]
    assert not leftovers, leftovers
    state = run_dir / "checkpoints" / "last.pt"
    if state.is_file():  # the checkpoint that was written is whole: it still matches its checksum
        import hashlib
        assert (run_dir / "checkpoints" / "last.pt.sha256").read_text().split()[0] == \
            hashlib.sha256(state.read_bytes()).hexdigest()


def test_read_only_output_folder_is_one_line(run_harness, tmpfs):
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    proc = run_harness("debug=quick", env={"HARNESS_OUTPUT_ROOT": str(tmpfs)})
    assert proc.returncode != 0
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.strip().splitlines() if line]
    assert len(lines) == 1 and "Read-only file system" in lines[0], proc.stderr[-3000:]


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_ends_killed_without_traceback(run_harness, sig, code):
    # SIGINT back to its default in the child: a suite started in the background (`... &`, nohup) hands its
    # children SIGINT ignored, and Python then never raises KeyboardInterrupt
    proc = subprocess.Popen(run_harness.argv("debug=quick", "trainer.steps=500", "trainer.checkpoint_every=50"),
                            cwd=run_harness.root, env=run_harness.env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 300
        while not list((run_harness.root / "outputs").glob("*/*/metrics.jsonl")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-3000:]
            time.sleep(0.2)
        time.sleep(2)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err[-3000:]
    assert "Traceback" not in out + err, err[-3000:]
    assert err.strip().splitlines()[-1].startswith("harness: stopped:")
    (run_dir,) = (run_harness.root / "outputs").glob("*/*")
    assert (run_dir / "status.txt").read_text().strip() == "KILLED"
    assert mlflow_statuses(run_harness.root) == ["KILLED"]
