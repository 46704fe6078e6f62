"""Names a user can type: the config groups, each group's choices, and the nearest one to a misspelling."""
from __future__ import annotations

import difflib
from importlib import resources
from typing import List, Optional, Sequence

CONFIG_MODULE = "harness.conf"
GROUPS = ("model", "dataset", "precision", "algo", "trainer", "launcher", "sweeper", "tracking", "experiment",
          "debug")


def group_options(group: str) -> List[str]:
    """The choices of a config group (its conf/<group>/*.yaml)."""
    try:
        folder = resources.files(CONFIG_MODULE) / group
        return sorted(p.name[:-5] for p in folder.iterdir()
                      if p.name.endswith(".yaml") and not p.name.startswith("_"))
    except (FileNotFoundError, NotADirectoryError, ModuleNotFoundError):
        return []


def nearest(word: str, candidates: Sequence[str]) -> Optional[str]:
    """The candidate closest to a mistyped word (difflib), or None when none is close."""
    found = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: str, candidates: Sequence[str], template: str = "{}") -> str:
    """'did you mean <nearest>? ' (formatted with `template`), or '' when nothing is close."""
    match = nearest(word, candidates)
    return f"did you mean {template.format(match)}? " if match and match != word else ""
