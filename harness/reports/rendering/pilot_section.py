"""The pilot's section of a report page: per declared test the pilot's seeds, the spread of a seed's contrast,
the SESOI and the planned design's power, and whether the main runs were refused (what the pilot decides:
harness/reports/evidence/pilot.py)."""
from __future__ import annotations

from typing import Optional

from harness.reports.evidence import pilot
from harness.reports.rendering.page import Page
from harness.reports.results.data import SweepData, fmt
from harness.stats.grid_seeds import runs_per_seed


def write_section(page: Page, data: SweepData, spec) -> Optional[str]:
    """The pilot's table and whether the design was refused, on a report page; returns the refusal (or None)."""
    design = spec.design
    sized = pilot.size(data, spec)
    saved = pilot.saved_plan(data.sweep_dir)
    page.heading("Pilot (sizes the design; its runs are never tested)")
    both = design.pilot.both
    page.table(["test", "pilot seeds with every arm", "pilot SD of a seed's contrast", "SESOI",
                f"power of the planned design at the SESOI (target {design.power:.0%})"]
               + (["power to show \"not reproduced\" without an effect"] if both else []),
               [[s.test.name, s.seeds, None if s.sd is None else fmt(s.sd, 4), fmt(s.test.sesoi),
                 None if s.power is None else f"{s.power:.0%}"]
                + ([None if s.power_against is None else f"{s.power_against:.0%}"] if both else [])
                for s in sized])
    if not any(s.seeds for s in sized):
        page.text(f"Pilot seeds {', '.join(map(str, design.pilot.seeds))}: none of their runs is in this data, so "
                  "there is no pilot figure.")
        return None
    refused = pilot.refusal(sized, design, design.max_seeds(runs_per_seed(spec.grids)))
    accepted = design.underpowered_accepted and any(s.short(design.power) for s in sized)
    plan_text = (f"The pilot planned {saved['max_seeds']} seeds per arm: the fewest whole rounds of "
                 f"{design.budget.per_round} at which every test reaches the power target"
                 + (" for both outcomes" if both else "") + ", or the cap "
                 f"({saved['cap']} seeds per arm) where none does. " if saved else "")
    page.text(f"Pilot seeds {', '.join(map(str, design.pilot.seeds))}. " + plan_text
              + (f"Refused before the main runs — {refused}." if refused else
                 "Underpowered, run anyway: the design says `underpowered: accepted`." if accepted else
                 "Every test reaches the power target."))
    return refused
