"""Ensembles: many runs trained in one process against one process per run, and the members cost curve.

    python benchmarks/bench_ensemble.py [--quick] [--json PATH] [--reps N]

1. `ensemble.sweep_vs_processes` (issue #28's done-criterion): `python -m harness multirun algo=dppo,drpo
   delta=0.1,0.2 seed=0,1,2,3` (16 runs, the default launcher: runs of one shape train as one ensemble on
   every core) against the same 16 runs as 16 single-run processes (`python -m harness algo=… delta=…
   seed=…`), two at a time. Both from a warm-start cache an untimed run filled, each into its own store;
   order alternated per repetition; ratio = processes' wall / sweep's wall. Checked on the way: 16 FINISHED
   runs each way (the sweep's under one parent) and each run's step-1 metrics equal between the two stores
   (`max_step1_diff`; the issue allows 1e-4).
2. `ensemble.runs_per_core_hour_vs_local_parallel`: a 48-run grid (2 objectives × 3 δ × 8 seeds, each seed
   its own warm start, `trainer.warmstart.seed` = seed, as the claim studies do) with `launcher=local_parallel`
   (one worker per core, each training one ensemble) against `launcher=local_parallel launcher.members=1`
   (one run at a time per worker: the best one-process-per-run launcher on these cores). Full mode only.
3. `ensemble.members_curve`: member-steps per second of one ensemble of M = 1, 4, 16, 64 members of the
   default shape, in this process, on one torch thread, relative to M = 1 (reported, no target: on a CPU a
   step is already compute-bound, so the curve is flat at best; on a GPU it is where batching pays).
--quick: `debug=quick trainer.steps=3`, 4 runs, M up to 4: checks the pipeline only.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import bench_args, bench_config, figure, median_ratio, skipped, write_figures  # noqa: E402

NAME = "ensemble"
GRID = {"algo": ("dppo", "drpo"), "delta": ("0.1", "0.2"), "seed": ("0", "1", "2", "3")}


def harness(args, root: Path, cache_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HARNESS_OUTPUT_ROOT": str(root), "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "harness", *args, f"cache_dir={cache_dir}", "trainer.progress=false"]
    proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[2:])} failed ({proc.returncode}):\n{proc.stdout[-1500:]}\n"
                           f"{proc.stderr[-3000:]}")
    return proc


def grid(quick: bool):
    seeds = GRID["seed"][:1] if quick else GRID["seed"]
    return [(a, d, s) for a in GRID["algo"] for d in GRID["delta"] for s in seeds]


def sweep(root: Path, cache_dir: Path, shape, quick: bool) -> float:
    seeds = GRID["seed"][:1] if quick else GRID["seed"]
    started = time.perf_counter()
    proc = harness(["multirun", "algo=" + ",".join(GRID["algo"]), "delta=" + ",".join(GRID["delta"]),
                    "seed=" + ",".join(seeds), *shape], root, cache_dir)
    seconds = time.perf_counter() - started
    assert f"{len(grid(quick))} finished" in proc.stdout, proc.stdout[-1500:]
    return seconds


def processes(root: Path, cache_dir: Path, shape, quick: bool) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as pool:  # two single-run processes at a time
        list(pool.map(lambda run: harness([f"algo={run[0]}", f"delta={run[1]}", f"seed={run[2]}", *shape],
                                          root, cache_dir), grid(quick)))
    return time.perf_counter() - started


def step_one(root: Path) -> dict:
    """(algo, delta, seed) -> the run's step-1 metrics, from the run folders' metrics.jsonl and config.yaml."""
    import yaml

    found = {}
    for metrics in root.glob("*/*/**/metrics.jsonl"):
        cfg = yaml.safe_load((metrics.parent / "config.yaml").read_text())
        key = (cfg["algo"]["name"], str(cfg["delta"]), str(cfg["seed"]))
        lines = [json.loads(line) for line in metrics.read_text().splitlines()]
        found[key] = {k: v for line in lines if line["step"] == 1 for k, v in line.items()
                      if not k.startswith("perf/")}
    return found


def finished_runs(root: Path) -> tuple:
    """(FINISHED child runs, parent runs) in the store under root."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlruns.db'}")
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()], max_results=1000)
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags and r.info.status == "FINISHED"]
    parents = {r.data.tags["mlflow.parentRunId"] for r in children}
    return len(children), len(parents)


