"""One worker process per GPU on `launcher=local` and `local_parallel`: which CUDA devices this machine shows, and the
environment that pins each worker to its own (CUDA_VISIBLE_DEVICES in the worker's environment, so that
`trainer.device=auto` or `cuda` is that GPU there)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Sequence

from harness.infra.refused import Refused

NVIDIA_DRIVER = Path("/proc/driver/nvidia/gpus")  # absent: no NVIDIA GPU, and no need to load torch to ask


def visible_gpus() -> List[str]:
    """The CUDA devices this process may use, as CUDA_VISIBLE_DEVICES names them ('0', '1', ... by default)."""
    if not NVIDIA_DRIVER.is_dir():
        return []
    import torch

    count = torch.cuda.device_count()
    named = [part.strip() for part in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if part.strip()]
    return (named or [str(i) for i in range(count)])[:count]


def pinned_environments(gpus: List[str], device: str) -> List[Dict[str, str]]:
    """Worker i's environment: GPU i's CUDA_VISIBLE_DEVICES, for runs on trainer.device auto or cuda (a run
    that names cuda:N or the CPU chooses for itself: no pinning)."""
    if device not in ("auto", "cuda"):
        return []
    return [{"CUDA_VISIBLE_DEVICES": gpu} for gpu in gpus]


def check_devices(jobs: Sequence) -> None:
    """Jobs that run on this machine (their launcher's `cluster` is None): a built-in run on `trainer.device=cuda[:N]`
    needs that CUDA device visible here, or every run would fail at its start (Refused, one line; asked before a
    launch and before `--plan` estimates them)."""
    gpus = None
    for job in jobs:
        spec = job.spec
        device = str(spec.trainer.get("device") or "auto")
        if spec.trainer.name != "builtin" or not device.startswith("cuda") or spec.launcher.get("cluster") is not None:
            continue
        gpus = visible_gpus() if gpus is None else gpus
        if int(device.partition(":")[2] or 0) < len(gpus):
            continue
        seen = (f"only {len(gpus)} CUDA device(s) are visible here" if gpus else
                "no CUDA device is visible on this machine")
        raise Refused(f"trainer.device={device} is not allowed with launcher={spec.launcher.name}: {seen}, so every "
                      "run would fail at its start; use trainer.device=auto or cpu here, or a launcher whose jobs run "
                      "on GPU nodes (launcher=slurm)")
