"""Where the jobs of a sweep run, selected by `launcher=<name>` (conf/launcher/<name>.yaml):
local (Hydra's basic launcher, in this process), local_parallel, submitit_local, slurm."""
from __future__ import annotations

LAUNCHERS = ("local", "local_parallel", "submitit_local", "slurm")


def register_with_hydra() -> None:
    """Register our launchers and sweeper with Hydra explicitly: Hydra's own scan of `hydra_plugins` cannot list
    modules through an editable install's import hook."""
    from hydra.core.plugins import Plugins

    from hydra_plugins.harness_launcher import LocalParallelLauncher, OptunaSweeper, SubmititLauncher

    plugins = Plugins.instance()
    for cls in (LocalParallelLauncher, SubmititLauncher, OptunaSweeper):
        plugins.register(cls)
