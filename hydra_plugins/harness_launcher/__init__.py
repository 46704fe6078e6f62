"""Hydra finds plugins only inside the `hydra_plugins` namespace package. The launchers live in
`harness.launchers`; these subclasses give them names Hydra accepts. Kept import-light: Hydra imports
this module whenever it scans for plugins."""
from harness.launchers.base import SequentialLauncher as _Sequential
from harness.launchers.local_parallel import LocalParallelLauncher as _LocalParallel
from harness.launchers.submitit_launcher import SubmititLauncher as _Submitit
from harness.sweeps.grid_sweeper import GridSweeper as _Grid
from harness.sweeps.optuna_sweeper import OptunaSweeper as _Optuna


class SequentialLauncher(_Sequential):
    pass


class LocalParallelLauncher(_LocalParallel):
    pass


class SubmititLauncher(_Submitit):
    pass


class OptunaSweeper(_Optuna):
    pass


class GridSweeper(_Grid):
    pass


def register_with_hydra() -> None:
    """Register our launchers and sweeper with Hydra explicitly: Hydra's own scan of `hydra_plugins` cannot list
    modules through an editable install's import hook."""
    from hydra.core.plugins import Plugins

    plugins = Plugins.instance()
    for cls in (SequentialLauncher, LocalParallelLauncher, SubmititLauncher, OptunaSweeper, GridSweeper):
        plugins.register(cls)
