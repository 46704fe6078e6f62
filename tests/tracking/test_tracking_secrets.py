"""Secrets never reach the tracking store: a credential-named config value, a credential-named env var
interpolated into an innocent key, and overrides in run names are kept out of params, tags, run names
and artifacts (the logged config.yaml included)."""
from __future__ import annotations

from pathlib import Path

CONFIG_SECRET = "cfg-hunter2-Zq81x"
ENV_SECRET = "env-hunter3-Pw55y"


def test_secrets_are_in_no_param_tag_name_or_artifact(run_harness, tmp_path):
    from mlflow.tracking import MlflowClient

    run_harness("debug=quick", f"+launcher.params.api_token={CONFIG_SECRET}",
                "+launcher.params.note=${oc.env:HARNESS_TEST_PASSWORD}", check=True,
                env={"HARNESS_TEST_PASSWORD": ENV_SECRET, "MLFLOW_TRACKING_PASSWORD": "unused-but-secret"})
    client = MlflowClient(tracking_uri=f"sqlite:///{run_harness.root / 'mlruns.db'}")
    run = client.search_runs([client.get_experiment_by_name("harness").experiment_id])[0]

    recorded = [run.info.run_name, *run.data.params, *run.data.params.values(), *run.data.tags.values()]
    downloaded = Path(client.download_artifacts(run.info.run_id, "", str(tmp_path / "artifacts")))
    files = [p for p in downloaded.rglob("*") if p.is_file()]
    assert any(p.name == "config.yaml" for p in files)
    recorded += [p.read_text(errors="replace") for p in files]
    run_dir = next((run_harness.root / "outputs").glob("*/*"))
    recorded.append((run_dir / "config.yaml").read_text())
    for secret in (CONFIG_SECRET, ENV_SECRET, "unused-but-secret"):
        leaks = [text[:200] for text in recorded if secret in text]
        assert not leaks, f"{secret!r} leaked into: {leaks}"

    assert "launcher.params.api_token" not in run.data.params
    assert run.data.params["launcher.params.note"] == "***", "an env secret interpolated elsewhere is masked"
    assert "api_token=***" in run.data.tags["harness.overrides"]
    assert "api_token: '***'" in (run_dir / "config.yaml").read_text()
    assert run.data.params["trainer.max_new_tokens"], "token *counts* are not secrets"
