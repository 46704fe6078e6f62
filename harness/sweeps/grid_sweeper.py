"""sweeper=basic: Hydra's grid sweeper, less its second composition of every job before launching it.

Hydra's basic sweeper composes each job of a batch once to catch composition errors early, then the launcher
composes it again. The harness preflight has already composed and validated every job
(`harness.config.composed`) and the launcher uses that config, so only jobs the preflight did not see are
checked here."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


def _basic_sweeper_class() -> type:
    """Hydra's grid sweeper with the check above. Built when the sweep starts: Hydra's plugin scan re-executes
    its module, and a subclass made before that scan would derive from a replaced class."""
    # Hydra's grid sweeper is only importable from its internal package (it ships no public alias)
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    class PreflightedGrid(BasicSweeper):
        def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
            from harness.config import composed

            unseen = [job for job in batch if composed.lookup(job) is None]
            if unseen:
                super().validate_batch_is_legal(unseen)

    return PreflightedGrid


class GridSweeper(Sweeper):
    def __init__(self, max_batch_size: Optional[int] = None, params: Optional[dict] = None) -> None:
        self.grid = _basic_sweeper_class()(max_batch_size=max_batch_size, params=params)

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.grid.setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def sweep(self, arguments: List[str]) -> Any:
        return self.grid.sweep(arguments)
