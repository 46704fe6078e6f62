"""Arm selectors of a sweep's design: "key=value,key=value", each value read as YAML (so `8` is a number)."""
from __future__ import annotations

from typing import Any, Tuple

import yaml


def parse_selector(text: str) -> Tuple[Tuple[str, Any], ...]:
    """'algo.name=dppo,precision.mismatch_scale=8' -> (('algo.name', 'dppo'), ('precision.mismatch_scale', 8))."""
    pairs = []
    for part in str(text).split(","):
        if "=" not in part:
            raise ValueError(f"arm selector {text!r}: {part!r} is not key=value")
        key, value = part.split("=", 1)
        pairs.append((key.strip(), yaml.safe_load(value.strip())))
    return tuple(pairs)
