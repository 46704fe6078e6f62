"""The α of an adaptive study's last look, as its driver recorded it in the study's folder (`adaptive.yaml`,
harness/sweeps/study_state.py, a layer above: named, not imported). A report that decides on a study's runs
decides at that look's α, so its verdict is the one the study stopped on (harness/sweeps/report_looks.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import yaml

STUDY_FILE = "adaptive.yaml"


def last_look_alpha(sweep_dir: Optional[Path]) -> Optional[float]:
    """The α the study's last look spent; None without a study, or before its first look."""
    if sweep_dir is None:
        return None
    try:
        state = yaml.safe_load((Path(sweep_dir) / STUDY_FILE).read_text())
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None
    looks = state.get("looks") if isinstance(state, dict) else None
    alpha = looks[-1].get("alpha") if isinstance(looks, list) and looks and isinstance(looks[-1], dict) else None
    return float(alpha) if isinstance(alpha, (int, float)) and 0.0 < alpha < 1.0 else None
