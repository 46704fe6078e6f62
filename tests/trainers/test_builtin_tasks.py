import numpy as np
import pytest

from harness.trainers.builtin.tasks import TASKS, Problem, build_task

from conftest import dataset_cfg


def test_registry_and_unknown_name():
    assert set(TASKS) == {"arithmetic", "sorting"}
    with pytest.raises(ValueError, match="allowed: \\['arithmetic', 'sorting'\\]"):
        build_task(dataset_cfg(name="countdown"))


def test_verifier_accepts_exact_answer_only():
    task = build_task(dataset_cfg())
    problem = Problem(prompt="37+05=", answer="42")
    assert task.reward(problem, "42") == 1.0
    assert task.reward(problem, " 42 ") == 1.0
    assert task.reward(problem, "42<eos>7") == 1.0
    assert task.reward(problem, "43") == 0.0
    assert task.reward(problem, "420") == 0.0
    assert task.reward(problem, "042") == 0.0
    assert task.reward(problem, "") == 0.0


@pytest.mark.parametrize("ops", ["+", "-", "*", "+-*"])
def test_arithmetic_answers_are_correct_and_fit(ops):
    task = build_task(dataset_cfg(difficulty=2, ops=ops))
    for problem in task.sample_train(np.random.default_rng(1), 300) + task.eval_set():
        assert len(problem.prompt) == task.prompt_length
        assert len(problem.answer) <= task.max_answer_length
        assert str(_evaluate(problem.prompt.removesuffix("="))) == problem.answer
        assert task.reward(problem, problem.answer) == 1.0


def _evaluate(expression: str) -> int:
    """`a op b` with zero-padded non-negative operands, e.g. "07*05" -> 35."""
    for op, apply in (("+", int.__add__), ("-", int.__sub__), ("*", int.__mul__)):
        left, found, right = expression.partition(op)
        if found:
            return apply(int(left), int(right))
    raise AssertionError(f"no operator in {expression!r}")


def test_sorting_answers_are_sorted():
    task = build_task(dataset_cfg(name="sorting", difficulty=6))
    for problem in task.sample_train(np.random.default_rng(0), 100):
        digits = problem.prompt.removeprefix("sort:").removesuffix("=").split(",")
        assert len(digits) == 6 and len(problem.prompt) == task.prompt_length
        assert problem.answer == ",".join(sorted(digits))
        assert len(problem.answer) == task.max_answer_length


@pytest.mark.parametrize("name", ["arithmetic", "sorting"])
def test_train_and_eval_are_disjoint(name):
    task = build_task(dataset_cfg(name=name, difficulty=3, eval_size=64))
    eval_prompts = {p.prompt for p in task.eval_set()}
    assert len(eval_prompts) == 64
    train_prompts = {p.prompt for p in task.sample_train(np.random.default_rng(0), 5000)}
    assert not eval_prompts & train_prompts
    # The split is a property of the problem, not of the seed: another eval seed draws from the same split.
    other = build_task(dataset_cfg(name=name, difficulty=3, eval_size=64, seed=7))
    assert not {p.prompt for p in other.eval_set()} & train_prompts


def test_sampling_and_eval_set_are_deterministic():
    task = build_task(dataset_cfg())
    again = build_task(dataset_cfg())
    assert task.sample_train(np.random.default_rng(3), 20) == again.sample_train(np.random.default_rng(3), 20)
    assert task.sample_train(np.random.default_rng(3), 20) != task.sample_train(np.random.default_rng(4), 20)
    assert task.eval_set() == again.eval_set()
    assert task.eval_set() != build_task(dataset_cfg(seed=1)).eval_set()


@pytest.mark.parametrize("name", ["arithmetic", "sorting"])
def test_difficulty_lengthens_prompts_and_answers(name):
    easy, hard = build_task(dataset_cfg(name=name, difficulty=2)), build_task(dataset_cfg(name=name, difficulty=4))
    assert hard.prompt_length > easy.prompt_length
    assert hard.max_answer_length > easy.max_answer_length
    rng = np.random.default_rng(0)
    assert {len(p.prompt) for p in hard.sample_train(rng, 50)} == {hard.prompt_length}


def test_arithmetic_lengths_by_operator():
    assert build_task(dataset_cfg(difficulty=3, ops="+")).max_answer_length == 4  # 999+999=1998
    assert build_task(dataset_cfg(difficulty=3, ops="-")).max_answer_length == 4  # 000-999=-999
    assert build_task(dataset_cfg(difficulty=3, ops="*")).max_answer_length == 6  # 999*999=998001
    assert build_task(dataset_cfg(difficulty=3)).prompt_length == len("037+142=")


def test_bad_config_values_are_named():
    with pytest.raises(ValueError, match="dataset.ops='/'"):
        build_task(dataset_cfg(ops="/"))
    with pytest.raises(ValueError, match="dataset.difficulty=0"):
        build_task(dataset_cfg(difficulty=0))
    # One-digit addition has 100 problems, about 10 of them in the eval split.
    with pytest.raises(ValueError, match="dataset.eval_size=50"):
        build_task(dataset_cfg(difficulty=1, eval_size=50)).eval_set()


def test_train_pool_is_fixed_distinct_and_only_source_of_training_problems():
    task = build_task(dataset_cfg(name="sorting", difficulty=4, seed=7, train_size=16))
    pool = task.train_pool()
    assert len({p.prompt for p in pool}) == 16 and not any(task.is_eval_problem(p) for p in pool)
    assert [p.prompt for p in build_task(dataset_cfg(name="sorting", difficulty=4, seed=7, train_size=16)).train_pool()] \
        == [p.prompt for p in pool]  # the dataset seed fixes the pool, not the run
    drawn = task.sample_train(np.random.default_rng(0), 500)
    assert {p.prompt for p in drawn} <= {p.prompt for p in pool} and len({p.prompt for p in drawn}) == 16
    # The warm start's draws ignore the pool: the base model is the same with or without one.
    split = task.sample_split(np.random.default_rng(0), 200)
    assert len({p.prompt for p in split} - {p.prompt for p in pool}) > 100


def test_train_pool_larger_than_the_split_is_refused():
    task = build_task(dataset_cfg(name="sorting", difficulty=1, seed=0, train_size=50))
    with pytest.raises(ValueError, match="dataset.train_size=50 is more than the train split"):
        task.sample_train(np.random.default_rng(0), 4)
