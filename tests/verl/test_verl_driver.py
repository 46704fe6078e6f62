"""The driver check of launch.sh and gpu_smoke.sh: the node's NVIDIA driver must run the CUDA the verl
environment's torch was built for (torch 2.11.0: CUDA 13.0, driver >= 580.65.06), else one line and exit 1
before Ray or vLLM start; skipped without nvidia-smi. nvidia-smi and torch's CUDA build are stand-ins here
(no GPU): an executable on PATH and a `torch` package that reports a CUDA version."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.trainers.verl.driver import driver_problem

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("driver, cuda, refused", [
    ("535.183.01", "13.0", True), ("570.124.06", "13.0", True), ("580.65.06", "13.0", False),
    ("580.95.05", "13.0", False), ("570.124.06", "12.8", False), ("520.61.05", "12.1", True),
])
def test_the_driver_must_run_the_torch_cuda(driver, cuda, refused):
    problem = driver_problem(driver, cuda)
    assert (problem is not None) == refused
    if refused:
        need = "580.65.06" if cuda.startswith("13") else "525.60.13"
        assert problem.startswith(f"harness: the NVIDIA driver {driver} is too old for the verl environment's torch, "
                                  f"built for CUDA {cuda} (needs driver >= {need});")


def run_check(tmp_path: Path, driver: str | None, cuda: str | None) -> subprocess.CompletedProcess:
    """`python -m harness.trainers.verl.driver` as launch.sh runs it, with a stand-in nvidia-smi and torch."""
    bin_dir, site = tmp_path / "bin", tmp_path / "site"
    bin_dir.mkdir(parents=True)
    if driver:
        smi = bin_dir / "nvidia-smi"
        smi.write_text(f"#!/bin/sh\n[ \"$1 $2\" = '--query-gpu=driver_version --format=csv,noheader' ] || exit 9\n"
                       f"echo {driver}\necho {driver}\n")
        smi.chmod(0o755)
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(f"class version:\n    cuda = {cuda!r}\n")
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": f"{site}:{REPO}"}
    return subprocess.run([sys.executable, "-m", "harness.trainers.verl.driver"], env=env, capture_output=True,
                          text=True, timeout=120)


def test_an_old_driver_stops_the_job_with_one_line(tmp_path):
    proc = run_check(tmp_path, "570.124.06", "13.0")
    assert proc.returncode == 1 and proc.stdout == ""
    line, = proc.stderr.strip().splitlines()
    assert "driver 570.124.06 is too old" in line and "(needs driver >= 580.65.06)" in line


def test_a_new_enough_driver_passes_and_a_machine_without_nvidia_smi_is_skipped(tmp_path):
    ok = run_check(tmp_path / "ok", "580.95.05", "13.0")
    assert ok.returncode == 0 and ok.stdout.strip() == "harness: NVIDIA driver 580.95.05 runs CUDA 13.0"
    none = run_check(tmp_path / "none", None, "13.0")
    assert none.returncode == 0 and "driver check skipped" in none.stdout


def test_launch_sh_checks_the_driver_before_anything_starts(tmp_path):
    from harness.launchers.compose import compose
    from harness.launchers.compose import validated as validate
    from harness.trainers.verl.plan import build_plan

    script = build_plan(validate(compose(["trainer=verl"])), tmp_path / "run").script
    check = script.index('"$VERL_PYTHON" -m harness.trainers.verl.driver\n')
    assert check < script.index("prepare_data") < script.index("ray.scripts.scripts")
