"""The looks of an adaptive-seed study (`seeds: auto`): how many seeds per arm each round brings. Plain
arithmetic, no scipy, so that planning a sweep (`--plan`) does not load the statistics."""
from __future__ import annotations

from typing import List


def looks(per_round: int, max_seeds: int) -> List[int]:
    """Seeds per arm at each look: per_round, 2·per_round, ... up to max_seeds (the first look at ≥ 2)."""
    out = []
    n = per_round
    while n < max_seeds:
        if n >= 2:
            out.append(n)
        n += per_round
    return out + [max_seeds]
