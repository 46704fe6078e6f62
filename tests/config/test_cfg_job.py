"""`python -m harness --cfg job` prints the preflight's composition itself instead of letting Hydra compose
the config again: its output must be exactly Hydra's."""
from __future__ import annotations

import pytest

from harness.cli import _run_hydra, run_cli


@pytest.mark.parametrize("overrides", [
    [],
    ["algo=spo", "delta=3"],
    ["precision=bf16", "trainer.steps=7", "seed=3", "model.hidden_size=128"],
    ["experiment=drpo_qwen3_4b", "tracking=none"],
    ["tracking=none", "experiment_name='a b, c'", "trainer.lr=1e-3"],
    ["launcher=local_parallel", "launcher.workers=2", "debug=quick"],
])
def test_cfg_job_prints_what_hydra_prints(overrides, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HARNESS_OUTPUT_ROOT", str(tmp_path))
    code = run_cli(["--cfg", "job", *overrides])
    ours = capsys.readouterr().out
    if code == 2:
        pytest.skip("not a valid run here (e.g. no such experiment)")
    assert code == 0
    _run_hydra(["--cfg", "job", *overrides])
    assert ours == capsys.readouterr().out
    assert not (tmp_path / "outputs").exists()
