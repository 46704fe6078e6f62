"""sweeper=basic: Hydra's grid sweeper, with every job composed and validated once, by the launcher, before
anything of the sweep is created.

Hydra's basic sweeper creates the sweep folder, then composes each job of a batch to catch composition errors
early, and the launcher composes it again. Here the launcher composes and validates every job of the grid
first (`HarnessLauncher.prepare`: bad input is one line and nothing is left behind), the checks that need
the whole sweep run, the sweep session (folder claim, MLflow parent run) opens, and Hydra's sweeper launches
the jobs the launcher already holds. Re-running the command of a stopped sweep continues it in its folder
(harness/sweeps/continued.py). The command's `Options` (--plan, --new-sweep) come with `sweep_with`."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf

from harness.config.overrides import expand_sweep
from harness.config.errors import ConfigError
from harness.config.flags import Options
from harness.infra.refused import Refused


def _basic_sweeper_class() -> type:
    """Hydra's grid sweeper without its own composition of each batch. Built when the sweep starts: Hydra's
    plugin scan re-executes its module, and a subclass made before that scan would derive from a replaced class."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper  # no public alias

    class PreparedGrid(BasicSweeper):
        def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
            """The launcher has composed and validated every job (`GridSweeper.sweep`)."""

    return PreparedGrid


class GridSweeper(Sweeper):
    def __init__(self, max_batch_size: Optional[int] = None, params: Optional[dict] = None) -> None:
        self.grid = _basic_sweeper_class()(max_batch_size=max_batch_size, params=params)

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.grid.setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments: List[str]) -> Any:
        return self.sweep_with(arguments, Options())

    def sweep_with(self, arguments: List[str], options: Options) -> Any:
        """The sweep of `arguments` (Hydra's task overrides) as the command's `options` ask."""
        # the sweep's own modules (MLflow, reports) load only when a sweep runs: Hydra scans this package always
        from harness.launchers.plan import print_plan
        from harness.launchers.preflight import check_jobs, print_dry_run
        from harness.sweeps.continued import continue_stopped_sweep, in_recorded_order, run_sweep, stopped_sweep

        config = self.grid.config
        arguments = in_recorded_order(config, arguments, options.new_sweep)  # a stopped sweep's, in any order
        params = OmegaConf.select(config, "hydra.sweeper.params") or {}
        try:
            overrides = expand_sweep([*(f"{key}={value}" for key, value in params.items()), *arguments])
        except ConfigError as err:
            raise Refused(str(err)) from None
        jobs = self.grid.launcher.prepare(overrides)
        if print_dry_run(jobs):  # the plans only: nothing is checked against the cluster or started
            return []
        if options.plan:  # what the sweep would do (every job validated above); nothing started
            print_plan(f"multirun {' '.join(str(o) for o in config.hydra.overrides.task)}", self.grid.launcher,
                       jobs, stopped_sweep(config, options.new_sweep))
            return []
        # re-running a stopped sweep's command continues it, in its folder
        continue_stopped_sweep(config, jobs, options.new_sweep)
        check_jobs(jobs, multirun=True)
        return run_sweep(config, len(jobs), lambda: self.grid.sweep(arguments), continuable=True)
