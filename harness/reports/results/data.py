"""What a report reads: the runs of one sweep (params, tags, status) and their metric histories.

A `SweepData` is built once per report invocation (`collect.py`) and shared by every report kind.
Histories are numpy arrays sorted by step (one value per step: a re-logged step keeps its last value).
Params arrive from MLflow as strings; `param()` parses them ("0.1" -> 0.1, "null" -> None).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from harness.algorithms.specs import RUN_SHORTCUTS

EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
# Keys that say where/how a run is executed, or that duplicate algo.* (the top-level shortcuts): never
# used to tell runs of a sweep apart.
NOT_A_FACTOR = ("tracking", "launcher", "output_root", "cache_dir", "trainer.progress", "trainer.resume",
                *RUN_SHORTCUTS, "seed", "experiment_name", "hydra")
METRIC_PREFIXES = ("train/", "eval/", "objective/")
EVAL, ENTROPY = "eval/accuracy", "train/entropy"  # metric keys the reports read by name
LOWPROB_MASKED = "objective/lowprob_masked_frac"


def parse_value(text: Optional[str]) -> Any:
    """An MLflow param string back to a Python value: null/None -> None, true/false -> bool, numbers."""
    if text is None:
        return None
    low = text.strip().lower()
    if low in ("null", "none", ""):
        return None
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def fmt(value: Any, digits: int = 3) -> str:
    """Short human form of a value: '—' for missing, 3 decimals (trailing zeros cut), g-format if tiny/huge."""
    if value is None:
        return "—"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    v = float(value)
    if not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5):
        return f"{v:.{digits}g}"
    return f"{v:.{digits}f}".rstrip("0").rstrip(".")


@dataclass
class Run:
    """One MLflow run of the sweep."""

    run_id: str
    name: str
    status: str  # FINISHED | FAILED | KILLED | RUNNING | SCHEDULED
    params: Dict[str, str] = field(default_factory=dict)
    tags: Dict[str, str] = field(default_factory=dict)
    start_time: Optional[int] = None  # ms since epoch
    end_time: Optional[int] = None
    artifact_uri: Optional[str] = None
    error: Optional[str] = None  # summary line of error.txt (FAILED runs)
    display: Optional[str] = None  # the name without the overrides every run of the sweep shares

    def param(self, key: str, default: Any = None) -> Any:
        return parse_value(self.params[key]) if key in self.params else default

    @property
    def objective(self) -> str:
        return str(self.param("algo.name") or self.tags.get("algo") or "unknown")

    @property
    def precision(self) -> str:
        return str(self.param("precision.name") or self.tags.get("precision") or "unknown")

    @property
    def seed(self) -> Any:
        return self.param("seed")

    @property
    def run_dir(self) -> Optional[Path]:
        return Path(self.tags["harness.run_dir"]) if self.tags.get("harness.run_dir") else None

    @property
    def short_id(self) -> str:
        return self.run_id[:8]

    @property
    def label(self) -> str:
        """Run name for tables: the job's overrides, without the ones every run shares."""
        return self.display or self.name or self.short_id


@dataclass
class SweepData:
    """Everything a report kind may read. `series` maps (run_id, metric) -> (steps, values)."""

    sweep_id: str
    runs: List[Run]
    series: Dict[Tuple[str, str], Tuple[np.ndarray, np.ndarray]]
    tracking_uri: Optional[str] = None
    sweep_dir: Optional[Path] = None
    parent: Optional[Run] = None
    source: str = "mlflow"  # how the histories were read: sqlite | rest | client | local
    notes: List[str] = field(default_factory=list)  # things the collector could not read
    left_out: List[str] = field(default_factory=list)  # runs set aside (odd_params.py), one line each
    cache: Dict[str, Any] = field(default_factory=dict, repr=False)  # per-run summaries etc., see summary.py
    _run_keys: Optional[Dict[str, List[str]]] = field(default=None, init=False, repr=False)

    def curve(self, run: Run | str, key: str) -> Tuple[np.ndarray, np.ndarray]:
        run_id = run if isinstance(run, str) else run.run_id
        return self.series.get((run_id, key), EMPTY)

    def last(self, run: Run | str, key: str) -> Optional[float]:
        _, values = self.curve(run, key)
        return float(values[-1]) if len(values) else None

    def best(self, run: Run | str, key: str) -> Optional[float]:
        _, values = self.curve(run, key)
        finite = values[np.isfinite(values)]
        return float(finite.max()) if len(finite) else None

    def last_step(self, run: Run | str) -> Optional[int]:
        """The last step any metric of the run was logged at (None: nothing logged)."""
        run_id = run if isinstance(run, str) else run.run_id
        ends = [int(self.series[(run_id, k)][0][-1]) for k in self._keys_of().get(run_id, ())
                if len(self.series[(run_id, k)][0])]
        return max(ends) if ends else None

    def has_metrics(self, run: Run | str) -> bool:
        return bool(self._keys_of().get(run if isinstance(run, str) else run.run_id))

    def metric_keys(self) -> List[str]:
        return sorted({key for _, key in self.series})

    def _keys_of(self) -> Dict[str, List[str]]:
        if self._run_keys is None:
            self._run_keys = {}
            for run_id, key in self.series:
                self._run_keys.setdefault(run_id, []).append(key)
        return self._run_keys

    def client(self):
        """An MlflowClient on the sweep's store (None when the data came from job folders)."""
        if not self.tracking_uri or self.source.startswith("local"):
            return None
        from mlflow.tracking import MlflowClient

        return MlflowClient(tracking_uri=self.tracking_uri)

    @property
    def finished(self) -> List[Run]:
        return [r for r in self.runs if r.status == "FINISHED"]

    def factors(self, runs: Optional[Sequence[Run]] = None, exclude: Sequence[str] = ()) -> List[str]:
        """Param keys whose value differs across those of `runs` that have it (default: all runs; the sweep's
        axes), seeds and paths excluded."""
        runs = self.runs if runs is None else runs
        keys = sorted({k for r in runs for k in r.params})
        out = []
        for key in keys:
            if key in exclude or any(key == n or key.startswith(n + ".") for n in NOT_A_FACTOR):
                continue
            if len({r.params[key] for r in runs if key in r.params}) > 1:
                out.append(key)
        return out


def shorten_names(runs: Sequence[Run]) -> None:
    """Set `display` = the run name's comma-separated overrides minus those all runs share
    ('algo=dppo,delta=0.1,seed=0,debug=quick' -> 'algo=dppo,delta=0.1,seed=0' when debug=quick is common)."""
    parts = [r.name.split(",") if r.name else [] for r in runs]
    if len(runs) < 2:
        return
    common = set(parts[0]).intersection(*map(set, parts[1:]))
    for run, tokens in zip(runs, parts):
        kept = [t for t in tokens if t not in common]
        run.display = ",".join(kept) if kept else None
