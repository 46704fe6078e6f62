"""Range checks and shortcut resolution, run once on every composed config before anything starts.

Every problem is raised as `ConfigError` with one line naming the key, the value and what is allowed."""
from __future__ import annotations

import copy
import dataclasses
import ipaddress
import math
import os
import re
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, Tuple
from urllib.parse import urlparse

from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict

from harness.algorithms import specs
from harness.algorithms.names import ADVANTAGE_ESTIMATORS, LOSS_AGG_MODES
from harness.algorithms.params import ANCHORS
from harness.config.errors import ConfigError
from harness.config.limits import CPU_MEMBERS, MAX_MEMBERS
from harness.config.memory import check_builtin_memory
from harness.config.names import did_you_mean, group_options
from harness.config.profiles import available_profiles, chosen_profile, profile_for
from harness.config.task_names import BUILTIN_TASKS as TASKS  # names only: no numpy for --cfg job
from harness.config.task_shapes import check_difficulty
from harness.infra.secrets import scrub

URI_ENV = "MLFLOW_TRACKING_URI"

ALLOWED_TRACKING_SCHEMES = ("sqlite", "file", "http", "https", "postgresql", "mysql")
SEED_KEYS = ("seed", "dataset.seed", "trainer.warmstart.seed")
SEED_LIMIT = 2**64  # torch.manual_seed takes at most 64 bits
# The eval set and a fixed train pool are drawn before the run (and by the preflight's task check): sizes a
# run on this trainer could use, not ones that would keep the preflight busy for minutes.
MAX_EVAL_SIZE = 100_000
MAX_TRAIN_SIZE = 1_000_000
# A trainer's own checks of a run config that selects it (raising ConfigError); they read its layout, site and
# memory model, which sit above config, so the trainers register them (harness.trainers.checks_for) and the
# layer that validates hands them in.
TrainerChecks = Callable[[str], Iterable[Callable[[DictConfig], None]]]
# A launcher's checks of a run config that selects it, by name (harness.launchers.registry.checks_for: its entry
# names them); ConfigError naming the allowed launchers for an unknown one.
LauncherChecks = TrainerChecks


def _check(cfg: DictConfig, key: str, ok: Callable[[Any], bool], allowed: str) -> None:
    value = OmegaConf.select(cfg, key)
    if not ok(value):
        raise ConfigError(f"{key}={value!r} is not allowed: {allowed}")


