"""Compose run configs with Hydra, once per job, so bad input is refused before any job starts.

`preflight_jobs(overrides, multirun)` expands a sweep exactly as Hydra's basic sweeper does, composes every
job's config with Hydra (one initialization for all of them) and validates it. The launch then uses those
configs (`harness.config.composed`) instead of composing them again. Hydra's multi-line composition and
parse errors become one-line `ConfigError`s that suggest the nearest valid name."""
from __future__ import annotations

import contextlib
import copy
import os
import re
import unicodedata
from dataclasses import dataclass
from typing import Iterator, List, Sequence

from omegaconf import DictConfig, open_dict

from harness.config.errors import ConfigError
from harness.config.limits import check_environment, check_grid_size, refuse_duplicates
from harness.config.names import CONFIG_MODULE, GROUPS, did_you_mean, group_options
from harness.config.schema import register_schemas
from harness.config.validate import validate

CONFIG_NAME = "config"
JOB_NAME = "job"  # hydra.job.name: Hydra names it after the task function's module, harness/job.py


@dataclass
class Job:
    """One job of a run or sweep: its overrides, its config as Hydra composed it (with the `hydra` node) and
    the validated run config the job computes with."""
    overrides: List[str]
    config: DictConfig
    spec: DictConfig


def expand_sweep(overrides: Sequence[str]) -> List[List[str]]:
    """The override list of every job in a sweep, in Hydra's order (a cartesian product)."""
    # Hydra's grid expansion is only available on its basic sweeper (no public function does it)
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    parsed = parse_overrides(overrides)
    for override in parsed:
        if override.is_sweep_override() and not list(override.sweep_string_iterator()):
            raise ConfigError(f"{override.get_key_element()} has an empty sweep: give at least one value")
    batches = BasicSweeper.split_arguments(parsed, None)
    return [job for batch in batches for job in batch]


def parse_overrides(overrides: Sequence[str]) -> list:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    parsed = []
    for item in overrides:  # one at a time, to name the one that does not parse
        try:
            parsed.extend(parser.parse_overrides([item]))
        except Exception as err:  # Hydra's OverrideParseException: several lines and a lexer's name
            raise ConfigError(describe_parse_error(item, err)) from None
    return parsed


@contextlib.contextmanager
def hydra_session() -> Iterator[None]:
    """Hydra initialized on the harness's configs for the compositions inside (the previous state restored)."""
    from hydra import initialize_config_module

    register_schemas()
    with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3", job_name=JOB_NAME):
        yield


def compose_in_session(overrides: Sequence[str], multirun: bool = False) -> DictConfig:
    """One job's config with its `hydra` node, as Hydra's launcher composes it (`load_sweep_config`: a sweep's
    job is composed in RUN mode with `hydra.mode=MULTIRUN`); inside `hydra_session`."""
    from hydra import compose as hydra_compose

    mode = "hydra.mode=MULTIRUN" if multirun else "hydra.mode=RUN"  # what Hydra's command line adds
    try:
        return hydra_compose(config_name=CONFIG_NAME, overrides=[*overrides, mode], return_hydra_config=True)
    except Exception as err:
        raise ConfigError(describe_composition_error(err, overrides)) from None


def compose(overrides: Sequence[str]) -> DictConfig:
    """One run's config (without the `hydra` node), composed by Hydra; errors as one-line ConfigErrors."""
    with hydra_session():
        cfg = compose_in_session(overrides)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def task_config(full: DictConfig) -> DictConfig:
    """A composed config without its `hydra` node (what the job function receives)."""
    cfg = copy.copy(full)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def preflight_jobs(overrides: Sequence[str], multirun: bool) -> List[Job]:
    """Every job of a run or sweep, composed by Hydra and validated; ConfigError (one line) for the first
    that cannot run. For sweeper=optuna, the jobs are the edges of its search space (validated, not run)."""
    parsed = parse_overrides(overrides)
    refuse_duplicates(parsed)
    check_environment()
    if multirun:
        check_grid_size(parsed)
    jobs = expand_sweep(overrides) if multirun else [list(overrides)]
    if not jobs:
        raise ConfigError("the sweep is empty: no job to run")
    from harness.config.composed import handed_over

    given = handed_over(jobs)
    if given is not None:
        return given
    workers = _pool_workers(len(jobs))
    if workers > 1:
        from concurrent.futures.process import BrokenProcessPool

        try:
            return _compose_in_pool(jobs, multirun, workers)
        except BrokenProcessPool:  # e.g. a __main__ a spawned process cannot import (a script read from stdin)
            pass
    with hydra_session():
        composed = [_compose_job(job, multirun) for job in jobs]
        if multirun and composed[0].spec.sweeper.name == "optuna":
            return _optuna_preflight(jobs, composed[0].config)
    return composed


