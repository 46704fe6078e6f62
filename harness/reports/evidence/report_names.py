"""The report kinds' names, in the order their pages are built and listed: what a sweep file's `reports:` may
name (sweep_file.py checks it before anything runs) and what harness/reports/rendering/registry.py builds, one
module per name in harness/reports/rendering/kinds/. Here, below rendering, so reading a sweep file needs no
page code."""
from __future__ import annotations

from typing import List

KINDS = ("overview", "sensitivity", "threshold_contrast", "alpha_relaxation", "anchor_ablation", "stability", "geometry", "decisions")
# The paper-claim tests (`rendering/claims.py`): built only when asked for by name, as the claim sweeps do.
CLAIM_KINDS = ("claim_sanity", "claim_trust_region", "claim_anchor", "claim_relaxation", "claim_drpo_vs_dppo",
               "claim_bandpo")


def list_kinds() -> List[str]:
    """Every registered kind."""
    return [*KINDS, *CLAIM_KINDS]


def default_kinds() -> List[str]:
    """The kinds a sweep gets when it names none: each built if its data is present."""
    return list(KINDS)
