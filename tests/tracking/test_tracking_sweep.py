"""A sweep through the CLI with the sweep's parent run (harness/sweeps/continued.py): one parent run per invocation holding the
sweep definition, one child per job nested under it by tag (mlflow.parentRunId), parent status from the
jobs' statuses."""
from __future__ import annotations

import json

import yaml



def _runs(root):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlruns.db'}")
    experiment = client.get_experiment_by_name("harness")
    return client, client.search_runs([experiment.experiment_id], max_results=100)


def test_a_sweep_has_one_parent_and_nested_children(run_harness):
    proc = run_harness("multirun", "algo=dppo,drpo", "delta=0.1,0.2", "debug=quick", "trainer.steps=3", check=True)
    assert "4 runs: 4 finished, 0 failed" in proc.stdout
    client, runs = _runs(run_harness.root)
    parents = [r for r in runs if r.data.tags.get("harness.role") == "parent"]
    children = [r for r in runs if r.data.tags.get("harness.role") == "child"]
    assert len(parents) == 1 and len(children) == 4 and len(runs) == 5
    parent = parents[0]
    assert parent.info.status == "FINISHED"
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parent.info.run_id}
    assert sorted((c.data.params["algo.name"], float(c.data.params["algo.delta"])) for c in children) == \
        [("dppo", 0.1), ("dppo", 0.2), ("drpo", 0.1), ("drpo", 0.2)]
    for child in children:
        assert [m.step for m in client.get_metric_history(child.info.run_id, "train/reward")] == [1, 2, 3]
    sweep_ids = {r.data.tags["harness.sweep_id"] for r in runs}
    assert len(sweep_ids) == 1 and parent.data.tags["harness.sweep_size"] == "4"

    assert "sweep.yaml" in [a.path for a in client.list_artifacts(parent.info.run_id)]
    definition = yaml.safe_load(open(client.download_artifacts(parent.info.run_id, "sweep.yaml",
                                                               str(run_harness.root))).read())
    assert "algo=dppo,drpo" in definition["overrides"] and definition["sweep_id"] in sweep_ids
    sweep_dir = next((run_harness.root / "multirun").glob("*/*"))
    recorded = json.loads((sweep_dir / "parent_run.json").read_text())
    assert recorded["run_id"] == parent.info.run_id and recorded["experiment_id"] == parent.info.experiment_id
    assert recorded["tracking_uri"] == f"sqlite:///{run_harness.root / 'mlruns.db'}"


def test_a_sweep_tracked_while_the_server_is_down_syncs_into_the_same_shape(run_harness, tmp_path):
    import socket
    import subprocess
    import sys

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{probe.getsockname()[1]}"
    proc = run_harness("multirun", "algo=dppo,drpo", "debug=quick", "tracking=server", f"tracking.uri={down}",
                       check=True)
    assert "2 runs: 2 finished" in proc.stdout
    assert (proc.stdout + proc.stderr).count("unreachable (") == 1, "one warning for the whole sweep"
    sweep_dir = next((run_harness.root / "multirun").glob("*/*"))
    assert json.loads((sweep_dir / "parent_run.json").read_text())["run_id"] is None

    store = f"sqlite:///{tmp_path / 'later.db'}"
    sync = subprocess.run([sys.executable, "-m", "harness", "sync", str(sweep_dir), "--tracking-uri", store],
                          capture_output=True, text=True, timeout=300)
    assert sync.returncode == 0, sync.stderr[-3000:]
    assert sync.stdout.count("synced ") == 3
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store)
    runs = client.search_runs([client.get_experiment_by_name("harness").experiment_id])
    parent = next(r for r in runs if r.data.tags.get("harness.role") == "parent")
    children = [r for r in runs if r.data.tags.get("harness.role") == "child"]
    assert parent.info.status == "FINISHED" and len(children) == 2
    assert {c.data.tags.get("mlflow.parentRunId") for c in children} == {parent.info.run_id}
    assert all(c.info.status == "FINISHED" and c.data.params["algo.name"] for c in children)
    assert "sweep.yaml" in [a.path for a in client.list_artifacts(parent.info.run_id)]
