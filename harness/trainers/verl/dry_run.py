"""`--dry-run` for trainer=verl: print each job's verl command and batch script; launch and record nothing.

`--dry-run` sets `trainer.verl.dry_run=true`. With the CLI hook below the plans are printed right after
preflight, for every job of a run or sweep, without submitting anything or opening tracking runs:

    # harness/cli.py, run_cli, after `configs = preflight(...)`:
    if any(c.trainer.get("verl", {}).get("dry_run") for c in configs):
        from harness.trainers.verl.dry_run import print_plans
        return print_plans(configs)

Without the hook the flag still works: the job's trainer prints the same plan instead of launching verl.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence
from harness.trainers.verl.plan import build_plan


def print_plans(configs: Sequence, run_dir: Optional[Path] = None) -> int:
    """Print the plan of every trainer=verl config (run folders shown as <run_dir>/<job number>)."""
    root = Path(run_dir or "<run_dir>")
    verl_jobs = [c for c in configs if c.trainer.name == "verl"]
    for i, cfg in enumerate(verl_jobs):
        folder = root / str(i) if len(verl_jobs) > 1 else root
        print(f"# ---- job {i} of {len(verl_jobs)}: algo={cfg.algo.name} model={cfg.model.name} "
              f"dataset={cfg.dataset.name} precision={cfg.precision.name}")
        print(build_plan(cfg, folder).describe(), flush=True)
    return 0
