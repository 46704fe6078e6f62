"""A detached Slurm sweep's parent run stays RUNNING while its jobs are queued or running, and is closed
FINISHED by the last of its jobs to end (the driver exited at submission)."""
from __future__ import annotations

import sqlite3
import time


def parent_status(root) -> str:
    with sqlite3.connect(root / "mlruns.db") as conn:
        (status,), = conn.execute("SELECT r.status FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid "
                                  "WHERE t.key = 'harness.role' AND t.value = 'parent'").fetchall()
    return status


def test_detached_parent_stays_running_until_the_last_job_ends(slurm_cluster, run_harness):
    proc = run_harness("multirun", "launcher=slurm", "launcher.members=1",
                       "seed=1,2", "debug=quick", "--detach", check=True)
    assert "2 submitted" in proc.stdout
    assert parent_status(run_harness.root) == "RUNNING", "closed at submission while its jobs are queued"
    sweep_dir = next(run_harness.root.glob("multirun/*/*"))
    deadline = time.monotonic() + 400
    while parent_status(run_harness.root) == "RUNNING":
        assert time.monotonic() < deadline, "the parent run was never closed"
        time.sleep(0.5)
    statuses = sorted((d / "status.txt").read_text().strip() for d in (sweep_dir / "0", sweep_dir / "1"))
    assert statuses == ["FINISHED", "FINISHED"]
    assert parent_status(run_harness.root) == "FINISHED"
