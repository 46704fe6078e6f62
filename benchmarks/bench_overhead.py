"""Harness overhead: a whole run's wall time minus the trainer's own time.

    python benchmarks/bench_overhead.py [--quick] [--json PATH] [--reps N]

1. `python -m harness trainer.steps=S` (default spec: dppo, sorting, MLflow SQLite store, checkpoints and
   evals every 10 steps) sized to a ~60 s run (S from a short calibration run; --quick: one debug=quick
   run), in a subprocess whose `harness.cli.main` is wrapped with timers: the trainer's own time is every
   `rl_step` and `evaluate` plus the trainer's construction (the job building its backend: importing the trainer's
   module with torch, the model, warm start from the cache; the trainer's methods are wrapped once
   the job has built the trainer, so those imports are paid where a real run pays them); the
   overhead is the rest of the wall time measured by the parent — interpreter start, imports,
   composition and validation (preflight + Hydra), the store, the tracking run, per-step logging,
   flushes, checkpoints, closing. Figures: overhead / wall time of a ~1-minute run (target <= 0.10, median
   over repetitions) and of a ~3-minute run (target <= 0.03, one run): MLflow's own import, open and close
   (3-4 s, measured in sessions 7 and 14) bound the first; they are under 0.03 of the second.
   Checkpoints are written on a background thread (the tracking flush, then torch.save): the loop's share
   (copying the state, joining the previous write) is overhead; the writes' own CPU time is reported too,
   with the figure as it would be if all of it had stalled the run (`fraction_if_background_writes_counted`).
   The detail has the CPU seconds of the run's process (MLflow's asynchronous logging threads included) and
   of its children.
The `--cfg job` start-up figure (against `import hydra`) is retired: configs are composed by Hydra alone
(issue #17), without the second composer and the composed-config cache it measured.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import bench_args, figure, median, median_ratio, skipped, write_figures  # noqa: E402

NAME = "overhead"
RUN_SECONDS = 60.0  # the default run length: overhead <= 0.10 of it (MLflow's import, open and close: ~3-4 s)
BASELINE = "the trainer's own time (steps, evals, construction) inside the same run"
LONG_RUN_SECONDS = 180.0  # from 3 minutes on, overhead <= 0.03

# Runs `python -m harness ARGS` with timers around the phases; writes them to $BENCH_TIMINGS at exit.
TIMED_CLI = r"""
import time; T0 = time.time()
import atexit, json, os, resource, sys, threading, types
acc, counts, depth, background_cpu = {}, {}, {}, {}
def wrap(owner, attr, key):
    fn = getattr(owner, attr)
    def timed(*a, **k):
        if threading.current_thread() is not threading.main_thread():  # e.g. the checkpoint writer's thread
            started = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                background_cpu[key] = background_cpu.get(key, 0.0) + time.thread_time() - started
        if key == "tracker_flush" and depth.get("tracker_finish"):
            return fn(*a, **k)  # the flush inside finish() is the finish's
        # logging and checkpoints inside train() apart from those in the trainer's construction
        key_now = key + "_outside_train" if key in ("log_metrics", "checkpoints") and not depth.get("train") else key
        depth[key] = depth.get(key, 0) + 1
        started = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            depth[key] -= 1
            if not depth[key]:  # count nested calls (super().finish) once
                acc[key_now] = acc.get(key_now, 0.0) + time.perf_counter() - started
                counts[key_now] = counts.get(key_now, 0) + 1
    setattr(owner, attr, timed)
def wrap_trainer():
    # after the job built its trainer (importing torch, transformers), as the real run does
    import harness.trainers.ensemble.loop as loop
    import harness.trainers.ensemble.trainer as et
    if getattr(et, "_bench_timed", False):
        return
    et._bench_timed = True
    wrap(loop.SoloTrainer, "train", "train")
    wrap(et.EnsembleTrainer, "rl_step", "rl_steps")
    wrap(et.EnsembleTrainer, "evaluate", "evals")
    import harness.trainers.checkpoint as ck
    wrap(ck.CheckpointWriter, "save", "checkpoints")  # the loop's share: a copy of the state, joining the last write
    wrap(ck.CheckpointWriter, "wait", "checkpoints")
    wrap(ck.CheckpointWriter, "_write", "checkpoint_write")  # flush + torch.save, on the writer's thread
