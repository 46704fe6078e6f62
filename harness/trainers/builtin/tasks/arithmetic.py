"""Arithmetic on zero-padded operands: `37+05=` -> `42`. Difficulty = digits per operand."""

from __future__ import annotations

import numpy as np

from harness.config.task_shapes import OPERATIONS as _OPERATIONS, max_answer_length, prompt_length
from harness.trainers.builtin.tasks.base import Problem, Task


class ArithmeticTask(Task):
    """Prompt `{a:0Nd}{op}{b:0Nd}=` with N = difficulty, answer the exact integer result (no padding, `-` if negative)."""

    name = "arithmetic"

    def __init__(self, difficulty: int, eval_size: int, seed: int, ops: str = "+"):
        super().__init__(difficulty, eval_size, seed)
        ops = str(ops)
        unknown = sorted(set(ops) - set(_OPERATIONS))
        if not ops or unknown:
            raise ValueError(f"dataset.ops={ops!r}: allowed operators are the characters of {''.join(_OPERATIONS)!r}")
        # Deduplicated in the given order, so '+-' and '+-+' are the same task.
        self.ops = "".join(dict.fromkeys(ops))

    @classmethod
    def from_config(cls, dataset_cfg) -> "ArithmeticTask":
        return cls(dataset_cfg.difficulty, dataset_cfg.eval_size, dataset_cfg.seed, getattr(dataset_cfg, "ops", "+"))

    @property
    def prompt_length(self) -> int:
        return prompt_length(self.name, self.difficulty)

    @property
    def max_answer_length(self) -> int:
        return max_answer_length(self.name, self.difficulty, self.ops)

    @property
    def problem_count(self) -> int:
        return len(self.ops) * 10 ** (2 * self.difficulty)

    def describe(self) -> dict:
        return {**super().describe(), "ops": self.ops}

    def _random_problem(self, rng: np.random.Generator) -> Problem:
        op = self.ops[rng.integers(len(self.ops))]
        a, b = (int(x) for x in rng.integers(0, 10**self.difficulty, size=2))
        width = self.difficulty
        return Problem(prompt=f"{a:0{width}d}{op}{b:0{width}d}=", answer=str(_OPERATIONS[op](a, b)))
