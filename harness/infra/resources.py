"""Folders of user-extensible YAML files (cluster profiles, named sweeps), searched in order: the
folders of an environment variable (colon-separated), the user's own folder under the current
directory, then the copy shipped inside the harness package. First match wins."""
from __future__ import annotations

import importlib.resources
import os
from pathlib import Path
from typing import List, Optional


def search_dirs(env_var: str, local_folder: str, package: str) -> List[Path]:
    dirs = [Path(p) for p in os.environ.get(env_var, "").split(":") if p]
    dirs.append(Path.cwd() / local_folder)
    try:
        dirs.append(Path(str(importlib.resources.files(package))))
    except ModuleNotFoundError:
        pass
    return dirs


def find_yaml(name: str, dirs: List[Path]) -> Optional[Path]:
    return next((d / f"{name}.yaml" for d in dirs if (d / f"{name}.yaml").is_file()), None)


def available(dirs: List[Path]) -> List[str]:
    return sorted({p.stem for d in dirs if d.is_dir() for p in d.glob("*.yaml")})
