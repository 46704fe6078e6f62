"""Tests write only into temporary folders: code that falls back on the current folder (an MLflow experiment
created without an artifact location, output_root ".") writes into the session's working folder."""
from __future__ import annotations

from pathlib import Path

from mlflow.tracking import MlflowClient

REPO = Path(__file__).resolve().parents[2]


def test_the_session_runs_outside_the_checkout(working_folder):
    assert Path.cwd() == working_folder and not Path.cwd().is_relative_to(REPO)


def test_default_artifact_root_lands_in_the_working_folder(working_folder, tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns.db'}")
    experiment = client.create_experiment("no-artifact-location")  # MLflow's default root: ./mlruns
    run = client.create_run(experiment)
    note = tmp_path / "note.txt"
    note.write_text("x")
    client.log_artifact(run.info.run_id, str(note))
    (stored,) = working_folder.rglob("note.txt")  # under <working folder>/mlruns/<experiment>/...
    assert stored.is_relative_to(working_folder / "mlruns")


def test_output_root_defaults_to_the_working_folder(working_folder, monkeypatch):
    monkeypatch.delenv("HARNESS_OUTPUT_ROOT", raising=False)
    from harness.tracking.store import default_root

    assert Path(default_root()).resolve() == working_folder.resolve()

