"""The package's layers (README "Architecture"): import-linter's layers contract in pyproject.toml, checked on
every import statement (grimp reads those inside functions too), and imports of project modules inside
functions kept for start-up time or an optional dependency only."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "hydra_plugins")
MAX_IMPORTS_IN_FUNCTIONS = 40


def in_function_imports(root: Path = REPO) -> dict:
    """file -> line numbers of the imports of project modules that sit inside a function."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            lines = set()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for sub in ast.walk(node):
                    if isinstance(sub, ast.ImportFrom) and (sub.level or (sub.module or "").split(".")[0] in PACKAGES):
                        lines.add(sub.lineno)
                    elif isinstance(sub, ast.Import) and any(a.name.split(".")[0] in PACKAGES for a in sub.names):
                        lines.add(sub.lineno)
            if lines:
                found[str(path.relative_to(root))] = sorted(lines)
    return found


def test_the_layers_contract_holds():
    """`lint-imports` (import-linter) reads the contracts from pyproject.toml; it fails on any import that
    points up a layer, or on a package folder the contract does not name."""
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if lint is None:
        pytest.fail("import-linter is not installed: pip install -e '.[test]'")
    proc = subprocess.run([lint, "--no-cache"], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout and "kept" in proc.stdout, proc.stdout[-2000:]


def test_the_contract_sees_imports_inside_functions(tmp_path):
    """A lower layer importing a higher one inside a function breaks the contract (checked on a copy)."""
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    copy = tmp_path / "repo"
    for name in (*PACKAGES, "pyproject.toml"):
        source = REPO / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, copy / name)
    culprit = copy / "harness" / "config" / "names.py"
    culprit.write_text(culprit.read_text() + "\n\ndef _reach_up():\n    from harness.reports import registry\n"
                       "    return registry\n")
    proc = subprocess.run([lint, "--no-cache"], cwd=copy, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(copy)})
    assert proc.returncode != 0 and "harness.config.names -> harness.reports.registry" in proc.stdout, proc.stdout[-3000:]


def test_few_imports_hide_inside_functions():
    found = in_function_imports()
    total = sum(map(len, found.values()))
    listing = "\n".join(f"{n:3d} {path}" for path, n in sorted(((p, len(v)) for p, v in found.items()),
                                                               key=lambda item: -item[1]))
    assert total <= MAX_IMPORTS_IN_FUNCTIONS, f"{total} imports of project modules inside functions:\n{listing}"
