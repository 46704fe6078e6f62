"""Where a verl run executes (torch-free): the verl environment, the staged models and data, whether the
nodes reach the hub, and the memory of one GPU.

Runs on a cluster (their launcher's entry names one: `launcher.cluster`) read these from the launcher profile
(`verl_python`, `stage_dir`, `hub_access`/`offline`, `gpu_memory_gb`, `verl_cuda`, `network_interface`): a cluster
is offline unless its profile says `hub_access: true` (compute nodes often have no internet, and every worker
would fill its home cache); local runs from the environment (`HARNESS_STAGE_DIR`,
`HF_HUB_OFFLINE`) and `trainer.verl.*`. The explicit `trainer.verl.python` (or `$HARNESS_VERL_PYTHON`) wins over
the profile's `verl_python`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harness.config.profiles import profile_for
from harness.trainers.verl.options import VerlOptions

TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Site:
    python: Optional[str]  # the verl environment's python; None: not named (refused on a cluster)
    python_source: str  # where it comes from, for messages
    stage_dir: Optional[Path]  # what `harness stage` filled (manifest.json); None: nothing staged
    offline: bool  # the nodes cannot reach the Hugging Face hub
    gpu_memory_gb: Optional[float]  # one GPU's memory; None: unknown (no memory preflight)
    name: str  # "launcher profile 'x'" or "this machine"
    cluster: bool
    cuda: int = 13  # the CUDA major of the verl environment's torch (which requirements set it was built from)
    interface: Optional[str] = None  # NCCL/Gloo/Ray's network interface (None: the route's to the other nodes)


def interpreter(path: str) -> str:
    """A venv folder names its bin/python; anything else is the interpreter itself."""
    p = Path(os.path.expanduser(path))
    return str(p / "bin" / "python") if p.is_dir() else path


def on_cluster(cfg) -> bool:
    """Whether the run's jobs go to a cluster, with a launcher profile's resources (its launcher's entry says)."""
    return cfg.launcher.get("cluster") is not None


def site(cfg, options: VerlOptions) -> Site:
    if on_cluster(cfg):
        profile = profile_for(cfg.launcher)
        name = f"launcher profile {cfg.launcher.get('profile') or 'test_cluster'!r}"
        python, source = (options.python, "trainer.verl.python") if options.python else \
            (profile.verl_python, f"{name} verl_python")
        stage = profile.stage_dir or os.environ.get("HARNESS_STAGE_DIR")
        offline = bool(profile.offline) or not profile.hub_access
        return Site(interpreter(python) if python else None, source, _folder(stage), offline,
                    profile.gpu_memory_gb, name, True, profile.verl_cuda or 13, profile.network_interface)
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in TRUE
    return Site(interpreter(options.python or "python3"), "trainer.verl.python",
                _folder(os.environ.get("HARNESS_STAGE_DIR")), offline, options.local_gpu_memory_gb, "this machine",
                False)


def _folder(path: Optional[str]) -> Optional[Path]:
    return Path(os.path.expanduser(path)).absolute() if path else None