started = time.perf_counter()
import harness.cli, harness.launchers.compose, harness.launchers.job, harness.tracking, harness.tracking.store
import harness.trainers, harness.tracking.tracker as tt
acc["imports"] = time.perf_counter() - started
wrap(harness.launchers.compose, "preflight_jobs", "preflight")  # what the CLI calls: Hydra composes each job
wrap(harness.tracking.store, "prepare_stores", "prepare_stores")
wrap(harness.launchers.job, "open_tracker", "open_tracker")  # the job's own name for it (imported at module level)
trainer_class = harness.launchers.job.trainer_class
def class_then_wrap(name):
    backend = trainer_class(name)
    def build_then_wrap(*a, **k):
        trainer = backend(*a, **k)
        wrap_trainer()
        return trainer
    built = types.SimpleNamespace(build=build_then_wrap)
    wrap(built, "build", "trainer_init")  # the backend's construction: its imports, the model, the warm start
    return built.build
harness.launchers.job.trainer_class = class_then_wrap
wrap(harness.launchers.job, "run_job", "job")
for cls in (tt.Tracker, tt.MlflowTracker):
    for attr, key in (("log_metrics", "log_metrics"), ("flush", "tracker_flush"), ("finish", "tracker_finish")):
        if attr in vars(cls):
            wrap(cls, attr, key)
def cpu(who):
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime
def dump():
    with open(os.environ["BENCH_TIMINGS"], "w") as f:
        json.dump({"t0": T0, "t_end": time.time(), "seconds": acc, "counts": counts, "background_cpu_s": background_cpu,
                   "cpu_s": cpu(resource.RUSAGE_SELF), "children_cpu_s": cpu(resource.RUSAGE_CHILDREN)}, f)
