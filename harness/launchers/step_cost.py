"""What a run's training step costs, for `--plan`'s time estimate: measured where earlier runs of the same shape
left their metrics under the output root, else a rough constant that says it is one.

Every built-in run logs `perf/step_time_s` in its `metrics.jsonl`: the step's wall time divided by the members of
its ensemble (harness/trainers/ensemble/trainer.py), so one member's share of a step, whatever ensemble it ran in.
Runs of one shape (harness/trainers/ensemble/grouping.py: same model, data, batch sizes, steps, precision) cost
the same per step; the estimate takes the median over the newest such runs."""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from omegaconf import DictConfig, OmegaConf

from harness.trainers.ensemble.grouping import shape_key

STEP_TIME = "perf/step_time_s"
# Without a measurement: the README's default shape on a 2-core CPU (a run of 60 steps in ~20 s), and the start of
# a worker process (Python, torch, MLflow; ~10 s). Rough: other shapes and machines differ by orders of magnitude.
ROUGH_STEP_S = 0.35
ROUGH_START_S = 10.0
SCANNED = 200  # newest metrics files read at most
MATCHED = 20  # runs of the shape that make the median


@dataclass(frozen=True)
class StepCost:
    seconds: float  # one run's share of one training step
    source: str  # how it was found, in words


def _run_folders(root: Path) -> List[Path]:
    """Run folders under `root` with metrics (sweeps' jobs and single runs), newest first."""
    files = [*root.glob("multirun/*/*/*/metrics.jsonl"), *root.glob("outputs/*/*/metrics.jsonl")]
    dated = []
    for path in files:
        try:
            dated.append((path.stat().st_mtime, path.parent))
        except OSError:
            continue
    return [folder for _, folder in sorted(dated, reverse=True)[:SCANNED]]


def _shape_of(folder: Path) -> Optional[str]:
    try:
        return shape_key(OmegaConf.load(folder / "config.yaml"))
    except Exception:  # an unreadable or older config: not comparable
        return None


def _median_step(metrics: Path) -> Optional[float]:
    times = []
    try:
        with open(metrics) as handle:
            for line in handle:
                if STEP_TIME in line:
                    try:
                        value = json.loads(line).get(STEP_TIME)
                    except ValueError:
                        continue
                    if isinstance(value, (int, float)) and value > 0:
                        times.append(float(value))
    except OSError:
        return None
    return statistics.median(times) if times else None


def step_costs(specs: List[DictConfig], root: Path) -> Dict[Optional[str], StepCost]:
    """The step cost of each shape among `specs` (keyed by `shape_key`; None: runs that train alone, e.g. verl)."""
    wanted = {shape_key(spec) for spec in specs}
    found: Dict[str, List[float]] = {}
    for folder in _run_folders(Path(root)):
        if all(len(found.get(key, ())) >= MATCHED for key in wanted if key):
            break
        key = _shape_of(folder)
        if key in wanted and key is not None and len(found.get(key, ())) < MATCHED:
            cost = _median_step(folder / "metrics.jsonl")
            if cost is not None:
                found.setdefault(key, []).append(cost)
    costs = {}
    for key in wanted:
        if key in found:
            runs = len(found[key])
            costs[key] = StepCost(statistics.median(found[key]),
                                  f"measured on this machine: median of {runs} earlier run{'s' if runs > 1 else ''} of "
                                  f"this shape under {root}")
        else:
            costs[key] = StepCost(ROUGH_STEP_S, f"a rough constant ({ROUGH_STEP_S} s per run-step, the default shape "
                                                f"on a 2-core CPU): no earlier run of this shape under {root}")
    return costs
