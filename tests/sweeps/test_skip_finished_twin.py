"""`finished_twin` asks MLflow's `search_runs` for the newest active FINISHED run with the same config hash
(and code version) in the named experiment only."""
from __future__ import annotations

import time

from mlflow.tracking import MlflowClient

from harness.launchers.skip_finished import HASH_TAG, VERSION_TAG, search_twin


def test_the_twin_is_the_newest_finished_active_run_of_that_experiment_and_code(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    client = MlflowClient(uri)
    mine, other = client.create_experiment("mine"), client.create_experiment("other")

    def run(experiment, digest, status, deleted=False, version="v1"):
        run_id = client.create_run(experiment, tags={HASH_TAG: digest, VERSION_TAG: version}).info.run_id
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
    old_code = run(mine, "eee", "FINISHED", version="v0")
    cases = {"aaa": newest_a, "bbb": None, "ccc": None, "ddd": None, "zzz": None, "eee": None}
    for digest, expected in cases.items():
        assert search_twin(uri, "mine", digest, "v1") == expected, digest
    assert search_twin(uri, "mine", "eee", None) == old_code  # --reuse-across-versions
    assert search_twin(uri, "no such experiment", "aaa") is None
