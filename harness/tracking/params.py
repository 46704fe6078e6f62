"""What a run records about itself: flattened params, tags and a config hash, with secrets left out."""
from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
from pathlib import Path
from typing import Any, Dict, Optional

from omegaconf import DictConfig, OmegaConf

SECRET_NAME = re.compile(r"(TOKEN|PASSWORD|PASSWD|SECRET|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|(^|[._])KEY$)",
                         re.IGNORECASE)
# Keys that say where or how a run is executed, not what it computes: excluded from the config hash.
NOT_HASHED = ("tracking", "launcher", "output_root", "cache_dir", "trainer.progress", "trainer.resume",
              "delta", "alpha", "anchor")


def looks_secret(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def flatten(cfg: DictConfig) -> Dict[str, str]:
    """Resolved config as stable dotted names, e.g. {'algo.delta': '0.15'}; secret-looking keys dropped."""
    out: Dict[str, str] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{prefix}.{key}" if prefix else str(key))
        elif not looks_secret(prefix):
            out[prefix] = "null" if node is None else str(node)

    walk(OmegaConf.to_container(cfg, resolve=True), "")
    return out


def config_hash(cfg: DictConfig) -> str:
    flat = {k: v for k, v in flatten(cfg).items()
            if not any(k == n or k.startswith(n + ".") for n in NOT_HASHED)}
    return hashlib.sha256(json.dumps(flat, sort_keys=True).encode()).hexdigest()[:16]


def _git(*args: str) -> Optional[str]:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=5, cwd=os.getcwd())
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def run_tags(cfg: DictConfig, sweep_dir: Optional[str]) -> Dict[str, str]:
    from harness import __version__

    tags = {
        "harness.version": __version__,
        "harness.config_hash": config_hash(cfg),
        "harness.host": socket.gethostname(),
        "algo": str(cfg.algo.name),
        "precision": str(cfg.precision.name),
    }
    commit = _git("rev-parse", "HEAD")
    if commit:
        tags["git.commit"] = commit
        tags["git.dirty"] = str(bool(_git("status", "--porcelain")))
    if sweep_dir:
        tags["harness.sweep_id"] = "/".join(Path(sweep_dir).parts[-2:])  # <date>/<time>, as Hydra names it
    for env, tag in (("SLURM_JOB_ID", "slurm.job_id"), ("SLURM_ARRAY_TASK_ID", "slurm.array_index")):
        if os.environ.get(env):
            tags[tag] = os.environ[env]
    return tags
