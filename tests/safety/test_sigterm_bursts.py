"""A SIGTERM rarely comes alone. When a driver with many threads dies, the kernel signals its child (a sweep's
worker) again each time one of the driver's threads exits, and for a moment the child still has the dying
driver as its parent. The first SIGTERM stops a job; later ones must not cut its closing short, and a worker
whose job was stopped leaves rather than wait, immune to signals, for work that never comes."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import cloudpickle

from harness.launchers import pool_worker
from processes import ROOT, alive, wait_for


def test_a_second_sigterm_does_not_cut_the_closing_short():
    code = textwrap.dedent(f"""
        import os, signal, sys, time
        sys.path[:0] = [{ROOT!r}]
        from harness.infra.stop_signals import Killed, _raise_killed
        signal.signal(signal.SIGTERM, _raise_killed)
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except Killed:
            os.kill(os.getpid(), signal.SIGTERM)  # the next signal of the burst, while the run is being closed
            time.sleep(0.5)
            print("closed", flush=True)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "closed", proc.stderr[-2000:]


class _StoppedLauncher:
    """Stands in for a launcher whose ensemble was stopped by SIGTERM (its runs closed KILLED)."""

    def __init__(self, pid_file: str):
        self.pid_file = pid_file

    def run_group(self, group, state, threads, progress=True):
        from harness.infra.stop_signals import Killed

        Path(self.pid_file).write_text(f"{os.getpid()}\n")
        raise Killed("received signal SIGTERM")


def test_a_worker_whose_job_was_stopped_leaves(tmp_path):
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    pid_file = tmp_path / "worker.pid"
    payload = cloudpickle.dumps((_StoppedLauncher(str(pid_file)), [], None, 1, False))
    with ProcessPoolExecutor(max_workers=1, mp_context=pool_worker.QuickExitSpawnContext()) as pool:
        future = pool.submit(pool_worker.run_pickled, payload)
        try:
            future.result(timeout=120)
        except BaseException:  # the pool breaks (the worker left) or, before the fix, Killed came back
            pass
        pid = int(pid_file.read_text())
        assert wait_for(lambda: not alive(pid), 20), "the stopped worker waits for more work"
