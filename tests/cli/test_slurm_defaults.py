"""Slurm defaults a real cluster can take, checked without Slurm (`--plan` writes the #SBATCH lines itself):
launcher=slurm without a profile is refused in one line saying how to make one (the Slurm test cluster's profile
is the tests' choice, through $HARNESS_LAUNCHER_PROFILE in tests/conftest.py, never a silent default); built-in
runs pack into ensembles per job as they do locally; the plan says where the nodes send their tracking; the shipped
CPU-partition profile loads and says where its `setup:` lines run."""
from __future__ import annotations

import re

from harness.config.profiles import load_profile, profile_dirs

TINY = ("debug=quick", "trainer.steps=2", "trainer.eval_every=2", "trainer.checkpoint_every=2")


def test_slurm_without_a_profile_is_one_line_naming_how_to_make_one(run_harness):
    proc = run_harness("multirun", *TINY, "seed=0,1", "launcher=slurm", "--plan",
                       env={"HARNESS_LAUNCHER_PROFILE": ""})  # outside the tests: none set
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("harness: error: launcher=slurm needs a cluster profile: add launcher.profile=<name>")
    assert "launchers/profiles/cpu_partition.yaml" in line and "./launchers/profiles/<site>.yaml" in line, line
    assert "cpu_partition" in line.split("shipped: ")[1], line


def test_a_cpu_partition_plan_packs_the_runs_and_names_the_tracking_destination(run_harness):
    proc = run_harness("multirun", *TINY, "seed=range(0,8)", "algo=dppo,drpo", "launcher=slurm",
                       "launcher.profile=cpu_partition", "--plan")
    assert proc.returncode == 0, proc.stderr[-2000:]
    plan = {m.group(1): m.group(2) for m in re.finditer(r"^  (\w[\w ]*): (.*)$", proc.stdout, re.M)}
    assert plan["ensembles"] == "1 ensemble of 16 runs as 1 Slurm job", plan  # not 16 jobs of one run each
    assert plan["profile"] == "cpu_partition", plan
    assert plan["tracking"].startswith(f"the nodes log to sqlite:///{run_harness.root}/mlruns.db: a file"), plan
    for line in ("#SBATCH --partition=cpu", "#SBATCH --cpus-per-task=8", "#SBATCH --mem=16GB"):
        assert line in proc.stdout, proc.stdout
    assert "#SBATCH --gpus" not in proc.stdout and "#SBATCH --array" not in proc.stdout
    assert not (run_harness.root / "multirun").exists()


def test_the_cpu_partition_profile_is_shipped_and_says_where_its_setup_runs():
    profile = load_profile("cpu_partition")
    assert profile.gpus_per_node == 0 and profile.partition and profile.setup == ["source .venv/bin/activate"]
    text = next(d / "cpu_partition.yaml" for d in profile_dirs() if (d / "cpu_partition.yaml").is_file()).read_text()
    assert "in the folder the harness\n# command was started from" in text