def sweep_vs_processes(args, reps: int) -> dict:
    shape = ["debug=quick", "trainer.steps=3"] if args.quick else []
    walls = {"sweep": [], "processes": []}
    checks = {}
    for rep in range(reps):
        order = ("sweep", "processes") if rep % 2 == 0 else ("processes", "sweep")
        for variant in order:
            with tempfile.TemporaryDirectory(prefix=f"bench-ensemble-{variant}-") as tmp:
                run = sweep if variant == "sweep" else processes
                walls[variant].append(run(Path(tmp), args.cache_dir, shape, args.quick))
                checks[variant] = step_one(Path(tmp) / ("multirun" if variant == "sweep" else "outputs"))
                if variant == "sweep":
                    checks["sweep_store"] = finished_runs(Path(tmp))
    a, b = checks["sweep"], checks["processes"]
    diff = max(abs(a[k][m] - b[k][m]) for k in a for m in a[k] if not m.startswith("warmstart/"))
    n = len(grid(args.quick))
    assert a.keys() == b.keys() and len(a) == n, (sorted(a), sorted(b))
    return figure(f"{NAME}.sweep_vs_processes", median_ratio(walls["processes"], walls["sweep"]), ">= 2.0",
                  f"the same {n} runs as single-run processes, two at a time", sweep_s=walls["sweep"],
                  processes_s=walls["processes"], max_step1_diff=diff, sweep_finished_children_and_parents=
                  checks["sweep_store"], runs=n)


def runs_per_core_hour(args) -> dict:
    grid48 = ["algo=dppo,drpo", "delta=0.1,0.2,0.4", "seed=range(0,8)", "trainer.warmstart.seed=${seed}"]
    walls = {}
    with tempfile.TemporaryDirectory(prefix="bench-ensemble-warm-") as tmp:  # untimed: every seed's warm start
        harness(["multirun", "algo=dppo", "seed=range(0,8)", "trainer.warmstart.seed=${seed}", "trainer.steps=1"],
                Path(tmp), args.cache_dir)
    for variant, extra in (("ensembles", []), ("members_1", ["launcher.members=1"])):
        with tempfile.TemporaryDirectory(prefix=f"bench-ensemble-{variant}-") as tmp:
            started = time.perf_counter()
            proc = harness(["multirun", "launcher=local_parallel", *grid48, *extra], Path(tmp), args.cache_dir)
            walls[variant] = time.perf_counter() - started
            assert "48 finished" in proc.stdout, proc.stdout[-1500:]
    return figure(f"{NAME}.runs_per_core_hour_vs_local_parallel", walls["members_1"] / walls["ensembles"], ">= 2.5",
                  "launcher=local_parallel launcher.members=1 (one run at a time per worker, one worker per core)",
                  **{f"{k}_s": v for k, v in walls.items()})


def members_curve(args) -> dict:
    import torch

    from harness.tracking.local_tracker import Tracker
    from harness.trainers.ensemble.trainer import EnsembleTrainer

    sizes = (1, 2, 4) if args.quick else (1, 4, 16, 64)
    shape = ["debug=quick"] if args.quick else []
    rates = {}
    with tempfile.TemporaryDirectory(prefix="bench-ensemble-curve-") as tmp:
        for size in sizes:
            specs = [bench_config([*shape, f"seed={k}", "trainer.progress=false", "tracking=none"], Path(tmp),
                                  args.cache_dir) for k in range(size)]
            trainer = EnsembleTrainer([(s, Path(tmp) / f"{size}-{k}", Tracker(Path(tmp) / f"{size}-{k}"))
                                       for k, s in enumerate(specs)], threads=1)
            trainer.rl_step()  # warm-up
            steps = 2 if args.quick else 3
            started = time.perf_counter()
            for _ in range(steps):
                trainer.rl_step()
            rates[size] = size * steps / (time.perf_counter() - started)
    torch.set_num_threads(1)
    top = max(sizes)
    return figure(f"{NAME}.members_curve", rates[top] / rates[1], None,
                  "member-steps per second of an ensemble of 1 (one torch thread, this process)",
                  member_steps_per_s={str(k): v for k, v in rates.items()},
                  relative={str(k): rates[k] / rates[1] for k in sizes})


def main(argv=None) -> int:
    args = bench_args(__doc__, argv)
    reps = args.reps or (1 if args.quick else 2)
    with tempfile.TemporaryDirectory(prefix="bench-ensemble-warm-") as tmp:  # untimed: the warm start
        harness(["debug=quick", "trainer.steps=1"] if args.quick else ["trainer.steps=1"], Path(tmp), args.cache_dir)
    figures = [sweep_vs_processes(args, reps)]
    if args.quick:
        figures.append(skipped(f"{NAME}.runs_per_core_hour_vs_local_parallel", "--quick skips the 48-run grid",
                               ">= 2.5", "launcher=local_parallel launcher.members=1"))
    else:
        figures.append(runs_per_core_hour(args))
    figures.append(members_curve(args))
    write_figures(args.json, NAME, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
