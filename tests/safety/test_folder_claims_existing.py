"""A run, sweep or report folder is written only when it is new, or is the same run or sweep carried on
(issue #25): pointing `hydra.run.dir` / `hydra.sweep.dir` at a finished run, resuming a run that still runs
or a checkpoint that came from another run, and `report --out` at a folder of other files are each one line
and exit 2, with nothing in the folder changed."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from harness.infra.claim import LOCK_FILE
from processes import hold_claim

QUICK = ("debug=quick", "trainer.steps=2", "trainer.checkpoint_every=1", "trainer.eval_every=2")


def snapshot(folder: Path) -> dict:
    """Every file under `folder` (symlinks not followed; the claim's lock file, which says who held it last,
    aside) and its bytes' digest."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*")) if not p.is_symlink() and p.name != LOCK_FILE}


def refused(proc, *words: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    line, = proc.stderr.strip().splitlines()
    for word in words:
        assert word in line, line
    return line


def test_a_finished_run_folder_is_never_written_again(run_harness, tmp_path):
    run = tmp_path / "run_a"
    run_harness(*QUICK, f"hydra.run.dir={run}", check=True)
    before = snapshot(run)

    refused(run_harness(*QUICK, f"hydra.run.dir={run}"), f"hydra.run.dir={run} already holds a run (status: FINISHED)")
    refused(run_harness("-m", *QUICK, "seed=1,2", f"hydra.sweep.dir={run}"), "is a single run's folder")

    # resuming it while a process holds its folder (a run still training)
    holder = hold_claim(run, "run folder")
    try:
        refused(run_harness(f"trainer.resume={run}"), "the run is still running", f"pid {holder.pid}")
    finally:
        holder.kill()
        holder.wait()

    # a copy of its checkpoint in another run's folder (another config): not that run's checkpoint
    other = tmp_path / "run_b"
    run_harness(*QUICK, "seed=7", f"hydra.run.dir={other}", check=True)
    shutil.rmtree(other / "checkpoints")
    shutil.copytree(run / "checkpoints", other / "checkpoints")
    refused(run_harness(f"trainer.resume={other}"), "was written by another run")
    # a symlink to it: leads out of the folder
    shutil.rmtree(other / "checkpoints")
    (other / "checkpoints").symlink_to(run / "checkpoints")
    refused(run_harness(f"trainer.resume={other}"), "leads out of the run folder")

    # report --out at a folder of other files
    photos = tmp_path / "photos"
    photos.mkdir()
    (photos / "beach.jpg").write_bytes(b"\xff\xd8")
    refused(run_harness("report", str(run), "--out", str(photos)), "--out", "beach.jpg")
    assert sorted(p.name for p in photos.iterdir()) == ["beach.jpg"]

    assert snapshot(run) == before, "the finished run's folder changed"


def test_a_sweep_folder_takes_only_its_own_jobs(run_harness, tmp_path):
    sweep = tmp_path / "sweep_a"
    run_harness("-m", *QUICK, "seed=1", "tracking=none", f"hydra.sweep.dir={sweep}", check=True)
    before = snapshot(sweep)
    refused(run_harness("-m", *QUICK, "seed=3", "tracking=none", f"hydra.sweep.dir={sweep}"),
            "job folder 0 holds another job")
    # the same job again: with tracking=none it cannot be skipped, so it would overwrite the finished one
    refused(run_harness("-m", *QUICK, "seed=1", "tracking=none", f"hydra.sweep.dir={sweep}"),
            "job 0 FINISHED there and would be overwritten")
    assert snapshot(sweep) == before