def _compose_job(job: List[str], multirun: bool) -> Job:
    full = compose_in_session(job, multirun)
    return Job(list(job), full, validate(task_config(full), job))


# Hydra composes a job in about 0.1-0.2 s (it re-reads and re-merges the config files each time, as its own
# launcher does), so a large grid is composed by a pool of processes, each job still once and by Hydra.
# A worker starts in about 0.5 s, so smaller sweeps stay in this process.
POOL_MIN_JOBS = 24
POOL_MAX_WORKERS = 8


def _pool_workers(n_jobs: int) -> int:
    if n_jobs < POOL_MIN_JOBS:
        return 1
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(available, POOL_MAX_WORKERS, n_jobs // (POOL_MIN_JOBS // 2)))


def _compose_in_pool(jobs: List[List[str]], multirun: bool, workers: int) -> List[Job]:
    """The jobs composed by `workers` spawned processes, in order; the first job that cannot run is the one
    refused, as when they are composed here one by one."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from tqdm import tqdm

    size = max(1, -(-len(jobs) // (workers * 4)))  # contiguous chunks, several per worker to even out the load
    chunks = [jobs[i:i + size] for i in range(0, len(jobs), size)]
    composed: List[Job] = []
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_enter_hydra_session) as pool, \
            tqdm(total=len(jobs), desc="composing", unit="job", disable=None, leave=False) as bar:
        for result in pool.map(_compose_chunk, chunks, [multirun] * len(chunks)):
            if isinstance(result, str):
                pool.shutdown(wait=True, cancel_futures=True)
                raise ConfigError(result)
            composed.extend(result)
            bar.update(len(result))
    return composed


_WORKER_SESSION = contextlib.ExitStack()


def _enter_hydra_session() -> None:
    _WORKER_SESSION.enter_context(hydra_session())  # for the worker's life


def _compose_chunk(chunk: List[List[str]], multirun: bool) -> "List[Job] | str":
    """The chunk's jobs composed, or the one-line refusal of the first that cannot run."""
    try:
        return [_compose_job(job, multirun) for job in chunk]
    except ConfigError as err:
        return str(err)


def preflight(overrides: Sequence[str], multirun: bool) -> List[DictConfig]:
    """The validated run config of every job of a run or sweep."""
    return [job.spec for job in preflight_jobs(overrides, multirun)]


def _optuna_preflight(jobs: List[List[str]], first: DictConfig) -> List[Job]:
    """Optuna searches what `hydra.sweeper.params` names; every edge of that space must be a valid run."""
    from harness.config.search_space import parse_space

    if len(jobs) > 1:
        raise ConfigError("with sweeper=optuna, put every dimension in hydra.sweeper.params "
                          "(comma-separated sweep values are a grid, not a search)")
    hydra_cfg = first.hydra.sweeper
    try:
        space = parse_space(dict(hydra_cfg.params))
    except ValueError as err:
        raise ConfigError(str(err)) from None
    _check(hydra_cfg.n_trials >= 1, f"hydra.sweeper.n_trials={hydra_cfg.n_trials} is not allowed: must be >= 1")
    _check(hydra_cfg.n_jobs >= 1, f"hydra.sweeper.n_jobs={hydra_cfg.n_jobs} is not allowed: must be >= 1")
    _check(hydra_cfg.direction in ("maximize", "minimize"),
           f"hydra.sweeper.direction={hydra_cfg.direction!r} is not allowed: maximize or minimize")
    edges = []
    for key, dim in space.items():
        for value in dim.sample_values():
            job = [*jobs[0], f"{key}={value}"]
            full = compose_in_session(job, multirun=True)
            edges.append(Job(job, full, validate(task_config(full), job)))
    return edges


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def describe_parse_error(item: str, err: Exception) -> str:
    """One line for an override Hydra's lexer or parser refuses, with the nearest valid spelling."""
    key, eq, value = item.partition("=")
    odd = [c for c in item if ord(c) > 127 and not c.isspace()]
    if odd:
        names = ", ".join(f"{c!r} ({unicodedata.name(c, 'U+%04X' % ord(c))})" for c in dict.fromkeys(odd))
        reason = f"contains {names}, which an override cannot hold outside quotes"
    else:
        reason = re.sub(r"\s+", " ", _first_line(err)).replace("LexerNoViableAltException: ", "")
    hint = ""
    bare_key = key.lstrip("+~")
    ascii_value = "".join(c for c in value if ord(c) < 128)
    if bare_key in GROUPS and eq:
        hint = did_you_mean(value, group_options(bare_key), f"{bare_key}={{}}")
        if not hint and ascii_value != value:
            hint = did_you_mean(ascii_value, group_options(bare_key), f"{bare_key}={{}}")
    elif any(ord(c) > 127 for c in key):
        hint = did_you_mean(key, GROUPS)
    return f"cannot parse override {item!r}: {reason}" + (f"; {hint.strip()}" if hint else "")


def describe_composition_error(err: Exception, overrides: Sequence[str]) -> str:
    from hydra.errors import MissingConfigException, OverrideParseException

    if isinstance(err, OverrideParseException):
        parse_overrides(overrides)  # raises, naming the override that does not parse

    chain: List[BaseException] = []
    e: BaseException | None = err
    while e is not None and e not in chain:
        chain.append(e)
        e = e.__cause__ or e.__context__
    for e in chain:
        if isinstance(e, MissingConfigException) and e.options is not None and e.missing_cfg_file:
            group, _, choice = e.missing_cfg_file.rpartition("/")
            options = sorted(o for o in e.options if not o.startswith("_"))
            return (f"{group}={choice} is not a known choice; {did_you_mean(choice, options, f'{group}={{}}')}"
                    f"allowed: {', '.join(options)}")
    text = "\n".join(str(e) for e in chain)
    full_key = re.search(r"full_key: ([\w.\[\]]+)", text)
    key = full_key.group(1) if full_key else None
    if "not in struct" in text or "Key '" in text and "not in" in text:
        bad = key or _missing_key(text)
        if bad and bad.startswith("trainer.verl.") and not _has_node("trainer.verl", overrides):
            # e.g. --dry-run on the built-in trainer
            what = (" (--dry-run prints the verl command and batch script without running them)"
                    if bad == "trainer.verl.dry_run" else "")
            return f"{bad} applies to trainer=verl only{what}; the built-in trainer has no such key"
        siblings = _sibling_keys(bad, overrides)
        leaf = bad.rpartition(".")[2]
        parent = bad.rpartition(".")[0]
        hint = did_you_mean(leaf, siblings, f"{parent}.{{}}" if parent else "{}")
        return f"unknown key '{bad}'; {hint}allowed: {', '.join(siblings) or 'see `python -m harness --cfg job`'}"
    if "could not be converted" in text or "Value '" in text:
        m = (re.search(r"Value '([^']*)' (?:of type '\w+' )?could not be converted to (\w+)", text)
             or re.search(r"Value '([^']*)' is not a valid (\w+)", text))
        if m:
            return f"{key}={m.group(1)!r} has the wrong type: expected {m.group(2).lower()}"
    if "Could not find" in text:
        m = re.search(r"Could not find '([^']+)'", text)
        if m:
            return f"{m.group(1)} is not a known config"
    return _first_line(err)


def _sibling_keys(bad_key: str, overrides: Sequence[str]) -> List[str]:
    """The keys that do exist next to a misspelt one: the fields of its node's schema, or (for the untyped
    `algo` node and the like) the keys of the config composed with the same choices."""
    import dataclasses
    import typing

    from harness.config.schema import RunConfig

    node: object = RunConfig
    for part in bad_key.split(".")[:-1]:
        hints = typing.get_type_hints(node) if dataclasses.is_dataclass(node) else {}
        node = hints.get(part)
    if dataclasses.is_dataclass(node):
        return [f.name for f in dataclasses.fields(node)]
    from omegaconf import OmegaConf

    parent = bad_key.rpartition(".")[0]
    found = _composed_with_choices(overrides)
    try:
        found = OmegaConf.select(found, parent) if parent else found
        return sorted(str(k) for k in found.keys())
    except Exception:
        return []


def _composed_with_choices(overrides: Sequence[str]) -> "DictConfig | None":
    """The config composed with only the group choices among `overrides` (None if even that fails)."""
    from hydra import compose as hydra_compose

    try:
        return hydra_compose(config_name=CONFIG_NAME, overrides=[o for o in overrides if o.split("=")[0] in GROUPS])
    except Exception:
        return None


def _has_node(key: str, overrides: Sequence[str]) -> bool:
    """Whether the config composed with the same group choices (e.g. trainer=verl, or an experiment that
    selects it) has a non-empty node `key`."""
    from omegaconf import OmegaConf

    found = _composed_with_choices(overrides)
    return found is not None and bool(OmegaConf.select(found, key))


def _missing_key(text: str) -> str:
    m = re.search(r"Could not override '([^']+)'", text) or re.search(r"Key '([^']+)'", text)
    return m.group(1) if m else "?"
