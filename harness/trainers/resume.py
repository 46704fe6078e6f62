"""Resuming a run continues that run: its own stored spec, its verified checkpoint, its tracking run.

`trainer.resume=<run folder>` takes what the run computes (algorithm, model, data, trainer settings) from
the run's `config.yaml`, and only how it runs (threads, progress bar, tracking, launcher) from the command
line. An override that would change what the resumed run computes is refused at preflight, naming the keys:
the tracked run would otherwise mix two configurations. To try something else from a checkpoint, start a
new run with `trainer.branch_from=<run folder>`: a new run folder and tracking run, tagged
`harness.branched_from` with the run it started from."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from omegaconf import DictConfig, OmegaConf

from harness.tracking.params import NOT_HASHED, flatten, looks_secret
from harness.trainers.checkpoint import CHECKPOINT_DIR, CheckpointError, find_checkpoint, load_checkpoint

SPEC_FILE = "config.yaml"
SOURCE_KEYS = ("trainer.resume", "trainer.branch_from")


def run_folder(source: str) -> Path:
    """The run folder of `trainer.resume` / `trainer.branch_from` (a run folder or its checkpoint file)."""
    path = Path(source).expanduser()
    return path.parent.parent if path.suffix == ".pt" and path.parent.name == CHECKPOINT_DIR else path


def check_source(source: str, key: str) -> None:
    """A run folder whose checkpoint is intact plain data and whose spec is stored; else one line naming `key`."""
    state_path = find_checkpoint(source, key)
    if not (run_folder(source) / SPEC_FILE).is_file():
        raise CheckpointError(f"{key}={source!r} is not allowed: not a run folder (no {SPEC_FILE} in "
                              f"{run_folder(source)})")
    load_checkpoint(str(state_path), key)  # verifies the checksum, then loads without running code


def stored_spec(source: str) -> Dict[str, Any]:
    return OmegaConf.to_container(OmegaConf.load(run_folder(source) / SPEC_FILE), resolve=False)


# Beside the keys left out of the config hash: where the run is recorded, not what it computes.
ALSO_HOW_IT_RUNS = ("experiment_name", "hydra", "trainer.branch_from")


def _how_it_runs(name: str) -> bool:
    return looks_secret(name) or any(name == n or name.startswith(n + ".") for n in (*NOT_HASHED, *ALSO_HOW_IT_RUNS))


def _overlay(base: Dict[str, Any], stored: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    """`base` with what the run computes taken from `stored`; a group chosen differently (another `name`)
    is taken whole, so no key of the other choice is left over."""
    for key, value in stored.items():
        name = f"{prefix}{key}"
        if _how_it_runs(name):
            continue
        mine = base.get(key)
        if isinstance(value, dict) and isinstance(mine, dict) and value.get("name") == mine.get("name"):
            _overlay(mine, value, name + ".")
        else:
            base[key] = value
    return base


def resumed_spec(spec: DictConfig) -> DictConfig:
    """The spec a `trainer.resume` job runs: the resumed run's own, with this command's how-it-runs keys."""
    if not spec.trainer.get("resume") or not (run_folder(str(spec.trainer.resume)) / SPEC_FILE).is_file():
        return spec  # a fresh run, or a verl run folder resumed by verl's own checkpoint logic
    merged = _overlay(OmegaConf.to_container(spec, resolve=True), stored_spec(spec.trainer.resume))
    out = OmegaConf.create(merged)
    OmegaConf.set_struct(out, True)
    return out


def _computed(spec: DictConfig) -> Dict[str, str]:
    return {k: v for k, v in flatten(spec).items() if not _how_it_runs(k)}


def _override_key(override: str) -> str:
    return override.partition("=")[0].lstrip("+~")


def changed_keys(spec: DictConfig, default: DictConfig, overrides: Sequence[str] = ()) -> List[str]:
    """The computed keys this job's overrides set to something other than the resumed run's values: those
    that differ from the defaults, or that an override names (`trainer.steps=...`, `algo=...`)."""
    mine, plain, resumed = _computed(spec), _computed(default), _computed(resumed_spec(spec))
    named = [_override_key(o) for o in overrides]

    def set_by_user(key: str) -> bool:
        return mine.get(key) != plain.get(key) or any(key == n or key.startswith(n + ".") for n in named)

    return sorted(k for k in set(mine) | set(resumed) if mine.get(k) != resumed.get(k) and set_by_user(k))


def check_resumes(configs: Sequence[DictConfig], jobs: Optional[Sequence[Sequence[str]]],
                  compose_spec: Callable[[Sequence[str]], DictConfig]) -> None:
    """Preflight of every job that resumes or branches (raises CheckpointError, one line). `jobs`: each
    job's overrides, to tell the keys a user set from the defaults (None: compare with the stored spec);
    `compose_spec`: the launchers' composer of a validated spec from overrides (composing sits above trainers)."""
    for index, spec in enumerate(configs):
        given = [(key, spec.trainer.get(key.split(".")[1])) for key in SOURCE_KEYS]
        given = [(key, value) for key, value in given if value]
        if len(given) > 1:
            raise CheckpointError("trainer.resume and trainer.branch_from are not allowed together: resume "
                                  "continues a run, branch_from starts a new one from its checkpoint")
        if not given:
            continue
        key, source = given[0]
        if spec.trainer.name != "builtin":
            if key == "trainer.branch_from":
                raise CheckpointError(f"trainer.branch_from is not allowed with trainer={spec.trainer.name}: "
                                      "only the builtin trainer branches runs")
            if not run_folder(str(source)).is_dir():
                raise CheckpointError(f"{key}={str(source)!r} is not allowed: no such folder")
            continue
        check_source(str(source), key)
        if key != "trainer.resume":
            continue
        overrides = jobs[index] if jobs is not None and len(jobs) == len(configs) else None
        default = resumed_spec(spec) if overrides is None else _default_spec(overrides, compose_spec)
        changed = changed_keys(spec, default, overrides or ())
        if changed:
            run = run_folder(str(source))
            stored, mine = _computed(resumed_spec(spec)), _computed(spec)
            shown = ", ".join(f"{k}={mine.get(k, '(unset)')} (run: {stored.get(k, '(unset)')})" for k in changed[:6])
            shown += ", ..." if len(changed) > 6 else ""
            raise CheckpointError(f"trainer.resume={str(source)!r}: {shown} would change what run {run.name} "
                                  f"computes; resume continues the run's own spec, to try other values start "
                                  f"a new run from its checkpoint with trainer.branch_from={source}")


def _default_spec(overrides: Sequence[str], compose_spec: Callable[[Sequence[str]], DictConfig]) -> DictConfig:
    """The spec of the same job given only its how-it-runs overrides (what a plain resume composes)."""
    return compose_spec([o for o in overrides if _how_it_runs(_override_key(o))])