def _positive(v: Any) -> bool:
    return v is not None and v > 0


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _validate_run_sections(cfg: DictConfig) -> None:
    t = "trainer"
    for key in SEED_KEYS:
        _check(cfg, key, lambda v: _is_int(v) and 0 <= v < SEED_LIMIT, "must be an integer in [0, 2**64)")
    for key in ("steps", "prompts_per_step", "mini_batches", "eval_every", "checkpoint_every",
                "torch_threads", "topk"):
        _check(cfg, f"{t}.{key}", lambda v: v >= 1, "must be an integer >= 1")
    _check(cfg, f"{t}.device", lambda v: isinstance(v, str) and re.fullmatch(r"auto|cpu|cuda(:\d+)?", v) is not None,
           "one of auto, cpu, cuda, cuda:N")
    _check(cfg, f"{t}.group_size", lambda v: v >= 2, "must be >= 2 (group advantages need two samples)")
    _check(cfg, f"{t}.lr", _positive, "must be > 0")
    _check(cfg, f"{t}.weight_decay", lambda v: v >= 0, "must be >= 0")
    _check(cfg, f"{t}.grad_clip", _positive, "must be > 0")
    _check(cfg, f"{t}.temperature", _positive, "must be > 0")
    _check(cfg, f"{t}.max_new_tokens", lambda v: v is None or v >= 1, "null (auto) or an integer >= 1")
    _check(cfg, f"{t}.advantage", lambda v: v in ADVANTAGE_ESTIMATORS, f"one of {', '.join(ADVANTAGE_ESTIMATORS)}")
    _check(cfg, f"{t}.loss_agg", lambda v: v in LOSS_AGG_MODES, f"one of {', '.join(LOSS_AGG_MODES)}")
    _check(cfg, f"{t}.warmstart.steps", lambda v: v >= 0, "must be an integer >= 0")
    _check(cfg, f"{t}.warmstart.batch_size", lambda v: v >= 1, "must be an integer >= 1")
    _check(cfg, f"{t}.warmstart.lr", _positive, "must be > 0")
    _check(cfg, f"{t}.warmstart.target_accuracy", lambda v: v is None or 0 < v <= 1,
           "null (run every warm-start step) or an accuracy in (0, 1]")
    if cfg.trainer.mini_batches > cfg.trainer.prompts_per_step * cfg.trainer.group_size:
        raise ConfigError(f"trainer.mini_batches={cfg.trainer.mini_batches} is not allowed: at most "
                          f"prompts_per_step*group_size={cfg.trainer.prompts_per_step * cfg.trainer.group_size}")
    for key in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "intermediate_size",
                "max_position_embeddings"):
        _check(cfg, f"model.{key}", lambda v: v >= 1, "must be an integer >= 1")
    if cfg.model.hidden_size % cfg.model.num_heads or cfg.model.num_heads % cfg.model.num_kv_heads:
        raise ConfigError(f"model.num_heads={cfg.model.num_heads} is not allowed: must divide hidden_size="
                          f"{cfg.model.hidden_size} and be a multiple of num_kv_heads={cfg.model.num_kv_heads}")
    if cfg.trainer.name == "builtin":
        _check(cfg, "dataset.name", lambda v: v in TASKS,
               f"trainer=builtin runs the tasks {', '.join(sorted(TASKS))} (other datasets need trainer=verl)")
    _check(cfg, "dataset.difficulty", lambda v: v >= 1, "must be an integer >= 1")
    if cfg.trainer.name == "builtin":  # the task's own bounds and the model's positions (task_shapes.py)
        check_difficulty(cfg.dataset, cfg.model)
    _check(cfg, "dataset.eval_size", lambda v: v >= 1, "must be an integer >= 1")
    _check(cfg, "dataset.eval_size", lambda v: v <= MAX_EVAL_SIZE,
           f"at most {MAX_EVAL_SIZE} (the eval set is drawn before the run and evaluated every eval_every steps)")
    _check(cfg, "dataset.train_size", lambda v: v is None or v >= 1, "null (unlimited) or an integer >= 1")
    _check(cfg, "dataset.train_size", lambda v: v is None or v <= MAX_TRAIN_SIZE,
           f"null (unlimited) or at most {MAX_TRAIN_SIZE} (the pool is drawn before the run)")
    precisions = group_options("precision")
    _check(cfg, "precision.name", lambda v: v in precisions, f"one of {', '.join(precisions)}")
    _check(cfg, "precision.mismatch_scale", lambda v: v >= 0, "must be >= 0 (1 = the precision's real rounding)")
    _check(cfg, "precision.weight_sync", lambda v: v in ("full", "delta"),
           "one of full, delta (delta: the rollout engine applies the trainer's weight changes to its own rounded copy)")
    _check(cfg, "experiment_name", lambda v: isinstance(v, str) and v.strip() != "", "a non-empty name")
    _check(cfg, "tracking.backend", lambda v: v in ("mlflow", "none"), "one of mlflow, none")
    uri, source = _tracking_uri(cfg)
    if uri is not None:
        scheme = urlparse(uri).scheme.split("+")[0]
        if scheme not in ALLOWED_TRACKING_SCHEMES:
            raise ConfigError(f"{source}={scrub(uri)!r} has an unknown scheme {scheme!r}: "
                              f"use one of {', '.join(ALLOWED_TRACKING_SCHEMES)}")


def check_builtin_memory_here(cfg: DictConfig) -> None:
    """A launcher running jobs on this machine: a built-in run must fit its memory (a run elsewhere, on Slurm,
    is sized against its own node)."""
    if cfg.trainer.name == "builtin":
        check_builtin_memory(cfg.model, cfg.trainer)


