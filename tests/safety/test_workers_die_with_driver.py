"""A local_parallel sweep's workers die with their driver: a driver killed by SIGKILL (no handler can run)
leaves no worker training on; each worker's run ends KILLED (closed by the worker on the SIGTERM the kernel
sends it, or else by `repair`, as for any run whose process died)."""
from __future__ import annotations

import os
import signal
import subprocess
import time

from processes import alive, children, wait_for

SWEEP = ("-m", "launcher=local_parallel", "launcher.workers=2", "debug=quick", "trainer.steps=400",
         "trainer.eval_every=100", "trainer.checkpoint_every=100", "seed=1,2")


def test_sigkilled_driver_takes_its_workers_along(run_harness, tmp_path):
    folder = tmp_path / "sweep"
    driver = subprocess.Popen(run_harness.argv(*SWEEP, f"hydra.sweep.dir={folder}"), cwd=tmp_path,
                              env=run_harness.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        training = lambda: all((folder / job / "metrics.jsonl").is_file() for job in ("0", "1"))  # noqa: E731
        assert wait_for(training, 300), "the two jobs did not start training"
        workers = children(driver.pid)
        assert workers, "no worker processes found"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
        assert wait_for(lambda: not any(alive(pid) for pid in workers), 60), \
            f"workers outlived their driver: {[pid for pid in workers if alive(pid)]}"
    finally:
        if driver.poll() is None:
            driver.kill()
    time.sleep(2)
    repaired = subprocess.run([*run_harness.argv("repair", "--stale-after", "1.5")], cwd=tmp_path,
                              env=run_harness.env(), capture_output=True, text=True, timeout=300)
    assert repaired.returncode == 0, repaired.stderr[-2000:]
    import sqlite3

    with sqlite3.connect(tmp_path / "mlruns.db") as conn:
        statuses = [row[0] for row in conn.execute("SELECT status FROM runs WHERE name NOT LIKE 'sweep %'")]
    assert statuses == ["KILLED", "KILLED"], statuses
