"""The MLflow UI view of a harness experiment: the runs table with the columns that tell runs apart.

MLflow 3's UI keeps table columns in browser state; a "shared view" (experiment tag
`mlflow.sharedViewState.<key>`, opened with `?viewStateShareKey=<key>`) carries them in the store instead,
so one link shows every sweep's runs with their objective, threshold and headline metrics:

    http://127.0.0.1:5000/#/experiments/<id>/runs?viewStateShareKey=harness

Sweep jobs are nested under their parent run (click a parent's [+] to list them)."""
from __future__ import annotations

import json
from typing import Optional

VIEW_KEY = "harness"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"
PARAM_COLUMNS = ("algo.name", "algo.delta", "precision.name", "seed")
METRIC_COLUMNS = ("train/reward", "eval/accuracy")


def default_view() -> str:
    columns = [f"params.`{p}`" for p in PARAM_COLUMNS] + [f"metrics.`{m}`" for m in METRIC_COLUMNS]
    return json.dumps({"selectedColumns": columns})


def set_default_view(client, experiment_id: str) -> None:
    """Store the harness view on the experiment (cheap; overwrites an older version of it)."""
    client.set_experiment_tag(experiment_id, VIEW_TAG, default_view())


def runs_url(tracking_uri: str, experiment_id: str) -> Optional[str]:
    """The UI link of the experiment's runs table, for a tracking server (None for a local store)."""
    if not tracking_uri.startswith(("http://", "https://")):
        return None
    return f"{tracking_uri.rstrip('/')}/#/experiments/{experiment_id}/runs?viewStateShareKey={VIEW_KEY}"
