"""What makes a study the same study: the overrides that change what its runs compute (not where or how they
run: a launcher, its members, the tracking store, the cache), and for a named sweep the sweep file's content
(less its texts). An Optuna search is named by it; an adaptive study records it and refuses to continue under
another."""
from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, List, Optional, Sequence

from harness.tracking.params import changes_computation

# a sweep file's keys that describe it without changing its runs or its tests
TEXT_KEYS = ("hypothesis", "reports", "source", "claim")


def override_key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def computing_overrides(overrides: Sequence[str]) -> List[str]:
    """The overrides that change a computation, sorted (their order does not change a run)."""
    return sorted(str(o) for o in overrides if changes_computation(str(o)))


def digest(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def sweep_design(raw: Dict[str, Any]) -> Dict[str, Any]:
    """A sweep file's parsed content less its texts: what a continued study must keep."""
    return {k: v for k, v in raw.items() if k not in TEXT_KEYS}


def first_difference(was: Any, now: Any, where: str = "") -> Optional[str]:
    """`<key path> was <a>, now <b>` for the first place two parsed documents differ, or None when equal."""
    if isinstance(was, dict) and isinstance(now, dict):
        for key in sorted(set(was) | set(now), key=str):
            path = f"{where}.{key}" if where else str(key)
            if key not in now:
                return f"{path} was {_short(was[key])}, now removed"
            if key not in was:
                return f"{path} added ({_short(now[key])})"
            found = first_difference(was[key], now[key], path)
            if found:
                return found
        return None
    if isinstance(was, list) and isinstance(now, list) and len(was) == len(now):
        for index, (a, b) in enumerate(zip(was, now)):
            found = first_difference(a, b, f"{where}[{index}]")
            if found:
                return found
        return None
    return None if was == now else f"{where or 'the file'} was {_short(was)}, now {_short(now)}"


def _short(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."
