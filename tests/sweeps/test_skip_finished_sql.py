"""`finished_twin` reads a local SQLite store with one SQL query: it must answer what MLflow's `search_runs`
answers for the same tag filter (FINISHED, active, newest first, in the named experiment only)."""
from __future__ import annotations

import time

from mlflow.tracking import MlflowClient

from harness.launchers.skip_finished import HASH_TAG, _client_twin, sqlite_twin


def test_sql_twin_answers_what_search_runs_answers(tmp_path):
    db = tmp_path / "mlruns.db"
    uri = f"sqlite:///{db}"
    client = MlflowClient(uri)
    mine, other = client.create_experiment("mine"), client.create_experiment("other")

    def run(experiment, digest, status, deleted=False):
        run_id = client.create_run(experiment, tags={HASH_TAG: digest}).info.run_id
        client.set_terminated(run_id, status=status)
        if deleted:
            client.delete_run(run_id)
        time.sleep(0.01)  # distinct start times: "newest" is well defined
        return run_id

    run(mine, "aaa", "FINISHED")
    newest_a = run(mine, "aaa", "FINISHED")
    run(mine, "aaa", "FAILED")
    run(mine, "bbb", "FINISHED", deleted=True)
    run(mine, "ccc", "KILLED")
    run(other, "ddd", "FINISHED")
    cases = {"aaa": newest_a, "bbb": None, "ccc": None, "ddd": None, "zzz": None}
    for digest, expected in cases.items():
        assert _client_twin(uri, "mine", digest) == expected, digest
        assert sqlite_twin(db, "mine", digest) == expected, digest
    assert sqlite_twin(db, "no such experiment", "aaa") is None