atexit.register(dump)
harness.cli.main(sys.argv[1:])
"""


def timed_run(overrides, root: Path, cache_dir: Path) -> dict:
    """One `python -m harness` run under the timers; returns its phases, wall time and overhead."""
    timings = root / f"timings-{time.time_ns()}.json"
    env = {**os.environ, "BENCH_TIMINGS": str(timings), "HARNESS_OUTPUT_ROOT": str(root), "PYTHONUNBUFFERED": "1"}
    # --force: the repetitions are identical configs, which the harness would otherwise skip as finished
    argv = [sys.executable, "-c", TIMED_CLI, *overrides, f"cache_dir={cache_dir}", "trainer.progress=false", "--force"]
    launched = time.time()
    proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
    ended = time.time()
    if proc.returncode != 0:
        raise RuntimeError(f"python -m harness {' '.join(overrides)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    t = json.loads(timings.read_text())
    if not t["counts"].get("rl_steps"):
        raise RuntimeError(f"python -m harness {' '.join(overrides)} trained no step:\n{proc.stdout[-2000:]}")
    s = t["seconds"]
    wall = ended - launched
    trainer = s.get("rl_steps", 0.0) + s.get("evals", 0.0) + s.get("trainer_init", 0.0)
    in_train = s.get("train", 0.0) - s.get("rl_steps", 0.0) - s.get("evals", 0.0)
    phases = {
        "interpreter_start": t["t0"] - launched,
        "imports": s["imports"],
        "preflight": s.get("preflight", 0.0),
        "prepare_stores": s.get("prepare_stores", 0.0),
        "open_tracker": s.get("open_tracker", 0.0),
        "log_metrics": s.get("log_metrics", 0.0),
        "tracker_flush": s.get("tracker_flush", 0.0),  # on the training thread (checkpoint_background=false)
        "checkpoints": s.get("checkpoints", 0.0),  # the loop's share; the writes' own CPU is in background_cpu_s
        "tracker_finish": s.get("tracker_finish", 0.0),
        "train_loop_other": in_train - s.get("log_metrics", 0.0) - s.get("tracker_flush", 0.0)
        - s.get("checkpoints", 0.0),
        "exit": ended - t["t_end"],
    }
    phases["hydra_and_other"] = wall - trainer - sum(phases.values())
    return {"wall_s": wall, "trainer_s": trainer, "overhead_s": wall - trainer, "steps_s": s.get("rl_steps", 0.0),
            "evals_s": s.get("evals", 0.0), "trainer_init_s": s.get("trainer_init", 0.0),
            "steps": t["counts"].get("rl_steps", 0), "overhead_phases_s": phases,
            "background_cpu_s": t.get("background_cpu_s", {}),
            "cpu_s": t["cpu_s"], "children_cpu_s": t["children_cpu_s"]}


def _sized(calibration: dict, seconds: float) -> list:
    """The overrides of a default run sized to about `seconds` of wall time, from a calibration run."""
    per_step = (calibration["steps_s"] + calibration["evals_s"]) / calibration["steps"]
    budget = seconds - calibration["overhead_s"] - calibration["trainer_init_s"]
    return [f"trainer.steps={max(10, int(round(budget / per_step / 10)) * 10)}"]


def _figure(name: str, runs: list, target: str, overrides: list) -> dict:
    return figure(
        name, median([r["overhead_s"] / r["wall_s"] for r in runs]), target,
        BASELINE,
        wall_s=median([r["wall_s"] for r in runs]), overhead_s=median([r["overhead_s"] for r in runs]),
        trainer_s=median([r["trainer_s"] for r in runs]), overrides=overrides, reps=len(runs),
        overhead_phases_s=runs[len(runs) // 2]["overhead_phases_s"],
        run_cpu_s=median([r["cpu_s"] for r in runs]),
        children_cpu_s=median([r["children_cpu_s"] for r in runs]),
        # a background write competes with the loop for the GIL and the cores: its whole CPU time
        # counted as overhead bounds what it can have cost the run
        checkpoint_write_cpu_s=median([r["background_cpu_s"].get("checkpoint_write", 0.0) for r in runs]),
        fraction_if_background_writes_counted=median([
            (r["overhead_s"] + r["background_cpu_s"].get("checkpoint_write", 0.0)) / r["wall_s"] for r in runs]),
        fraction_if_trainer_init_counted=median([(r["overhead_s"] + r["trainer_init_s"]) / r["wall_s"]
                                                for r in runs]))


def main(argv=None) -> int:
    args = bench_args(__doc__, argv)
    reps = args.reps or (1 if args.quick else 2)
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        root = Path(tmp)
        if args.quick:  # the pipeline only: a debug=quick run is mostly start-up, so its fraction is not judged
            calibration, overrides = None, ["debug=quick"]
            runs = [timed_run(overrides, root, args.cache_dir)]
            figures = [_figure(f"{NAME}.run_fraction", runs, None, overrides),
                       skipped(f"{NAME}.run_fraction_3min", "--quick runs no 3-minute run", "<= 0.03", BASELINE)]
        else:
            calibration = timed_run(["trainer.steps=20"], root, args.cache_dir)  # also creates the store
            minute, long = _sized(calibration, RUN_SECONDS), _sized(calibration, LONG_RUN_SECONDS)
            runs = [timed_run(minute, root, args.cache_dir) for _ in range(reps)]
            long_runs = [timed_run(long, root, args.cache_dir)]
            figures = [_figure(f"{NAME}.run_fraction", runs, "<= 0.10", minute),
                       _figure(f"{NAME}.run_fraction_3min", long_runs, "<= 0.03", long)]
            runs += long_runs
    write_figures(args.json, NAME, figures, runs=runs, calibration=calibration)
    return 0


if __name__ == "__main__":
    sys.exit(main())