def _tracking_uri(cfg: DictConfig) -> Tuple[Any, str]:
    """The store's URI as MLflow reads it, and where it comes from (for messages)."""
    if cfg.tracking.uri is None and cfg.tracking.backend == "mlflow" and os.environ.get(URI_ENV):
        return os.environ[URI_ENV], f"environment variable {URI_ENV}"
    return cfg.tracking.uri, "tracking.uri"


def _is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host.lower().endswith(".localhost")
    return address.is_loopback or address.is_unspecified


def check_tracking_reachable(cfg: DictConfig) -> None:
    """A Slurm job runs on a compute node, where a loopback address is that node, not the tracking server's."""
    uri, source = _tracking_uri(cfg)
    if cfg.tracking.backend != "mlflow" or uri is None:
        return
    host = urlparse(uri).hostname
    if not host or not _is_loopback(host) or profile_for(cfg.launcher).allow_loopback_tracking:
        return
    raise ConfigError(f"{source}={scrub(uri)!r} is not allowed with launcher={cfg.launcher.name}: on a compute "
                      f"node {host} is the node itself, so its metrics would only spool; set "
                      f"tracking.uri=http://<login-node>:5000 (python -m harness server --host 0.0.0.0 there), or "
                      f"launcher.allow_loopback_tracking=true if the cluster is this machine")


def kept_settings(launcher: str, settings: Mapping[str, Any]) -> Callable[[DictConfig], None]:
    """A check that a run config keeps the `launcher.*` values launcher `launcher` sets itself."""
    def check(cfg: DictConfig) -> None:
        for key, value in settings.items():
            if cfg.launcher.get(key) != value:
                raise ConfigError(f"launcher.{key}={cfg.launcher.get(key)!r} is not allowed: launcher={launcher} "
                                  f"sets it ({value!r}); choose the launcher instead")
    return check


def check_profile(cfg: DictConfig) -> None:
    """A launcher reading a cluster profile: `launcher.profile` names one (one Slurm submits to: never guessed)."""
    if cfg.launcher.get("cluster") == "slurm" and not chosen_profile(cfg.launcher):
        raise ConfigError(
            f"launcher={cfg.launcher.get('name')} needs a cluster profile: add launcher.profile=<name> (shipped: "
            f"{', '.join(available_profiles())}); make your site's by copying launchers/profiles/cpu_partition.yaml "
            "or gpu_node.yaml to ./launchers/profiles/<site>.yaml (README: Launchers)")
    try:
        profile_for(cfg.launcher)
    except ValueError as err:
        raise ConfigError(str(err)) from None


def _validate_launcher(cfg: DictConfig, launcher_checks: LauncherChecks) -> None:
    checks = launcher_checks(cfg.launcher.name)  # an unknown name is refused here
    _check(cfg, "launcher.workers", lambda v: v is None or v >= 1, "null (one per core) or an integer >= 1")
    _check(cfg, "launcher.members", lambda v: v is None or 1 <= v <= MAX_MEMBERS,
           f"null (runs of one shape train together, as many as fit in memory) or an integer from 1 (each run "
           f"alone) to {MAX_MEMBERS} (on a CPU at most {CPU_MEMBERS} train together)")
    for check in checks:
        check(cfg)


def _leaves(node: Any, prefix: str = "") -> Iterator[Tuple[str, Any]]:
    """(dotted key, value) of every leaf of a config, interpolations resolved."""
    is_dict = isinstance(node, DictConfig)
    for key, value in node.items() if is_dict else enumerate(node):
        path = f"{prefix}[{key}]" if not is_dict else f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, (DictConfig, ListConfig)):
            yield from _leaves(value, path)
        else:
            yield path, value


def _refuse_non_finite(cfg: DictConfig) -> None:
    for key, value in _leaves(cfg):
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{key}={value} is not allowed: must be a finite number")


