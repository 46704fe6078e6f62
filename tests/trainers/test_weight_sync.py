"""precision.weight_sync=delta: the rollout engine applies the trainer's weight changes to its own rounded
copy, so its rounding errors add up over syncs (mismatch that grows) where a full sync resets them; each member
of a stacked engine syncs as the engine of its run alone; a resumed run continues the engine it stopped with."""
from __future__ import annotations

import pytest
import torch

from conftest import tiny_model_cfg
from harness.launchers.compose import compose
from harness.config.errors import ConfigError
from harness.launchers.compose import validated as validate
from harness.trainers.builtin.model import build_model
from harness.trainers.builtin.precision import precision_spec
from harness.trainers.ensemble.stacked_model import StackedQwen3
from harness.trainers.ensemble.stacked_rollout import StackedRollout

VOCAB = 40


def _engine(name: str, seed: int = 0, **spec) -> StackedRollout:
    """A run's engine: one member, its trainer weights those of a tiny model (seed), synced."""
    model = build_model(tiny_model_cfg(), VOCAB, seed=seed)
    return StackedRollout(StackedQwen3(model, members=1), precision_spec(name, **spec), [1.0])


def _error(engine: StackedRollout) -> float:
    """Mean |engine weight − trainer weight| over every parameter."""
    model = engine.model
    diffs = [(engine.weights[n].float() - model.param(n).detach()).abs().flatten() for n in model.names]
    return float(torch.cat(diffs).mean())


def _train_steps(engine: StackedRollout, steps: int, size: float, seed: int = 0):
    """Random updates of the engine's trainer weights, one per iteration."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(steps):
            for p in engine.model.ordered_parameters():
                p.add_(torch.randn(p.shape, generator=generator) * size)
            yield


@pytest.mark.parametrize("name", ["bf16", "fp8_rollout"])
def test_delta_sync_accumulates_rounding_error_that_a_full_sync_resets(name):
    full, delta = _engine(name), _engine(name, weight_sync="delta")
    assert _error(full) == _error(delta)  # the first sync is a full copy
    errors = []
    for _ in zip(_train_steps(full, 60, size=3e-4), _train_steps(delta, 60, size=3e-4)):
        full.sync(), delta.sync()
        errors.append((_error(full), _error(delta)))
    first_full, first_delta = errors[0]
    last_full, last_delta = errors[-1]
    # a full sync's error is one rounding of today's weights; delta sync's is the sum of 60 roundings
    assert last_delta > 3.0 * last_full and last_delta > 3.0 * first_delta, errors[::10]
    assert last_full < 2.0 * first_full, errors[::10]


def test_a_change_below_half_the_rounding_step_is_lost_by_delta_sync():
    engine, full = _engine("bf16", weight_sync="delta"), _engine("bf16")
    before = {n: w.clone() for n, w in engine.weights.items()}
    with torch.no_grad():
        for e in (engine, full):
            for p in e.model.ordered_parameters():
                p.mul_(1.0 + 2 ** -11)  # a relative change far below bfloat16's half step (2^-9)
            e.sync()
    assert all(torch.equal(before[n], w) for n, w in engine.weights.items())
    assert _error(engine) >= _error(full)


def test_each_member_of_a_stacked_engine_syncs_as_its_run_alone():
    spec = {"weight_sync": "delta"}
    alone = [_engine("bf16", seed=s, **spec) for s in range(2)]
    stacked = StackedQwen3(build_model(tiny_model_cfg(), VOCAB, seed=0), members=2)
    for k, solo in enumerate(alone):
        stacked.load_member(k, solo.model.member_state_dict(0))
    engine = StackedRollout(stacked, precision_spec("bf16", **spec), [1.0, 1.0])
    for _ in zip(_train_steps(alone[0], 20, 3e-4, seed=1), _train_steps(alone[1], 20, 3e-4, seed=2)):
        for k, solo in enumerate(alone):
            stacked.load_member(k, solo.model.member_state_dict(0))
            solo.sync()
        engine.sync()
    for k, solo in enumerate(alone):
        state = engine.member_sync_state(k)
        for name, weight in solo.weights.items():
            assert torch.equal(state["weights"][name], weight[0]), name


def test_a_delta_synced_engine_continues_from_its_saved_state():
    engine = _engine("bf16", weight_sync="delta")
    steps = _train_steps(engine, 30, 3e-4)
    for _ in range(15):
        next(steps), engine.sync()
    fresh = StackedRollout(engine.model, engine.spec, [1.0])  # a resumed run that did not keep the engine
    kept = StackedRollout(engine.model, engine.spec, [1.0])
    kept.load_member_sync_state(0, engine.member_sync_state(0))
    for _ in steps:
        engine.sync(), fresh.sync(), kept.sync()
    assert all(torch.equal(w, kept.weights[n]) for n, w in engine.weights.items())
    assert not all(torch.equal(w, fresh.weights[n]) for n, w in engine.weights.items())
    assert _engine("bf16").member_sync_state(0) is None


def test_weight_sync_is_validated_in_one_line():
    with pytest.raises(ConfigError) as err:
        validate(compose(["precision.weight_sync=lazy"]), ["precision.weight_sync=lazy"])
    assert "precision.weight_sync" in str(err.value) and "one of full, delta" in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="weight_sync"):
        precision_spec("bf16", weight_sync="lazy")
