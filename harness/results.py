"""What the jobs of a run or sweep ended as: each job's result, this process's list of them, run names and
the sweep's summary line. A leaf module: the job, the launchers and the sweep callback all read it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional


@dataclass
class JobResult:
    name: str
    status: str  # FINISHED | FAILED | KILLED | SKIPPED | SUBMITTED | PRUNED
    run_dir: str
    run_id: Optional[str] = None
    error: Optional[str] = None
    final_metrics: Optional[dict] = None
    tracking_uri: Optional[str] = None  # the MLflow store of run_id


RESULTS: List[JobResult] = []
OK_STATUSES = ("FINISHED", "SKIPPED", "SUBMITTED", "PRUNED")


# Overrides that say how a job runs rather than what it computes, left out of its run name.
NOT_IN_RUN_NAME = ("hydra.", "launcher", "trainer.torch_threads=", "trainer.progress=", "force=", "cache_dir=",
                   "trainer.resume=", "optuna.", "sweeper=", "trainer.verl.dry_run=", "tracking",
                   "trainer.branch_from=", "reuse_across_versions=")


def run_name(overrides) -> str:
    """A run's name: the overrides that say what it computes, e.g. 'algo=drpo,delta=0.1'."""
    return ",".join(o for o in overrides if not o.startswith(NOT_IN_RUN_NAME))


def summarize(results: List[JobResult]) -> str:
    counts = {s: sum(r.status == s for r in results) for s in ("FINISHED", "FAILED", "KILLED")}
    counts.update({s: n for s in ("SKIPPED", "SUBMITTED", "PRUNED") if (n := sum(r.status == s for r in results))})
    lines = [f"sweep: {len(results)} runs: " + ", ".join(f"{n} {s.lower()}" for s, n in counts.items())]
    for r in results:
        if r.status not in OK_STATUSES:
            lines.append(f"  {r.status}: {r.name} ({r.run_dir}): {r.error}")
    return "\n".join(lines)