def _refuse_unread_keys(cfg: DictConfig, node: Any = None, prefix: str = "") -> None:
    """A key added with `+key=...` that is not a field of its node's schema: no component reads it. (A key of
    a typed node can only be added that way; a mistyped key without `+` fails at composition.)"""
    node = cfg if node is None else node
    schema = OmegaConf.get_type(node)
    if dataclasses.is_dataclass(schema):
        allowed = [f.name for f in dataclasses.fields(schema)]
        for key in node.keys():
            if key not in allowed:
                path = f"{prefix}{key}"
                parent = prefix.rstrip(".")
                raise ConfigError(f"unknown key '{path}' (added with +{path}=): no component reads it; "
                                  f"{did_you_mean(str(key), allowed, f'{parent}.{{}}' if parent else '{}')}"
                                  f"allowed: {', '.join(allowed)}")
    for key, child in node.items_ex(resolve=False):  # a child node as composed: interpolations left as they are
        if (isinstance(child, DictConfig) and not OmegaConf.is_missing(node, key)
                and not OmegaConf.is_interpolation(node, key) and node[key] is not None):
            _refuse_unread_keys(cfg, child, f"{prefix}{key}.")


def _given(overrides: Sequence[str], key: str) -> bool:
    return any(o.split("=", 1)[0].lstrip("+~") == key for o in overrides)


def _apply_shortcuts(cfg: DictConfig, overrides: Sequence[str] = ()) -> None:
    name = cfg.algo.get("name")
    if name not in specs.SPECS:
        raise ConfigError(f"algo.name={name!r} is not allowed: one of {', '.join(specs.list_objectives())}")
    shortcuts = specs.SPECS[name].shortcuts
    for shortcut, param in [*shortcuts.items(), ("anchor", "anchor")]:
        value, explicit = cfg.get(shortcut), cfg.algo.get(param)
        if value is not None and _given(overrides, f"algo.{param}") and explicit != value:
            raise ConfigError(f"{shortcut}={value} and algo.{param}={explicit} set the same parameter to "
                              f"different values: give one of them")
    with open_dict(cfg):
        for shortcut in specs.SHORTCUTS:
            value = cfg.get(shortcut)
            if value is None:
                continue
            if shortcut not in shortcuts:
                meaning = {"delta": "no δ threshold", "alpha": "no α relaxation"}[shortcut]
                users = sorted(n for n, s in specs.SPECS.items() if shortcut in s.shortcuts)
                raise ConfigError(f"{shortcut}={value} means nothing for algo={name} ({meaning}); "
                                  f"it applies to: {', '.join(users)}")
            cfg.algo[shortcuts[shortcut]] = value
        if cfg.get("anchor") is not None:
            if cfg.anchor not in ANCHORS:
                raise ConfigError(f"anchor={cfg.anchor!r} is not allowed: one of {', '.join(ANCHORS)}")
            cfg.algo.anchor = cfg.anchor


def _validate_algo(cfg: DictConfig) -> None:
    params = {k: v for k, v in OmegaConf.to_container(cfg.algo, resolve=True).items() if k != "name"}
    try:
        full = specs.validate_params(cfg.algo.name, params)
    except ValueError as err:
        raise ConfigError(str(err).splitlines()[0]) from None
    with open_dict(cfg):
        for key, value in full.items():
            cfg.algo[key] = value


def validate(cfg: DictConfig, overrides: Sequence[str] = (), *, trainer_checks: TrainerChecks,
             launcher_checks: LauncherChecks) -> DictConfig:
    """Return the run config with shortcuts applied and every value checked (the input is not changed).
    `overrides`: the job's command-line overrides, to refuse a shortcut that contradicts an explicit key;
    `trainer_checks`: a trainer's name -> its own checks (harness.trainers.checks_for); `launcher_checks`: a
    launcher's name -> its own checks (harness.launchers.registry.checks_for)."""
    cfg = copy.deepcopy(cfg)
    _refuse_unread_keys(cfg)
    _refuse_non_finite(cfg)
    _apply_shortcuts(cfg, overrides)
    _validate_algo(cfg)
    _validate_run_sections(cfg)
    _validate_launcher(cfg, launcher_checks)
    for check in trainer_checks(cfg.trainer.name):
        check(cfg)
    return cfg
