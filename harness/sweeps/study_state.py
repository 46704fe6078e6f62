"""An adaptive study's record in its folder (`adaptive.yaml`) and what `--continue` checks against it.

The record holds the study's sweep, overrides and flags, the seeds per arm its rounds have run (`done`), its
design as it started (`design`: the sweep file's content less its texts, harness/sweeps/design_identity.py),
and once it stops, why (`stopped`) and whether that ends it (`final`: decided, not testable here, its budget
spent or refused by its pilot; a study stopped by its minutes budget or killed may run more rounds). A study
is sealed: `--continue` refuses an ended study, a changed sweep file and an override that changes what a
run computes, each in one line, before anything runs. One driver at a time holds the folder
(`.study.lock`): a second `--continue` is refused while the first runs."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml

from harness.infra.atomic_file import write_text_atomically
from harness.infra.claim import FolderInUse, claim
from harness.sweeps.design_identity import (changes_computation, first_difference, override_key,
                                            sweep_design)

STATE_FILE = "adaptive.yaml"
STUDY_LOCK = ".study.lock"  # the driver's; each round's sweep claims the folder's own lock beside it
STATE_FIELDS = {"sweep": "a sweep name", "user": "a list of overrides", "flags": "a list of flags",
                "done": "a whole number of rounds ≥ 0"}
OPTIONAL_FIELDS = {"design": "a mapping (the sweep file as the study started)", "stopped": "a text (why it stopped)",
                   "final": "true or false (whether the study takes more rounds)",
                "looks": "a list of the looks taken ({round, seeds, alpha} each: the α each spent)",
                "next": "a whole number (the seeds per arm of the round under way)",
                   "pins": "a mapping (its store, experiment and resolved values: harness/sweeps/study_pins.py)"}


def saved_state(sweep_dir: Path) -> Optional[dict]:
    """What an adaptive study left in its folder (the fields above); None if not one. ValueError (one line
    naming the file, the key and what is allowed) for a state file that is there but malformed."""
    path = Path(sweep_dir) / STATE_FILE
    try:
        state = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as err:
        raise ValueError(f"{path} cannot be read: {str(err).splitlines()[0] if str(err) else type(err).__name__}")
    if not isinstance(state, dict):
        raise ValueError(f"{path} is not a mapping of {', '.join(STATE_FIELDS)}")
    fits = {"sweep": isinstance(state.get("sweep"), str),
            "user": isinstance(state.get("user"), list) and all(isinstance(o, str) for o in state["user"]),
            "flags": isinstance(state.get("flags"), list) and all(isinstance(f, str) for f in state["flags"]),
            "done": isinstance(state.get("done"), int) and not isinstance(state["done"], bool) and state["done"] >= 0,
            # optional: a study recorded before they existed has none of them
            "design": isinstance(state.get("design", {}), dict),
            "stopped": isinstance(state.get("stopped", ""), str),
            "final": isinstance(state.get("final", False), bool),
            "looks": isinstance(state.get("looks", []), list) and all(
                isinstance(look, dict) and isinstance(look.get("alpha"), float) for look in state.get("looks", [])),
            "next": isinstance(state.get("next", 0), int) and not isinstance(state.get("next", 0), bool),
            "pins": isinstance(state.get("pins", {}), dict)}
    for key, ok in fits.items():
        if not ok:
            found = "missing" if key not in state else f"{state[key]!r}"
            raise ValueError(f"{path}: {key} is {found}; allowed: {({**STATE_FIELDS, **OPTIONAL_FIELDS})[key]}")
    return state


def save_state(sweep_dir: Path, state: Dict[str, Any]) -> None:
    Path(sweep_dir).mkdir(parents=True, exist_ok=True)
    write_text_atomically(Path(sweep_dir) / STATE_FILE, yaml.safe_dump(state, sort_keys=False, allow_unicode=True))


def design_of(sweep_file: Path) -> Dict[str, Any]:
    """The sweep file's design as a study seals it (ValueError, one line, for a file that cannot be read)."""
    try:
        raw = yaml.safe_load(Path(sweep_file).read_text())
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as err:
        raise ValueError(f"{sweep_file} cannot be read: {str(err).splitlines()[0]}") from None
    return sweep_design(raw if isinstance(raw, dict) else {"": raw})


def continue_refusal(state: dict, sweep_file: Path, user: List[str]) -> Optional[str]:
    """Why `--continue` with overrides `user` may not run another round of this study, or None."""
    if state.get("final"):
        return (f"the study has ended: {state.get('stopped') or 'stopped'}; it takes no more rounds (another "
                "design is another study: run it without --continue)")
    recorded = state.get("design")
    changed = None if recorded is None else first_difference(recorded, design_of(sweep_file))
    if changed:
        return (f"the sweep file {sweep_file} changed since the study started ({changed}): a changed design is "
                "another study (run it without --continue, or restore the file)")
    ran = {override_key(o): o for o in state["user"]}
    new = [o for o in user if changes_computation(o) and ran.get(override_key(o)) != o]
    if new:
        was = [ran.get(override_key(o), f"{override_key(o)} as the sweep file sets it") for o in new]
        return (f"{' '.join(new)} would change what the runs compute (the study ran with {', '.join(was)}); "
                "--continue takes only where and how runs run (launcher, tracking, cache_dir, hydra.*)")
    return None


def hold_study(sweep_dir: Path) -> None:
    """Hold the study's folder for this driver; ValueError (one line) while another driver holds it."""
    try:
        claim(Path(sweep_dir), "study folder", lock_file=STUDY_LOCK)
    except FolderInUse as err:
        raise ValueError(str(err)) from None
