"""Tracking cost per step: the harness's MLflow logging of one step's metrics, as a fraction of the step.

    python benchmarks/bench_tracking.py [--quick] [--json PATH] [--reps N]

A real run setup: the default run config with the default tracking (a local MLflow SQLite store, created
as the CLI does with `prepare_stores`), the tracker from `open_tracker` (metrics.jsonl + one `log_batch`
per step, heartbeat thread running), and the built-in trainer. Each repetition takes one real RL step,
then logs its metrics (~30 keys) twice, in alternating order:
  harness   `tracker.log_metrics(metrics, step)`, as `BuiltinTrainer.train` does;
  baseline  one `MlflowClient.log_metric` call per metric, into a second run of the same store.
Figures (medians of per-repetition ratios): logging time / step time (target <= 2%), and the baseline's
time / the harness's time (how much one batched call per step saves).
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import bench_args, bench_config, figure, median, median_ratio, write_figures  # noqa: E402

NAME = "tracking"


def main(argv=None) -> int:
    args = bench_args(__doc__, argv)
    warmup, reps = (1, args.reps or 3) if args.quick else (3, args.reps or 30)
    from mlflow.tracking import MlflowClient

    from harness.tracking import open_tracker
    from harness.tracking.store import ensure_experiment, prepare_stores, tracking_uri
    from harness.trainers.builtin.trainer import BuiltinTrainer

    overrides = ["trainer.progress=false", "trainer.torch_threads=1", *(["debug=quick"] if args.quick else [])]
    with tempfile.TemporaryDirectory(prefix="bench-tracking-") as tmp:
        cfg = bench_config(overrides, Path(tmp), args.cache_dir)
        prepare_stores([cfg])
        run_dir = Path(tmp) / "run"
        tracker = open_tracker(cfg, run_dir, run_name="bench-tracking")
        trainer = BuiltinTrainer(cfg, run_dir, tracker)
        client = MlflowClient(tracking_uri=tracking_uri(cfg))
        baseline_run = client.create_run(ensure_experiment(cfg)[1], run_name="bench-tracking-per-metric").info.run_id

        def harness_log(metrics, step):
            tracker.log_metrics(metrics, step=step)

        def per_metric(metrics, step):
            now = int(time.time() * 1000)
            for key, value in metrics.items():
                client.log_metric(baseline_run, key, float(value), timestamp=now, step=step)

        step_s, log_s, base_s, n_metrics = [], [], [], 0
        for step in range(1, warmup + reps + 1):
            started = time.perf_counter()
            metrics = trainer._rl_step()
            step_s.append(time.perf_counter() - started)
            n_metrics = len(metrics)
            timed = {}
            for name, fn in ((("harness", harness_log), ("baseline", per_metric)) if step % 2 else
                             (("baseline", per_metric), ("harness", harness_log))):
                started = time.perf_counter()
                fn(metrics, step)
                timed[name] = time.perf_counter() - started
            log_s.append(timed["harness"]), base_s.append(timed["baseline"])
        tracker.finish("FINISHED")
        client.set_terminated(baseline_run)
    step_s, log_s, base_s = step_s[warmup:], log_s[warmup:], base_s[warmup:]
    common = dict(step_s=median(step_s), harness_log_s=median(log_s), per_metric_log_s=median(base_s),
                  metrics_per_step=n_metrics, store="sqlite (local file)", reps=len(step_s), warmup_steps=warmup,
                  overrides=overrides)
    figures = [
        figure(f"{NAME}.step_fraction", median_ratio(log_s, step_s), "<= 0.02",
               "the RL step it logs (tracker.log_metrics time / step time), same loop",
               per_metric_fraction=median_ratio(base_s, step_s), **common),
        figure(f"{NAME}.batch_vs_per_metric", median_ratio(base_s, log_s), None,
               "one MlflowClient.log_metric per metric, alternating with the harness's log_batch (baseline / harness)",
               **common),
    ]
    write_figures(args.json, NAME, figures, steps={"step_s": step_s, "harness_log_s": log_s, "per_metric_s": base_s})
    return 0


if __name__ == "__main__":
    sys.exit(main())
