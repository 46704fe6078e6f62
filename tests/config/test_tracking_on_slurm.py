"""A Slurm job tracks from a compute node, where a loopback address is the node itself: a tracking store at one
(tracking=server's default http://127.0.0.1:5000) is refused for launcher=slurm in one line saying what to
set, unless the profile says the cluster is this machine (test_cluster) or launcher.allow_loopback_tracking."""
from __future__ import annotations

import pytest

from harness.cli import run_cli
from harness.launchers.compose import compose
from harness.config.errors import ConfigError
from harness.launchers.compose import validated as validate

GPU = ["launcher=slurm", "launcher.profile=gpu_node"]


@pytest.mark.parametrize("uri", ["http://127.0.0.1:5000", "http://localhost:5000", "https://127.1.2.3",
                                 "http://[::1]:5000", "http://0.0.0.0:5000", "postgresql://me@localhost/mlflow"])
def test_a_loopback_store_is_refused_for_slurm(uri, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with pytest.raises(ConfigError) as err:
        validate(compose([*GPU, "tracking=server", f"tracking.uri='{uri}'"]))
    text = str(err.value)
    assert text.startswith(f"tracking.uri='{uri}' is not allowed with launcher=slurm: on a compute node")
    assert "tracking.uri=http://<login-node>:5000" in text and "launcher.allow_loopback_tracking=true" in text
    assert "\n" not in text


def test_mlflow_tracking_uri_at_loopback_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://localhost:5000")
    with pytest.raises(ConfigError, match="^environment variable MLFLOW_TRACKING_URI='http://localhost:5000' is not"):
        validate(compose(GPU))


@pytest.mark.parametrize("overrides", [
    [*GPU, "tracking=server", "tracking.uri=http://login1.cluster:5000"],
    [*GPU, "tracking=server", "launcher.allow_loopback_tracking=true"],
    ["launcher=slurm", "tracking=server"],  # the default profile, test_cluster: the cluster is this machine
    ["launcher=submitit_local", "launcher.profile=gpu_node", "tracking=server"],
    ["tracking=server"],
    [*GPU, "tracking=sqlite"],
])
def test_a_store_the_jobs_reach_is_allowed(overrides, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    validate(compose(overrides))


def test_the_cli_refuses_before_anything_is_submitted(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert run_cli([*GPU, "tracking=server"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "tracking.uri='http://127.0.0.1:5000' is not allowed with launcher=slurm" in err
    assert list(tmp_path.iterdir()) == []
