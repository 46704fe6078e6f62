"""The staged copies of models and datasets (torch-free): `<stage_dir>/manifest.json`, written by
`harness stage`, maps each reference a run names to its local copy in the shared folder.

  {"models": {"Qwen/Qwen3-1.7B-Base": "models/Qwen--Qwen3-1.7B-Base"},
   "datasets": {"open-r1/DAPO-Math-17k-Processed": "datasets/open-r1--DAPO-Math-17k-Processed"}}

Keys: a model's `model.path` (hub id or local folder); a dataset's hub repo (the `<repo>` of
`hf:<repo>[:<config>][@<split>]`) or a local file's path. Values are relative to the stage folder, so the
folder can be mounted under another path as long as the manifest travels with it.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Dict, Optional

from harness.infra.atomic_file import write_text_atomically
from harness.trainers.verl.presets import Source, parse_hub_ref

MANIFEST = "manifest.json"
KINDS = ("models", "datasets")


def slug(ref: str) -> str:
    """A folder name for a reference: `org/name` -> `org--name`, a local path -> its last parts."""
    parts = [p for p in ref.replace("\\", "/").split("/") if p not in ("", ".", "..", "~")]
    return "--".join(parts[-2:]) or "source"


def read_manifest(stage_dir: Optional[Path]) -> Dict[str, Dict[str, str]]:
    empty = {kind: {} for kind in KINDS}
    if stage_dir is None:
        return empty
    path = Path(stage_dir) / MANIFEST
    if not path.is_file():
        return empty
    data = json.loads(path.read_text())
    return {kind: dict(data.get(kind) or {}) for kind in KINDS}


def write_manifest(stage_dir: Path, manifest: Dict[str, Dict[str, str]]) -> None:
    path = Path(stage_dir) / MANIFEST
    write_text_atomically(path, json.dumps({k: dict(sorted(manifest[k].items())) for k in KINDS}, indent=2) + "\n")


def dataset_key(ref: str) -> str:
    hub = parse_hub_ref(ref)
    return hub[0] if hub is not None else ref


def staged_model(stage_dir: Optional[Path], ref: str) -> Optional[Path]:
    rel = read_manifest(stage_dir)["models"].get(ref)
    return (Path(stage_dir) / rel) if rel else None


def staged_source(stage_dir: Optional[Path], source: Source) -> Optional[Source]:
    """The source read from its staged copy: a hub dataset as `hf:<local folder>...` (datasets loads a local
    repo snapshot, configs and splits included), a local file as the copied file; None if not staged."""
    rel = read_manifest(stage_dir)["datasets"].get(dataset_key(source.ref))
    if not rel:
        return None
    local = Path(stage_dir) / rel
    hub = parse_hub_ref(source.ref)
    if hub is None:
        return replace(source, ref=str(local))
    _, config, split = hub
    return replace(source, ref=f"hf:{local}" + (f":{config}" if config else "") + f"@{split}")
