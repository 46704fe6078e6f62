"""What pins a study to one place and one design beyond its sweep file's text: the tracking store and
experiment its runs record to, and the resolved values of what its overrides set (an `${oc.env:...}` in the
sweep file resolves anew in every process). A study records them (`pins` in its `adaptive.yaml`) with its
first round, and `--continue` refuses, in one line and before anything runs, a command whose runs would go to
another store (another folder, another `tracking.uri`, MLFLOW_TRACKING_URI), another experiment, a store that
was deleted, or compute other values: a look tests every seed of the study, and must find them all, alike."""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from omegaconf import DictConfig, OmegaConf

from harness.sweeps.design_identity import digest, first_difference, override_key
from harness.tracking.params import changes_computation
from harness.tracking.store import experiment_name, mlflow_store, sqlite_file
from harness.tracking.stored_uri import on_disk

PINS_KEY = "pins"
PER_ROUND = ("seed",)  # each round runs other seeds of the same design


def pins_of(jobs: Sequence[Sequence[Any]]) -> Dict[str, Any]:
    """The pins of a round's composed jobs (one list per grid): store (as written to disk: no password),
    experiment, and for each key the overrides set, the sorted resolved values its jobs run with."""
    first = jobs[0][0].spec
    store = mlflow_store(first)
    values: Dict[str, set] = {}
    for grid in jobs:
        for job in grid:
            for override in job.overrides:
                key = override_key(str(override))
                if key in PER_ROUND or not changes_computation(str(override)):
                    continue
                values.setdefault(key, set()).add(_resolved(job.spec, key, str(override)))
    return {"store": on_disk(store) if store else None, "experiment": experiment_name(first) if store else None,
            "values": {key: sorted(found) for key, found in sorted(values.items())}}


def _resolved(spec: DictConfig, key: str, override: str) -> str:
    try:
        value = OmegaConf.select(spec, key, throw_on_missing=False)
    except Exception:  # a key the spec does not hold as such (a run shortcut): its text, as given
        value = None
    if value is None:
        return override.partition("=")[2]
    if isinstance(value, DictConfig):  # a group (algo=...): its name, or its whole content
        name = value.get("name")
        return str(name) if name is not None else digest(OmegaConf.to_container(value, resolve=True))
    return str(value)


def pins_refusal(recorded: Optional[Dict[str, Any]], now: Dict[str, Any], full_store: Optional[str]) -> Optional[str]:
    """Why a study pinned to `recorded` may not run a round pinned to `now` (one line), or None.
    `full_store`: the store's full URI, to see whether a SQLite store is still there."""
    if not recorded:
        return None  # a study recorded before pins were (its first round's are recorded now)
    where = []
    if recorded.get("store") != now.get("store"):
        where.append(f"records to the store {now.get('store')}, not the study's {recorded.get('store')}")
    if recorded.get("experiment") != now.get("experiment"):
        where.append(f"to experiment {now.get('experiment')!r}, not the study's {recorded.get('experiment')!r}")
    if where:
        return ("this command " + " and ".join(where) + ": a study's looks test all its runs in one store and "
                "experiment; run it from where the study ran (the same output root, tracking.uri= and "
                "MLFLOW_EXPERIMENT_NAME)")
    path = sqlite_file(full_store) if full_store else None
    if path is not None and not path.is_file():
        return (f"the study's store {recorded.get('store')} is gone (deleted): the runs its looks test are not "
                "there; a new study starts without --continue")
    changed = first_difference(recorded.get("values") or {}, now.get("values") or {})
    if changed:
        return (f"the design's values changed since the study started ({changed}; an ${{oc.env:...}} or other "
                "interpolation resolves anew): a changed design is another study (run it without --continue)")
    return None


def recorded_pins(state: Optional[dict]) -> Dict[str, Any]:
    pins = (state or {}).get(PINS_KEY)
    return dict(pins) if isinstance(pins, dict) else {}

