"""A corrupt warm-start cache entry is a miss (issue #25): the warm start is trained again, exactly as
without the entry, and the entry replaced; the run never fails on it."""
from __future__ import annotations

import types

import pytest
import torch

from harness.trainers.builtin.model import build_model
from harness.trainers.builtin.tasks import build_task
from harness.trainers.builtin.warmstart import warm_start

from conftest import dataset_cfg

WARM = types.SimpleNamespace(steps=10, batch_size=16, lr=3e-3)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong_shape"])
def test_a_corrupt_entry_is_retrained_and_replaced(tokenizer, model_cfg, tmp_path, damage):
    task = build_task(dataset_cfg(difficulty=1))
    reference = build_model(model_cfg, len(tokenizer), seed=0)
    first = warm_start(reference, tokenizer, task, WARM, tmp_path, seed=0)
    entry, = tmp_path.glob("*.pt")
    good = entry.read_bytes()
    if damage == "garbage":
        entry.write_bytes(b"not a checkpoint at all")
    elif damage == "truncated":
        entry.write_bytes(good[:len(good) // 2])
    else:  # readable, but weights of another shape under the same name
        torch.save({"state_dict": {"lm_head.weight": torch.zeros(2, 2)}, "stats": {}}, entry)

    again = build_model(model_cfg, len(tokenizer), seed=0)
    second = warm_start(again, tokenizer, task, WARM, tmp_path, seed=0)
    assert second["warmstart/cache_hit"] == 0 and second["warmstart/loss"] == first["warmstart/loss"]
    for name, value in reference.state_dict().items():
        assert torch.equal(again.state_dict()[name], value), name  # trained from the same initial weights
    third = warm_start(build_model(model_cfg, len(tokenizer), seed=0), tokenizer, task, WARM, tmp_path, seed=0)
    assert third["warmstart/cache_hit"] == 1, "the entry was replaced by a good one"
