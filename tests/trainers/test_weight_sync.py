"""precision.weight_sync=delta: the rollout engine applies the trainer's weight changes to its own rounded
copy, so its rounding errors add up over syncs (mismatch that grows) where a full sync resets them; the solo
and stacked engines do the same; a resumed run continues the engine it stopped with."""
from __future__ import annotations

import pytest
import torch

from conftest import tiny_model_cfg
from harness.launchers.compose import compose
from harness.config.errors import ConfigError
from harness.launchers.compose import validated as validate
from harness.trainers.builtin.model import build_model
from harness.trainers.builtin.precision import precision_spec
from harness.trainers.builtin.rollout import RolloutEngine
from harness.trainers.ensemble.stacked_model import StackedQwen3
from harness.trainers.ensemble.stacked_rollout import StackedRollout

VOCAB = 40


def _error(engine: RolloutEngine, model) -> float:
    """Mean |engine weight − trainer weight| over every parameter."""
    params = dict(engine.policy.named_parameters())
    diffs = [(params[n].float() - p.detach()).abs().flatten() for n, p in model.named_parameters()]
    return float(torch.cat(diffs).mean())


def _train_steps(model, steps: int, size: float, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(steps):
            for p in model.parameters():
                yield_ = torch.randn(p.shape, generator=generator) * size
                p.add_(yield_)
            yield


@pytest.mark.parametrize("name", ["bf16", "fp8_rollout"])
def test_delta_sync_accumulates_rounding_error_that_a_full_sync_resets(name):
    model = build_model(tiny_model_cfg(), VOCAB, seed=0)
    full = RolloutEngine.from_model(model, precision_spec(name))
    delta = RolloutEngine.from_model(model, precision_spec(name, weight_sync="delta"))
    assert _error(full, model) == _error(delta, model)  # the first sync is a full copy
    errors = []
    for _ in _train_steps(model, 60, size=3e-4):
        full.sync(model), delta.sync(model)
        errors.append((_error(full, model), _error(delta, model)))
    first_full, first_delta = errors[0]
    last_full, last_delta = errors[-1]
    # a full sync's error is one rounding of today's weights; delta sync's is the sum of 60 roundings
    assert last_delta > 3.0 * last_full and last_delta > 3.0 * first_delta, errors[::10]
    assert last_full < 2.0 * first_full, errors[::10]


def test_a_change_below_half_the_rounding_step_is_lost_by_delta_sync():
    model = build_model(tiny_model_cfg(), VOCAB, seed=0)
    engine = RolloutEngine.from_model(model, precision_spec("bf16", weight_sync="delta"))
    before = {n: p.detach().clone() for n, p in engine.policy.named_parameters()}
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(1.0 + 2 ** -11)  # a relative change far below bfloat16's half step (2^-9)
    engine.sync(model)
    assert all(torch.equal(before[n], p) for n, p in engine.policy.named_parameters())
    full = RolloutEngine.from_model(model, precision_spec("bf16"))
    assert _error(engine, model) >= _error(full, model)


def test_the_stacked_engine_syncs_each_member_as_its_solo_engine():
    models = [build_model(tiny_model_cfg(), VOCAB, seed=s) for s in range(2)]
    stacked = StackedQwen3(models[0], 2)
    for k, hf in enumerate(models):
        stacked.load_member(k, hf.state_dict())
    spec = precision_spec("bf16", weight_sync="delta")
    engine = StackedRollout(stacked, spec, [1.0, 1.0])
    solos = [RolloutEngine.from_model(m, spec) for m in models]
    for _ in zip(_train_steps(models[0], 20, 3e-4, seed=1), _train_steps(models[1], 20, 3e-4, seed=2)):
        for k, hf in enumerate(models):
            stacked.load_member(k, hf.state_dict())
            solos[k].sync(hf)
        engine.sync()
    for k, solo in enumerate(solos):
        state = engine.member_sync_state(k)
        for name, weight in solo.policy.named_parameters():
            assert torch.equal(state["weights"][name], weight), name


def test_a_delta_synced_engine_continues_from_its_saved_state():
    model = build_model(tiny_model_cfg(), VOCAB, seed=0)
    spec = precision_spec("bf16", weight_sync="delta")
    engine = RolloutEngine.from_model(model, spec)
    steps = _train_steps(model, 30, 3e-4)
    for _ in range(15):
        next(steps), engine.sync(model)
    fresh = RolloutEngine.from_model(model, spec)  # a resumed run that did not keep the engine
    kept = RolloutEngine.from_model(model, spec)
    kept.load_sync_state(engine.sync_state())
    for _ in steps:
        engine.sync(model), fresh.sync(model), kept.sync(model)
    same = [torch.equal(a, b) for a, b in zip(engine.policy.parameters(), kept.policy.parameters())]
    assert all(same)
    assert not all(torch.equal(a, b) for a, b in zip(engine.policy.parameters(), fresh.policy.parameters()))
    assert RolloutEngine.from_model(model, precision_spec("bf16")).sync_state() is None


def test_weight_sync_is_validated_in_one_line():
    with pytest.raises(ConfigError) as err:
        validate(compose(["precision.weight_sync=lazy"]), ["precision.weight_sync=lazy"])
    assert "precision.weight_sync" in str(err.value) and "one of full, delta" in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="weight_sync"):
        precision_spec("bf16", weight_sync="lazy")
