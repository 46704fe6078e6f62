"""sweeper=basic: Hydra's grid sweeper, less its second composition of every job before launching it.

Hydra's basic sweeper composes each job of a batch once to catch composition errors early, then the launcher
composes it again. The harness preflight has already composed and validated every job
(`harness.config.composed`) and the launcher uses that config, so only jobs the preflight did not see are
checked here."""
from __future__ import annotations

from typing import Sequence

# Hydra's grid sweeper is only importable from its internal package (it ships no public alias)
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper


class GridSweeper(BasicSweeper):
    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        from harness.config import composed

        unseen = [job for job in batch if composed.lookup(job) is None]
        if unseen:
            super().validate_batch_is_legal(unseen)
