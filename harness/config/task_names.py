"""Names of the built-in trainer's tasks, for validating `dataset.name` without importing the tasks (and numpy).

Must equal the keys of `harness.trainers.builtin.tasks.TASKS`; tests/config/test_task_names.py checks it."""

BUILTIN_TASKS = ("arithmetic", "sorting")
