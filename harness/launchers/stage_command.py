"""`harness stage`: the verl staging command (harness/trainers/verl/stage.py) handed the one composer, which
sits above the trainers (harness/launchers/compose.py)."""
from __future__ import annotations

from typing import List

from harness.launchers.compose import compose
from harness.trainers.verl import stage


def main(argv: List[str]) -> int:
    return stage.main(argv, compose)
