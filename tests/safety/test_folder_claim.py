"""A run or sweep folder belongs to one process at a time: a second sweep (or run) given the same folder
is refused with one line and exit code 2 while the first runs on, unmixed; a claim dies with its process."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from harness.infra.claim import LOCK_FILE, claim, release
from processes import hold_claim

SWEEP = ("-m", "debug=quick", "trainer.steps=4", "trainer.prompts_per_step=2", "seed=1,2")


def wait_for(predicate, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_second_sweep_on_the_same_folder_is_refused(run_harness, tmp_path):
    folder = tmp_path / "shared_sweep"
    first = subprocess.Popen(run_harness.argv(*SWEEP, f"hydra.sweep.dir={folder}"), cwd=tmp_path,
                             env=run_harness.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (folder / "0" / "metrics.jsonl").is_file() or first.poll() is not None)
        assert first.poll() is None, "the first sweep ended before the second could start"
        second = run_harness(*SWEEP, f"hydra.sweep.dir={folder}")
        assert second.returncode == 2, second.stderr[-2000:]
        line, = second.stderr.strip().splitlines()
        assert f"sweep folder {folder.resolve()} is in use by pid {first.pid}" in line
        out, err = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err[-2000:]
    for job in ("0", "1"):
        steps = [json.loads(line)["step"] for line in (folder / job / "metrics.jsonl").read_text().splitlines()]
        assert steps == sorted(steps) and max(steps) == 4, f"job {job}'s metrics.jsonl interleaves two runs: {steps}"
    # once the first sweep ended, the folder is free again (re-running it skips its finished jobs)
    again = run_harness(*SWEEP, f"hydra.sweep.dir={folder}")
    assert again.returncode == 0 and "2 skipped" in again.stdout, again.stderr[-2000:]


def test_a_live_sweeps_half_made_job_folder_reads_as_in_use(run_harness, tmp_path):
    # the moment a running sweep has made job folder 1 but not yet its .hydra/overrides.yaml
    folder = tmp_path / "busy_sweep"
    (folder / "1").mkdir(parents=True)
    holder = hold_claim(folder, "sweep folder")
    try:
        proc = run_harness(*SWEEP, f"hydra.sweep.dir={folder}")
        assert proc.returncode == 2, proc.stderr[-2000:]
        line, = proc.stderr.strip().splitlines()
        assert f"sweep folder {folder.resolve()} is in use by pid {holder.pid}" in line
        assert sorted(p.name for p in folder.iterdir()) == [LOCK_FILE, "1"], "nothing written into a claimed folder"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()


def test_second_run_on_the_same_folder_is_refused(run_harness, tmp_path):
    folder = tmp_path / "shared_run"
    holder = hold_claim(folder, "run folder")
    try:
        proc = run_harness("debug=quick", f"hydra.run.dir={folder}")
        assert proc.returncode == 2 and "is in use by pid" in proc.stderr, proc.stderr[-2000:]
        assert sorted(p.name for p in folder.iterdir()) == [LOCK_FILE], "nothing written into a claimed folder"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    claim(folder, "run folder")  # the kernel dropped the killed holder's lock: no stale claim
    release(folder)


def test_a_claim_is_exclusive_between_processes(tmp_path):
    claim(tmp_path, "folder")
    try:
        code = ("import sys\nfrom harness.infra.claim import claim, FolderInUse\n"
                f"try:\n    claim({str(tmp_path)!r})\nexcept FolderInUse as err:\n    print(err); sys.exit(3)\n")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert proc.returncode == 3 and f"pid {os.getpid()}" in proc.stdout
    finally:
        release(tmp_path)
