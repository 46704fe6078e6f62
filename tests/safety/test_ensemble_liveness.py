"""`repair` never marks a live run: ensemble members training in a pool worker (whose command line is
`python -c from multiprocessing.spawn import …`, not harness's) are alive by their folders' claims, held by the
worker while their runs are open, whatever their heartbeats' age."""
from __future__ import annotations

import signal
import subprocess
import time

from test_worker_pool_faults import _soon, _statuses, _training


def test_repair_leaves_training_ensemble_members_alone(run_harness, tmp_path):
    folder = tmp_path / "sweep"
    env = run_harness.env({"HARNESS_HEARTBEAT_S": "600"})  # no beat during the test: every heartbeat is stale
    driver = subprocess.Popen(run_harness.argv("-m", "trainer.steps=100000", "seed=0,1,2,3", "launcher=local_parallel",
                                               "launcher.workers=2", "debug=quick", f"hydra.sweep.dir={folder}"),
                              cwd=run_harness.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert _soon(lambda: _training(folder, "0123") or driver.poll() is not None), "no training began"
        assert driver.poll() is None, driver.communicate()[1][-3000:]
        time.sleep(2)  # the heartbeats, set when the runs opened, are now older than --stale-after 1
        repaired = subprocess.run(run_harness.argv("repair", "--stale-after", "1"), cwd=run_harness.root, env=env,
                                  capture_output=True, text=True, timeout=300)
        assert repaired.returncode == 0, repaired.stderr[-3000:]
        assert "nothing to repair" in repaired.stdout, repaired.stdout
        parents, runs = _statuses(run_harness)
        assert parents == ["RUNNING"] and runs == ["RUNNING"] * 4
        assert driver.poll() is None
    finally:
        if driver.poll() is None:
            driver.send_signal(signal.SIGTERM)
            driver.communicate(timeout=300)
    parents, runs = _statuses(run_harness)
    assert parents == ["KILLED"] and runs == ["KILLED"] * 4
