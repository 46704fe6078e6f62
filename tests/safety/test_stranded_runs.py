"""No run stranded (issue 50, cases 5, 7, 8, 9): SIGHUP (an ssh session that drops) ends a sweep's runs and its
parent KILLED as SIGTERM does; a dead run's pid given to another process (`tail -f .../harness.log`) does not
keep it alive, as liveness is the pid's start token, not a name in its command line; a SIGKILLed driver that
ran its job in-process is repaired at once, its pid being dead on this host; a run resumed from its step-0
checkpoint does not log step 0 twice. Real runs (debug=quick), a real MLflow store, real signals."""
from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from pathlib import Path

from processes import wait_for


def _statuses(root: Path) -> dict:
    """{run name: status} of every run in the store, the sweep's parent included."""
    with sqlite3.connect(root / "mlruns.db") as conn:
        return {name: status for name, status in conn.execute("SELECT name, status FROM runs")}


def _repair(run_harness, *args: str) -> subprocess.CompletedProcess:
    proc = run_harness("repair", *args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def test_sighup_ends_a_sweep_and_its_runs_killed(run_harness):
    proc = subprocess.Popen(run_harness.argv("multirun", "debug=quick", "seed=0", "trainer.steps=500",
                                             "trainer.checkpoint_every=50"),
                            cwd=run_harness.root, env=run_harness.env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: list(run_harness.root.glob("multirun/*/*/0/metrics.jsonl")) or proc.poll() is not None,
                        300, 0.2), "the run never started"
        time.sleep(1)
        proc.send_signal(signal.SIGHUP)  # what a terminal that closes (an ssh session dropped) sends
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 129, err[-3000:]
    assert "Traceback" not in out + err, err[-3000:]
    assert err.strip().splitlines()[-1].startswith("harness: stopped: received signal SIGHUP"), err[-2000:]
    (job,) = run_harness.root.glob("multirun/*/*/0")
    assert (job / "status.txt").read_text().strip() == "KILLED"
    statuses = _statuses(run_harness.root)
    assert len(statuses) == 2 and set(statuses.values()) == {"KILLED"}, statuses  # the run and the sweep's parent
    assert "nothing to repair" in _repair(run_harness).stdout


def _sigkilled_run(run_harness, *args: str) -> Path:
    killed = run_harness("debug=quick", "trainer.checkpoint_every=2", *args, env={"HARNESS_FAULT_KILL_AT_STEP": "2"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    (run_dir,) = run_harness.root.glob("outputs/*/*")
    return run_dir


def test_a_reused_pid_does_not_keep_a_dead_run_alive(run_harness):
    run_dir = _sigkilled_run(run_harness)
    log = run_harness.root / "harness.log"
    log.touch()
    tail = subprocess.Popen(["tail", "-f", str(log)], stdout=subprocess.DEVNULL)  # "harness" in its command line
    try:
        record = json.loads((run_dir / "job.json").read_text())
        record["pid"] = tail.pid  # the kernel gave the dead run's pid to `tail`
        (run_dir / "job.json").write_text(json.dumps(record))
        time.sleep(2)
        repaired = _repair(run_harness, "--stale-after", "1")
        assert "marked KILLED" in repaired.stdout, repaired.stdout
        assert list(_statuses(run_harness.root).values()) == ["KILLED"]
        resumed = run_harness(f"trainer.resume={run_dir}")
        assert resumed.returncode == 0 and "still running" not in resumed.stderr, resumed.stderr[-2000:]
    finally:
        tail.kill()
        tail.wait()


def test_a_sigkilled_in_process_driver_is_repaired_at_once(run_harness):
    killed = run_harness("multirun", "debug=quick", "seed=0,1", "trainer.checkpoint_every=2",
                         env={"HARNESS_FAULT_KILL_AT_STEP": "2"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert set(_statuses(run_harness.root).values()) == {"RUNNING"}  # the job's run and the sweep's parent
    shown = run_harness("status")
    assert shown.stdout.count("STALE") >= 2, shown.stdout
    repaired = _repair(run_harness)  # the default threshold (480 s): the pid is dead on this host, no waiting
    assert repaired.stdout.count("its process is gone on this host") == 2, repaired.stdout
    assert set(_statuses(run_harness.root).values()) == {"KILLED"}


def test_a_live_run_is_not_repaired(run_harness):
    """The other side of the above: a run whose process lives is never taken for dead, whatever its heartbeat."""
    proc = subprocess.Popen(run_harness.argv("debug=quick", "trainer.steps=500", "trainer.checkpoint_every=50"),
                            cwd=run_harness.root, env=run_harness.env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: list(run_harness.root.glob("outputs/*/*/metrics.jsonl")), 300, 0.2)
        assert "nothing to repair" in _repair(run_harness, "--stale-after", "0.01").stdout
        assert list(_statuses(run_harness.root).values()) == ["RUNNING"]
    finally:
        proc.kill()
        proc.wait()


def test_a_resume_from_the_step_0_checkpoint_logs_step_0_once(run_harness):
    killed = run_harness("debug=quick", "trainer.checkpoint_every=4", env={"HARNESS_FAULT_KILL_AT_STEP": "1"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    (run_dir,) = run_harness.root.glob("outputs/*/*")
    assert json.loads((run_dir / "checkpoints" / "last.json").read_text())["step"] == 0
    resumed = run_harness(f"trainer.resume={run_dir}", check=True)
    assert "resumed from step 0" in resumed.stdout, resumed.stdout[-2000:]
    rows = [json.loads(line) for folder in run_harness.root.glob("outputs/*/*")
            for line in (folder / "metrics.jsonl").read_text().splitlines()]
    evaluated = Counter(r["step"] for r in rows if "eval/accuracy" in r)
    assert evaluated[0] == 1 and set(evaluated.values()) == {1}, evaluated
    with sqlite3.connect(run_harness.root / "mlruns.db") as conn:
        stored = Counter(step for (step,) in conn.execute("SELECT step FROM metrics WHERE key = 'eval/accuracy'"))
    assert stored[0] == 1 and set(stored.values()) == {1}, stored
