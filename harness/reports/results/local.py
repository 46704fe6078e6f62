"""A sweep read from its job folders alone (config.yaml, metrics.jsonl, status.txt, error.txt), for sweeps
tracked with `tracking=none` or whose MLflow store is gone. Run ids are `job-<n>`."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

from harness.config.yaml_errors import YAML_READ_ERRORS
from harness.reports.results.artifacts import summary_line
from harness.reports.results.data import METRIC_PREFIXES, Run, SweepData
from harness.reports.results.locate import job_dirs


def _flatten(node, prefix: str, out: Dict[str, str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            _flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
    else:
        out[prefix] = "null" if node is None else str(node)


def _name(job: Path) -> str:
    overrides = job / ".hydra" / "overrides.yaml"
    if overrides.is_file():
        from omegaconf import OmegaConf

        try:
            return ",".join(str(o) for o in OmegaConf.load(overrides))
        except YAML_READ_ERRORS:
            pass
    return f"job {job.name}"


def _metrics(path: Path, run_id: str) -> Dict[Tuple[str, str], Tuple[np.ndarray, np.ndarray]]:
    points: Dict[str, Dict[int, float]] = {}
    if not path.is_file():
        return {}
    lines = path.read_text(errors="replace").splitlines()
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except ValueError:
            if number == len(lines):
                continue  # the last line cut short by a killed job
            raise ValueError(f"{path} line {number} is not a JSON record: the file is corrupt") from None
        step = record.pop("step", 0) if isinstance(record, dict) else None
        if isinstance(step, bool) or not isinstance(step, int):
            raise ValueError(f"{path} line {number}: " + (f"step {step!r} is not an integer" if isinstance(record, dict)
                                                          else "not a record of metrics") + "; the file is corrupt")
        for key, value in record.items():
            if key.startswith(METRIC_PREFIXES) and isinstance(value, (int, float)):
                points.setdefault(key, {})[step] = float(value)  # a re-logged step keeps its last value
    out = {}
    for key, by_step in points.items():
        steps = np.array(sorted(by_step), dtype=np.int64)
        out[(run_id, key)] = (steps, np.array([by_step[s] for s in steps], dtype=np.float64))
    return out


def collect_local(sweep_dir: Path, sweep_id: str) -> SweepData:
    from omegaconf import OmegaConf

    runs: List[Run] = []
    series: Dict = {}
    for job in job_dirs(sweep_dir):
        run_id = f"job-{job.name}"
        params: Dict[str, str] = {}
        if (job / "config.yaml").is_file():
            try:
                _flatten(OmegaConf.to_container(OmegaConf.load(job / "config.yaml"), resolve=False), "", params)
            except YAML_READ_ERRORS:
                pass
        status_file, error_file = job / "status.txt", job / "error.txt"
        status = status_file.read_text().strip() if status_file.is_file() else "RUNNING"
        error = summary_line(error_file.read_text(errors="replace")) if error_file.is_file() else None
        runs.append(Run(run_id, _name(job), status, params, {"harness.run_dir": str(job)}, error=error))
        series.update(_metrics(job / "metrics.jsonl", run_id))
    return SweepData(sweep_id, runs, series, None, Path(sweep_dir), source="local job folders")
