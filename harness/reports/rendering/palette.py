"""One colour per objective and one line style per precision, the same in every report.

Objectives of a family share a hue family (regularizers reds/oranges, clipping greens, ...); an unknown
name gets a stable colour from its hash. Lines that differ within an objective (δ values, α values) use
`shades(objective, n)`, light to dark around the objective's colour, so the objective stays recognisable.
"""
from __future__ import annotations

import zlib
from typing import List, Tuple

OBJECTIVE_COLOURS = {
    "dppo": "#1f77b4",             # blue
    "drpo": "#d62728",             # red
    "spo": "#ff7f0e",              # orange
    "bandpo": "#9467bd",           # purple
    "grpo": "#2ca02c",             # green
    "grpo_cliphigher": "#8c564b",  # brown
    "minirl": "#e377c2",           # pink
    "minirl_tis": "#7f7f7f",       # grey
    "cispo": "#bcbd22",            # olive
    "pg_is": "#17becf",            # cyan
    "mask_drpo": "#ff9896",        # light red
    "mask_spo": "#e6a15c",         # light orange
    "mask_kl": "#6baed6",          # light blue
    "kl_reg": "#74c476",           # light green
    "k3_reg": "#b5a1d6",           # light purple
    "tv_reg": "#c49c94",           # light brown
}
FALLBACK = ("#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#31a354", "#756bb1")
PRECISION_STYLES = {"fp32": "-", "bf16": "--", "fp16": ":", "fp8_rollout": "-.", "fp8_e2e": (0, (5, 1, 1, 1))}
ANCHOR_STYLES = {"rollout": "-", "recompute": "--"}
RELAX_MARKERS = {"both": "o", "high": "^", "low": "v"}
OTHER_STYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1)), (0, (1, 3)))


def colour(objective: str) -> str:
    """Hex colour of an objective (stable across reports and runs)."""
    if objective in OBJECTIVE_COLOURS:
        return OBJECTIVE_COLOURS[objective]
    return FALLBACK[zlib.crc32(objective.encode()) % len(FALLBACK)]


def _rgb(hex_colour: str) -> Tuple[float, float, float]:
    h = hex_colour.lstrip("#")
    return tuple(int(h[i:i + 2], 16) / 255.0 for i in (0, 2, 4))


def _mix(rgb, other, t: float) -> str:
    r, g, b = (a + (o - a) * t for a, o in zip(rgb, other))
    return "#%02x%02x%02x" % (round(r * 255), round(g * 255), round(b * 255))


def shades(objective: str, n: int) -> List[str]:
    """n colours from light to dark around the objective's colour (n = 1: the colour itself)."""
    base = _rgb(colour(objective))
    if n <= 1:
        return [colour(objective)] * max(n, 0)
    out = []
    for i in range(n):
        t = -0.4 + 0.85 * i / (n - 1)  # -0.4: towards white (still visible over bands) ... +0.45: towards black
        out.append(_mix(base, (1, 1, 1), -t) if t < 0 else _mix(base, (0, 0, 0), t))
    return out


def line_style(key: str, table: dict, index: int = 0):
    """Style for a precision/anchor value; unknown values cycle through OTHER_STYLES."""
    return table.get(key, OTHER_STYLES[index % len(OTHER_STYLES)])
