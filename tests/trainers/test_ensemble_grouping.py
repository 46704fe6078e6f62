"""Which runs of a sweep train together: same shape only, capped, split across workers, and never a run
that must train alone."""
from __future__ import annotations

import pytest

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.trainers.ensemble.grouping import (GPU_MEMORY_SHARE, Room, member_bytes, members_that_fit, plan, room_of,
                                               shape_key)


def spec(*overrides):
    return validate(compose(list(overrides)), list(overrides))


def test_runs_that_differ_in_what_members_may_differ_in_share_a_shape():
    a = spec("algo=dppo", "delta=0.1", "seed=0")
    for other in (spec("algo=drpo", "delta=0.3", "seed=5"), spec("algo=grpo", "seed=1", "trainer.temperature=0.7"),
                  spec("trainer.warmstart.seed=3", "precision.mismatch_scale=4", "trainer.grad_clip=0.5"),
                  spec("experiment_name=other", "trainer.torch_threads=2")):
        assert shape_key(a) == shape_key(other)


@pytest.mark.parametrize("override", ["trainer.steps=30", "trainer.lr=1e-3", "model.hidden_size=128",
                                      "dataset=arithmetic", "dataset.difficulty=3", "precision=fp32",
                                      "trainer.mini_batches=4", "trainer.eval_every=5"])
def test_a_different_shape_keeps_runs_apart(override):
    assert shape_key(spec()) != shape_key(spec(override))


def test_runs_that_must_train_alone_have_no_shape(tmp_path):
    assert shape_key(spec("trainer=verl")) is None
    resumed = spec()
    resumed.trainer.resume = str(tmp_path)
    assert shape_key(resumed) is None


def test_plan_groups_by_shape_in_order_caps_and_splits_across_workers():
    a, b = spec("seed=0"), spec("seed=0", "trainer.steps=7")
    specs = [a, a, b, a, a, b, None, a]
    assert plan(specs, cap=None) == [[0, 1, 3, 4, 7], [2, 5], [6]]
    assert plan(specs, cap=2) == [[0, 1], [2, 5], [3, 4], [6], [7]]
    assert plan(specs, cap=None, parts=2) == [[0, 1, 3], [2], [4, 7], [5], [6]]
    assert plan(specs, cap=1) == [[i] for i in range(8)]


def test_members_that_fit_follow_the_shape():
    small, big = spec(), spec("model.hidden_size=256", "model.intermediate_size=1024")
    assert member_bytes(big) > 4 * member_bytes(small)


def test_an_explicit_members_asks_fewer_never_more_than_fit_or_the_cap(monkeypatch):
    """Issue 39 item 10: launcher.members skipped the 256 cap and the memory sizing (an ensemble of 1000 was
    planned whatever the memory)."""
    from harness.config.validate import ConfigError
    from harness.trainers.ensemble import grouping

    one = spec()
    monkeypatch.setattr(grouping, "available_bytes", lambda: 3 * member_bytes(one) / grouping.MEMORY_SHARE)
    assert grouping.members_that_fit(one) == 3
    assert [len(g) for g in plan([one] * 8, cap=100)] == [3, 3, 2]  # as many as fit, not the 100 asked
    assert [len(g) for g in plan([one] * 8, cap=2)] == [2, 2, 2, 2]  # fewer than fit: as asked
    with pytest.raises(ConfigError, match=r"launcher.members.*to 1024") as err:
        spec("launcher.members=1025")
    assert "\n" not in str(err.value)


def test_a_slurm_jobs_ensemble_is_sized_by_the_jobs_memory_not_the_drivers():
    one = spec()
    memory = int(5 * member_bytes(one) / 0.5)  # MEMORY_SHARE 0.5 of it: 5 members
    on_the_job = lambda device: room_of(device, memory, None)  # noqa: E731
    assert [len(g) for g in plan([one] * 12, cap=256, rooms=on_the_job)] == [4, 4, 4]  # 3 groups of ≤ 5
    assert [len(g) for g in plan([one] * 12, cap=2, rooms=on_the_job)] == [2] * 6


def test_an_ensemble_on_a_gpu_is_sized_by_the_gpus_free_memory_and_the_larger_cap():
    """Issue 36 item 4: ensembles were sized from RAM whatever the device, at most 256 members."""
    one, on_cpu = spec(), spec("trainer.device=cpu")
    ram, gpu = 64 << 30, int(7 * member_bytes(one) / GPU_MEMORY_SHARE) + 1  # a GPU with room for 7 members
    assert room_of("cuda", ram, gpu) == room_of("auto", ram, gpu) == Room(gpu, True)
    assert room_of("cpu", ram, gpu) == room_of("auto", ram, None) == Room(ram, False)
    here = lambda device: room_of(device, ram, gpu)  # noqa: E731
    assert [len(g) for g in plan([one] * 20, cap=None, rooms=here)] == [7, 7, 6]  # by the GPU's memory
    assert [len(g) for g in plan([on_cpu] * 20, cap=None, rooms=here)] == [20]  # by the RAM
    h200 = Room(141 << 30, True)
    assert members_that_fit(one, h200) == 1024  # the hard ceiling (memory allows ~4,700)
    assert members_that_fit(one, Room(h200.bytes, False)) == 256  # a CPU's cap


def test_a_gpu_profiles_jobs_are_sized_by_one_gpus_memory():
    from harness.config.profiles import load_profile
    from harness.infra.refused import Refused
    from harness.launchers.submitit_launcher import slurm_rooms

    gpu_node = load_profile("gpu_node")
    assert slurm_rooms(gpu_node)("auto") == Room(int(gpu_node.gpu_memory_gb * 2**30), True)
    assert slurm_rooms(gpu_node)("cpu") == Room(int(gpu_node.mem_gb * 2**30), False)
    assert slurm_rooms(load_profile("test_cluster"))("auto") == Room(2 << 30, False)  # no GPUs: mem_gb
    with pytest.raises(Refused, match=r"^launcher.gpu_memory_gb is not set: .*gpus_per_node=1") as err:
        slurm_rooms(load_profile("gpu_node", {"gpu_memory_gb": None}))("cuda")
    assert "\n" not in str(err.value)
