"""The shape of the built-in tasks' sequences (prompt and longest answer, in characters = tokens), and the bounds on
`dataset.difficulty` it sets: a run config that exceeds one is refused in one line when it is validated, before any
problem is drawn (issue #50, case 19: 10**difficulty out of int64's range, or a million-digit list drawn for minutes).
Torch- and numpy-free, in the config layer: validation asks it (harness/config/validate.py), and the tasks
(harness/trainers/builtin/tasks) take their lengths from here."""
from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple

from harness.config.errors import ConfigError
from harness.config.task_names import BUILTIN_TASKS

OPERATIONS: Dict[str, Callable[[int, int], int]] = {"+": lambda a, b: a + b, "-": lambda a, b: a - b,
                                                    "*": lambda a, b: a * b}
SORT_PREFIX = "sort:"
# A bound of the task's own, whatever the model: arithmetic draws its operands below 10**difficulty as 64-bit integers
OWN_LIMITS: Dict[str, Tuple[int, str]] = {"arithmetic": (18, "its operands are drawn as 64-bit integers")}
SPECIAL_TOKENS = 2  # <bos> before the prompt, <eos> after the answer


def prompt_length(name: str, difficulty: int) -> int:
    """Characters of every prompt of task `name` at `difficulty`."""
    if name == "arithmetic":
        return 2 * difficulty + 2  # `{a:0Nd}{op}{b:0Nd}=`
    if name == "sorting":
        return len(SORT_PREFIX) + (2 * difficulty - 1) + 1  # `sort:` + N comma-separated digits + `=`
    raise ValueError(f"no shape for task {name!r}: add it to harness/config/task_shapes.py")


def max_answer_length(name: str, difficulty: int, ops: str = "+") -> int:
    """Most characters a correct answer has (its `<eos>` not counted)."""
    if name == "arithmetic":
        largest = 10 ** difficulty - 1
        # the longest results are at the corners of the operand range (e.g. 99+99, 00-99, 99*99)
        return max(len(str(OPERATIONS[op](a, b))) for op in ops for a, b in ((largest, largest), (0, largest)))
    if name == "sorting":
        return 2 * difficulty - 1
    raise ValueError(f"no shape for task {name!r}: add it to harness/config/task_shapes.py")


def sequence_tokens(name: str, difficulty: int, ops: str = "+") -> int:
    """Tokens of the longest sequence: <bos>, the prompt, the longest answer, <eos>."""
    return SPECIAL_TOKENS + prompt_length(name, difficulty) + max_answer_length(name, difficulty, ops)


def largest_difficulty(name: str, ops: str, positions: Optional[int]) -> Tuple[int, str]:
    """The largest difficulty task `name` takes (with the model's `positions`, None: no such bound), and why."""
    own, why = OWN_LIMITS.get(name, (None, ""))
    if positions is None:
        return own, why
    low, high = 0, positions if own is None else min(own, positions)  # every step of difficulty adds a token
    while low < high:  # the longest sequence grows with the difficulty: the largest that fits
        middle = (low + high + 1) // 2
        low, high = (middle, high) if sequence_tokens(name, middle, ops) <= positions else (low, middle - 1)
    if own is not None and low == own:
        return own, why
    return low, (f"its longest sequence, {sequence_tokens(name, low + 1, ops)} tokens at difficulty {low + 1} "
                 f"(<bos>, prompt, longest answer, <eos>), must fit model.max_position_embeddings={positions}")


def check_difficulty(dataset, model) -> None:
    """A built-in run's `dataset.difficulty` within its task's bounds, with this `model` (ConfigError, one line)."""
    name, difficulty = str(dataset.name), int(dataset.difficulty)
    if name not in BUILTIN_TASKS:
        return  # refused by validation by name
    ops = str(dataset.get("ops", "+") or "+")
    if set(ops) - set(OPERATIONS):
        return  # the task refuses it by itself, naming dataset.ops
    positions = None if model.get("path") else int(model.max_position_embeddings)  # a checkpoint: its own
    limit, why = largest_difficulty(name, ops, positions)
    if limit is not None and difficulty > limit:
        allowed = f"an integer from 1 to {limit}" if limit >= 1 else "none"
        raise ConfigError(f"dataset.difficulty={difficulty} is not allowed: dataset={name} takes {allowed} ({why})")
