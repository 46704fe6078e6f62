"""Tracking cost per step: the harness's MLflow logging of one step's metrics, as a fraction of the step.

    python benchmarks/bench_tracking.py [--quick] [--json PATH] [--reps N]

A real run setup: the default run config with the default tracking (a local MLflow SQLite store, created
under the store lock as a job's tracker does with `ensure_experiment`), the tracker from `open_tracker`
and the built-in trainer: the MlflowTracker, which writes metrics.jsonl and hands the steps to MLflow's own
asynchronous logging (`MlflowClient.log_batch(..., synchronous=False)`, its worker threads).

1. `tracking.step_fraction`: the loop the trainer runs (harness/trainers/ensemble/loop.py), one real RL step then
   `tracker.log_metrics(metrics, step)` (~30 keys). The call itself only writes metrics.jsonl and keeps
   the step; the store gets the steps as one asynchronous `log_batch` every few seconds. What the step pays
   is counted as the call's wall time (median) plus the CPU time spent recording on other threads, per
   step: the process's CPU time minus the trainer thread's (`time.process_time` - `time.thread_time`: MLflow's
   logging threads, the heartbeat), over the timed steps, final flush included, divided by the steps. That
   work can only slow training by taking a core or the GIL, never by more than its CPU time, and its waits
   on SQLite commits cost the step nothing. Figure: (call + recording CPU per step) / median step
   time (target <= 2%); the call alone (and its send alone, after metrics.jsonl) and the recording CPU
   alone are in the detail.
2. `tracking.batch_vs_per_metric`: the same metrics logged, in alternating order, by the harness
   (`log_metrics` then `flush()`: one `log_batch`, waited for) and by one
   `MlflowClient.log_metric` call per metric into a second run of the same store: baseline time / harness
   time (what batching saves).
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import bench_args, bench_config, figure, median, median_ratio, write_figures  # noqa: E402

NAME = "tracking"


def other_threads_cpu_s() -> float:
    """CPU seconds of this process's threads other than the calling one (MLflow's logging threads, the
    heartbeat) so far, plus the calling thread's own offset (cancels in a difference taken on one thread)."""
    return time.process_time() - time.thread_time()


def main(argv=None) -> int:
    args = bench_args(__doc__, argv)
    warmup, reps, pairs = (1, args.reps or 3, 2) if args.quick else (3, args.reps or 60, 8)
    from mlflow.tracking import MlflowClient

    from harness.tracking import open_tracker
    from harness.tracking.store import ensure_experiment, tracking_uri
    from harness.trainers.ensemble.trainer import EnsembleTrainer

    overrides = ["trainer.progress=false", "trainer.torch_threads=1", *(["debug=quick"] if args.quick else [])]
    with tempfile.TemporaryDirectory(prefix="bench-tracking-") as tmp:
        cfg = bench_config(overrides, Path(tmp), args.cache_dir)
        experiment_id = ensure_experiment(cfg)[1]  # creates the store, under its lock, before any client
        run_dir = Path(tmp) / "run"
        tracker = open_tracker(cfg, run_dir, run_name="bench-tracking")
        trainer = EnsembleTrainer([(cfg, run_dir, tracker)])  # a run alone: the ensemble of one
        client = MlflowClient(tracking_uri=tracking_uri(cfg))
        baseline_run = client.create_run(experiment_id, run_name="bench-tracking-per-metric").info.run_id

        # 1. the trainer's loop
        step_s, call_s, n_metrics, step = [], [], 0, 0
        send_s = []  # the call's part after metrics.jsonl: keeping the step (and every few s, the async call)
        send = tracker._remote_log_metrics

        def timed_send(metrics, step):
            started = time.perf_counter()
            send(metrics, step)
            send_s.append(time.perf_counter() - started)

        tracker._remote_log_metrics = timed_send
        for i in range(warmup + reps):
            if i == warmup:
                tracker.flush()
                cpu_start = other_threads_cpu_s()
            step += 1
            started = time.perf_counter()
            metrics = trainer.rl_step()[0]
            step_s.append(time.perf_counter() - started)
            n_metrics = len(metrics)
            started = time.perf_counter()
            tracker.log_metrics(metrics, step=step)
            call_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        tracker.flush()
        flush_s = time.perf_counter() - started
        cpu_per_step = (other_threads_cpu_s() - cpu_start) / reps
        del tracker._remote_log_metrics
        step_s, call_s, send_s = step_s[warmup:], call_s[warmup:], send_s[warmup:]
        paid = median(call_s) + cpu_per_step
        recorder = "MLflow's asynchronous logging threads (and the heartbeat)"

        # 2. one batched call against one call per metric, alternating
        def harness_log(metrics, step):
            tracker.log_metrics(metrics, step=step)
            tracker.flush()

        def per_metric(metrics, step):
            now = int(time.time() * 1000)
            for key, value in metrics.items():
                client.log_metric(baseline_run, key, float(value), timestamp=now, step=step)

        log_s, base_s = [], []
        for pair in range(pairs):
            step += 1
            timed = {}
            for name, fn in ((("harness", harness_log), ("baseline", per_metric)) if pair % 2 else
                             (("baseline", per_metric), ("harness", harness_log))):
                started = time.perf_counter()
                fn(metrics, step)
                timed[name] = time.perf_counter() - started
            log_s.append(timed["harness"]), base_s.append(timed["baseline"])
        tracker.finish("FINISHED")
        client.set_terminated(baseline_run)
    common = dict(step_s=median(step_s), harness_call_s=median(call_s), send_s=median(send_s), recorder=recorder,
                  recording_cpu_s_per_step=cpu_per_step, harness_paid_s_per_step=paid, final_flush_s=flush_s,
                  metrics_per_step=n_metrics, store="sqlite (local file)", reps=len(step_s), warmup_steps=warmup,
                  overrides=overrides)
    figures = [
        figure(f"{NAME}.step_fraction", paid / median(step_s), "<= 0.02",
               "the RL steps it logs: (median tracker.log_metrics call + recording CPU per step on other "
               "threads) / median step time, the trainer's loop",
               call_only_fraction=median_ratio(call_s, step_s),
               recording_cpu_fraction=cpu_per_step / median(step_s), **common),
        figure(f"{NAME}.batch_vs_per_metric", median_ratio(base_s, log_s), None,
               "one MlflowClient.log_metric per metric, alternating with the harness's log_metrics + flush "
               "(one log_batch) (baseline / harness)", sync_log_batch_s=median(log_s), per_metric_log_s=median(base_s),
               pairs=pairs, **common),
    ]
    write_figures(args.json, NAME, figures, steps={"step_s": step_s, "harness_call_s": call_s, "send_s": send_s,
                                                   "harness_sync_s": log_s, "per_metric_s": base_s})
    return 0


if __name__ == "__main__":
    sys.exit(main())
