"""Metric histories from an MLflow tracking server in a bounded number of requests, and the naive
per-run-per-metric reader (fallback for stores without a bulk path; the benchmark's baseline).

The server's `metrics/get-history-bulk-interval` endpoint (used by the MLflow UI) returns one metric for
up to 100 runs, up to 2,500 points per run (longer histories are evenly sampled, first/last kept):
ceil(runs / 100) × metrics requests in all.
"""
from __future__ import annotations

import math
from typing import Dict, Iterable, Sequence, Tuple

import numpy as np

from harness.reports.results.history_sql import MAX_FLOAT

BULK_ENDPOINT = "/ajax-api/2.0/mlflow/metrics/get-history-bulk-interval"
RUNS_PER_REQUEST = 100
POINTS_PER_RUN = 2500
Histories = Dict[Tuple[str, str], Tuple[np.ndarray, np.ndarray]]


def group_points(points: Iterable[Tuple[str, str, int, int, float]]) -> Histories:
    """(run_id, key, step, timestamp, value) points -> {(run_id, key): (steps, values)}, sorted by step,
    keeping the latest value of a re-logged step."""
    grouped: Dict[Tuple[str, str], list] = {}
    for run_id, key, step, stamp, value in points:
        grouped.setdefault((run_id, key), []).append((int(step), int(stamp or 0), float(value)))
    out: Histories = {}
    for ident, rows in grouped.items():
        rows.sort()
        steps = np.array([r[0] for r in rows], dtype=np.int64)
        values = np.array([r[2] for r in rows], dtype=np.float64)
        keep = np.r_[steps[1:] != steps[:-1], True]
        values = values[keep]
        values[values >= MAX_FLOAT] = np.inf  # MLflow stores ±inf as ±max float
        values[values <= -MAX_FLOAT] = -np.inf
        out[ident] = (steps[keep], values)
    return out


def _value(raw) -> float:
    """JSON metric values: numbers, or the strings 'NaN' / 'Infinity' / '-Infinity' for non-finite ones."""
    if isinstance(raw, str):
        return {"nan": math.nan, "infinity": math.inf, "-infinity": -math.inf, "inf": math.inf,
                "-inf": -math.inf}.get(raw.lower(), math.nan)
    return float(raw)


def read_histories_rest(tracking_uri: str, run_ids: Sequence[str], keys: Sequence[str]) -> Histories:
    """All (run, key) histories through the bulk endpoint. Raises on HTTP errors (the caller falls back)."""
    from mlflow.utils.credentials import get_default_host_creds
    from mlflow.utils.rest_utils import http_request

    creds = get_default_host_creds(tracking_uri)
    points = []
    for key in keys:
        for i in range(0, len(run_ids), RUNS_PER_REQUEST):
            chunk = list(run_ids[i:i + RUNS_PER_REQUEST])
            response = http_request(creds, BULK_ENDPOINT, "GET", params={
                "run_ids": chunk, "metric_key": key, "max_results": POINTS_PER_RUN})
            if response.status_code != 200:
                raise RuntimeError(f"{BULK_ENDPOINT} answered {response.status_code}: {response.text[:200]}")
            for m in response.json().get("metrics", []):
                points.append((m["run_id"], m.get("key", key), m.get("step", 0), m.get("timestamp", 0),
                               _value(m.get("value", math.nan))))
    return group_points(points)


def read_histories_client(client, run_ids: Sequence[str], keys_by_run: Dict[str, Sequence[str]]) -> Histories:
    """One `get_metric_history` request per (run, key): the naive reader."""
    points = []
    for run_id in run_ids:
        for key in keys_by_run.get(run_id, ()):
            for m in client.get_metric_history(run_id, key):
                points.append((run_id, key, m.step, m.timestamp, m.value))
    return group_points(points)
