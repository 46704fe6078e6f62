"""Sorting a list of digits: `sort:3,9,1=` -> `1,3,9`. Difficulty = list length."""

from __future__ import annotations

import numpy as np

from harness.config.task_shapes import SORT_PREFIX as _PREFIX, max_answer_length, prompt_length
from harness.trainers.builtin.tasks.base import Problem, Task


class SortingTask(Task):
    """Prompt `sort:` + difficulty comma-separated digits (repeats allowed) + `=`, answer the digits ascending."""

    name = "sorting"

    @classmethod
    def from_config(cls, dataset_cfg) -> "SortingTask":
        return cls(dataset_cfg.difficulty, dataset_cfg.eval_size, dataset_cfg.seed)

    @property
    def prompt_length(self) -> int:
        return prompt_length(self.name, self.difficulty)

    @property
    def max_answer_length(self) -> int:
        return max_answer_length(self.name, self.difficulty)

    @property
    def problem_count(self) -> int:
        return 10 ** self.difficulty

    def _random_problem(self, rng: np.random.Generator) -> Problem:
        digits = [int(d) for d in rng.integers(0, 10, size=self.difficulty)]
        return Problem(
            prompt=_PREFIX + ",".join(map(str, digits)) + "=",
            answer=",".join(map(str, sorted(digits))),
        )
