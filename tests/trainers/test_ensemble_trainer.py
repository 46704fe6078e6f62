"""A run's result never depends on what it was grouped with: each member of a mixed ensemble (two objectives,
three δ, two seeds) logs, through step 3, what the same config logs alone (the ensemble of one); a member that fails ends alone.
What one step computes is checked against the step written out by hand in test_rl_step_oracle.py."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.tracking.local_tracker import Tracker
from harness.trainers.ensemble import loop
from harness.trainers.ensemble.trainer import EnsembleTrainer

MIXED = [(algo, delta, seed) for algo in ("dppo", "drpo") for delta in (0.1, 0.2, 0.4) for seed in (0, 1)]


def spec(tmp: Path, cache: Path, algo: str, delta: float, seed: int, *extra: str):
    # two mini-batches: the failing member's call count and the tolerance (ratios drift further, and float
    # rounding with them, over the default 8 stale mini-batches) were set there
    overrides = [f"output_root={tmp}", f"cache_dir={cache}", "debug=quick", "trainer.steps=3", "trainer.mini_batches=2",
                 "trainer.checkpoint_every=100", f"algo={algo}", f"delta={delta}", f"seed={seed}", *extra]
    return validate(compose(overrides), overrides)


def records(run_dir: Path) -> list:
    """Every logged metric but timings (warm-start cache hits differ: the first member trains it)."""
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in line.items() if not k.startswith(("perf/", "warmstart/"))} for line in lines]


def train(specs, folder: Path) -> EnsembleTrainer:
    trainer = EnsembleTrainer([(s, folder / str(k), Tracker(folder / str(k))) for k, s in enumerate(specs)])
    loop.train(trainer)
    for member in trainer.members:
        member.tracker.finish("FINISHED" if member.alive else "FAILED")
    return trainer


def assert_close_records(a: list, b: list, tolerance: float = 1e-4, at_least: int = 5) -> None:
    assert len(a) == len(b) and len(a) >= at_least
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for key in x:
            assert abs(x[key] - y[key]) <= tolerance, (x["step"], key, x[key], y[key])


@pytest.mark.slow
def test_each_member_of_a_mixed_ensemble_logs_what_it_logs_alone(tmp_path, warm_cache):
    # the default bf16 rollout, bit for bit (each member's own sampling stream and clipping norm, issue 36)
    specs = [spec(tmp_path, warm_cache, *variant) for variant in MIXED]
    train(specs, tmp_path / "ensemble")
    for k in (0, 5, 7, 11):  # both objectives, every δ, both seeds; each alone costs a process's worth of time
        train([specs[k]], tmp_path / f"alone{k}")
        assert_close_records(records(tmp_path / "ensemble" / str(k)), records(tmp_path / f"alone{k}" / "0"),
                             tolerance=0.0)


FAILURE_SPECS = (("dppo", 0.1, 0), ("drpo", 0.2, 1), ("dppo", 0.4, 1))  # members 0 and 2 compute as one group


def broken_from_step_2(trainer, objective_class, method: str, breaks, monkeypatch):
    """Patch `objective_class.method` so that `breaks(self, value)` replaces its value from the trainer's step 2."""
    original = getattr(objective_class, method)

    def patched(self, *args, **kwargs):
        value = original(self, *args, **kwargs)
        return breaks(self, value) if trainer.step >= 1 else value

    monkeypatch.setattr(objective_class, method, patched)


def assert_only_member_failed(tmp_path, clean, broken, failed: int, error: type) -> None:
    assert isinstance(broken.members[failed].error, error), broken.members[failed].error
    for k, member in enumerate(broken.members):
        if k != failed:
            assert member.alive
            member.tracker.finish("FINISHED")
            assert_close_records(records(tmp_path / "broken" / str(k)), records(tmp_path / "clean" / str(k)))
    assert clean.members[failed].alive
    assert max(r["step"] for r in records(tmp_path / "broken" / str(failed))) == 1


def test_a_member_whose_loss_is_not_finite_ends_alone_and_the_others_are_unchanged(tmp_path, warm_cache,
                                                                                     monkeypatch):
    from harness.algorithms.regularizers import DRPO

    specs = [spec(tmp_path, warm_cache, *variant) for variant in FAILURE_SPECS]
    clean = train(specs, tmp_path / "clean")
    broken = EnsembleTrainer([(s, tmp_path / "broken" / str(k), Tracker(tmp_path / "broken" / str(k)))
                              for k, s in enumerate(specs)])
    broken_from_step_2(broken, DRPO, "_surrogate", lambda self, J: J * float("nan"), monkeypatch)  # member 1's
    loop.train(broken)
    assert_only_member_failed(tmp_path, clean, broken, 1, FloatingPointError)
    assert "non-finite loss nan at step 2" in str(broken.members[1].error)


