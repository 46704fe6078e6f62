"""`clean` lists old sweeps whose runs all ended, deletes them only with --yes, and never touches a folder a live
process holds (its claim, harness/infra/claim.py) nor a sweep with a run that did not end; MLflow keeps its runs."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from mlflow.tracking import MlflowClient

TINY = ("debug=quick", "trainer.steps=2", "trainer.eval_every=2", "trainer.checkpoint_every=2", "seed=0,1")
DAYS_AGO = 10


def _age(folder: Path, days: float) -> None:
    """Every file and folder under `folder` last changed `days` ago."""
    then = time.time() - days * 86400
    for path in [*folder.rglob("*"), folder]:
        os.utime(path, (then, then), follow_symlinks=False)


def _hold(folder: Path) -> subprocess.Popen:
    """Another process that claims `folder` as a running sweep does, until killed."""
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom harness.infra.claim import claim\n"
                               f"claim({str(folder)!r}, 'sweep folder'); print('held', flush=True); time.sleep(600)"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


def _runs(root: Path) -> int:
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlruns.db'}")
    return sum(len(client.search_runs([e.experiment_id], max_results=1000)) for e in client.search_experiments())


def _listed(stdout: str, folder: Path, root: Path) -> str:
    line, = [line for line in stdout.splitlines() if f" {folder.relative_to(root)} " in line]
    return line.split()[0]


def test_clean_lists_deletes_only_with_yes_and_keeps_held_and_unfinished_sweeps(run_harness):
    root = run_harness.root
    run_harness("multirun", *TINY, check=True)
    old, = [p for p in (root / "multirun").glob("*/*") if p.is_dir()]
    stopped = old.with_name(old.name + "-stopped")  # the same sweep, one run stopped (what Ctrl-C leaves)
    shutil.copytree(old, stopped)
    (stopped / "1" / "status.txt").write_text("KILLED")
    for folder in (old, stopped):
        _age(folder, DAYS_AGO)
    runs = _runs(root)

    listing = run_harness("clean")
    assert listing.returncode == 0, listing.stderr[-2000:]
    assert _listed(listing.stdout, old, root) == "delete" and "2 FINISHED" in listing.stdout
    assert _listed(listing.stdout, stopped, root) == "keep" and "1 KILLED" in listing.stdout
    assert "MLflow is left alone" in listing.stdout and "--yes" in listing.stdout
    assert old.is_dir() and stopped.is_dir(), "nothing is deleted without --yes"

    holder = _hold(old)
    try:
        held = run_harness("clean", "--yes")
        assert held.returncode == 0, held.stderr[-2000:]
        assert _listed(held.stdout, old, root) == "keep" and f"in use by pid {holder.pid}" in held.stdout
        assert old.is_dir() and stopped.is_dir()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()

    recent = run_harness("clean", "--older-than", "30d")
    assert _listed(recent.stdout, old, root) == "keep" and "newer than --older-than" in recent.stdout

    done = run_harness("clean", "--yes")
    assert done.returncode == 0, done.stderr[-2000:]
    assert not old.exists() and stopped.is_dir(), done.stdout
    assert "deleted 1 folder" in done.stdout
    assert _runs(root) == runs, "MLflow keeps its runs"


def test_clean_refuses_a_bad_age(run_harness):
    proc = run_harness("clean", "--older-than", "soon")
    assert proc.returncode == 2 and "--older-than='soon' is not an age" in proc.stderr
