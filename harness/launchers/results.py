"""What the jobs of a run or sweep ended as: each job's result (the task's return value, which travels back in
its Hydra JobReturn), run names and the sweep's summary line. Imports nothing heavy: the command line's last
lines read it."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple


@dataclass
class JobResult:
    name: str
    status: str  # FINISHED | FAILED | KILLED | SKIPPED | SUBMITTED | PRUNED
    run_dir: str
    run_id: Optional[str] = None
    error: Optional[str] = None
    final_metrics: Optional[dict] = None
    tracking_uri: Optional[str] = None  # the MLflow store of run_id
    experiment_id: Optional[str] = None  # the experiment of run_id (for its UI link)


EVAL = "eval/accuracy"
FINAL = "eval/final_accuracy"  # the reports' final accuracy (mean of the last k evaluations), logged at a run's end
OK_STATUSES = ("FINISHED", "SKIPPED", "SUBMITTED", "PRUNED")


# Overrides that say how a job runs rather than what it computes, left out of its run name.
NOT_IN_RUN_NAME = ("hydra.", "launcher", "trainer.torch_threads=", "trainer.device=", "trainer.progress=", "force=", "cache_dir=",
                   "trainer.resume=", "optuna.", "sweeper=", "trainer.verl.dry_run=", "tracking",
                   "trainer.branch_from=", "reuse_across_versions=")


def run_name(overrides) -> str:
    """A run's name: the overrides that say what it computes, e.g. 'algo=drpo,delta=0.1'."""
    return ",".join(o for o in overrides if not o.startswith(NOT_IN_RUN_NAME))


def finished_metrics(final_metrics: Optional[dict], run_dir: Path, earlier: Optional[Tuple[Path, int]] = None) -> str:
    """The evaluation a finished run ends with, saying which number is which: `eval/accuracy (last evaluation)
    0.625; mean of last 3 0.557 (the reports' final accuracy); greedy 0.92; best 0.656`. `earlier`: see
    final_accuracy."""
    shown = {k: v for k, v in (final_metrics or {}).items() if k.startswith("eval/") and k != FINAL}
    parts = []
    if EVAL in shown:
        parts.append(f"{EVAL} (last evaluation) {shown.pop(EVAL):.4g}")
        final = final_accuracy(run_dir, earlier)
        if final is not None:
            parts.append(f"mean of last {final[2]} {final[1]:.4g} (the reports' final accuracy)")
    parts += [f"{k[len('eval/'):].replace('_accuracy', '')} {v:.4g}" for k, v in shown.items()]
    return "; ".join(parts) or "no evaluation"


def final_accuracy(run_dir: Path, earlier: Optional[Tuple[Path, int]] = None) -> Optional[Tuple[int, float, int]]:
    """(the last evaluation's step, the mean of the last k evaluations, k): the reports' final accuracy, from
    the run's own record; None with fewer than two evaluations. `earlier`: (the folder a run resumed from in
    a new folder, its checkpoint's step): that folder's evaluations up to the checkpoint count too."""
    from harness.stats.collapse import EVAL_WINDOW as LAST_K  # the reports' window; numpy only at a run's end

    before = _eval_accuracies(earlier[0] / "metrics.jsonl") if earlier else []
    evals = [(step, v) for step, v in before if step <= earlier[1]] + _eval_accuracies(run_dir / "metrics.jsonl")
    if len(evals) < 2:
        return None
    window = [value for _, value in evals[-LAST_K:]]
    return evals[-1][0], sum(window) / len(window), len(window)


def _eval_accuracies(metrics_file: Path) -> List[Tuple[int, float]]:
    try:
        lines = metrics_file.read_text().splitlines()
    except OSError:  # no record of its own (a full disk): the last evaluation is still said
        return []
    by_step = {}  # a resumed run's file repeats the steps it redid: the last record of a step counts
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:  # a line cut short by a crash
            continue
        if isinstance(row, dict) and isinstance(row.get(EVAL), (int, float)):
            by_step[row.get("step")] = row[EVAL]
    return [(step, by_step[step]) for step in sorted(by_step, key=lambda s: (s is None, s)) if isinstance(step, int)]


def summarize(results: List[JobResult]) -> str:
    counts = {s: sum(r.status == s for r in results) for s in ("FINISHED", "FAILED", "KILLED")}
    counts.update({s: n for s in ("SKIPPED", "SUBMITTED", "PRUNED") if (n := sum(r.status == s for r in results))})
    lines = [f"sweep: {len(results)} runs: " + ", ".join(f"{n} {s.lower()}" for s, n in counts.items())]
    for r in results:
        if r.status not in OK_STATUSES:
            lines.append(f"  {r.status}: {r.name} ({r.run_dir}): {r.error}")
    return "\n".join(lines)
