"""Fast checks of the pieces: secret detection and masking, the spool's file format, the sweep size, and
the server's refusal of bad arguments."""
from __future__ import annotations

import json
import socket

import pytest
from omegaconf import OmegaConf
from tracking_helpers import harness_tool

from harness.tracking.params import flatten, looks_secret, mask_overrides, redacted_yaml, safe_run_name, scrub
from harness.tracking.spool import RunRecord, Spool, find_spools


@pytest.mark.parametrize("name", ["HF_TOKEN", "api_token", "aws.secret_access_key", "MLFLOW_TRACKING_PASSWORD",
                                  "x.api-key", "GPG_KEY", "db.key", "HTTP_AUTHORIZATION", "MLFLOW_TRACKING_AUTH",
                                  "google.credentials_file", "ssh.passphrase"])
def test_credential_names_look_secret(name):
    assert looks_secret(name)


@pytest.mark.parametrize("name", ["trainer.max_new_tokens", "tokenizer", "pad_token_id", "trainer.topk",
                                  "XAUTHORITY", "GIT_AUTHOR_NAME", "keyboard", "monkey", "HARNESS_HEARTBEAT_S"])
def test_ordinary_names_do_not(name):
    assert not looks_secret(name)


def test_masking(monkeypatch):
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-123456789")
    assert scrub("url?t=tok-123456789") == "url?t=***"
    assert scrub("http://alice:pa55word@host:5000/x") == "http://alice:***@host:5000/x"
    assert mask_overrides(["+db.password=abc", "algo=dppo", "~x.api_key"]) == ["+db.password=***", "algo=dppo",
                                                                              "~x.api_key"]
    assert safe_run_name("algo=dppo,+hf.token=abc") == "algo=dppo,+hf.token=***"
    cfg = OmegaConf.create({"a": {"token": "abc", "note": "tok-123456789", "max_new_tokens": 4}, "b": [1]})
    assert flatten(cfg) == {"a.note": "***", "a.max_new_tokens": "4", "b": "[1]"}
    assert "abc" not in redacted_yaml(cfg) and "token: '***'" in redacted_yaml(cfg)


def test_spool_ignores_an_unfinished_last_line(tmp_path):
    spool = Spool(tmp_path / "spool")
    spool.open(RunRecord(uid="u1", tracking_uri="http://x", experiment_name="e", run_name="r", start_time=1))
    spool.append({"op": "metrics", "step": 1, "ts": 1, "values": {"a": 1.0}})
    with open(tmp_path / "spool" / "ops.jsonl", "a") as handle:
        handle.write('{"op": "metr')  # a process killed in the middle of a write
    assert [op["step"] for _, op in spool.ops()] == [1]
    spool.open(RunRecord(uid="u1", tracking_uri="http://y", experiment_name="e", run_name="r", start_time=1))
    assert spool.record().tracking_uri == "http://x", "reopening the same run keeps its record"
    (tmp_path / "0" / "spool").mkdir(parents=True)
    (tmp_path / "0" / "spool" / "run.json").write_text(json.dumps({}))
    assert [s.folder for s in find_spools(tmp_path)] == [tmp_path / "spool", tmp_path / "0" / "spool"]


def test_server_refuses_bad_arguments(tmp_path):
    bad_scheme = harness_tool("server", "--backend-store-uri", "mysql://u:secretpw@h/db", root=tmp_path)
    assert bad_scheme.returncode == 2 and "--backend-store-uri=" in bad_scheme.stderr
    assert "secretpw" not in bad_scheme.stderr and "sqlite:///" in bad_scheme.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        taken = harness_tool("server", "--port", str(port), root=tmp_path)
    assert taken.returncode == 2 and f"--port={port} is not allowed" in taken.stderr
    assert not (tmp_path / "mlruns.db").exists(), "a refused server creates nothing"


def test_run_names_are_short_and_readable():
    from harness.tracking.ui import display_name

    def cfg(algo, precision="bf16", seed=0):  # the default precision is left out of the name
        return OmegaConf.create({"algo": algo, "precision": {"name": precision}, "seed": seed})

    assert display_name(cfg({"name": "dppo", "delta": 0.1, "anchor": "rollout"})) == "dppo δ=0.1 s0"
    assert display_name(cfg({"name": "grpo", "relax_alpha": 0.0}, "fp32", 3)) == "grpo fp32 s3"
    assert display_name(cfg({"name": "grpo", "relax_alpha": 0.1})) == "grpo α=0.1 s0"
    assert display_name(cfg({"name": "spo", "eps": 12.5}, seed=2)) == "spo ε=12.5 s2"
    assert display_name(cfg({"name": "dppo", "delta": 0.1}), "02:31:07", "debug=quick,algo=dppo") == \
        "dppo δ=0.1 s0 quick @ 02:31:07"  # a pipeline check is not named like a result
    assert display_name(cfg({"name": "dppo", "delta": 0.1}), "", "algo=dppo,seed=0") == "dppo δ=0.1 s0"
    assert display_name(cfg({"name": "dppo", "delta": 0.15}), "04:31:07") == "dppo δ=0.15 s0 @ 04:31:07"


def test_reruns_and_sweep_jobs_of_one_config_get_distinct_names(tmp_path):
    from harness.tracking.ui import folder_label

    first, second = tmp_path / "outputs/2026-12-02/04-31-07-123456", tmp_path / "outputs/2026-12-02/04-33-40-000123"
    sweep = tmp_path / "multirun/2026-12-02/04-35-12-500000"
    named = tmp_path / "multirun/tiny/2026-12-02_04-36-01"
    labels = [folder_label(first), folder_label(second), folder_label(sweep / "0", str(sweep)),
              folder_label(sweep / "3", str(sweep)), folder_label(named / "g1_0", str(named))]
    assert labels == ["04:31:07", "04:33:40", "04:35:12 #0", "04:35:12 #3", "04:36:01 #g1_0"]
    assert folder_label(tmp_path / "my-run") == "my-run", "a folder named otherwise shows its name"
