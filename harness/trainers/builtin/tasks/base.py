"""What every built-in task provides: fixed-length prompts, a fixed train/eval split and a 0/1 verifier."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from harness.trainers.builtin.tokenizer import EOS

# One problem in EVAL_BUCKETS goes to the eval split, decided by a hash of its prompt alone, so the split is
# the same for every seed, process and machine, and no training sample is ever an eval problem.
EVAL_BUCKETS = 10
# Draws allowed per requested eval problem before concluding the eval split is too small.
_DRAWS_PER_EVAL_PROBLEM = 200


@dataclass(frozen=True)
class Problem:
    prompt: str
    answer: str


class Task:
    """Base class: subclasses set `name`, implement `_random_problem`, `prompt_length`, `max_answer_length`."""

    name: str = ""

    def __init__(self, difficulty: int, eval_size: int, seed: int):
        if int(difficulty) < 1:
            raise ValueError(f"dataset.difficulty={difficulty} must be >= 1")
        if int(eval_size) < 1:
            raise ValueError(f"dataset.eval_size={eval_size} must be >= 1")
        self.difficulty = int(difficulty)
        self.eval_size = int(eval_size)
        self.seed = int(seed)
        self._eval_set: list[Problem] | None = None
        self.train_size: int | None = None  # set by `build_task` from dataset.train_size
        self._train_pool: list[Problem] | None = None

    @property
    def prompt_length(self) -> int:
        """Character length shared by every prompt of this task config."""
        raise NotImplementedError

    @property
    def max_answer_length(self) -> int:
        """Most characters a correct answer can have (the `<eos>` not counted)."""
        raise NotImplementedError

    def _random_problem(self, rng: np.random.Generator) -> Problem:
        raise NotImplementedError

    @property
    def problem_count(self) -> int:
        """How many distinct problems this task config has (both splits)."""
        raise NotImplementedError

    def check_sizes(self) -> None:
        """Refuse, by arithmetic alone, an eval set or train pool larger than its split can hold: drawing one
        would otherwise run for minutes before concluding so. (About 1 in EVAL_BUCKETS is an eval problem.)"""
        eval_capacity = self.problem_count // EVAL_BUCKETS
        if self.eval_size > eval_capacity:
            raise ValueError(f"dataset.eval_size={self.eval_size} is more than the eval split of {self.describe()} "
                             f"holds (about {eval_capacity} problems); lower eval_size or raise difficulty")
        if self.train_size and self.train_size > self.problem_count - eval_capacity:
            raise ValueError(f"dataset.train_size={self.train_size} is more than the train split of "
                             f"{self.describe()} holds (about {self.problem_count - eval_capacity} problems)")

    def describe(self) -> dict:
        """Everything that defines this task config (used in cache keys and run metadata)."""
        return {"name": self.name, "difficulty": self.difficulty, "eval_size": self.eval_size, "seed": self.seed}

    @staticmethod
    def is_eval_problem(problem: Problem) -> bool:
        digest = hashlib.blake2b(problem.prompt.encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little") % EVAL_BUCKETS == 0

    def sample_train(self, rng: np.random.Generator, n: int) -> list[Problem]:
        """n problems drawn from the train split (repeats possible), driven only by `rng`; from the fixed
        pool `train_pool()` when `train_size` is set."""
        if self.train_size:
            pool = self.train_pool()
            return [pool[i] for i in rng.integers(0, len(pool), size=n)]
        return self.sample_split(rng, n)

    def sample_split(self, rng: np.random.Generator, n: int) -> list[Problem]:
        """n problems drawn from the whole train split, pool or not (the warm start's data: the base model
        is the same whether or not RL then trains on a fixed pool)."""
        problems: list[Problem] = []
        while len(problems) < n:
            problem = self._random_problem(rng)
            if not self.is_eval_problem(problem):
                problems.append(problem)
        return problems

    def train_pool(self) -> list[Problem]:
        """`train_size` distinct train-split problems, the same for every run seed (drawn with the dataset
        seed): the fixed problem set of a sanity test."""
        if self._train_pool is None:
            rng = np.random.default_rng([self.seed, 0])
            chosen: dict[str, Problem] = {}
            for _ in range(self.train_size * _DRAWS_PER_EVAL_PROBLEM):
                problem = self._random_problem(rng)
                if not self.is_eval_problem(problem):
                    chosen.setdefault(problem.prompt, problem)
                    if len(chosen) == self.train_size:
                        break
            else:
                raise ValueError(f"dataset.train_size={self.train_size} is more than the train split of "
                                 f"{self.describe()} holds (found {len(chosen)} distinct problems)")
            self._train_pool = list(chosen.values())
        return list(self._train_pool)

    def eval_set(self) -> list[Problem]:
        """`eval_size` distinct problems of the eval split, the same list on every call for this config."""
        if self._eval_set is None:
            rng = np.random.default_rng([self.seed, EVAL_BUCKETS])
            chosen: dict[str, Problem] = {}
            for _ in range(self.eval_size * _DRAWS_PER_EVAL_PROBLEM):
                problem = self._random_problem(rng)
                if self.is_eval_problem(problem):
                    chosen.setdefault(problem.prompt, problem)
                    if len(chosen) == self.eval_size:
                        break
            else:
                raise ValueError(
                    f"dataset.eval_size={self.eval_size} is more than the eval split of {self.describe()} holds "
                    f"(found {len(chosen)} distinct eval problems); lower eval_size or raise difficulty"
                )
            self._eval_set = list(chosen.values())
        return list(self._eval_set)

    def reward(self, problem: Problem, completion: str) -> float:
        """1.0 if the completion (text before `<eos>`, whitespace stripped) is exactly the answer, else 0.0."""
        return 1.0 if completion.split(EOS, 1)[0].strip() == problem.answer else 0.0
