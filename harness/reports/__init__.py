"""Sweep reports: HTML pages (PNG figures beside them) and Markdown summaries built from MLflow.

  build_sweep_reports(sweep_dir) -> list[Path]     the sweep-end callback; never raises
  build_reports(target, kinds=None) -> BuildResult  target from `results.locate.resolve(...)` / `from_sweep_dir`
  list_kinds(), get_kind(name)                       the registry (`rendering/registry.py`, one module per kind)
  python -m harness report <sweep-id | sweep folder | parent-run-id> [--kind ...]   (`cli.py`)

Importing this package is cheap: matplotlib, mlflow and torch load only when a report is built.
"""
from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "build_sweep_reports": "harness.reports.rendering.build",
    "build_reports": "harness.reports.rendering.build",
    "build_from_data": "harness.reports.rendering.build",
    "BuildResult": "harness.reports.rendering.build",
    "collect": "harness.reports.results.collect",
    "resolve": "harness.reports.results.locate",
    "from_sweep_dir": "harness.reports.results.locate",
    "list_kinds": "harness.reports.rendering.registry",
    "get_kind": "harness.reports.rendering.registry",
    "detect_collapse": "harness.stats.collapse",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'harness.reports' has no attribute {name!r}")
