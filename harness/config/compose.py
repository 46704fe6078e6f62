"""Compose run configs the way Hydra will, so bad input is refused before any job starts.

`preflight(overrides, multirun)` expands a sweep exactly as Hydra's basic sweeper does, composes every
job's config and validates it. Hydra's own multi-line composition errors become one-line `ConfigError`s."""
from __future__ import annotations

import re
import warnings
from typing import List, Sequence, Tuple

from omegaconf import DictConfig, open_dict

from harness.config.fast_compose import compose_without_hydra
from harness.config.schema import register_schemas
from harness.config.validate import ConfigError, validate

CONFIG_MODULE = "harness.conf"
CONFIG_NAME = "config"
GROUPS = ("model", "dataset", "precision", "algo", "trainer", "launcher", "tracking", "experiment", "debug")


def expand_sweep(overrides: Sequence[str]) -> List[List[str]]:
    """The override list of every job in a sweep, in Hydra's order (a cartesian product)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except Exception as err:  # hydra's OverrideParseException carries a multi-line message
        raise ConfigError(f"cannot parse overrides: {_first_line(err)}") from None
    for override in parsed:
        if override.is_sweep_override() and not list(override.sweep_string_iterator()):
            raise ConfigError(f"{override.get_key_element()} has an empty sweep: give at least one value")
    batches = BasicSweeper.split_arguments(parsed, None)
    return [job for batch in batches for job in batch]


def compose(overrides: Sequence[str], cache: bool = False) -> DictConfig:
    """Compose one run config (without the `hydra` node) and translate Hydra's errors. `cache`: look it up
    in, and add it to, `compose_cache` (the CLI's). Plain choices and values are composed without Hydra
    (`fast_compose`, same result); Hydra composes the rest."""
    from harness.config import compose_cache

    name = compose_cache.key(overrides) if cache else None
    cfg = compose_cache.load(name) if name else None
    if cfg is not None:
        return cfg
    caught = None
    cfg = compose_without_hydra(overrides)
    if cfg is None:
        try:  # a composition that warns is not cached (a hit would not warn); its warnings are shown after it
            with warnings.catch_warnings(record=name is not None) as caught:
                cfg = _compose_with_hydra(overrides)
        finally:
            for w in caught or ():
                warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
        with open_dict(cfg):
            del cfg["hydra"]
    if name and not caught:
        compose_cache.store(name, cfg)
    return cfg


def preflight(overrides: Sequence[str], multirun: bool) -> List[DictConfig]:
    """Validate every job of a run or sweep; returns the validated configs."""
    return preflight_composed(overrides, multirun)[1]


def preflight_composed(overrides: Sequence[str], multirun: bool,
                       cache: bool = False) -> Tuple[List[DictConfig], List[DictConfig]]:
    """`preflight`, also returning each job's config as composed (before validation's shortcuts), i.e. what
    Hydra's `--cfg job` prints (for sweeper=optuna, the composed list is the grid's, not the search's)."""
    jobs = expand_sweep(overrides) if multirun else [list(overrides)]
    if not jobs:
        raise ConfigError("the sweep is empty: no job to run")
    composed = [compose(job, cache) for job in jobs]
    configs = [validate(cfg) for cfg in composed]
    if multirun and configs[0].sweeper.name == "optuna":
        configs = _optuna_preflight(overrides, jobs)
    return composed, configs


def _optuna_preflight(overrides: Sequence[str], jobs: List[List[str]]) -> List[DictConfig]:
    """Optuna searches what `hydra.sweeper.params` names; every edge of that space must be a valid run."""
    from harness.sweeps.search_space import parse_space

    if len(jobs) > 1:
        raise ConfigError("with sweeper=optuna, put every dimension in hydra.sweeper.params "
                          "(comma-separated sweep values are a grid, not a search)")
    hydra_cfg = _compose_with_hydra(jobs[0]).hydra.sweeper
    try:
        space = parse_space(dict(hydra_cfg.params))
    except ValueError as err:
        raise ConfigError(str(err)) from None
    _check(hydra_cfg.n_trials >= 1, f"hydra.sweeper.n_trials={hydra_cfg.n_trials} is not allowed: must be >= 1")
    _check(hydra_cfg.n_jobs >= 1, f"hydra.sweeper.n_jobs={hydra_cfg.n_jobs} is not allowed: must be >= 1")
    _check(hydra_cfg.direction in ("maximize", "minimize"),
           f"hydra.sweeper.direction={hydra_cfg.direction!r} is not allowed: maximize or minimize")
    configs = []
    for key, dim in space.items():
        for value in dim.sample_values():
            configs.append(validate(compose([*jobs[0], f"{key}={value}"])))
    return configs


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def _compose_with_hydra(overrides: Sequence[str]) -> DictConfig:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    register_schemas()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
            return hydra_compose(config_name=CONFIG_NAME, overrides=list(overrides), return_hydra_config=True)
    except Exception as err:
        raise ConfigError(describe_composition_error(err, overrides)) from None
    finally:
        GlobalHydra.instance().clear()


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def describe_composition_error(err: Exception, overrides: Sequence[str]) -> str:
    from hydra.errors import MissingConfigException

    chain: List[BaseException] = []
    e: BaseException | None = err
    while e is not None and e not in chain:
        chain.append(e)
        e = e.__cause__ or e.__context__
    for e in chain:
        if isinstance(e, MissingConfigException) and e.options is not None and e.missing_cfg_file:
            group, _, choice = e.missing_cfg_file.rpartition("/")
            allowed = ", ".join(sorted(o for o in e.options if not o.startswith("_")))
            return f"{group}={choice} is not a known choice; allowed: {allowed}"
    text = "\n".join(str(e) for e in chain)
    full_key = re.search(r"full_key: ([\w.\[\]]+)", text)
    key = full_key.group(1) if full_key else None
    if "not in struct" in text or "Key '" in text and "not in" in text:
        bad = key or _missing_key(text)
        return f"unknown key '{bad}'; allowed: {_sibling_keys(bad, overrides)}"
    if "could not be converted" in text or "Value '" in text:
        m = re.search(r"Value '([^']*)' (?:of type '\w+' )?could not be converted to (\w+)", text)
        if m:
            return f"{key}={m.group(1)!r} has the wrong type: expected {m.group(2).lower()}"
    if "Could not find" in text:
        m = re.search(r"Could not find '([^']+)'", text)
        if m:
            return f"{m.group(1)} is not a known config"
    return _first_line(err)


def _sibling_keys(bad_key: str, overrides: Sequence[str]) -> str:
    """The keys that do exist next to a misspelt one, from the config composed with the same choices."""
    from omegaconf import OmegaConf

    parent = bad_key.rpartition(".")[0]
    choices = [o for o in overrides if o.split("=")[0] in GROUPS]
    try:
        node = compose(choices)
        node = OmegaConf.select(node, parent) if parent else node
        return ", ".join(sorted(str(k) for k in node.keys()))
    except Exception:
        return "see `python -m harness --cfg job`"


def _missing_key(text: str) -> str:
    m = re.search(r"Could not override '([^']+)'", text) or re.search(r"Key '([^']+)'", text)
    return m.group(1) if m else "?"
