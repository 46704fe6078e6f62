"""What a run records about itself: flattened params, tags and a config hash, with secrets left out.

Secrets are kept out three ways: config keys named like credentials are dropped from params (and masked
in the logged `config.yaml`), `key=value` overrides with such keys are masked in run names and sweep
definitions, and the values of credential-named environment variables are masked wherever they appear
(a `${oc.env:HF_TOKEN}` interpolated into an innocent key, a traceback, a URL)."""
from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any, Dict, Optional

from omegaconf import DictConfig, OmegaConf

from harness import __version__
from harness.algorithms.specs import RUN_SHORTCUTS
from harness.infra.code_version import code_version
# the one masking rule, re-exported for the modules that import it from here
from harness.infra.secrets import (MASK, looks_secret, mask_overrides, mask_tree, safe_run_name,  # noqa: F401
                                   scrub, secret_env_values)

# Keys that say where or how a run is executed, not what it computes: excluded from the config hash.
NOT_HASHED = ("tracking", "launcher", "output_root", "cache_dir", "trainer.progress", "trainer.resume", "force",
              "reuse_across_versions",
              "trainer.torch_threads", "trainer.device", "sweeper", "optuna",
              *RUN_SHORTCUTS)


def changes_computation(override: str) -> bool:
    """Whether an override (`key=value`) can change what a run computes (the config hash's view: a run's shortcut
    like `delta=` does; a launcher and its packing, `launcher.members`, the store, the cache or `hydra.*` do not)."""
    key = override.split("=", 1)[0].lstrip("+~")
    if key == "hydra" or key.startswith(("hydra.", "hydra/")):
        return False
    return not any(key == n or key.startswith(n + ".") for n in NOT_HASHED if n not in RUN_SHORTCUTS)


def redacted_container(cfg: DictConfig) -> Any:
    """The resolved config as plain containers, credential-named values masked (for `config.yaml`)."""

    return mask_tree(OmegaConf.to_container(cfg, resolve=True))


def redacted_yaml(cfg: DictConfig) -> str:
    return OmegaConf.to_yaml(OmegaConf.create(redacted_container(cfg)))


def flatten(cfg: DictConfig) -> Dict[str, str]:
    """Resolved config as stable dotted names, e.g. {'algo.delta': '0.15'}; secret-looking keys dropped."""
    out: Dict[str, str] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{prefix}.{key}" if prefix else str(key))
        elif not looks_secret(prefix):
            out[prefix] = "null" if node is None else scrub(str(node))

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


def sweep_id(sweep_dir: str) -> str:
    """`<date>/<time>`: the last two parts of Hydra's sweep folder, shared by a sweep's parent and children."""
    return "/".join(Path(sweep_dir).parts[-2:])


def common_tags(sweep_dir: Optional[str]) -> Dict[str, str]:
    """Tags of every run, parent or child: harness version, host, git state, sweep and Slurm ids."""
    tags = {"harness.version": __version__, "harness.host": socket.gethostname()}
    commit = _git("rev-parse", "HEAD")
    if commit:
        tags["git.commit"] = commit
        tags["git.dirty"] = str(bool(_git("status", "--porcelain")))
    if sweep_dir:
        tags["harness.sweep_id"] = sweep_id(sweep_dir)
    for env, tag in (("SLURM_JOB_ID", "slurm.job_id"), ("SLURM_ARRAY_TASK_ID", "slurm.array_index")):
        if os.environ.get(env):
            tags[tag] = os.environ[env]
    return tags


def _checkpoint_run_id(source: str) -> Optional[str]:
    """The tracking run recorded beside a run folder's checkpoint (checkpoints/last.json), if any."""
    path = Path(source).expanduser()
    meta = path.with_suffix(".json") if path.suffix == ".pt" else path / "checkpoints" / "last.json"
    try:
        return json.loads(meta.read_text()).get("run_id")
    except (OSError, ValueError, AttributeError):
        return None


def run_tags(cfg: DictConfig, sweep_dir: Optional[str]) -> Dict[str, str]:
    tags = common_tags(sweep_dir)
    tags.update({
        "harness.role": "child" if sweep_dir else "run",
        "harness.code_version": code_version(),
        "harness.config_hash": config_hash(cfg),
        "algo": str(cfg.algo.name),
        "precision": str(cfg.precision.name),
    })
    if cfg.trainer.get("branch_from"):
        tags["harness.branched_from"] = _checkpoint_run_id(str(cfg.trainer.branch_from)) or str(cfg.trainer.branch_from)
    return {k: scrub(v) for k, v in tags.items()}
