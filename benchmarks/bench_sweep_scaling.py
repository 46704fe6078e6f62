"""Sweep throughput: runs/hour of a local sweep with 2 worker processes against 1, on this machine's cores.

    python benchmarks/bench_sweep_scaling.py [--quick] [--json PATH] [--reps N] [--tracking NAME]

The same sweep of short runs (`debug=quick trainer.steps=40`, seeds 0..3; --quick: steps=2, seeds 0..1 and
tracking=none; --tracking NAME adds tracking=NAME) is launched as
`python -m harness multirun launcher=local_parallel launcher.workers=W --force`, from a warm-start cache and
an existing store (an untimed warm-up sweep creates both), in two variants whose order alternates every
repetition:
  w2  workers=2: each run gets trainer.torch_threads (1; the launcher caps it at cores // workers);
  w1  workers=1: the single worker keeps trainer.torch_threads (1) — what a user gets, and like for like
      with w2 (until commit 346f517 the launcher gave a lone worker all cores, 2 threads, which on this
      shared machine made runs 1.5-5x slower and the ratio meaningless). The script checks in the runs'
      config.yaml that both variants ran with the same thread count.
Figures (medians of per-repetition ratios of wall times, = runs/hour ratios): `runs_per_hour_2_vs_1_same_threads`
= w1 / w2 (target >= 1.7 on 2 cores, the main figure), and `runs_per_hour_2_vs_1` = the same ratio (the
launcher's default for one worker is now the same thread count; kept under its old name for continuity).
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


def sweep(workers: int, seeds: int, steps: int, root: Path, cache_dir: Path, extra=()) -> float:
    """Wall seconds of one local_parallel sweep of `seeds` runs."""
    argv = [sys.executable, "-m", "harness", "multirun", "launcher=local_parallel", f"launcher.workers={workers}",
            "debug=quick", f"trainer.steps={steps}", "seed=" + ",".join(map(str, range(seeds))),
            f"cache_dir={cache_dir}", "--force", *extra]
    env = {**os.environ, "HARNESS_OUTPUT_ROOT": str(root), "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if proc.returncode != 0 or f"{seeds} finished" not in proc.stdout:
        raise RuntimeError(f"{' '.join(argv[1:])} failed ({proc.returncode}):\n{proc.stdout[-1500:]}\n"
                           f"{proc.stderr[-3000:]}")
    return seconds


VARIANTS = {"w2": (2, []), "w1": (1, [])}


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


def main(argv=None) -> int:
    args = bench_args(__doc__, argv, add=lambda ap: ap.add_argument(
        "--tracking", default=None, help="tracking=<this> for every run (default: the spec's, none with --quick)"))
    seeds, steps, reps = (2, 2, args.reps or 1) if args.quick else (4, 40, args.reps or 3)
    tracking = args.tracking or ("none" if args.quick else None)  # --quick: no MLflow store to create
    extra = [f"tracking={tracking}"] if tracking else []
    walls = {name: [] for name in VARIANTS}
    threads = {name: set() for name in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        root = Path(tmp)
        if not args.quick:
            sweep(2, 2, 1, root, args.cache_dir, extra)  # warm-up: the store, the warm start cache, the page cache
        names = list(VARIANTS)
        for rep in range(reps):
            for name in names[rep % 2:] + names[:rep % 2]:
                workers, overrides = VARIANTS[name]
                walls[name].append(sweep(workers, seeds, steps, root, args.cache_dir, [*extra, *overrides]))
                threads[name] |= threads_used(root)
                (root / "multirun").rename(root / f"done-{name}-{rep}")  # the next sweep's runs alone
    if threads["w1"] != threads["w2"]:
        raise RuntimeError(f"the variants ran with different torch threads: {threads}")
    common = dict(runs_per_sweep=seeds, steps_per_run=steps, extra_overrides=extra, reps=reps, cores=os.cpu_count(),
                  runs_per_hour={k: 3600 * seeds / median(v) for k, v in walls.items()},
                  wall_median_s={k: median(v) for k, v in walls.items()}, load_average_end=os.getloadavg(),
                  torch_threads={k: sorted(v) for k, v in threads.items()})
    figures = [
        figure(f"{NAME}.runs_per_hour_2_vs_1_same_threads", median_ratio(walls["w1"], walls["w2"]), ">= 1.7",
               "the same sweep with launcher.workers=1, the same torch threads per run, alternating order",
               **common),
        figure(f"{NAME}.runs_per_hour_2_vs_1", median_ratio(walls["w1"], walls["w2"]), ">= 1.7",
               "the same as runs_per_hour_2_vs_1_same_threads (the launcher's default for one worker is now "
               "trainer.torch_threads)", **common),
    ]
    write_figures(args.json, NAME, figures, walls_s=walls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
