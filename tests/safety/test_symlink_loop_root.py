"""An output root (HARNESS_OUTPUT_ROOT) or a run or sweep folder (hydra.run.dir, hydra.sweep.dir) that runs
through a symlink loop is one line naming the setting and the loop, exit 2, for a run, a sweep and the tools
that read the output root; nothing is created or tracked."""
from __future__ import annotations

import subprocess

import pytest


@pytest.fixture
def loop(tmp_path):
    (tmp_path / "loop").mkdir()
    (tmp_path / "loop" / "a").symlink_to("b")
    (tmp_path / "loop" / "b").symlink_to("a")
    return tmp_path / "loop"


def one_line(proc, *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    line, = proc.stderr.strip().splitlines()
    for word in ("runs through a symlink loop at", "Too many levels of symbolic links", *words):
        assert word in line, line


def under_root(run_harness, root, *args: str):
    """The harness with `root` as its output root and no store named otherwise (the tools look in the root)."""
    env = {k: v for k, v in run_harness.env({"HARNESS_OUTPUT_ROOT": str(root)}).items() if k != "MLFLOW_TRACKING_URI"}
    return subprocess.run(run_harness.argv(*args), cwd=run_harness.root, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_an_output_root_through_a_symlink_loop_is_one_line(run_harness, loop, tmp_path):
    for root in (loop / "a", loop / "a" / "deeper"):
        one_line(under_root(run_harness, root, "debug=quick"), "hydra.run.dir=", f"(from output_root={root})")
        one_line(under_root(run_harness, root, "-m", "debug=quick", "seed=0,1"), "hydra.sweep.dir=")
        for tool in ("report", "clean", "status", "repair"):
            one_line(under_root(run_harness, root, tool), f"HARNESS_OUTPUT_ROOT={root}")
    one_line(run_harness("debug=quick", f"hydra.run.dir={loop / 'b' / 'run'}"), f"hydra.run.dir={loop / 'b' / 'run'} runs")
    one_line(run_harness("-m", "debug=quick", "seed=0,1", f"hydra.sweep.dir={loop / 'a'}"), f"at {loop / 'a'}")
    assert not (tmp_path / "mlruns.db").exists(), "refused before anything is tracked"
