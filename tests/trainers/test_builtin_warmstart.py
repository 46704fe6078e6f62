import types

import pytest
import torch

from harness.trainers.builtin.model import build_model
from harness.trainers.builtin.precision import precision_spec
from harness.trainers.builtin.rollout import RolloutEngine, evaluate_accuracy
from harness.trainers.builtin.tasks import Problem, build_task
from harness.trainers.builtin.warmstart import supervised_batch, warm_start, warmstart_key

from conftest import dataset_cfg, tiny_model_cfg


def _warm_cfg(**overrides):
    return types.SimpleNamespace(**{"steps": 30, "batch_size": 16, "lr": 3e-3, **overrides})


def test_supervised_batch_scores_answer_and_eos_only(tokenizer):
    problems = [Problem("12+90=", "102"), Problem("01+02=", "3")]
    input_ids, target_mask = supervised_batch(tokenizer, problems)
    assert input_ids.shape == target_mask.shape == (2, 1 + 6 + 3 + 1)
    assert tokenizer.decode(input_ids[0].tolist()) == "<bos>12+90=102<eos>"
    assert tokenizer.decode(input_ids[1].tolist()) == "<bos>01+02=3<eos><pad><pad>"
    assert target_mask[0].tolist() == [0] * 7 + [1] * 4
    assert target_mask[1].tolist() == [0] * 7 + [1] * 2 + [0] * 2


def test_trains_then_second_call_loads_identical_weights_from_cache(tokenizer, model_cfg, tmp_path):
    task = build_task(dataset_cfg(difficulty=1))
    initial = build_model(model_cfg, len(tokenizer), seed=0)
    initial_weights = {k: v.clone() for k, v in initial.state_dict().items()}

    trained = build_model(model_cfg, len(tokenizer), seed=0)
    first = warm_start(trained, tokenizer, task, _warm_cfg(), tmp_path, seed=0)
    assert first["warmstart/cache_hit"] == 0 and first["warmstart/steps"] == 30
    assert first["warmstart/loss"] < 0.8 * torch.log(torch.tensor(48.0))  # learnt something beyond uniform
    assert not all(torch.equal(v, initial_weights[k]) for k, v in trained.state_dict().items())
    files = sorted(p.name for p in tmp_path.iterdir())
    (entry,) = [f for f in files if f.endswith(".pt")]
    assert files == sorted([entry, f".{entry[:-3]}.lock"])  # the temporary file was renamed, not left behind

    fresh = build_model(model_cfg, len(tokenizer), seed=0)
    second = warm_start(fresh, tokenizer, task, _warm_cfg(), tmp_path, seed=0)
    assert second["warmstart/cache_hit"] == 1
    assert second["warmstart/loss"] == first["warmstart/loss"]
    assert second["warmstart/seconds"] < first["warmstart/seconds"]
    for name, value in trained.state_dict().items():
        assert torch.equal(fresh.state_dict()[name], value), name


def test_cache_key_covers_everything_that_changes_the_result(tokenizer, model_cfg):
    model = build_model(model_cfg, len(tokenizer), seed=0)
    task = build_task(dataset_cfg())
    key = warmstart_key(model, tokenizer, task, _warm_cfg(), seed=0)
    assert key == warmstart_key(build_model(model_cfg, len(tokenizer), seed=0), tokenizer, task, _warm_cfg(), 0)
    variants = [
        warmstart_key(build_model(model_cfg, len(tokenizer), seed=1), tokenizer, task, _warm_cfg(), 0),
        warmstart_key(model, tokenizer, build_task(dataset_cfg(ops="+-")), _warm_cfg(), 0),
        warmstart_key(model, tokenizer, build_task(dataset_cfg(difficulty=3)), _warm_cfg(), 0),
        warmstart_key(model, tokenizer, task, _warm_cfg(steps=31), 0),
        warmstart_key(model, tokenizer, task, _warm_cfg(lr=1e-3), 0),
        warmstart_key(model, tokenizer, task, _warm_cfg(target_accuracy=0.3), 0),
        warmstart_key(model, tokenizer, task, _warm_cfg(), seed=1),
    ]
    assert len({key, *variants}) == 1 + len(variants)


def test_target_accuracy_stops_training_early(tokenizer, model_cfg, tmp_path):
    # One-digit addition with a zero target: the first check (after CHECK_EVERY steps) already meets it.
    task = build_task(dataset_cfg(difficulty=1, eval_size=4))
    model = build_model(model_cfg, len(tokenizer), seed=0)
    stats = warm_start(model, tokenizer, task, _warm_cfg(steps=200, target_accuracy=0.0), tmp_path, seed=0)
    assert stats["warmstart/steps"] == 25
    assert 0.0 <= stats["warmstart/probe_accuracy"] <= 1.0


@pytest.mark.slow
def test_target_accuracy_lands_a_base_model_in_the_useful_band(tokenizer, tmp_path):
    # The regime the RL runs start from: solves some problems at T=1, not none and not all.
    task = build_task(dataset_cfg(name="sorting", difficulty=4, eval_size=128))
    model = build_model(tiny_model_cfg(hidden_size=64, intermediate_size=256), len(tokenizer), seed=0)
    cfg = _warm_cfg(steps=400, batch_size=64, lr=2e-3, target_accuracy=0.3)
    stats = warm_start(model, tokenizer, task, cfg, tmp_path, seed=0)
    assert stats["warmstart/steps"] < 400 and stats["warmstart/probe_accuracy"] >= 0.3
    engine = RolloutEngine.from_model(model, precision_spec("bf16"))
    sampled = evaluate_accuracy(engine, tokenizer, task, task.eval_set(), temperature=1.0)
    greedy = evaluate_accuracy(engine, tokenizer, task, task.eval_set(), greedy=True)
    assert 0.15 <= sampled <= 0.6
    assert sampled < greedy < 1.0


def test_a_key_another_process_is_training_is_not_trained_twice(tokenizer, model_cfg, tmp_path):
    """The lock per key: `wait=False` gives up at once; a waiting call loads the entry its holder wrote."""
    import shutil
    import threading

    from harness.infra.locks import LockHeld, locked

    task = build_task(dataset_cfg(difficulty=1))
    trained_elsewhere = build_model(model_cfg, len(tokenizer), seed=0)
    first = warm_start(trained_elsewhere, tokenizer, task, _warm_cfg(), tmp_path / "elsewhere", seed=0)
    (entry,) = (tmp_path / "elsewhere").glob("*.pt")
    cache = tmp_path / "cache"
    cache.mkdir()
    with locked(cache / f".{entry.stem}.lock"):  # "another process" is training this key
        untouched = build_model(model_cfg, len(tokenizer), seed=0)
        before = {k: v.clone() for k, v in untouched.state_dict().items()}
        with pytest.raises(LockHeld):
            warm_start(untouched, tokenizer, task, _warm_cfg(), cache, seed=0, wait=False)
        assert all(torch.equal(v, before[k]) for k, v in untouched.state_dict().items())
        waited = {}
        waiter = threading.Thread(target=lambda: waited.update(
            warm_start(untouched, tokenizer, task, _warm_cfg(), cache, seed=0, wait=True)))
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive()  # waits for the holder
        shutil.copy(entry, cache / entry.name)  # the holder's entry lands, then it lets go
    waiter.join(60)
    assert waited["warmstart/cache_hit"] == 1 and waited["warmstart/loss"] == first["warmstart/loss"]
    for name, value in trained_elsewhere.state_dict().items():
        assert torch.equal(untouched.state_dict()[name], value), name
