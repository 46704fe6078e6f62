"""Probe (no figure, no target): can MLflow's per-run cost be taken off a run's critical path in-process?

    python benchmarks/probe_mlflow_in_process.py [--reps N] [--json PATH]

Each measurement runs in a fresh process, alternated with its baseline, on a SQLite store made once:
1. `import mlflow` (what the tracker's first MLflow call pays).
2. 100 training steps of the default spec (the ensemble of one, as `python -m harness` trains) alone, and the
   same 100 steps while a thread opens an MLflow run (import, store, `create_run`) beside them: the steps'
   extra time over the thread's CPU time says how much of that work overlapped training (1: all of it hidden,
   0: none; the training thread and MLflow's Python share one GIL).
3. The tracker's `finish()` after steps handed to MLflow's asynchronous logging, and how much of it is waiting
   rather than CPU (MLflow's logging thread polls its queue with a 1 s timeout, which closing the run waits out).
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import DEFAULT_CACHE, REPO, bench_args  # noqa: E402

IMPORT = "import time; t = time.perf_counter(); import mlflow; print(time.perf_counter() - t)"

STEPS = r"""
import json, sys, threading, time
from pathlib import Path
from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.tracking.local_tracker import Tracker
from harness.trainers import trainer_class
uri, run_dir, cache, beside = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4] == "thread"
cfg = validate(compose([f"cache_dir={cache}", "trainer.progress=false"]))
ensemble = trainer_class("builtin")(cfg, run_dir=run_dir, tracker=Tracker(run_dir)).ensemble
for _ in range(5):
    ensemble.rl_step()  # warm
opened = {}
def open_run():
    from mlflow.tracking import MlflowClient
    client = MlflowClient(uri)
    client.create_run(client.get_experiment_by_name("probe").experiment_id, run_name="probe")
    opened["cpu_s"] = time.thread_time()
thread = threading.Thread(target=open_run)
started = time.perf_counter()
if beside:
    thread.start()
for _ in range(100):
    ensemble.rl_step()
steps_s = time.perf_counter() - started
if beside:
    thread.join()
print(json.dumps({"steps_s": steps_s, **opened}))
"""

FINISH = r"""
import json, sys, time
from pathlib import Path
from harness.tracking.tracker import MlflowTracker, RunSpec
uri, run_dir = sys.argv[1], Path(sys.argv[2])
spec = RunSpec(tracking_uri=uri, experiment_name="probe", run_name="finish", params={"p": "1"}, tags={})
from mlflow.tracking import MlflowClient
experiment = MlflowClient(uri).get_experiment_by_name("probe").experiment_id
tracker = MlflowTracker(run_dir, spec, experiment_id=lambda: experiment)
for step in range(40):
    tracker.log_metrics({f"m{i}": step * 0.1 for i in range(30)}, step=step)
    if step % 10 == 9:
        tracker.flush()
    time.sleep(0.02)
wall, cpu = time.perf_counter(), time.process_time()
tracker.finish("FINISHED")
print(json.dumps({"finish_s": time.perf_counter() - wall, "finish_cpu_s": time.process_time() - cpu}))
"""


def python(code: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    lines = proc.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def main(argv=None) -> int:
    args = bench_args(__doc__, argv)
    reps = args.reps or (1 if args.quick else 3)
    root = Path(tempfile.mkdtemp(prefix="probe-mlflow-"))
    uri = f"sqlite:///{root / 'mlruns.db'}"
    python("import sys; from mlflow.tracking import MlflowClient; MlflowClient(sys.argv[1]).create_experiment('probe')",
           uri)  # the store and its schema, once
    cache = str(args.cache_dir or DEFAULT_CACHE)
    imports, alone, beside, thread_cpu, finishes = [], [], [], [], []
    for rep in range(reps):
        imports.append(float(python(IMPORT)))
        for mode in (("alone", "thread") if rep % 2 == 0 else ("thread", "alone")):
            out = json.loads(python(STEPS, uri, str(root / f"run-{rep}-{mode}"), cache, mode))
            (beside if mode == "thread" else alone).append(out["steps_s"])
            if mode == "thread":
                thread_cpu.append(out["cpu_s"])
        finishes.append(json.loads(python(FINISH, uri, str(root / f"finish-{rep}"))))
    extra = [b - a for a, b in zip(alone, beside)]
    result = {
        "import_mlflow_s": statistics.median(imports),
        "steps_alone_s": alone, "steps_beside_open_s": beside, "open_thread_cpu_s": thread_cpu,
        "hidden_fraction_of_open": statistics.median(1 - e / c for e, c in zip(extra, thread_cpu)),
        "finish_s": statistics.median(f["finish_s"] for f in finishes),
        "finish_cpu_s": statistics.median(f["finish_cpu_s"] for f in finishes),
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
