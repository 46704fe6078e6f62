"""Rule-verified tasks of the built-in trainer; registry key = file name = `dataset.name`."""

from __future__ import annotations

from harness.trainers.builtin.tasks.arithmetic import ArithmeticTask
from harness.trainers.builtin.tasks.base import Problem, Task
from harness.trainers.builtin.tasks.sorting import SortingTask

TASKS: dict[str, type[Task]] = {
    ArithmeticTask.name: ArithmeticTask,
    SortingTask.name: SortingTask,
}


def build_task(dataset_cfg) -> Task:
    """The task named `dataset_cfg.name`, configured from `difficulty`, `eval_size`, `seed` (and its own keys)."""
    name = dataset_cfg.name
    if name not in TASKS:
        raise ValueError(f"dataset.name={name!r} is unknown; allowed: {sorted(TASKS)}")
    task = TASKS[name].from_config(dataset_cfg)
    train_size = getattr(dataset_cfg, "train_size", None)
    task.train_size = int(train_size) if train_size else None
    return task


def check_task(dataset_cfg) -> None:
    """Raise ValueError (naming the key) if the task cannot give the run its eval set or train pool; the CLI
    asks this before any job starts, so a split too small for `eval_size`/`train_size` is bad input."""
    task = build_task(dataset_cfg)
    task.check_sizes()
    task.eval_set()
    if task.train_size:
        task.train_pool()


__all__ = ["TASKS", "Problem", "Task", "build_task", "check_task", "ArithmeticTask", "SortingTask"]
