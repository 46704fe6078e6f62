"""--dry-run: the plans of every job of a run or sweep, printed without launching or tracking anything."""
from __future__ import annotations

import subprocess
import sys

import pytest

from harness.launchers.compose import preflight
from harness.trainers import TRAINERS
from harness.trainers.verl.dry_run import print_plans


def test_print_plans_for_a_sweep(capsys):
    configs = preflight(["trainer=verl", "algo=dppo,drpo", "trainer.verl.dry_run=true"], multirun=True)
    assert print_plans(configs) == 0
    out = capsys.readouterr().out
    assert out.count("# ---- job ") == 2 and out.count("# verl command") == 2
    assert "loss_mode=harness_dppo" in out and "loss_mode=harness_drpo" in out
    assert "<run_dir>/0/verl/objective.json" in out and "<run_dir>/1/verl/objective.json" in out


def test_the_flag_maps_to_the_config_key():
    from harness.config.flags import HARNESS_FLAGS

    assert HARNESS_FLAGS["--dry-run"] == "trainer.verl.dry_run=true"


@pytest.mark.skipif("verl" not in TRAINERS, reason="harness/trainers/__init__.py has no TRAINERS entry for verl "
                                                    "yet (the one line is in launchers/verl/README.md)")
def test_cli_dry_run_prints_command_and_script(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "harness", "trainer=verl", "algo=drpo", "tracking=none", "--dry-run"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={"HARNESS_OUTPUT_ROOT": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "# verl command" in proc.stdout and "verl.trainer.main_ppo --config-name=ppo_trainer" in proc.stdout
    assert "actor_rollout_ref.actor.policy_loss.loss_mode=harness_drpo" in proc.stdout
    assert "--head --node-ip-address" in proc.stdout and '"${RAY[@]}" start "${RAY_HEAD[@]}"' in proc.stdout
    assert '"$VERL_PYTHON" -m verl.trainer.main_ppo' in proc.stdout and "ray stop" not in proc.stdout
