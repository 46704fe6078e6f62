import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from harness.trainers.builtin.model import build_model
from harness.trainers.builtin.precision import precision_spec
from harness.trainers.builtin.tasks import Problem, build_task
from harness.trainers.builtin import warmstart
from harness.trainers.builtin.warmstart import accuracy, supervised_batch, warm_start, warmstart_key
from harness.trainers.ensemble.stacked_model import StackedQwen3
from harness.trainers.ensemble.stacked_rollout import StackedRollout

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


def test_the_key_of_a_warm_start_with_a_target_names_the_sampler_of_its_probe(tokenizer, model_cfg, monkeypatch):
    """Its stopping step follows the probe's samples: entries of another sampler are not reused. Without a target
    nothing is sampled and the key stays."""
    model, task = build_model(model_cfg, len(tokenizer), seed=0), build_task(dataset_cfg())
    targeted, plain = _warm_cfg(target_accuracy=0.3), _warm_cfg()
    keys = (warmstart_key(model, tokenizer, task, targeted, 0), warmstart_key(model, tokenizer, task, plain, 0))
    monkeypatch.setattr(warmstart, "PROBE_SAMPLER", warmstart.PROBE_SAMPLER + 1)
    assert warmstart_key(model, tokenizer, task, targeted, 0) != keys[0]
    assert warmstart_key(model, tokenizer, task, plain, 0) == keys[1]


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
    engine = StackedRollout(StackedQwen3(model, members=1), precision_spec("bf16"), [1.0])
    sampled = accuracy(engine, tokenizer, task, task.eval_set(), seed=0)
    greedy = accuracy(engine, tokenizer, task, task.eval_set(), seed=None)
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


# A full disk, for real: the child process may write files of at most 4 KiB (RLIMIT_FSIZE; SIGXFSZ ignored, so
# a longer write fails with EFBIG as a full disk's fails with ENOSPC), and the entry is larger.
FULL_DISK_CHILD = """
import logging, resource, signal, sys, types
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from conftest import dataset_cfg, tiny_model_cfg
from harness.trainers.builtin.model import build_model
from harness.trainers.builtin.tasks import build_task
from harness.trainers.builtin.tokenizer import build_tokenizer
from harness.trainers.builtin.warmstart import warm_start
logging.basicConfig(level=logging.WARNING, format="%(message)s")
tokenizer = build_tokenizer()
model = build_model(tiny_model_cfg(), len(tokenizer), seed=0)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
cfg = types.SimpleNamespace(steps=3, batch_size=4, lr=3e-3)
stats = warm_start(model, tokenizer, build_task(dataset_cfg(difficulty=1)), cfg, Path(sys.argv[1]), seed=0)
print("cache_hit", stats["warmstart/cache_hit"])
"""


def test_a_full_disk_leaves_no_temporary_file_and_the_run_goes_on(tmp_path):
    cache = tmp_path / "cache"
    tests = Path(__file__).resolve().parent
    proc = subprocess.run([sys.executable, "-c", FULL_DISK_CHILD, str(cache), str(tests)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "cache_hit 0"
    warnings = [line for line in proc.stderr.splitlines() if "not written" in line]
    assert len(warnings) == 1 and "goes on with the base model it trained" in warnings[0], proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert not [p.name for p in cache.iterdir() if p.name.endswith(".tmp")]


def test_a_folder_in_the_entrys_place_is_one_warning_and_leaks_nothing(tokenizer, model_cfg, tmp_path, caplog):
    task = build_task(dataset_cfg(difficulty=1))
    key = warmstart_key(build_model(model_cfg, len(tokenizer), seed=0), tokenizer, task, _warm_cfg(steps=3), seed=0)
    (tmp_path / f"{key}.pt").mkdir()  # an odd entry: a folder where the file belongs
    for _ in range(2):  # a second try leaks nothing either
        model = build_model(model_cfg, len(tokenizer), seed=0)
        stats = warm_start(model, tokenizer, task, _warm_cfg(steps=3), tmp_path, seed=0)
        assert stats["warmstart/cache_hit"] == 0
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"{key}.pt", f".{key}.lock"])
    assert [r for r in caplog.records if "not written" in r.getMessage()], caplog.text


def test_a_real_full_disk_is_one_warning_with_its_reason_and_keeps_no_byte(tokenizer, model_cfg, tmp_path, caplog):
    from small_disk import fill, small_disk

    task = build_task(dataset_cfg(difficulty=1))
    key = warmstart_key(build_model(model_cfg, len(tokenizer), seed=0), tokenizer, task, _warm_cfg(steps=3), seed=0)
    with small_disk(tmp_path / "disk", "64k") as disk:
        cache = disk / "cache"
        cache.mkdir()
        fill(disk)
        free = shutil.disk_usage(disk).free
        for _ in range(2):  # every later run finds the disk as full as before, not fuller
            stats = warm_start(build_model(model_cfg, len(tokenizer), seed=0), tokenizer, task, _warm_cfg(steps=3),
                               cache, seed=0)
            assert stats["warmstart/cache_hit"] == 0
            assert [p.name for p in cache.iterdir()] == [f".{key}.lock"]
            assert shutil.disk_usage(disk).free == free
    warnings = [r.getMessage() for r in caplog.records if "not written" in r.getMessage()]
    assert len(warnings) == 2 and all("No space left on device" in w for w in warnings), warnings
