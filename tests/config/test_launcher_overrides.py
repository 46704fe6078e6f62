"""A run's launcher node overrides its cluster profile: scalars replace the profile's value, #SBATCH options
(`+launcher.additional_parameters.<option>=`) are added to the profile's."""
from __future__ import annotations

from harness.launchers.compose import compose
from harness.config.profiles import profile_for, submitit_parameters


def _slurm(*overrides):
    return submitit_parameters(profile_for(compose(["launcher=slurm", *overrides]).launcher), "slurm")


def test_an_sbatch_option_is_added_with_plus_as_in_hydra():
    params = _slurm("+launcher.additional_parameters.constraint=a100", "launcher.mem_gb=32")
    assert params["slurm_additional_parameters"] == {"constraint": "a100"} and params["mem_gb"] == 32


def test_without_overrides_the_profile_decides():
    params = _slurm()
    assert "slurm_additional_parameters" not in params and params["mem_gb"] == 2  # test_cluster's values


def test_sbatch_options_add_to_the_profiles_own(tmp_path, monkeypatch):
    (tmp_path / "mine.yaml").write_text("partition: gpu\nadditional_parameters: {gres: 'gpu:1'}\n")
    monkeypatch.setenv("HARNESS_LAUNCHER_PROFILES", str(tmp_path))
    params = _slurm("launcher.profile=mine", "+launcher.additional_parameters.constraint=a100")
    assert params["slurm_additional_parameters"] == {"gres": "gpu:1", "constraint": "a100"}
    assert params["slurm_partition"] == "gpu"
