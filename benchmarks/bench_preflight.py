"""Preflight of a 100-job grid: every job composed by Hydra and validated before anything is submitted.

    python benchmarks/bench_preflight.py [--quick] [--json PATH] [--reps N]

Measured, in a fresh process each (interpreter start and imports included, as a user's command pays them):
  preflight  `python -m harness multirun algo=dppo,drpo delta=0.05,0.1,0.2,0.4,0.8 seed=range(0,10)
             tracking=none` (100 jobs; --quick: 2 seeds) until its launcher says "launching 100 jobs": Hydra
             starts, the launcher composes each job once through Hydra's config loader and validates it, and
             the sweep's checks run (the process is stopped there, before any job starts);
  hydra      the baseline: the same jobs composed one after another with Hydra's public `compose`
             (`return_hydra_config=True`, `hydra.mode=MULTIRUN`), as Hydra's own launcher composes each job,
             and not validated.
Alternating, median over repetitions. Figures: the preflight's wall time against the 20 s budget of issue
#17 (target <= 0.5, "well under 20 s"), and preflight ÷ Hydra's serial composition.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import REPO, bench_args, figure, median, median_ratio, write_figures  # noqa: E402

NAME = "preflight"
BUDGET_S = 20.0


HYDRA_SERIAL = """
import sys
from hydra import compose
from harness.config.overrides import expand_sweep
from harness.launchers.compose import hydra_session
jobs = expand_sweep(sys.argv[1:])
with hydra_session():
    for job in jobs:
        compose(config_name="config", overrides=[*job, "hydra.mode=MULTIRUN"], return_hydra_config=True)
print(len(jobs))
"""


def until_launch(grid: list, root: Path) -> float:
    """Seconds from the command's start to its launcher's "launching N jobs (launcher=…)" line (then it is
    stopped)."""
    env = {**os.environ, "HARNESS_OUTPUT_ROOT": str(root)}
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "harness", "multirun", *grid, "tracking=none"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in proc.stdout:
            if line.startswith("launching ") and " jobs (launcher=" in line:
                return time.perf_counter() - started
        raise RuntimeError(f"the sweep ended (exit {proc.wait()}) without launching")
    finally:
        proc.kill()
        proc.wait()


def timed(script: str, grid: list) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script, *grid], cwd=REPO, capture_output=True, text=True,
                          check=True)
    wall = time.perf_counter() - started
    assert int(done.stdout.split()[-1]) > 0, done.stdout
    return wall


def main(argv=None) -> int:
    args = bench_args(__doc__, argv)
    seeds = 2 if args.quick else 10
    reps = args.reps or (1 if args.quick else 3)
    grid = ["algo=dppo,drpo", "delta=0.05,0.1,0.2,0.4,0.8", f"seed=range(0,{seeds})"]
    n_jobs = 2 * 5 * seeds
    preflight, hydra = [], []
    with tempfile.TemporaryDirectory(prefix="bench-preflight-") as root:
        for rep in range(reps):  # alternate which goes first
            runs = [lambda: preflight.append(until_launch(grid, Path(root) / str(rep))),
                    lambda: hydra.append(timed(HYDRA_SERIAL, grid))]
            for run in runs if rep % 2 == 0 else runs[::-1]:
                run()
    seconds = median(preflight)
    figures = [
        figure(f"{NAME}.grid_100_vs_20s_budget", seconds / BUDGET_S, "<= 0.5",
               f"an absolute budget of {BUDGET_S:.0f} s for a 100-job grid (not side by side)",
               jobs=n_jobs, preflight_s=preflight, hydra_serial_s=hydra),
        figure(f"{NAME}.vs_hydra_serial", median_ratio(preflight, hydra), None,
               "Hydra's public compose of the same jobs one by one, fresh process, not validated (the harness: Hydra's "
               "start, its primary config, each job composed and validated, the sweep's checks)",
               jobs=n_jobs, preflight_s=preflight, hydra_serial_s=hydra),
    ]
    write_figures(args.json, NAME, figures, jobs=n_jobs, grid=grid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
