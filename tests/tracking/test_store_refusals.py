"""MLflow's refusals are not outages (issue 50, case 4). A run the store refuses for good (deleted in the UI
and then resumed, or deleted while it runs; resumed into a store that was deleted and made anew; an
experiment name over 500 characters) says so in one line, goes on, keeps its record in its folder, and is
never spooled for a `sync` that could not succeed. Real MLflow stores, each tracker in its own process."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tracking_helpers import writer_env

ROOT = str(Path(__file__).parents[2])


def _track(uri: str, run_dir: Path, experiment: str = "refusals", resume: str = "", delete_at: int = 0):
    """A tracker in a fresh process: opens (or resumes) a run, logs 4 steps (the run deleted from the store
    after step `delete_at`, when given), finishes it FINISHED; (its output, the tracker's state)."""
    code = textwrap.dedent(f"""
        import json, sys
        sys.path[:0] = [{ROOT!r}]
        from pathlib import Path
        from mlflow.tracking import MlflowClient
        from harness.tracking.store import get_or_create_experiment
        from harness.tracking.tracker import MlflowTracker, RunSpec

        uri, experiment = {uri!r}, {experiment!r}
        spec = RunSpec(tracking_uri=uri, experiment_name=experiment, run_name="r", params={{"p": "1"}}, tags={{}})
        tracker = MlflowTracker(Path({str(run_dir)!r}), spec,
                                experiment_id=lambda: get_or_create_experiment(MlflowClient(uri), experiment, None),
                                resume_run_id={resume!r} or None)
        print("where:", tracker.where(), flush=True)
        for step in range(1, 5):
            tracker.log_metrics({{"m": float(step)}}, step=step)
            tracker.flush()
            if step == {delete_at}:
                MlflowClient(uri).delete_run(tracker.run_id)
        tracker.finish("FINISHED")
        print("state:", json.dumps({{"refused": tracker.refused, "run_id": tracker.run_id}}), flush=True)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=writer_env({"HARNESS_HEARTBEAT_S": "0.5"}))
    assert proc.returncode == 0, proc.stderr[-3000:]
    state = json.loads(proc.stdout.split("state:", 1)[1])
    return proc.stdout + proc.stderr, state


def _killed_and_deleted(uri: str) -> str:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    run = client.create_run(client.create_experiment("refusals"))
    client.set_terminated(run.info.run_id, "KILLED")
    client.delete_run(run.info.run_id)
    return run.info.run_id


def _assert_refused(output: str, state: dict, run_dir: Path, *words: str) -> None:
    assert state["refused"], output
    lines = [line for line in output.splitlines() if "refused this run" in line]
    assert len(lines) == 1 and all(w in lines[0] for w in words), output
    assert "not an outage" in lines[0] and "sync cannot add it" in lines[0]
    assert "unreachable" not in output and "sync again" not in output and "harness sync" not in output, output
    assert "WARNING" not in output, output
    assert not (run_dir / "spool").exists(), "a refused run is never spooled for a sync that cannot succeed"
    assert (run_dir / "status.txt").read_text().strip() == "FINISHED"  # the run's own record is true and whole
    steps = [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]


def test_resuming_a_run_deleted_in_the_ui_is_a_refusal(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    run_id = _killed_and_deleted(uri)
    output, state = _track(uri, tmp_path / "run", resume=run_id)
    _assert_refused(output, state, tmp_path / "run", "must be in the 'active' state")
    assert "not tracked in MLflow" in output
    from mlflow.tracking import MlflowClient

    run = MlflowClient(uri).get_run(run_id)  # left as it was: KILLED, deleted
    assert run.info.status == "KILLED" and run.info.lifecycle_stage == "deleted"


def test_a_run_deleted_while_it_runs_is_a_refusal(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    output, state = _track(uri, tmp_path / "run", delete_at=2)
    _assert_refused(output, state, tmp_path / "run", f"mlflow run {state['run_id']} is deleted")


def test_resuming_into_a_deleted_and_remade_store_is_a_refusal(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    first, state = _track(uri, tmp_path / "first")
    assert not state["refused"], first
    (tmp_path / "mlruns.db").unlink()  # the store deleted; the resumed run's process makes it anew
    output, state = _track(uri, tmp_path / "run", resume=state["run_id"])
    _assert_refused(output, state, tmp_path / "run")


def test_an_experiment_name_over_500_characters_is_a_refusal(tmp_path):
    output, state = _track(f"sqlite:///{tmp_path / 'mlruns.db'}", tmp_path / "run", experiment="x" * 501)
    _assert_refused(output, state, tmp_path / "run", "exceeds the maximum length of 500")
