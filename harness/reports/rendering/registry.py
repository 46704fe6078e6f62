"""Report kinds: name -> builder. A new report = one module `harness/reports/rendering/kinds/<name>.py`
defining `REPORT = ReportKind(...)` + its name in `KINDS` (harness/reports/evidence/report_names.py: the order
pages are built and listed in, and what a sweep file's `reports:` may name)."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Optional

from harness.reports.evidence.report_names import CLAIM_KINDS, KINDS, default_kinds, list_kinds
from harness.reports.results.data import SweepData
from harness.reports.rendering.page import Page

__all__ = ["CLAIM_KINDS", "KINDS", "ReportKind", "default_kinds", "get_kind", "list_kinds"]


@dataclass(frozen=True)
class ReportKind:
    """name: registry key = module name = output folder. needs(data): None if the sweep holds what the
    report is about, else one line saying what is missing. build(data, page): adds the page's content."""

    name: str
    title: str
    needs: Callable[[SweepData], Optional[str]]
    build: Callable[[SweepData, Page], None]


def get_kind(name: str) -> ReportKind:
    """The registered report kind `name`; ValueError listing the known kinds if there is none."""
    if name not in list_kinds():
        raise ValueError(f"unknown report kind {name!r}; known: {', '.join(list_kinds())}")
    report = importlib.import_module(f"harness.reports.rendering.kinds.{name}").REPORT
    if report.name != name:
        raise ValueError(f"harness/reports/rendering/kinds/{name}.py registers {report.name!r}; "
                         f"it must register {name!r}")
    return report
