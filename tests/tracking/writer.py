"""A stand-in for a training job in the tracking tests: logs `--steps` steps of `--metrics` metrics through
harness's MlflowTracker, with the same status handling as harness/launchers/job.py (exception -> FAILED with a
traceback, SIGTERM -> KILLED), and no model, so many of them fit on two cores.

    python writer.py --uri sqlite:///x.db --run-dir out/0 --steps 500 --metrics 10
Prints `run_id=<id or None>` once the run is open, and `done` at the end."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import traceback
from pathlib import Path


class Killed(BaseException):
    pass


def _raise_killed(signum, _frame):
    raise Killed(f"received signal {signal.Signals(signum).name}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--uri", required=True)
    parser.add_argument("--run-dir", required=True, type=Path)
    parser.add_argument("--experiment", default="writers")
    parser.add_argument("--name", default="writer")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--metrics", type=int, default=10)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds between steps")
    parser.add_argument("--fail-at", type=int, default=-1, help="raise after this step")
    parser.add_argument("--sigkill-at", type=int, default=-1, help="SIGKILL itself after this step")
    parser.add_argument("--pause-file", type=Path, default=None, help="wait before each step while it exists")
    parser.add_argument("--pause-after", type=int, default=0,
                        help="with --pause-file: wait only before the steps after this one")
    parser.add_argument("--parent-sweep-dir", default=None)
    args = parser.parse_args()

    from harness.tracking.run_tracker import parent_tags
    from harness.tracking.store import folder_lock, get_or_create_experiment
    from harness.tracking.tracker import MlflowTracker, RunSpec

    def experiment_id() -> str:
        from mlflow.tracking import MlflowClient

        with folder_lock(args.run_dir.parent):
            return get_or_create_experiment(MlflowClient(args.uri), args.experiment, None)

    params = {f"writer.p{i}": str(i) for i in range(5)}
    tags = {"harness.role": "child" if args.parent_sweep_dir else "run",
            **parent_tags(args.parent_sweep_dir, args.uri)}
    spec = RunSpec(tracking_uri=args.uri, experiment_name=args.experiment, run_name=args.name,
                   params=params, tags=tags)
    signal.signal(signal.SIGTERM, _raise_killed)
    tracker = MlflowTracker(args.run_dir, spec, experiment_id=experiment_id)
    print(f"run_id={tracker.run_id}", flush=True)
    try:
        for step in range(1, args.steps + 1):
            while args.pause_file is not None and step > args.pause_after and args.pause_file.exists():
                time.sleep(0.05)
            tracker.log_metrics({f"m/{k}": step + k / 100 for k in range(args.metrics)}, step=step)
            if step == args.fail_at:
                raise RuntimeError(f"writer failed on purpose at step {step}")
            if step == args.sigkill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            if args.sleep:
                time.sleep(args.sleep)
    except (Killed, KeyboardInterrupt) as err:
        tracker.finish("KILLED", error=str(err))
        return 143
    except Exception:
        tracker.finish("FAILED", error=traceback.format_exc())
        return 1
    tracker.finish("FINISHED")
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
