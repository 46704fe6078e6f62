"""Secrets never reach the tracking store: a credential-named config value, a credential-named env var
interpolated into an innocent key, and overrides in run names are kept out of params, tags, run names
and artifacts (the logged config.yaml included)."""
from __future__ import annotations

from pathlib import Path

CONFIG_SECRET = "cfg-hunter2-Zq81x"
ENV_SECRET = "env-hunter3-Pw55y"


def test_a_credential_named_key_is_refused_without_echoing_it(run_harness):
    """No component reads a credential-named key the user adds: it is refused (one line, exit 2), and that line
    does not repeat the value."""
    proc = run_harness("debug=quick", f"+launcher.api_token={CONFIG_SECRET}")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr[-2000:]
    assert "launcher.api_token" in proc.stderr and CONFIG_SECRET not in proc.stdout + proc.stderr


def test_secrets_are_in_no_param_tag_name_or_artifact(run_harness, tmp_path):
    from mlflow.tracking import MlflowClient

    # an innocent key that every run records (the local launcher does not use a cluster profile)
    run_harness("debug=quick", "launcher.profile=${oc.env:HARNESS_TEST_PASSWORD}", check=True,
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
    for secret in (ENV_SECRET, "unused-but-secret"):
        leaks = [text[:200] for text in recorded if secret in text]
        assert not leaks, f"{secret!r} leaked into: {leaks}"

    assert run.data.params["launcher.profile"] == "***", "an env secret interpolated elsewhere is masked"
    assert "profile: '***'" in (run_dir / "config.yaml").read_text()
    assert run.data.params["trainer.max_new_tokens"], "token *counts* are not secrets"
