"""decisions: the declared tests of any named sweep (`tests:` in sweeps/<name>.yaml) on its runs, with the
headline figure of contrasts and their intervals, the power figures and the command for missing seeds."""
from __future__ import annotations

from typing import Optional

from harness.reports.evidence import decisions
from harness.reports.results.data import SweepData
from harness.reports.rendering import decisions_section
from harness.reports.rendering.page import Page
from harness.reports.rendering.registry import ReportKind


def needs(data: SweepData) -> Optional[str]:
    spec = decisions.spec_for(data)
    if spec is not None and spec.design.tests:
        return None
    return "needs a named sweep whose sweep file declares tests (a `tests:` list)"


def build(data: SweepData, page: Page) -> None:
    spec = decisions.spec_for(data)
    page.uses(data.runs)
    page.text(f"Sweep file: sweeps/{spec.name}.yaml. Hypothesis: {spec.hypothesis.strip()}")
    decisions_section.write(page, data, spec)


REPORT = ReportKind("decisions", "Declared tests", needs, build)
