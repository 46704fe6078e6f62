"""claim_drpo_vs_dppo (claim 5), as the DRPO paper compares them: DRPO at its paper default δ = 12.5 against
DPPO at its recommended δ. Where the mismatch accumulates, does DRPO collapse no more often than DPPO? At
δ = 12.5 DRPO's weight 1 ∓ |π − ν|/δ stays in [0.92, 1.08] (|π − ν| ≤ 1), so it is close to pg_is; the page
says so, and shows per objective and δ the collapses, accuracy, DPPO's masked share and the mismatch."""
from __future__ import annotations

from typing import Optional

from harness.reports.rendering import claims
from harness.reports.results.data import SweepData, fmt
from harness.reports.rendering.kinds.claim_sanity import accuracy_and_mismatch
from harness.reports.rendering.page import Page
from harness.reports.rendering.registry import ReportKind

SWEEP = "claim5_drpo_vs_dppo"
BY_CONSTRUCTION = ("DRPO at its paper default δ = 12.5 is close to pg_is by construction: |π − ν| ≤ 1, so its "
                   "weight 1 ∓ |π − ν|/12.5 stays in [0.92, 1.08]. DPPO masks the tokens whose rollout "
                   "probability has drifted past its δ; its masked share below says how often that bound acted.")


def needs(data: SweepData) -> Optional[str]:
    names = {r.objective for r in data.runs}
    return None if {"dppo", "drpo"} <= names else "needs dppo and drpo runs"


def build(data: SweepData, page: Page) -> None:
    runs = [r for r in data.runs if r.objective in ("dppo", "drpo") and r.param("algo.delta") is not None]
    page.uses(runs)
    spec = claims.decisions.spec_for(data, SWEEP)
    page.text(BY_CONSTRUCTION, "method")
    groups = claims.group_by(runs, lambda r: f"{r.objective} δ={fmt(float(r.param('algo.delta')))}")
    claims.describe(data, page, groups, ["final_accuracy", "gain", "masked_share", "mismatch_start", "mismatch",
                                         "log_mismatch_growth"], claims.design_k(spec),
                    "Accuracy, collapses, masked share and mismatch by objective and δ", "variant")
    accuracy_and_mismatch(data, page, runs, groups, "claim_drpo_vs_dppo", "objective and δ")
    claims.verdict(page, data, SWEEP)


REPORT = ReportKind("claim_drpo_vs_dppo", "Claim 5: DRPO at δ 12.5 against DPPO where the mismatch accumulates",
                    needs, build)
