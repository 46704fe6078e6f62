"""Seeds in a named sweep's grids: how many jobs one seed adds, and which seeds the grids fix."""
from __future__ import annotations

from typing import Any, Dict, List, Optional


def runs_per_seed(grids: List[Dict[str, Any]]) -> int:
    """Jobs one seed adds to a sweep: over its grids, the product of each grid's axis lengths (seed aside)."""
    total = 0
    for grid in grids:
        count = 1
        for axis, values in (grid or {}).items():
            if axis != "seed" and isinstance(values, list):
                count *= len(values)
        total += count
    return max(1, total)


def fixed_seeds(grids: List[Dict[str, Any]]) -> Optional[List[Any]]:
    """The seeds the grids list (the union), or None if no grid names seeds."""
    seen: List[Any] = []
    for grid in grids:
        values = grid.get("seed")
        for v in values if isinstance(values, list) else ([values] if values is not None else []):
            if v not in seen:
                seen.append(v)
    return seen or None
