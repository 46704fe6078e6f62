"""Can this node's NVIDIA driver run the CUDA the verl environment's torch was built for?

    "$VERL_PYTHON" -m harness.trainers.verl.driver       # launch.sh, before anything; gpu_smoke.sh

torch 2.11.0's wheel (launchers/verl/requirements-gpu.txt) is built for CUDA 13.0, which needs a driver
>= 580.65.06; many clusters run 535-570, where vLLM and torch fail late with an obscure CUDA error. Exits 1
with one line naming both versions, else prints what it found. Skipped (exit 0) when nvidia-smi is absent
(no NVIDIA GPU here: torch then reports its own error) or torch has no CUDA build. Stdlib only but for
`torch.version.cuda`, read in the interpreter that runs this (the verl environment).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from typing import Optional, Tuple

# CUDA major version -> the oldest Linux driver that runs every minor release of it (minor version
# compatibility, CUDA Toolkit release notes, table 2/3); 13.0 GA ships with 580.65.06
MIN_DRIVER = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}


def _version(text: str) -> Tuple[int, ...]:
    return tuple(int(part) for part in text.strip().split("."))


def driver_problem(driver: str, cuda: str) -> Optional[str]:
    """One line when driver `driver` (e.g. "570.124.06") cannot run CUDA `cuda` (e.g. "13.0"), else None."""
    major = _version(cuda)[0]
    need = MIN_DRIVER.get(major)
    if need is None or _version(driver) >= _version(need):
        return None
    fit = max((m for m, v in MIN_DRIVER.items() if _version(driver) >= _version(v)), default=None)
    other = (f"; this driver runs CUDA {fit}: build the environment from launchers/verl/requirements-gpu-cu12.txt and "
             f"set verl_cuda: 12 in the launcher profile" if fit == 12 else
             ", or build the environment with a torch for the driver's CUDA")
    return (f"harness: the NVIDIA driver {driver} is too old for the verl environment's torch, built for CUDA {cuda} "
            f"(needs driver >= {need}); update the driver or run on nodes that have it{other} (launchers/verl/README.md)")


def installed_driver() -> Optional[str]:
    """The driver version nvidia-smi reports (first GPU), or None without nvidia-smi or an answer."""
    if shutil.which("nvidia-smi") is None:
        return None
    out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=60)
    lines = out.stdout.split()
    return lines[0] if out.returncode == 0 and lines else None


def torch_cuda() -> Optional[str]:
    try:
        import torch
    except ImportError:
        return None
    return torch.version.cuda


def main() -> int:
    driver = installed_driver()
    if driver is None:
        print("harness: driver check skipped (no nvidia-smi, or no driver answered it)")
        return 0
    cuda = torch_cuda()
    if cuda is None:
        print(f"harness: driver check skipped (NVIDIA driver {driver}; torch without CUDA)")
        return 0
    problem = driver_problem(driver, cuda)
    if problem:
        print(problem, file=sys.stderr)
        return 1
    print(f"harness: NVIDIA driver {driver} runs CUDA {cuda}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
