"""A sweep ends by pointing at its reports and its MLflow parent run; `report --kind K` adds or replaces only
K: the index, in the folder and in the parent run's artifacts, keeps every report there (real MLflow store)."""
from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from mlflow.tracking import MlflowClient


def linked(index_html: str) -> set:
    return set(re.findall(r'href="([\w.-]+)/index\.html"', index_html))


def parent_index(client: MlflowClient, parent: str) -> tuple:
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(client.download_artifacts(parent, "reports/index.html", tmp)).read_text()
        readme = Path(client.download_artifacts(parent, "reports/README.md", tmp)).read_text()
    return linked(html), set(re.findall(r"\]\(([\w.-]+)/index\.html\)", readme))


def test_partial_rebuild_keeps_every_report(run_harness, tmp_path):
    proc = run_harness("multirun", "algo=dppo,drpo", "debug=quick", "trainer.steps=4", check=True)
    (sweep_dir,) = (run_harness.root / "multirun").glob("*/*")
    info = json.loads((sweep_dir / "parent_run.json").read_text())
    last = proc.stdout.strip().splitlines()[-3:]
    assert last[0] == f"  folder: {sweep_dir}"
    assert last[1] == f"  reports: {sweep_dir / 'reports' / 'index.html'}"
    assert last[2].startswith(f"  mlflow: run {info['run_id']} in {info['tracking_uri']}")
    assert f"#/experiments/{info['experiment_id']}/runs/{info['run_id']}" in last[2]

    listed = run_harness("report", check=True).stdout  # no target: the sweeps and where their reports are
    assert f"reports: {(sweep_dir / 'reports' / 'index.html').relative_to(run_harness.root)}" in listed

    client = MlflowClient(info["tracking_uri"])
    built = linked((sweep_dir / "reports" / "index.html").read_text())
    assert {"overview", "geometry"} <= built and "sensitivity" not in built
    assert parent_index(client, info["run_id"]) == (built, built)

    out = tmp_path / "sensitivity_only"
    rebuilt = run_harness("report", str(sweep_dir), "--kind", "sensitivity", "--out", str(out), check=True)
    assert f"logged to parent run {info['run_id']}" in rebuilt.stdout
    assert linked((out / "index.html").read_text()) == {"sensitivity"}
    assert linked((sweep_dir / "reports" / "index.html").read_text()) == built, "the sweep's own index changed"
    assert parent_index(client, info["run_id"]) == (built | {"sensitivity"},) * 2

    # rebuilt in place, one kind: the folder's index keeps the others
    run_harness("report", str(sweep_dir), "--kind", "overview", check=True)
    assert linked((sweep_dir / "reports" / "index.html").read_text()) == built
    assert parent_index(client, info["run_id"]) == (built | {"sensitivity"},) * 2


def test_a_named_sweep_ends_with_its_reports_and_parent_run(run_harness, tmp_path):
    folder = tmp_path / "sweeps"
    folder.mkdir()
    (folder / "tiny.yaml").write_text("hypothesis: two grids, one folder\nreports: [overview]\n"
                                      "overrides: [debug=quick, trainer.steps=2]\ngrids:\n  - {algo: [dppo]}\n"
                                      "  - {algo: [drpo]}\n")
    proc = run_harness("sweep", "tiny", env={"HARNESS_SWEEPS": str(folder)}, check=True)
    (sweep_dir,) = (run_harness.root / "multirun" / "tiny").iterdir()
    info = json.loads((sweep_dir / "parent_run.json").read_text())
    assert proc.stdout.strip().splitlines()[-3:] == [
        f"  folder: {sweep_dir}", f"  reports: {sweep_dir / 'reports' / 'index.html'}",
        f"  mlflow: run {info['run_id']} in {info['tracking_uri']} (UI: python -m harness server --backend-store-uri "
        f"{info['tracking_uri']}, then http://127.0.0.1:5000/#/experiments/{info['experiment_id']}/runs/{info['run_id']}"
        "?workflowType=machine_learning)"]
    assert proc.stdout.count("  reports: /") == 1, "each grid's multirun must not say it before the reports exist"
