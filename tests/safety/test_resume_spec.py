"""`trainer.resume=<run>` continues the run with its own stored spec; an override that would change what it
computes is refused (exit 2, naming the keys) before anything is created; `trainer.branch_from=<run>`
starts a new tracking run from the checkpoint, linked to the old one; a missing or non-run folder is
refused at preflight."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from omegaconf import OmegaConf

# not the defaults (steps 60, 16 prompts x 8): a plain resume must keep these
RUN = ("debug=quick", "trainer.steps=3", "trainer.prompts_per_step=2", "trainer.group_size=2",
       "trainer.checkpoint_every=1", "algo=dppo")


def run_folders(root: Path) -> list:
    return sorted((root / "outputs").glob("*/*"))


def steps_of(run_dir: Path) -> list:
    return sorted({json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()})


def mlflow_runs(root: Path) -> list:
    with sqlite3.connect(root / "mlruns.db") as conn:
        return conn.execute("SELECT run_uuid, status FROM runs ORDER BY start_time").fetchall()


def mlflow_tags(root: Path, run_id: str) -> dict:
    with sqlite3.connect(root / "mlruns.db") as conn:
        return dict(conn.execute("SELECT key, value FROM tags WHERE run_uuid = ?", (run_id,)).fetchall())


def test_resume_keeps_the_runs_spec_and_refuses_changes(run_harness):
    killed = run_harness(*RUN, env={"HARNESS_FAULT_KILL_AT_STEP": "1"})
    assert killed.returncode == -9, killed.stderr[-2000:]
    (killed_dir,) = run_folders(run_harness.root)

    for changed, keys in ((("algo=drpo", "delta=0.5"), ("algo.name=drpo", "algo.delta=0.5")),
                          (("trainer.steps=5",), ("trainer.steps=5 (run: 3)",))):
        proc = run_harness(*changed, f"trainer.resume={killed_dir}")
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert len(proc.stderr.strip().splitlines()) == 1 and all(k in proc.stderr for k in keys), proc.stderr
        assert "trainer.branch_from" in proc.stderr
        assert run_folders(run_harness.root) == [killed_dir]

    run_harness(f"trainer.resume={killed_dir}", check=True)  # no other override: the run's own spec
    resumed_dir = run_folders(run_harness.root)[-1]
    assert steps_of(resumed_dir) == [2, 3], "the resumed run ends at its own trainer.steps=3"
    resumed = OmegaConf.load(resumed_dir / "config.yaml")
    assert (resumed.trainer.steps, resumed.trainer.prompts_per_step, resumed.trainer.group_size) == (3, 2, 2)
    assert resumed.algo.name == "dppo"
    (run_id, status), = mlflow_runs(run_harness.root)
    assert status == "FINISHED", "the resumed job continued the killed run"


def test_branch_from_starts_a_linked_new_run(run_harness):
    run_harness(*RUN, check=True)
    (first_dir,) = run_folders(run_harness.root)
    (first_id, _), = mlflow_runs(run_harness.root)
    other = [o for o in RUN[:-1] if not o.startswith("trainer.steps=")]  # an override given twice is refused
    run_harness(*other, "algo=drpo", "trainer.steps=4", f"trainer.branch_from={first_dir}", check=True)
    branch_dir = run_folders(run_harness.root)[-1]
    assert branch_dir != first_dir and steps_of(branch_dir) == [4], "continues from the checkpoint's step 3"
    runs = mlflow_runs(run_harness.root)
    assert len(runs) == 2 and runs[1][1] == "FINISHED"
    tags = mlflow_tags(run_harness.root, runs[1][0])
    assert tags["harness.branched_from"] == first_id and tags["algo"] == "drpo"


def test_resume_of_a_missing_or_non_run_folder_is_refused(run_harness, tmp_path):
    (tmp_path / "not_a_run").mkdir()
    for folder, reason in ((tmp_path / "missing", "no such folder"), (tmp_path / "not_a_run", "not a run folder")):
        proc = run_harness("debug=quick", f"trainer.resume={folder}")
        assert proc.returncode == 2 and reason in proc.stderr, proc.stderr[-2000:]
        assert len(proc.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "outputs").exists()
