"""The names-only task list used by config validation matches the built-in trainer's task registry."""
from harness.config.task_names import BUILTIN_TASKS
from harness.trainers.builtin.tasks import TASKS


def test_builtin_task_names_match_the_registry():
    assert sorted(BUILTIN_TASKS) == sorted(TASKS)
    assert len(set(BUILTIN_TASKS)) == len(BUILTIN_TASKS)
