"""The verl environment a run names is asked, at submission, whether it imports verl and ray at the expected
versions (a subprocess of that interpreter); anything else is refused in one line, exit code 2, before
a run folder or job exists."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.trainers.verl.environment import VERL_VERSION, check_environment
from harness.trainers.verl.site import interpreter


def fake_environment(tmp_path: Path, verl_version: str, ray_version: str = "2.60.0") -> Path:
    """An interpreter whose `verl` and `ray` are stand-in packages at the given versions."""
    packages = tmp_path / "site"
    for name, version in (("verl", verl_version), ("ray", ray_version)):
        (packages / name).mkdir(parents=True)
        (packages / name / "__init__.py").write_text(f"__version__ = {version!r}\n")
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text(f"#!/usr/bin/env bash\nPYTHONPATH={packages} exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    return python


def test_wrong_verl_version_is_refused(tmp_path):
    python = fake_environment(tmp_path, "0.8.0")
    with pytest.raises(ValueError, match=rf"has verl 0.8.0, the harness generates for verl {VERL_VERSION}; install "
                                         r"launchers/verl/requirements-gpu.txt there or name another \(here\)"):
        check_environment(str(python), "here")
    check_environment(str(fake_environment(tmp_path / "good", VERL_VERSION)), "here")


def test_an_interpreter_without_verl_is_refused():
    with pytest.raises(ValueError, match=r"cannot import verl \(ModuleNotFoundError: No module named 'verl'\)"):
        check_environment(sys.executable, "trainer.verl.python")


def test_a_venv_folder_names_its_python(tmp_path):
    python = fake_environment(tmp_path, VERL_VERSION)
    assert interpreter(str(tmp_path)) == str(python)
    assert interpreter(str(python)) == str(python)


def test_cli_refuses_a_missing_environment_before_anything_exists(run_harness, tmp_path):
    proc = run_harness("trainer=verl", "algo=drpo", f"trainer.verl.python={tmp_path}/nope/bin/python")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (f"harness: error: the verl environment '{tmp_path}/nope/bin/python' does not exist")
    assert not (tmp_path / "outputs").exists() and not list(tmp_path.glob("mlruns*"))


def test_cli_refuses_python3_without_verl(run_harness, tmp_path):
    env = fake_environment(tmp_path, "0.7.0")
    proc = run_harness("trainer=verl", "algo=drpo", f"trainer.verl.python={env.parent.parent}")
    assert proc.returncode == 2
    line, = proc.stderr.strip().splitlines()
    assert f"'{env}' has verl 0.7.0" in line and "(trainer.verl.python)" in line


@pytest.mark.verl
def test_the_verl_test_environment_passes(verl_python):
    check_environment(str(verl_python), "HARNESS_VERL_VENV")
