"""Checkpoints that resume a run exactly: the state goes to `<run_dir>/checkpoints/last.pt` (atomic
rename) and a small `last.json` beside it says the step and the tracking run to continue."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Optional

CHECKPOINT_DIR = "checkpoints"


def checkpoint_paths(run_dir: Path) -> tuple[Path, Path]:
    folder = Path(run_dir) / CHECKPOINT_DIR
    return folder / "last.pt", folder / "last.json"


def save_checkpoint(run_dir: Path, state: Dict[str, Any], step: int, run_id: Optional[str]) -> Path:
    import torch

    state_path, meta_path = checkpoint_paths(run_dir)
    state_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = state_path.with_suffix(".pt.tmp")
    torch.save(state, tmp)
    os.replace(tmp, state_path)
    meta_tmp = meta_path.with_suffix(".json.tmp")
    meta_tmp.write_text(json.dumps({"step": step, "run_id": run_id}))
    os.replace(meta_tmp, meta_path)
    return state_path


def find_checkpoint(resume: str) -> Path:
    """`resume` is a run folder or a checkpoint file."""
    path = Path(resume).expanduser()
    candidates = [path] if path.suffix == ".pt" else [checkpoint_paths(path)[0]]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"trainer.resume={resume!r}: no checkpoint found (looked for {candidates[0]})")


def load_checkpoint(resume: str) -> Dict[str, Any]:
    import torch

    return torch.load(find_checkpoint(resume), map_location="cpu", weights_only=False)


def resumed_run_id(cfg) -> Optional[str]:
    """The tracking run a resumed job continues (None for a fresh run)."""
    if not cfg.trainer.get("resume"):
        return None
    meta = find_checkpoint(cfg.trainer.resume).with_suffix(".json")
    return json.loads(meta.read_text()).get("run_id") if meta.is_file() else None
