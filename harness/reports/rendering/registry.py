"""Report kinds: name -> builder. A new report = one module `harness/reports/rendering/kinds/<name>.py`
defining `REPORT = ReportKind(...)` + its name in `KINDS` (the order pages are built and listed in)."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, List, Optional

from harness.reports.results.data import SweepData
from harness.reports.rendering.page import Page

KINDS = ("overview", "sensitivity", "alpha_relaxation", "anchor_ablation", "stability", "geometry", "decisions")
# The paper-claim tests (`claims.py`): built only when asked for by name, as the claim sweeps do.
CLAIM_KINDS = ("claim_sanity", "claim_trust_region", "claim_anchor", "claim_relaxation", "claim_drpo_vs_dppo",
               "claim_bandpo")


@dataclass(frozen=True)
class ReportKind:
    """name: registry key = module name = output folder. needs(data): None if the sweep holds what the
    report is about, else one line saying what is missing. build(data, page): adds the page's content."""

    name: str
    title: str
    needs: Callable[[SweepData], Optional[str]]
    build: Callable[[SweepData, Page], None]


def list_kinds() -> List[str]:
    """Every registered kind."""
    return [*KINDS, *CLAIM_KINDS]


def default_kinds() -> List[str]:
    """The kinds a sweep gets when it names none: each built if its data is present."""
    return list(KINDS)


def get_kind(name: str) -> ReportKind:
    """The registered report kind `name`; ValueError listing the known kinds if there is none."""
    if name not in list_kinds():
        raise ValueError(f"unknown report kind {name!r}; known: {', '.join(list_kinds())}")
    report = importlib.import_module(f"harness.reports.rendering.kinds.{name}").REPORT
    if report.name != name:
        raise ValueError(f"harness/reports/rendering/kinds/{name}.py registers {report.name!r}; "
                         f"it must register {name!r}")
    return report
