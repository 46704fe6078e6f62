"""Names a user can type: the config groups, each group's choices, and the nearest one to a misspelling."""
from __future__ import annotations

from importlib import resources
from typing import List, Sequence

CONFIG_NAME = "config"  # the primary config: conf/config.yaml
CONFIG_MODULE = "harness.conf"
GROUPS = ("model", "dataset", "precision", "algo", "trainer", "launcher", "sweeper", "tracking", "experiment",
          "debug")


def group_options(group: str) -> List[str]:
    """The choices of a config group: its conf/<group>/*.yaml and what is registered in Hydra's ConfigStore
    (`algo` from the objectives' specs, `launcher` from the launcher registry, once stored)."""
    from hydra.core.config_store import ConfigStore  # Hydra is loaded by then: these names answer its errors

    try:
        folder = resources.files(CONFIG_MODULE) / group
        files = [p.name for p in folder.iterdir()]
    except (FileNotFoundError, NotADirectoryError, ModuleNotFoundError):
        files = []
    try:
        stored = ConfigStore.instance().list(group)
    except (OSError, ValueError):
        stored = []
    return sorted({name[:-5] for name in [*files, *stored] if name.endswith(".yaml") and not name.startswith("_")})


MOST_CHANGED = 0.4  # a name is offered when at most this share of the longer of the two names is changed
MIN_PREFIX = 3  # a word this long that begins a name offers it (`sort` -> `sorting`)


def edit_distance(a: str, b: str) -> int:
    """Insertions, deletions, substitutions and swaps of two neighbouring characters needed to turn `a` into
    `b` (the optimal-string-alignment distance: `bf61` is one swap from `bf16`)."""
    before, row = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (ca != cb))
            if before is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        before, row = row, current
    return row[-1]


def nearest_names(word: str, candidates: Sequence[str]) -> List[str]:
    """The candidates closest to a mistyped word by edit distance (relative to the longer name, ignoring
    case), every one equally close, in the candidates' order; else the names the word begins (at least
    MIN_PREFIX characters); [] when none is close."""
    word = str(word)
    scored = [(edit_distance(word.lower(), str(c).lower()) / max(len(word), len(str(c)), 1), str(c))
              for c in candidates]
    best = min((score for score, _ in scored), default=1.0)
    if best > MOST_CHANGED:  # a name cut short (`sort` for `sorting`): the names it begins, if it begins any
        return [str(c) for c in candidates if len(word) >= MIN_PREFIX and str(c).lower().startswith(word.lower())]
    return [name for score, name in scored if score == best]


def did_you_mean(word: str, candidates: Sequence[str], template: str = "{}") -> str:
    """'did you mean <a> or <b>? ' (each formatted with `template`): every nearest name, or '' when none is
    close or the word is one of them."""
    found = [template.format(name) for name in nearest_names(word, candidates) if name != str(word)]
    if not found:
        return ""
    return f"did you mean {' or '.join([', '.join(found[:-1]), found[-1]] if len(found) > 1 else found)}? "
