"""The harness's launchers and sweepers under names Hydra accepts (Hydra finds plugins only inside the
`hydra_plugins` namespace package); the classes themselves live in `harness.launchers` and `harness.sweeps`."""
from harness.launchers.base import SequentialLauncher as _Sequential
from harness.launchers.local_parallel import LocalParallelLauncher as _LocalParallel
from harness.launchers.submitit_launcher import SubmititLauncher as _Submitit
from hydra_plugins.harness_launcher.grid_sweeper import GridSweeper as _Grid
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


PLUGINS = (SequentialLauncher, LocalParallelLauncher, SubmititLauncher, OptunaSweeper, GridSweeper)
