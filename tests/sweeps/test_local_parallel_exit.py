"""local_parallel's workers leave without finalizing the interpreter (tearing down torch, MLflow and
SQLAlchemy took ~2 s that every sweep waited for), yet nothing a job wrote or printed is lost."""
from __future__ import annotations

import atexit
import subprocess
import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from harness.launchers.pool_worker import QuickExitSpawnContext


def _job_with_exit_hook(marker: str) -> int:
    print("printed by the job, without a newline", end="")
    atexit.register(lambda: Path(marker).write_text("the interpreter was finalized"))
    return 7


def test_worker_skips_interpreter_finalization(tmp_path):
    marker = tmp_path / "finalized"
    with ProcessPoolExecutor(max_workers=1, mp_context=QuickExitSpawnContext()) as pool:
        assert pool.submit(_job_with_exit_hook, str(marker)).result() == 7
    assert not marker.exists()


def test_worker_output_is_flushed_before_it_leaves(tmp_path):
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from concurrent.futures import ProcessPoolExecutor
        from harness.launchers.pool_worker import QuickExitSpawnContext
        from test_local_parallel_exit import _job_with_exit_hook
        if __name__ == "__main__":
            with ProcessPoolExecutor(max_workers=1, mp_context=QuickExitSpawnContext()) as pool:
                pool.submit(_job_with_exit_hook, {str(tmp_path / "finalized")!r}).result()
    """)
    (tmp_path / "drive.py").write_text(script)
    proc = subprocess.run([sys.executable, str(tmp_path / "drive.py")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "printed by the job, without a newline" in proc.stdout
    assert not (tmp_path / "finalized").exists()


def _job_with_a_progress_bar() -> int:
    from tqdm import tqdm

    return sum(tqdm(range(3), disable=None))


def test_a_worker_that_showed_a_progress_bar_leaks_no_semaphore(tmp_path):
    """tqdm's default lock is a multiprocessing lock; a worker that leaves without finalizing never releases
    it, and Python's resource tracker used to warn of "leaked semaphore objects" at the end of every sweep."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from concurrent.futures import ProcessPoolExecutor
        from harness.launchers.pool_worker import QuickExitSpawnContext
        from test_local_parallel_exit import _job_with_a_progress_bar
        if __name__ == "__main__":
            with ProcessPoolExecutor(max_workers=2, mp_context=QuickExitSpawnContext()) as pool:
                assert [f.result() for f in [pool.submit(_job_with_a_progress_bar) for _ in range(2)]] == [3, 3]
    """)
    (tmp_path / "drive.py").write_text(script)
    proc = subprocess.run([sys.executable, str(tmp_path / "drive.py")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "leaked" not in proc.stderr, proc.stderr
