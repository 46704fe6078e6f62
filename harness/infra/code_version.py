"""The version of the harness code a run was made with: `<commit>` (a clean git checkout),
`<commit>-dirty-<source hash>` (uncommitted changes), or `src-<source hash>` (no git, e.g. an installed
package). The source hash covers the package's .py and conf .yaml files. Imports nothing from harness."""
from __future__ import annotations

import functools
import hashlib
import subprocess
from pathlib import Path
from typing import Optional

PACKAGE = Path(__file__).resolve().parents[1]  # the harness package
SOURCE_SUFFIXES = (".py", ".yaml")


def _git(*args: str) -> Optional[str]:
    try:
        out = subprocess.run(["git", "-C", str(PACKAGE), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def source_hash() -> str:
    digest = hashlib.sha256()
    roots = [PACKAGE, PACKAGE.parent / "conf"]
    for path in sorted(p for root in roots if root.is_dir() for p in root.rglob("*")
                       if p.suffix in SOURCE_SUFFIXES and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(PACKAGE.parent)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    commit = _git("rev-parse", "HEAD")
    if not commit:
        return f"src-{source_hash()}"
    dirty = _git("status", "--porcelain", "--", str(PACKAGE), str(PACKAGE.parent / "conf"))
    return commit[:12] + (f"-dirty-{source_hash()}" if dirty else "")
