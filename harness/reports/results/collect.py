"""Collecting a sweep from MLflow: one paged `search_runs` query for the runs (params, tags, status), then
the metric histories in bulk — one SQL query on a SQLite store (`history_sql`), the server's bulk endpoint
for a tracking server (`history_rest`), or, as a fallback, one request per (run, metric)."""
from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import List, Optional, Sequence

from harness.reports.results.artifacts import error_line
from harness.reports.results.data import METRIC_PREFIXES, Run, SweepData, shorten_names
from harness.reports.results.history_rest import read_histories_client, read_histories_rest
from harness.reports.results.history_sql import UnknownSchema, read_histories, sqlite_path
from harness.reports.results.locate import Target, TargetError, natural_key

log = logging.getLogger("harness")
PAGE = 1000


def experiment_ids(client, target: Target) -> List[str]:
    ids = list(target.experiment_ids)
    for name in target.experiment_names:
        found = client.get_experiment_by_name(name)
        if found is None:
            known = ", ".join(sorted(e.name for e in client.search_experiments()))
            raise TargetError(f"experiment {name!r} not found in {target.tracking_uri}; known: {known or 'none'}")
        ids.append(found.experiment_id)
    if not ids:
        ids = [e.experiment_id for e in client.search_experiments()]
    return ids


def search_sweep_runs(client, exp_ids: Sequence[str], target: Target) -> list:
    """All runs of the sweep (children and parent) in pages of `PAGE`: tag harness.sweep_id, or the parent's
    children (tag mlflow.parentRunId) when the sweep id is unknown."""
    if target.sweep_id:
        if "'" in target.sweep_id:
            raise TargetError(f"sweep id {target.sweep_id!r} contains a quote")
        query = f"tags.`harness.sweep_id` = '{target.sweep_id}'"
    elif target.parent_run_id:
        query = f"tags.`mlflow.parentRunId` = '{target.parent_run_id}'"
    else:
        raise TargetError("a report needs a sweep id or a parent run id")
    runs, token = [], None
    while True:
        page = client.search_runs(list(exp_ids), query, max_results=PAGE, page_token=token)
        runs.extend(page)
        token = page.token
        if not token:
            break
    found = {r.info.run_id for r in runs}
    runs.extend(client.get_run(rid) for rid in target.twin_run_ids if rid not in found)  # skipped jobs' twins
    return runs


def _to_run(mlrun) -> Run:
    info, d = mlrun.info, mlrun.data
    return Run(info.run_id, info.run_name or d.tags.get("mlflow.runName", ""), info.status, dict(d.params),
               dict(d.tags), info.start_time, info.end_time, info.artifact_uri)


def _job_order(run: Run):
    """Job folder order (0, 1, ..., or g0_0, g0_1, g1_0, ...), then start time."""
    job = run.tags.get("harness.job_num") or (run.run_dir.name if run.run_dir else "")
    return (0 if job else 1, natural_key(job), run.start_time or 0)


def collect(target: Target, history: str = "auto", prefixes: Sequence[str] = METRIC_PREFIXES) -> SweepData:
    """The sweep's runs and histories. history: auto | sql | rest | client (client = one request per
    (run, metric), the naive baseline)."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    db = sqlite_path(target.tracking_uri)
    if db is not None and not db.is_file():  # MlflowClient would create an empty store there
        raise TargetError(f"no MLflow store at {db}")
    client = MlflowClient(tracking_uri=target.tracking_uri)
    found = search_sweep_runs(client, experiment_ids(client, target), target)
    runs, parent = [], None
    for mlrun in found:
        run = _to_run(mlrun)
        if run.tags.get("harness.role") == "parent" or run.run_id == target.parent_run_id:
            parent = run
        else:
            runs.append(run)
    if parent is None and target.parent_run_id:
        try:
            parent = _to_run(client.get_run(target.parent_run_id))
        except (MlflowException, OSError):  # a parent deleted or unreachable: the report has no parent
            pass
    runs.sort(key=_job_order)
    shorten_names(runs)
    for run in runs:  # one artifact read per failed run (local files when the store is local)
        if run.status in ("FAILED", "KILLED"):
            run.error = error_line(client, run.run_id, run.run_dir, run.artifact_uri)
    data = SweepData(target.sweep_id or (parent.tags.get("harness.sweep_id", "") if parent else ""), runs, {},
                     target.tracking_uri, target.sweep_dir or _sweep_dir(runs), parent)
    _read_histories(data, client, found, history, prefixes)
    return data


def _sweep_dir(runs: List[Run]) -> Optional[Path]:
    """The folder holding the runs' job folders, if they share one that exists here."""
    parents = {r.run_dir.parent for r in runs if r.run_dir}
    if len(parents) == 1:
        folder = parents.pop()
        return folder if folder.is_dir() else None
    return None


def _read_histories(data: SweepData, client, found, history: str, prefixes: Sequence[str]) -> None:
    from mlflow.exceptions import MlflowException  # (the caller loaded mlflow)

    ids = [r.run_id for r in data.runs]
    keys_by_run = {m.info.run_id: [k for k in m.data.metrics if k.startswith(tuple(prefixes))] for m in found}
    db = sqlite_path(data.tracking_uri)
    scheme = (data.tracking_uri or "").split(":", 1)[0]
    if history == "auto":
        history = "sql" if db is not None else ("rest" if scheme in ("http", "https") else "client")
    if history == "sql":
        try:
            data.series, data.source = read_histories(db, ids, prefixes), f"MLflow SQLite store {db} (one SQL query)"
            return
        except UnknownSchema as err:
            log.info("%s; metric histories read through MLflow's API", err)
        except (sqlite3.Error, OSError, ValueError) as err:
            data.notes.append(f"bulk SQL read failed ({err}); metric histories were read run by run")
    elif history == "rest":
        keys = sorted({k for r in ids for k in keys_by_run.get(r, ())})
        try:
            data.series = read_histories_rest(data.tracking_uri, ids, keys)
            data.source = f"MLflow server {data.tracking_uri} (bulk metric-history requests)"
            return
        except (MlflowException, OSError, RuntimeError, ValueError, KeyError, AttributeError) as err:  # down, odd
            data.notes.append(f"bulk metric-history endpoint failed ({str(err)[:120]}); read run by run")
    data.series = read_histories_client(client, ids, keys_by_run)
    data.source = f"MLflow {data.tracking_uri} (one request per run and metric)"
