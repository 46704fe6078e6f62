"""Preflight of a 100-job grid: every job composed by Hydra and validated before anything is submitted.

    python benchmarks/bench_preflight.py [--quick] [--json PATH] [--reps N]

Measured, in a fresh process each (interpreter start and imports included, as a user's command pays them):
  preflight  `harness.config.compose.preflight_jobs` on `algo=dppo,drpo delta=0.05,0.1,0.2,0.4,0.8
             seed=range(0,10)` (100 jobs; --quick: 2 seeds), what `python -m harness multirun ...` runs before
             it starts a job: Hydra composes each job once (a pool of processes for a large grid) and the
             harness validates it;
  hydra      the baseline: the same jobs composed one after another with Hydra's public `compose`
             (`return_hydra_config=True`, `hydra.mode=MULTIRUN`), as Hydra's own launcher composes each job,
             and not validated.
Alternating, median over repetitions. Figures: the preflight's wall time against the 20 s budget of issue
#17 (target <= 0.5, "well under 20 s"), and preflight ÷ Hydra's serial composition.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import REPO, bench_args, figure, median, median_ratio, write_figures  # noqa: E402

NAME = "preflight"
BUDGET_S = 20.0

PREFLIGHT = """
import sys
from harness.config.compose import preflight_jobs
jobs = preflight_jobs(sys.argv[1:], multirun=True)
print(len(jobs))
"""

HYDRA_SERIAL = """
import sys
from hydra import compose
from harness.config.compose import expand_sweep, hydra_session
jobs = expand_sweep(sys.argv[1:])
with hydra_session():
    for job in jobs:
        compose(config_name="config", overrides=[*job, "hydra.mode=MULTIRUN"], return_hydra_config=True)
print(len(jobs))
"""


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
    for rep in range(reps):  # alternate which goes first
        order = [(PREFLIGHT, preflight), (HYDRA_SERIAL, hydra)]
        for script, walls in order if rep % 2 == 0 else order[::-1]:
            walls.append(timed(script, grid))
    seconds = median(preflight)
    figures = [
        figure(f"{NAME}.grid_100_vs_20s_budget", seconds / BUDGET_S, "<= 0.5",
               f"an absolute budget of {BUDGET_S:.0f} s for a 100-job grid (not side by side)",
               jobs=n_jobs, preflight_s=preflight, hydra_serial_s=hydra),
        figure(f"{NAME}.vs_hydra_serial", median_ratio(preflight, hydra), None,
               "Hydra's public compose of the same jobs one by one, fresh process, not validated",
               jobs=n_jobs, preflight_s=preflight, hydra_serial_s=hydra),
    ]
    write_figures(args.json, NAME, figures, jobs=n_jobs, grid=grid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
