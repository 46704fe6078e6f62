"""MLflow's conventions: MLFLOW_TRACKING_URI and MLFLOW_EXPERIMENT_NAME are honoured (command line >
environment > the default store in the output root), the run's first line says where it is tracked, and
MLflow's own INFO lines stay off the terminal unless asked for (-v)."""
from __future__ import annotations

from tracking_helpers import runs_of

CHATTER = ("INFO mlflow", "Creating initial MLflow database tables", "alembic", "Context impl")


def test_the_environment_names_the_store_and_experiment_and_mlflow_stays_quiet(run_harness):
    elsewhere = run_harness.root / "elsewhere.db"
    proc = run_harness("debug=quick", env={"MLFLOW_TRACKING_URI": "sqlite:///elsewhere.db",
                                           "MLFLOW_EXPERIMENT_NAME": "team"}, check=True)
    assert elsewhere.is_file() and not (run_harness.root / "mlruns.db").exists()
    (run,) = runs_of(f"sqlite:///{elsewhere}", "team")
    assert run.info.status == "FINISHED" and run.data.tags["harness.step"]
    first = proc.stdout.splitlines()[0]
    assert "tracked in sqlite:///elsewhere.db" in first and "experiment team" in first, proc.stdout
    terminal = proc.stdout + proc.stderr
    assert not [word for word in CHATTER if word in terminal], terminal[-3000:]


def test_the_command_line_beats_the_environment(run_harness):
    cli_db = run_harness.root / "cli.db"
    proc = run_harness("debug=quick", f"tracking.uri=sqlite:///{cli_db}", "experiment_name=mine",
                       env={"MLFLOW_TRACKING_URI": "sqlite:///elsewhere.db", "MLFLOW_EXPERIMENT_NAME": "team"},
                       check=True)
    assert cli_db.is_file() and not (run_harness.root / "elsewhere.db").exists()
    (run,) = runs_of(f"sqlite:///{cli_db}", "mine")
    assert run.info.status == "FINISHED"
    assert f"tracked in sqlite:///{cli_db}, experiment mine" in proc.stdout.splitlines()[0]


def test_v_shows_mlflow_lines(run_harness):
    proc = run_harness("-v", "debug=quick", "trainer.steps=1", check=True)
    assert "Creating initial MLflow database tables" in proc.stdout + proc.stderr, "-v shows MLflow's lines"