def test_a_member_whose_objective_raises_in_a_group_ends_alone_and_its_group_partner_is_unchanged(
        tmp_path, warm_cache, monkeypatch, caplog):
    from harness.algorithms.dppo import DPPO

    def raise_for_delta_04(self, keep):  # member 2's objective, computed in a group with member 0's
        if torch.as_tensor(self.params["delta"]).eq(0.4).any():
            raise RuntimeError("objective failed")
        return keep

    specs = [spec(tmp_path, warm_cache, *variant) for variant in FAILURE_SPECS]
    clean = train(specs, tmp_path / "clean")
    broken = EnsembleTrainer([(s, tmp_path / "broken" / str(k), Tracker(tmp_path / "broken" / str(k)))
                              for k, s in enumerate(specs)])
    broken_from_step_2(broken, DPPO, "_keep", raise_for_delta_04, monkeypatch)
    assert [ks for ks, _ in broken.batched_loss.groups([0, 1, 2])] == [[0, 2], [1]]
    loop.train(broken)
    assert_only_member_failed(tmp_path, clean, broken, 2, RuntimeError)
    assert "failed as a group" not in caplog.text  # the group computed as one until member 2 raised


@pytest.mark.parametrize("sync", ["full", "delta"])
def test_an_ensemble_resumes_exactly_and_a_members_checkpoint_resumes_alone(tmp_path, warm_cache, sync):
    """Checkpoints are per member, in the solo format: an ensemble stopped after step 2 resumes every member to
    exactly what the uninterrupted ensemble logged, and a member's checkpoint also continues as a run alone.
    With delta weight sync the checkpoint carries the rollout engine's own drifted weights."""
    variants = (("dppo", 0.1, 0), ("drpo", 0.2, 1))
    sync_ = f"precision.weight_sync={sync}"
    train([spec(tmp_path, warm_cache, *v, sync_, "trainer.checkpoint_every=2") for v in variants], tmp_path / "full")
    train([spec(tmp_path, warm_cache, *v, sync_, "trainer.checkpoint_every=2", "trainer.steps=2") for v in variants],
          tmp_path / "cut")
    resumed = [spec(tmp_path, warm_cache, *v, sync_, "trainer.checkpoint_every=2",
                    f"trainer.resume={tmp_path / 'cut' / str(k)}") for k, v in enumerate(variants)]
    train(resumed, tmp_path / "resumed")
    train(resumed[1:], tmp_path / "alone")
    for k in range(2):
        (full,) = [r for r in records(tmp_path / "full" / str(k)) if r["step"] == 3]
        (again,) = [r for r in records(tmp_path / "resumed" / str(k)) if r["step"] == 3]
        # the cut run evaluated at its last step, 2, which the full run never did: its best counts that one too
        (cut,) = [r for r in records(tmp_path / "cut" / str(k)) if r["step"] == 2]
        assert again.pop("eval/best_accuracy") == max(full.pop("eval/best_accuracy"), cut["eval/accuracy"])
        assert full == again, [(key, full[key], again[key]) for key in full if full[key] != again.get(key)]
    (alone,) = [r for r in records(tmp_path / "alone" / "0") if r["step"] == 3]
    (full,) = [r for r in records(tmp_path / "full" / "1") if r["step"] == 3]
    (cut,) = [r for r in records(tmp_path / "cut" / "1") if r["step"] == 2]  # alone too, its best counts that one
    assert alone.pop("eval/best_accuracy") == max(full.pop("eval/best_accuracy"), cut["eval/accuracy"])
    assert_close_records([full], [alone], at_least=1)


def test_a_base_model_another_process_is_training_is_loaded_after_the_others(tmp_path):
    """Two ensembles of the same seeds start together on an empty cache: a member whose base model is being
    trained elsewhere waits until the ensemble's other members are warm, instead of training it twice."""
    import threading

    from harness.infra.locks import locked
    from harness.trainers.builtin.model import build_model
    from harness.trainers.builtin.tasks import build_task
    from harness.trainers.builtin.tokenizer import build_tokenizer
    from harness.trainers.builtin.warmstart import warmstart_key

    cache = tmp_path / "cache"
    specs = [spec(tmp_path, cache, "dppo", 0.1, seed, f"trainer.warmstart.seed={seed}", "trainer.warmstart.steps=20") for seed in (0, 1)]
    tokenizer = build_tokenizer()

    def key(s):
        model = build_model(s.model, vocab_size=len(tokenizer), seed=s.trainer.warmstart.seed)
        return warmstart_key(model, tokenizer, build_task(s.dataset), s.trainer.warmstart, s.trainer.warmstart.seed)

    first, second = key(specs[0]), key(specs[1])
    assert first != second
    cache.mkdir()
    built = {}
    with locked(cache / f".{first}.lock"):  # another ensemble is training the first member's base model
        builder = threading.Thread(target=lambda: built.update(trainer=EnsembleTrainer(
            [(s, tmp_path / str(k), Tracker(tmp_path / str(k))) for k, s in enumerate(specs)])))
        builder.start()
        deadline = time.monotonic() + 60
        while not (cache / f"{second}.pt").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (cache / f"{second}.pt").exists(), "the second member waited behind the first"
        assert builder.is_alive() and not (cache / f"{first}.pt").exists()
    builder.join(300)  # the holder let go without an entry: the ensemble trains the first base model itself
    stats = built["trainer"].warm_start_stats
    assert [stats[m]["warmstart/cache_hit"] for m in built["trainer"].members] == [0, 0]
    assert (cache / f"{first}.pt").exists()
