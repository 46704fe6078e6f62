"""The launchers a user selects with `launcher=<name>`: one `LauncherEntry` each, registered with
`register_launcher`. Everything else derives from the entries: the `launcher` config group and the
`hydra/launcher` schemas in Hydra's ConfigStore (`store_configs`), the Hydra plugin classes
(hydra_plugins/harness_launcher/plugins.py makes one alias per entry, under the name Hydra accepts), the names
validation allows and the checks it runs on a run config that selects a launcher (`checks_for`), whether a
launcher's jobs run on this machine (`runs_here`), and the cluster they go to: the entry's `cluster`, which the run
config carries as `launcher.cluster` for the layers below (a verl run's site, `--plan`'s cluster lines).

A new launcher is its module (a `HarnessLauncher` subclass) and one `register_launcher(LauncherEntry(...))`."""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, get_type_hints

from omegaconf import DictConfig

from harness.algorithms.specs import NAME_RULE, NAME_RULE_TEXT
from harness.config.errors import ConfigError
from harness.config.schema import register_schemas as register_run_schemas
from harness.config.validate import check_builtin_memory_here, check_profile, check_tracking_reachable, kept_settings
from harness.infra.extensions import broken_note

PLUGIN_MODULE = "hydra_plugins.harness_launcher.plugins"  # Hydra instantiates plugins from this package only
Check = Callable[[DictConfig], None]


@dataclass
class NoParams:
    """A `hydra/launcher` node without parameters of its own."""


@dataclass
class LocalParallelParams:
    workers: Optional[int] = None  # worker processes (None: one per core)
    threads_per_worker: Optional[int] = None


@dataclass
class SubmititParams:
    cluster: str = "slurm"  # slurm | local; the profile and its overrides come from the run's `launcher`


@dataclass(frozen=True)
class LauncherEntry:
    """What `launcher=<name>` selects.

    plugin: the Hydra launcher class as "module:Class" (imported only when Hydra launches). params: the
    dataclass of its `hydra/launcher` node (its constructor's keyword arguments). settings: the run config's
    `launcher.*` values it sets; hydra_settings: the `hydra.launcher.*` values. cluster: where its jobs go,
    with the resources of a launcher profile: "slurm" (submitted with sbatch) or "local" (submitit's local
    stand-in); None: they run in this process or its workers (`runs_here`: the memory check is this machine's,
    each job creates its own tracking store). checks: its own checks of a run config that selects it
    (ConfigError, one line)."""

    name: str
    plugin: str
    doc: str
    params: type = NoParams
    settings: Mapping[str, Any] = field(default_factory=dict)
    hydra_settings: Mapping[str, Any] = field(default_factory=dict)
    cluster: Optional[str] = None
    checks: Tuple[Check, ...] = ()

    @property
    def runs_here(self) -> bool:
        return self.cluster is None

    @property
    def class_name(self) -> str:
        return self.plugin.rpartition(":")[2]

    @property
    def hydra_config(self) -> str:
        """Its node's name in Hydra's `hydra/launcher` group."""
        return f"harness_{self.name}"

    def plugin_class(self) -> type:
        module, _, name = self.plugin.partition(":")
        return getattr(importlib.import_module(module), name)


_ENTRIES: Dict[str, LauncherEntry] = {}
_SCHEMAS: Dict[str, type] = {}  # name -> the dataclass of its hydra/launcher node


def register_launcher(entry: LauncherEntry) -> LauncherEntry:
    """Add a launcher; ValueError for a name registered twice, or a class name another class has (Hydra knows
    a plugin by its class name under hydra_plugins). Its configs reach Hydra with the next `store_configs`."""
    if not isinstance(entry.name, str) or not NAME_RULE.fullmatch(entry.name):
        raise ValueError(f"launcher {entry.name!r} is not an allowed name: {NAME_RULE_TEXT} (launcher=<name> "
                         "selects it)")
    if entry.name in _ENTRIES:
        raise ValueError(f"launcher {entry.name!r} is already registered")
    if any(e.class_name == entry.class_name and e.plugin != entry.plugin for e in _ENTRIES.values()):
        raise ValueError(f"launcher class name {entry.class_name!r} is already registered for another class")
    schema = _hydra_launcher_schema(entry)
    globals()[schema.__name__] = schema  # a composed config is pickled to workers: its node types are found here
    _SCHEMAS[entry.name] = schema
    _ENTRIES[entry.name] = entry
    return entry


def launchers() -> List[LauncherEntry]:
    """Every registered launcher, in registration order."""
    return list(_ENTRIES.values())


def launcher_names() -> List[str]:
    return list(_ENTRIES)


def entry_for(name: str) -> LauncherEntry:
    """The entry of `launcher=<name>`; ConfigError naming the allowed names otherwise."""
    if name not in _ENTRIES:
        raise ConfigError(f"launcher.name={name!r} is not allowed: one of {', '.join(_ENTRIES)}{broken_note()}")
    return _ENTRIES[name]


