"""The pilot and precondition sections of a design (design.py): their types and parsers. A pilot
runs seeds that size the design and are never tested; a precondition is a regime check that gates a verdict
(preconditions.py evaluates it)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from harness.config.selectors import parse_selector
from harness.stats.combine import RULES


@dataclass(frozen=True)
class Precondition:
    name: str
    measure: str
    arm: Tuple[Tuple[str, Any], ...]  # selector pairs; () is every run
    at_least: Optional[float] = None
    at_most: Optional[float] = None

    @property
    def rule(self) -> str:
        return f"≥ {self.at_least:g}" if self.at_least is not None else f"≤ {self.at_most:g}"


SIZE_FOR = ("reproduced", "both")


@dataclass(frozen=True)
class Pilot:
    seeds: Tuple[int, ...]
    size_for: str = "reproduced"  # "both": also the power to decide "not reproduced" when there is no effect

    @property
    def both(self) -> bool:
        return self.size_for == "both"


def parse_pilot(raw, bad, adaptive: bool) -> Optional[Pilot]:
    if raw is None:
        return None
    ok = isinstance(raw, dict) and "seeds" in raw and set(raw) <= {"seeds", "size_for"}
    seeds = raw.get("seeds") if ok else None
    if not isinstance(seeds, list) or len(seeds) < 2 or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in seeds) or len(set(seeds)) != len(seeds):
        raise bad("'pilot'", f"is {raw!r}; allowed: {{seeds: [≥ 2 distinct integer seeds], size_for: "
                  f"{' | '.join(SIZE_FOR)} (optional)}}")
    size_for = raw.get("size_for", "reproduced")
    if size_for not in SIZE_FOR:
        raise bad("'pilot.size_for'", f"is {size_for!r}; allowed: {', '.join(SIZE_FOR)}")
    if not adaptive:
        raise bad("'pilot'", "needs seeds: auto (the pilot sizes the rounds that follow it)")
    return Pilot(tuple(seeds), size_for)


def parse_preconditions(raw, bad, measures) -> Tuple[Precondition, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise bad("'preconditions'", "must be a list of {name, measure, arm, at_least | at_most}")
    out = []
    for i, item in enumerate(raw):
        where = f"preconditions[{i}]"
        if not isinstance(item, dict):
            raise bad(where, "must be a mapping")
        unknown = set(item) - {"name", "measure", "arm", "at_least", "at_most"}
        if unknown:
            raise bad(f"{where} key {sorted(unknown)[0]!r}", "is not allowed; allowed: name, measure, arm, "
                      "at_least, at_most")
        if item.get("measure") not in measures:
            raise bad(f"{where}.measure", f"is {item.get('measure')!r}; allowed: {', '.join(measures)}")
        limits = [k for k in ("at_least", "at_most") if item.get(k) is not None]
        if len(limits) != 1:
            raise bad(where, "needs exactly one of at_least, at_most (the threshold the measure must meet)")
        value = item[limits[0]]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad(f"{where}.{limits[0]}", f"is {value!r}; allowed: a number")
        arm = parse_selector(item["arm"]) if item.get("arm") else ()
        out.append(Precondition(str(item.get("name") or f"precondition {i + 1}"), item["measure"], arm,
                                **{limits[0]: float(value)}))
    return tuple(out)


@dataclass(frozen=True)
class Earlier:
    """An earlier design of the same claim that ran (tested, refused by its pilot, or exploratory): the commit
    that holds it and what it showed. Each counts in the family-wise line (serial_designs.py)."""
    commit: str
    showed: str


def parse_history(raw, bad) -> Tuple[Earlier, ...]:
    if raw is None:
        return ()
    allowed = "a list of {commit: <git commit>, showed: <what it showed>}"
    if not isinstance(raw, list):
        raise bad("'history'", f"must be {allowed}")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or set(item) != {"commit", "showed"} or not all(
                isinstance(item[k], str) and item[k].strip() for k in ("commit", "showed")):
            raise bad(f"'history[{i}]'", f"is {item!r}; allowed: {allowed}")
        out.append(Earlier(item["commit"].strip(), " ".join(item["showed"].split())))
    return tuple(out)


def parse_parts(raw, bad) -> str:
    if raw is None:
        return "all"
    if raw not in RULES:
        raise bad("'parts'", f"is {raw!r}; allowed: {', '.join(RULES)} (every test must hold, or one suffices)")
    return raw
