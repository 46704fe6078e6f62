"""`--plan` says what a run or sweep would do and does none of it: no folder, no MLflow run, exit 0; every job is
validated first (a bad value is still one line, exit 2); a finished run counts as already done; launcher=slurm
shows the #SBATCH lines without Slurm."""
from __future__ import annotations

import os
import re
from pathlib import Path

from mlflow.tracking import MlflowClient

TINY = ("debug=quick", "trainer.steps=2", "trainer.eval_every=2", "trainer.checkpoint_every=2")


def _runs(root: Path) -> int:
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlruns.db'}")
    return sum(len(client.search_runs([e.experiment_id], max_results=1000)) for e in client.search_experiments())


def _lines(text: str) -> dict:
    """The plan's `key: value` lines."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^  (\w[\w ]*): (.*)$", text, re.M)}


def test_plan_of_a_sweep_counts_and_groups_its_jobs_and_starts_nothing(run_harness):
    proc = run_harness("multirun", *TINY, "algo=dppo,drpo", "seed=0,1", "--plan")
    assert proc.returncode == 0, proc.stderr[-2000:]
    plan = _lines(proc.stdout)
    assert plan["jobs"] == "4 (launcher=local)"
    assert plan["already FINISHED"].startswith("0 of 4")
    assert plan["to train"] == "4 runs"
    assert "ensemble" in plan["ensembles"] or "alone" in plan["ensembles"], plan
    assert re.match(r"about \d+:\d\d \(8 run-steps", plan["estimated time"]), plan
    assert "a rough constant" in proc.stdout  # no earlier run of this shape: said so
    assert not (run_harness.root / "multirun").exists() and not (run_harness.root / "mlruns.db").exists()


def test_plan_counts_a_finished_run_as_done_and_writes_nothing(run_harness):
    run_harness("multirun", *TINY, "seed=0", check=True)
    folders = sorted((run_harness.root / "multirun").rglob("*"))
    runs = _runs(run_harness.root)
    proc = run_harness("multirun", *TINY, "seed=0,1", "--plan")
    assert proc.returncode == 0, proc.stderr[-2000:]
    plan = _lines(proc.stdout)
    assert plan["already FINISHED"].startswith("1 of 2 (1 as an identical config in sqlite:"), plan
    assert "skip-finished skips them" in plan["already FINISHED"]
    assert plan["to train"] == "1 run"
    assert "measured on this machine: median of 1 earlier run of this shape" in proc.stdout  # from its metrics
    assert sorted((run_harness.root / "multirun").rglob("*")) == folders and _runs(run_harness.root) == runs


def test_slurm_plan_prints_the_sbatch_lines_without_slurm(run_harness, tmp_path):
    # Slurm's commands, first on the PATH, leave a mark if anything calls them
    tools = tmp_path / "fake_slurm"
    tools.mkdir()
    for name in ("sinfo", "sbatch", "squeue", "srun"):
        (tools / name).write_text(f"#!/bin/sh\ntouch {tmp_path / 'slurm_called'}\nexit 1\n")
        (tools / name).chmod(0o755)
    path = {"PATH": f"{tools}:{os.environ.get('PATH', '')}"}
    proc = run_harness("multirun", *TINY, "seed=0,1,2", "launcher=slurm", "launcher.members=1", "--plan", env=path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not (tmp_path / "slurm_called").exists()
    assert "profile: test_cluster (from $HARNESS_LAUNCHER_PROFILE)" in proc.stdout  # tests/conftest.py
    for line in ("#SBATCH --partition=debug", "#SBATCH --cpus-per-task=1", "#SBATCH --mem=2GB", "#SBATCH --time=30",
                 "#SBATCH --array=0-2%3"):
        assert line in proc.stdout, proc.stdout
    gpu = run_harness("multirun", *TINY, "seed=0,1", "launcher=slurm", "launcher.profile=gpu_node",
                      "launcher.members=2", "--plan")
    assert gpu.returncode == 0, gpu.stderr[-2000:]
    assert "#SBATCH --partition=gpu" in gpu.stdout and "#SBATCH --gpus-per-node=1" in gpu.stdout
    assert "#SBATCH --array" not in gpu.stdout and "submitted as one job" in gpu.stdout  # one ensemble of 2
    assert not (run_harness.root / "multirun").exists()


def test_plan_validates_every_job_first(run_harness):
    proc = run_harness("multirun", *TINY, "delta=0.1,-3", "--plan")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and "algo.delta=-3" in proc.stderr
    assert "plan:" not in proc.stdout


def test_plan_of_a_named_sweep_shows_each_grid(run_harness):
    proc = run_harness("sweep", "delta_sensitivity", *TINY, "--plan")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "grid 1 of 2" in proc.stdout and "grid 2 of 2" in proc.stdout
    assert proc.stdout.count("  jobs: ") == 2
    assert not (run_harness.root / "multirun").exists()


def test_plan_of_an_adaptive_study_is_its_first_round(run_harness):
    """seeds: auto: the plan lists the jobs its first round runs (the pilot's seeds, or the first look's main
    seeds), not one job per grid, and says how far later rounds may go."""
    pilot = run_harness("sweep", "claim4_relaxation", *TINY, "--plan")
    assert pilot.returncode == 0, pilot.stderr[-2000:]
    assert "these are its pilot's jobs (seeds 1720, 1721, 1722, 1723, 1724, 1725, 1726, 1727" in pilot.stdout
    assert [int(n) for n in re.findall(r"^  jobs: (\d+)", pilot.stdout, re.M)] == [8, 8]  # each grid × 8 pilot seeds
    first = run_harness("sweep", "claim5_drpo_vs_dppo", *TINY, "--plan")
    assert first.returncode == 0, first.stderr[-2000:]
    assert "first round's jobs (seeds 3000..3039); later rounds add seeds up to 80 per arm (160 runs)" in first.stdout
    assert [int(n) for n in re.findall(r"^  jobs: (\d+)", first.stdout, re.M)] == [40, 40]
    assert not (run_harness.root / "multirun").exists() and _runs(run_harness.root) == 0
