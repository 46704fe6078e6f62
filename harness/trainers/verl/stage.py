"""`python -m harness stage [--to DIR] [--from MIRROR] [overrides ...]`: fetch the model and the datasets of
trainer=verl runs once, on a machine with network, into a shared folder the GPU nodes read.

The overrides are those of the run or sweep (comma lists stage every job's model and data). The folder is
`--to`, else the launcher profile's `stage_dir` (or `$HARNESS_STAGE_DIR`). Hub models and datasets are
downloaded with huggingface_hub's `snapshot_download` (the whole repository snapshot: weights, tokenizer,
dataset files and configs); with `--from MIRROR` they are copied from a local mirror laid out as
`MIRROR/<org>/<name>` instead. Local model folders and data files are copied. `manifest.json` (staging.py)
records each copy; runs whose profile names the folder then read the copies, with the hub offline.
Already staged entries are kept (delete the folder's entry to fetch it again).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from omegaconf import DictConfig

from harness.config.overrides import expand_sweep
from harness.config.errors import EXIT_BAD_INPUT
from harness.config.validate import ConfigError
from harness.trainers.verl import layout
from harness.trainers.verl.options import verl_options
from harness.trainers.verl.presets import parse_hub_ref
from harness.trainers.verl.site import site
from harness.trainers.verl.staging import read_manifest, slug, write_manifest

EXIT_FAILED = 1


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> int:
    print(f"harness stage: error: {message}", file=sys.stderr)
    return code


Compose = Callable[[List[str]], DictConfig]  # a job's run config from its overrides (harness/launchers/compose.py)


def wanted(overrides: List[str], compose: Compose) -> Tuple[List[str], List[str], Optional[Path]]:
    """(model references, dataset references, the profile's stage folder) of every job of the overrides."""
    models, datasets, stage_dir = [], [], None
    for job in expand_sweep(overrides):
        cfg = compose(job)
        if cfg.trainer.name != "verl":
            raise ValueError(f"trainer={cfg.trainer.name} is not allowed: `harness stage` stages trainer=verl runs "
                             f"(add trainer=verl or a verl experiment=)")
        options = verl_options(cfg)
        stage_dir = stage_dir or site(cfg, options).stage_dir
        if cfg.model.path and cfg.model.path not in models:
            models.append(cfg.model.path)
        train, evals, _ = layout.data_sources(cfg, options, staged=False)
        for source in [*train, *(s for srcs in evals.values() for s in srcs)]:
            hub = parse_hub_ref(source.ref)
            key = hub[0] if hub else source.ref
            if key not in datasets:
                datasets.append(key)
    return models, datasets, stage_dir


def is_local(ref: str) -> bool:
    return ref.startswith(("/", "./", "../", "~")) or Path(os.path.expanduser(ref)).exists()


def fetch(ref: str, kind: str, dest: Path, mirror: Optional[Path]) -> None:
    """Put `ref` (hub id or local path) at `dest`."""
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    if is_local(ref):
        source = Path(os.path.expanduser(ref))
        if not source.exists():
            raise FileNotFoundError(f"{ref!r} does not exist")
        if source.is_dir():
            shutil.copytree(source, tmp)
        else:
            tmp.mkdir(parents=True)
            shutil.copy2(source, tmp / source.name)
    elif mirror is not None:
        source = mirror / ref
        if not source.is_dir():
            raise FileNotFoundError(f"{ref!r} is not in the mirror {mirror} (expected {source})")
        shutil.copytree(source, tmp)
    else:
        from huggingface_hub import snapshot_download

        snapshot_download(repo_id=ref, repo_type="model" if kind == "models" else "dataset", local_dir=str(tmp))
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)


def staged_path(kind: str, ref: str, dest: Path) -> str:
    """The manifest's value: the folder, or for a local data file the copied file in it."""
    if kind == "datasets" and is_local(ref) and Path(os.path.expanduser(ref)).is_file():
        return str(dest.relative_to(dest.parent.parent) / Path(ref).name)
    return str(dest.relative_to(dest.parent.parent))


def stage(models: List[str], datasets: List[str], stage_dir: Path, mirror: Optional[Path]) -> Dict[str, str]:
    """Fetch what is not staged yet; returns reference -> what happened."""
    stage_dir.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(stage_dir)
    report = {}
    for kind, refs in (("models", models), ("datasets", datasets)):
        for ref in refs:
            known = manifest[kind].get(ref)
            if known and (stage_dir / known).exists():
                report[ref] = f"already staged: {stage_dir / known}"
                continue
            dest = stage_dir / kind / slug(ref)
            dest.parent.mkdir(parents=True, exist_ok=True)
            fetch(ref, kind, dest, mirror)
            manifest[kind][ref] = staged_path(kind, ref, dest)
            write_manifest(stage_dir, manifest)
            report[ref] = f"staged: {stage_dir / manifest[kind][ref]}"
    return report


def main(argv: List[str], compose: Compose) -> int:
    """The command; `compose`: the launchers' composer (composing sits above the trainers, harness/cli.py
    hands it in)."""
    parser = argparse.ArgumentParser(prog="python -m harness stage", description=__doc__.split("\n\n")[0])
    parser.add_argument("--to", help="the shared stage folder (default: the launcher profile's stage_dir)")
    parser.add_argument("--from", dest="mirror", help="copy hub references from this local mirror (<org>/<name>)")
    parser.add_argument("overrides", nargs="*", help="the run's or sweep's overrides (trainer=verl ...)")
    args = parser.parse_args(argv)

    try:
        models, datasets, profile_dir = wanted(args.overrides, compose)
    except (ConfigError, ValueError) as err:
        return _fail(str(err).splitlines()[0])
    target = Path(os.path.expanduser(args.to)).absolute() if args.to else profile_dir
    if target is None:
        return _fail("no stage folder: give --to DIR or stage_dir in the launcher profile (or $HARNESS_STAGE_DIR)")
    mirror = Path(os.path.expanduser(args.mirror)).absolute() if args.mirror else None
    if mirror is not None and not mirror.is_dir():
        return _fail(f"--from {args.mirror!r} is not a folder")
    try:
        report = stage(models, datasets, target, mirror)
    except Exception as err:  # the command's boundary: a download or copy failed; what was staged is kept
        return _fail(f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}", EXIT_FAILED)
    for ref, what in report.items():
        print(f"{ref}: {what}")
    print(f"manifest: {target / 'manifest.json'}")
    return 0
