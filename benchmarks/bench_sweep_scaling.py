"""Sweep throughput: runs/hour of a local sweep with 2 worker processes against 1, on this machine's cores.

    python benchmarks/bench_sweep_scaling.py [--quick] [--json PATH] [--reps N] [--tracking NAME]

A sweep of 4 runs (seeds 0..3) is launched as
`python -m harness multirun launcher=local_parallel launcher.workers=W --force`, from a warm-start cache and
an existing store (an untimed warm-up sweep creates both), in two variants whose order alternates every
repetition:
  w2  workers=2: each run gets trainer.torch_threads (1; the launcher caps it at cores // workers);
  w1  workers=1: the single worker keeps trainer.torch_threads (1), like for like with w2 (checked in the
      runs' config.yaml).
Two run sizes:
  runs of the default spec that train ~RUN_TRAIN_SECONDS each (`trainer.steps` from the warm-up runs' step
      time, as bench_overhead sizes its run by time) -> `runs_per_hour_2_vs_1`, target >= 1.7;
  `debug=quick trainer.steps=40` runs (a few seconds each; the figure's definition until session 4, when
      the trainer had become 2.6x faster and these runs had shrunk from ~10 s to ~4 s) ->
      `runs_per_hour_2_vs_1_short_runs`, reported without a target: the sweep's fixed cost dominates it.
Each figure is the median of per-repetition ratios of wall times (= runs/hour ratios). The detail has the
sweep's fixed cost as Amdahl's law reads it from the two walls (2 * w2 - w1: what does not get faster
with a second worker: the driver's Hydra start, the parent run, each worker's start-up, the reports), the
runs' median step time in each variant (`perf/step_time_s`) and `ratio_at_equal_step_time`, the ratio
with w1's walls scaled by w2's step time over w1's (conservative: the fixed cost is scaled too). On this
VM one busy process steps ~20% slower than each of two, which puts the raw ratio above 2.
--quick: steps=2, seeds 0..1, tracking=none, one repetition of each size.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import bench_args, figure, median, median_ratio, write_figures  # noqa: E402

NAME = "sweep_scaling"


def sweep(workers: int, seeds: int, root: Path, cache_dir: Path, overrides=()) -> float:
    """Wall seconds of one local_parallel sweep of `seeds` runs."""
    argv = [sys.executable, "-m", "harness", "multirun", "launcher=local_parallel", f"launcher.workers={workers}",
            *overrides, "seed=" + ",".join(map(str, range(seeds))),
            f"cache_dir={cache_dir}", "--force"]
    env = {**os.environ, "HARNESS_OUTPUT_ROOT": str(root), "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if proc.returncode != 0 or f"{seeds} finished" not in proc.stdout:
        raise RuntimeError(f"{' '.join(argv[1:])} failed ({proc.returncode}):\n{proc.stdout[-1500:]}\n"
                           f"{proc.stderr[-3000:]}")
    return seconds


VARIANTS = {"w2": 2, "w1": 1}
RUN_TRAIN_SECONDS = 30.0  # half the 60 s run of the overhead figure: the suite stays ~20 min
SHORT_RUNS = ["debug=quick", "trainer.steps=40"]


def threads_used(root: Path) -> set:
    """trainer.torch_threads of every run under root (from the runs' config.yaml)."""
    import yaml

    found = set()
    for path in root.glob("multirun/**/config.yaml"):
        if path.parent.name == ".hydra":
            continue
        cfg = yaml.safe_load(path.read_text()) or {}
        threads = (cfg.get("trainer") or {}).get("torch_threads")
        if threads is not None:
            found.add(threads)
    return found


def step_times(root: Path) -> list:
    """`perf/step_time_s` of every step of the runs under root (their metrics.jsonl)."""
    import json

    return [json.loads(line)["perf/step_time_s"] for path in root.glob("multirun/**/metrics.jsonl")
            for line in path.read_text().splitlines() if "perf/step_time_s" in line]


def step_seconds(root: Path) -> float:
    times = step_times(root)
    if not times:
        raise RuntimeError(f"no perf/step_time_s in the warm-up runs under {root}")
    return median(times)


def compare(name: str, run_overrides, seeds: int, reps: int, root: Path, cache_dir: Path, extra) -> dict:
    """w1 and w2 walls of the same sweep, alternating; the figure's numbers."""
    walls = {variant: [] for variant in VARIANTS}
    steps = {variant: [] for variant in VARIANTS}  # the runs' own step times, per variant
    threads = {variant: set() for variant in VARIANTS}
    variants = list(VARIANTS)
    for rep in range(reps):
        for variant in variants[rep % 2:] + variants[:rep % 2]:
            walls[variant].append(sweep(VARIANTS[variant], seeds, root, cache_dir, [*run_overrides, *extra]))
            threads[variant] |= threads_used(root)
            steps[variant] += step_times(root)
            (root / "multirun").rename(root / f"done-{name}-{variant}-{rep}")  # the next sweep's runs alone
    if threads["w1"] != threads["w2"]:
        raise RuntimeError(f"the variants ran with different torch threads: {threads}")
    w1, w2 = median(walls["w1"]), median(walls["w2"])
    return {"ratio": median_ratio(walls["w1"], walls["w2"]), "walls_s": walls,
            "detail": dict(runs_per_sweep=seeds, run_overrides=list(run_overrides), extra_overrides=list(extra),
                           reps=reps, cores=os.cpu_count(),
                           runs_per_hour={k: 3600 * seeds / median(v) for k, v in walls.items()},
                           wall_median_s={"w1": w1, "w2": w2}, fixed_cost_s=2 * w2 - w1,
                           # on a VM a lone busy process can step slower than each of two (see README):
                           # the ratio at equal step speed takes that out
                           step_time_median_s={k: median(v) if v else None for k, v in steps.items()},
                           ratio_at_equal_step_time=(median_ratio(walls["w1"], walls["w2"]) * median(steps["w2"])
                                                     / median(steps["w1"]) if steps["w1"] and steps["w2"] else None),
                           torch_threads={k: sorted(v) for k, v in threads.items()})}


def main(argv=None) -> int:
    args = bench_args(__doc__, argv, add=lambda ap: ap.add_argument(
        "--tracking", default=None, help="tracking=<this> for every run (default: the spec's, none with --quick)"))
    tracking = args.tracking or ("none" if args.quick else None)  # --quick: no MLflow store to create
    extra = [f"tracking={tracking}"] if tracking else []
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        root = Path(tmp)
        if args.quick:
            seeds, reps = 2, args.reps or 1
            sized, short = ["trainer.steps=2", "debug=quick"], ["trainer.steps=2", "debug=quick"]
            step_s = None
        else:
            seeds, reps = 4, args.reps or 2
            # warm-up: the store, the warm-start cache, the page cache; and the step time that sizes the runs
            sweep(2, 2, root, args.cache_dir, ["trainer.steps=10", *extra])
            step_s = step_seconds(root)
            (root / "multirun").rename(root / "done-warm-up")
            sized, short = [f"trainer.steps={max(40, int(round(RUN_TRAIN_SECONDS / step_s / 10)) * 10)}"], SHORT_RUNS
        main_runs = compare("sized", sized, seeds, reps, root, args.cache_dir, extra)
        short_runs = compare("short", short, seeds, reps, root, args.cache_dir, extra)
    figures = [
        figure(f"{NAME}.runs_per_hour_2_vs_1", main_runs["ratio"], ">= 1.7",
               f"the same sweep with launcher.workers=1, the same torch threads per run, alternating; runs of the "
               f"default spec sized to ~{RUN_TRAIN_SECONDS:.0f} s of training", step_time_s=step_s,
               **main_runs["detail"]),
        figure(f"{NAME}.runs_per_hour_2_vs_1_short_runs", short_runs["ratio"], None,
               "the same with debug=quick trainer.steps=40 runs (a few seconds each): the sweep's fixed cost "
               "dominates", **short_runs["detail"]),
    ]
    write_figures(args.json, NAME, figures, walls_s={"sized": main_runs["walls_s"], "short": short_runs["walls_s"]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
