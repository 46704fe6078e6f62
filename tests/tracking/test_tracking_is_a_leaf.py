"""Tracking is leaf infrastructure: no module of harness/tracking imports the layers that use it (config,
launchers, job, sweeps, reports, trainers, the CLI), at module level or inside a function."""
from __future__ import annotations

import ast
from pathlib import Path

import harness.tracking

USERS = ("harness.config", "harness.launchers", "harness.launchers.job", "harness.sweeps", "harness.reports",
         "harness.trainers", "harness.cli", "hydra_plugins")


def imported_modules(path: Path) -> set:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_tracking_imports_nothing_from_the_layers_that_use_it():
    folder = Path(harness.tracking.__file__).parent
    modules = sorted(folder.glob("*.py"))
    assert len(modules) > 10
    offending = {f"{path.name}: {name}" for path in modules for name in imported_modules(path)
                 if name.startswith(USERS)}
    assert not offending, f"tracking imports the layers above it: {sorted(offending)}"
    assert not (folder / "sweep_callback.py").exists() and not (folder / "sidecar.py").exists()
