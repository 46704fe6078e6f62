"""Reading back what a test run left in its MLflow store."""
from __future__ import annotations

from pathlib import Path


def client_for(root: Path):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{root / 'mlruns.db'}")


def runs_of(root: Path, experiment: str = "harness", role: str = "child"):
    """The job runs (role 'child', or a single run's) of an experiment; role='parent' gives the sweeps."""
    client = client_for(root)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"no experiment {experiment!r} in {root}"
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    is_parent = {r.info.run_id: r.data.tags.get("harness.role") == "parent" for r in runs}
    return client, [r for r in runs if is_parent[r.info.run_id] == (role == "parent")]