def checks_for(name: str) -> Tuple[Check, ...]:
    """The checks a run config selecting launcher `name` gets (handed to validation by the composer)."""
    entry = entry_for(name)
    # `launcher.cluster` says what the selected launcher is: an override would make the layers below disagree
    return (kept_settings(entry.name, {"cluster": entry.cluster}), *entry.checks)


def plugin_class_named(class_name: str) -> type:
    """The launcher class of a `hydra/launcher` node's `_target_` class name (what `--plan` instantiates)."""
    return next(entry for entry in launchers() if entry.class_name == class_name).plugin_class()


def runs_here(launcher: str) -> bool:
    """Whether the jobs of `launcher=<launcher>` run on this machine (in this process or its workers)."""
    return entry_for(launcher).runs_here


def _hydra_launcher_schema(entry: LauncherEntry) -> type:
    """The `hydra/launcher` node: `_target_` (the alias under hydra_plugins), then the entry's parameters."""
    target = f"{PLUGIN_MODULE}.{entry.class_name}"
    types = get_type_hints(entry.params)
    own = [(f.name, types[f.name], field(default=f.default, default_factory=f.default_factory))
           for f in fields(entry.params)]
    schema = make_dataclass(f"{entry.hydra_config}_schema", [("_target_", str, field(default=target)), *own])
    schema.__module__ = __name__
    return schema


def _group_node(entry: LauncherEntry) -> Dict[str, Any]:
    """What conf/launcher/<name>.yaml held: a global package overriding hydra/launcher and setting `launcher`."""
    node: Dict[str, Any] = {"defaults": [{"override /hydra/launcher": entry.hydra_config}],
                            "launcher": {"name": entry.name, "cluster": entry.cluster, **entry.settings}}
    if entry.hydra_settings:
        node["hydra"] = {"launcher": dict(entry.hydra_settings)}
    return node


def store_configs() -> None:
    """Register the run schemas and every launcher's configs with Hydra's ConfigStore (idempotent)."""
    from hydra.core.config_store import ConfigStore

    register_run_schemas()
    cs = ConfigStore.instance()
    for entry in launchers():
        cs.store(group="hydra/launcher", name=entry.hydra_config, node=_SCHEMAS[entry.name])
        cs.store(group="launcher", name=entry.name, node=_group_node(entry), package="_global_")


_CLUSTER = (check_profile,)
_SUBMITIT_CLUSTER = {"cluster": "${launcher.cluster}"}  # submitit's executor: the entry's cluster
_MEMBERS_DOC = ("runs per Slurm job; e.g. launcher.members=512 trains that many built-in runs of one shape as one "
                "ensemble per job (a GPU node), each still its own run, folder and MLflow run; launcher=slurm packs "
                "them as the local launchers do (null: as many as fit the job's memory), launcher.members=1 runs "
                "one per job")

register_launcher(LauncherEntry(
    "local", "harness.launchers.base:SequentialLauncher",
    "Run the jobs of a sweep in this process (like Hydra's basic launcher): built-in runs of one shape (same model, "
    "data, batch sizes, steps, precision preset) train together as one ensemble on every core, each still its own "
    "run, folder and MLflow run; launcher.members=N caps an ensemble, launcher.members=1 runs one at a time.",
    settings={"members": None}, checks=(check_builtin_memory_here,)))
register_launcher(LauncherEntry(
    "local_parallel", "harness.launchers.local_parallel:LocalParallelLauncher",
    "N worker processes on this machine (null: one per GPU when GPUs are visible, each pinned to its own through "
    "CUDA_VISIBLE_DEVICES; else one per core); torch threads split between them (trainer.torch_threads). Built-in runs "
    "of one shape train as ensembles, split so that every worker trains one (launcher.members caps them). "
    "python -m harness multirun launcher=local_parallel launcher.workers=2 algo=dppo,drpo",
    params=LocalParallelParams, settings={"workers": None, "members": None},
    hydra_settings={"workers": "${launcher.workers}"}, checks=(check_builtin_memory_here,)))
register_launcher(LauncherEntry(
    "submitit_local", "harness.launchers.submitit_launcher:SubmititLauncher",
    "submitit's local executor: one process per job, with submitit's job files (a Slurm stand-in). "
    "python -m harness multirun launcher=submitit_local algo=dppo,drpo; members: " + _MEMBERS_DOC,
    params=SubmititParams, settings={"profile": "test_cluster", "detach": False, "members": 1},
    cluster="local", hydra_settings=_SUBMITIT_CLUSTER, checks=_CLUSTER))
register_launcher(LauncherEntry(
    "slurm", "harness.launchers.submitit_launcher:SubmititLauncher",
    "Slurm through submitit, with a cluster profile from launchers/profiles/ (or your own folder). "
    "python -m harness multirun launcher=slurm launcher.profile=gpu_node launcher.mem_gb=32 algo=dppo,drpo; "
    "--detach returns after submission; launcher.members=64 seed='range(0,256)' is 4 jobs of 64 runs; members: "
    + _MEMBERS_DOC,
    params=SubmititParams, settings={"profile": None, "detach": False, "members": None},
    cluster="slurm", hydra_settings=_SUBMITIT_CLUSTER, checks=(*_CLUSTER, check_tracking_reachable)))
