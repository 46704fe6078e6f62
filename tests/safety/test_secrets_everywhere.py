"""One masking rule everywhere the harness writes or prints: a secret-named override (`+tracking.token=`, now refused as
unread without echoing it),
a secret-named environment variable interpolated into an innocent key (`${oc.env:HF_TOKEN}`) and the
password of the tracking URI (`http://user:pass@host`, against a real `harness server`) appear in no
stdout/stderr line (MLflow's "View run at" links included), job.json, .hydra/*.yaml, multirun.yaml,
config.yaml, nor in MLflow's params, tags, run or experiment names; an experiment named after a secret is
refused before anything is created."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from tracking_helpers import Server, free_port

TOKEN = "tok-Zq81x-hunter2"
HF_TOKEN = "hf_envSecret_Pw55y"
URI_PASSWORD = "uriPass-9k3Lm"


def written_texts(root: Path) -> dict:
    return {str(p): p.read_text(errors="replace") for folder in ("outputs", "multirun") if (root / folder).is_dir()
            for p in (root / folder).rglob("*") if p.is_file() and p.suffix in (".yaml", ".json", ".txt", ".log")}


def store_texts(db: Path) -> list:
    with sqlite3.connect(db) as conn:
        rows = [*conn.execute("SELECT key, value FROM params"), *conn.execute("SELECT key, value FROM tags"),
                *conn.execute("SELECT name, artifact_location FROM experiments"),
                *conn.execute("SELECT run_uuid, name FROM runs")]
    return [str(v) for row in rows for v in row]


def assert_no_secret(texts, where: str) -> None:
    for secret in (TOKEN, HF_TOKEN, URI_PASSWORD):
        leaks = [(name, text[max(0, text.find(secret) - 150):text.find(secret) + 40])
                 for name, text in texts.items() if secret in text]
        assert not leaks, f"{secret!r} leaked into {where}: {leaks}"


@pytest.fixture
def server(tmp_path):
    srv = Server(tmp_path / "server", free_port())
    srv.root.mkdir()
    srv.start()
    yield srv
    srv.stop()


def test_secrets_masked_in_every_output_of_a_run_and_a_sweep(run_harness, server):
    env = {"HF_TOKEN": HF_TOKEN}
    uri = f"http://alice:{URI_PASSWORD}@127.0.0.1:{server.port}"
    # a credential-named key the user adds is refused (no component reads it) without echoing its value; the
    # env secret goes into an innocent key that every run records (the local launcher uses no cluster profile)
    refused = run_harness("debug=quick", f"+tracking.token={TOKEN}")
    assert refused.returncode == 2 and TOKEN not in refused.stdout + refused.stderr, refused.stderr[-2000:]
    secrets = ("launcher.profile=${oc.env:HF_TOKEN}",)
    single = run_harness("debug=quick", "trainer.steps=1", *secrets, f"tracking.uri={uri}", env=env, check=True)
    # the sweep's parent_run.json holds the URI masked; the sweep's processes connect with the URI they were given
    sweep = run_harness("-m", "debug=quick", "trainer.steps=1", "seed=1,2", *secrets, f"tracking.uri={uri}",
                        env=env, check=True)
    printed = {"single run stdout": single.stdout, "single run stderr": single.stderr,
               "sweep stdout": sweep.stdout, "sweep stderr": sweep.stderr}
    assert_no_secret(printed, "the terminal")
    files = written_texts(run_harness.root)
    assert any(name.endswith("job.json") for name in files) and any("/.hydra/" in name for name in files)
    assert any(name.endswith("multirun.yaml") for name in files)
    assert_no_secret(files, "the run folders")
    assert_no_secret({"mlflow": "\n".join(store_texts(server.root / "mlruns.db"))}, "the MLflow store")
    parent_files = [name for name in files if name.endswith("parent_run.json")]
    assert len(parent_files) == 1 and "alice:***@" in files[parent_files[0]]
    from mlflow.tracking import MlflowClient

    runs = MlflowClient(server.url).search_runs([e.experiment_id for e in MlflowClient(server.url).search_experiments()])
    parents = [r for r in runs if r.data.tags.get("harness.role") == "parent"]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
    assert sorted(r.data.params["seed"] for r in children) == ["1", "2"]


def test_experiment_named_after_a_secret_is_refused(run_harness):
    proc = run_harness("debug=quick", "experiment_name=${oc.env:HF_TOKEN}", env={"HF_TOKEN": HF_TOKEN})
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(proc.stderr.strip().splitlines()) == 1 and "experiment_name=***" in proc.stderr
    assert HF_TOKEN not in proc.stdout + proc.stderr
    assert not (run_harness.root / "outputs").exists()
    if (run_harness.root / "mlruns.db").is_file():
        assert_no_secret({"mlflow": "\n".join(store_texts(run_harness.root / "mlruns.db"))}, "the MLflow store")
