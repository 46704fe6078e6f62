"""An ensemble sweep's worker pool under faults and signals, with real processes and a real MLflow store:
a worker killed by SIGKILL ends its own runs FAILED (folder and MLflow) while the other worker's ensemble
finishes and the driver prints its summary; SIGTERM to the driver, or three quick Ctrl-Cs to the whole
process group, end every run and the sweep's parent KILLED, with one line and no traceback."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from processes import wait_for

# one shape, four seeds: two ensembles of two, one per worker (jobs 0, 1 on one; 2, 3 on the other)
SWEEP = ("seed=0,1,2,3", "launcher=local_parallel", "launcher.workers=2", "debug=quick", "trainer.eval_every=1000",
         "trainer.checkpoint_every=1000")


def _start(run_harness, folder, steps: int, **popen):
    return subprocess.Popen(run_harness.argv("-m", f"trainer.steps={steps}", *SWEEP, f"hydra.sweep.dir={folder}"),
                            cwd=run_harness.root, env=run_harness.env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)


def _training(folder, jobs) -> bool:
    return all((folder / job / "metrics.jsonl").is_file() for job in jobs)


def _soon(predicate, timeout: float = 300) -> bool:
    return wait_for(predicate, timeout, every=0.05)  # often: the victim is paused as soon as it trains


def _statuses(run_harness):
    import sqlite3

    with sqlite3.connect(run_harness.root / "mlruns.db") as conn:
        rows = conn.execute("SELECT name, status FROM runs").fetchall()
    parents = [status for name, status in rows if name.startswith("sweep ")]
    return parents, sorted(status for name, status in rows if not name.startswith("sweep "))


def _folder_statuses(folder, jobs):
    return [(folder / job / "status.txt").read_text().strip() if (folder / job / "status.txt").is_file() else None
            for job in jobs]


def test_a_worker_killed_by_sigkill_fails_its_own_runs_and_the_others_finish(run_harness, tmp_path):
    folder = tmp_path / "sweep"
    driver = _start(run_harness, folder, 80)
    try:
        # the victim is stopped (SIGSTOP) as soon as it trains, so it cannot end its 80 steps before the kill,
        # and killed once the other worker's ensemble trains too
        assert _soon(lambda: _training(folder, "01") or driver.poll() is not None), "no training began"
        assert driver.poll() is None, driver.communicate()[1][-3000:]
        victim = json.loads((folder / "0" / "job.json").read_text())["pid"]
        os.kill(victim, signal.SIGSTOP)
        assert _soon(lambda: _training(folder, "23") or driver.poll() is not None), "the other ensemble never trained"
        os.kill(victim, signal.SIGKILL)
        out, err = driver.communicate(timeout=300)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert "2 ensembles of 2 runs on 2 worker processes" in out, out[-3000:]
    assert "sweep: 4 runs: 2 finished, 2 failed, 0 killed" in out, (out[-3000:], err[-3000:])
    assert "was killed by SIGKILL" in out and "Traceback" not in err, err[-3000:]
    assert driver.returncode == 1
    assert _folder_statuses(folder, "0123") == ["FAILED", "FAILED", "FINISHED", "FINISHED"]
    assert "killed by SIGKILL" in (folder / "0" / "error.txt").read_text()
    parents, runs = _statuses(run_harness)
    assert parents == ["FAILED"] and runs == ["FAILED", "FAILED", "FINISHED", "FINISHED"]


def _stopped(folder, driver, stop) -> tuple:
    try:
        assert _soon(lambda: _training(folder, "0123") or driver.poll() is not None), "no training began"
        assert driver.poll() is None, driver.communicate()[1][-3000:]
        stop()
        return driver.communicate(timeout=300)
    finally:
        if driver.poll() is None:
            driver.kill()  # its workers die with it


def _assert_all_killed(run_harness, folder, err: str) -> None:
    assert _folder_statuses(folder, "0123") == ["KILLED"] * 4
    parents, runs = _statuses(run_harness)
    assert parents == ["KILLED"] and runs == ["KILLED"] * 4
    stopped = [line for line in err.splitlines() if line.startswith("harness: stopped")]
    assert len(stopped) == 1, err[-3000:]
    assert "Traceback" not in err and "Exception ignored" not in err, err[-3000:]


def test_sigterm_to_the_driver_ends_every_run_and_the_parent_killed_in_one_line(run_harness, tmp_path):
    folder = tmp_path / "sweep"
    driver = _start(run_harness, folder, 100000)
    out, err = _stopped(folder, driver, lambda: driver.send_signal(signal.SIGTERM))
    assert driver.returncode == 143, err[-3000:]
    assert "harness: stopped: received signal SIGTERM" in err
    _assert_all_killed(run_harness, folder, err)


def test_three_quick_ctrl_cs_end_every_run_and_the_parent_killed_in_one_line(run_harness, tmp_path):
    folder = tmp_path / "sweep"
    # its own group, as a terminal's job; SIGINT back to its default (a suite started in the background hands
    # its children SIGINT ignored)
    driver = _start(run_harness, folder, 100000, start_new_session=True,
                    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def three_ctrl_cs():
        for _ in range(3):  # a terminal sends Ctrl-C to the whole foreground group: driver and workers
            os.killpg(driver.pid, signal.SIGINT)
            time.sleep(0.3)

    out, err = _stopped(folder, driver, three_ctrl_cs)
    assert driver.returncode == 130, err[-3000:]
    assert "harness: stopped: interrupted (Ctrl-C)" in err
    _assert_all_killed(run_harness, folder, err)
