"""The stacked model computes, for each member, what transformers' Qwen3ForCausalLM computes on the same
weights, and its members' weights go in and out as HF state dicts."""
from __future__ import annotations

import pytest
import torch

from conftest import tiny_model_cfg
from harness.trainers.builtin.model import build_model, token_logprobs
from harness.trainers.builtin.precision import precision_spec
from harness.trainers.ensemble.sampling import ROLLOUT, Draws
from harness.trainers.ensemble.stacked_model import StackedQwen3
from harness.trainers.ensemble.stacked_rollout import StackedRollout

VOCAB = 40


def members(count: int, **cfg):
    model_cfg = tiny_model_cfg(**cfg)
    return [build_model(model_cfg, VOCAB, seed=seed) for seed in range(count)]


def stacked(models) -> StackedQwen3:
    model = StackedQwen3(models[0], len(models))
    for k, hf in enumerate(models):
        model.load_member(k, hf.state_dict())
    return model


@pytest.mark.parametrize("tied", [True, False])
def test_member_logits_match_transformers(tied):
    models = members(3, tie_word_embeddings=tied)
    model = stacked(models)
    prompts = torch.randint(3, VOCAB, (3, 4, 6))
    responses = torch.randint(3, VOCAB, (3, 5, 7))
    rows = torch.tensor([[0, 0, 1, 3, 2], [3, 3, 3, 0, 1], [1, 2, 0, 0, 0]])
    logits = model(prompts, rows, responses)  # [3, 5, 8, V]
    for k, hf in enumerate(models):
        full = torch.cat([prompts[k][rows[k]], responses[k]], dim=1)
        expected = hf(input_ids=full, use_cache=False).logits[:, prompts.shape[2] - 1:]
        torch.testing.assert_close(logits[k], expected, atol=2e-5, rtol=1e-5)


def test_state_dicts_round_trip_and_members_are_independent():
    models = members(2)
    model = stacked(models)
    for k, hf in enumerate(models):
        state = model.member_state_dict(k)
        assert state.keys() == hf.state_dict().keys()
        for name, tensor in hf.state_dict().items():
            assert torch.equal(state[name], tensor), name
    ids = torch.randint(3, VOCAB, (2, 3, 5))
    before = model.run(model.param, ids)[0]
    with torch.no_grad():
        model.param("model.layers.0.mlp.up_proj.weight")[1].mul_(3.0)  # change member 1 only
    assert torch.equal(model.run(model.param, ids)[0], before)


def test_gradients_stay_within_their_member():
    model = stacked(members(3))
    prompts = torch.randint(3, VOCAB, (3, 2, 4))
    logits = model(prompts, torch.zeros(3, 2, dtype=torch.long), torch.randint(3, VOCAB, (3, 2, 3)))
    logits[1].sum().backward()
    for param in model.ordered_parameters():
        assert torch.count_nonzero(param.grad[0]) == 0 and torch.count_nonzero(param.grad[2]) == 0
    assert any(torch.count_nonzero(p.grad[1]) > 0 for p in model.ordered_parameters())


def alone(hf, spec, scale: float = 1.0) -> StackedRollout:
    """The engine of `hf`'s run alone: the ensemble of one."""
    return StackedRollout(stacked([hf]), spec, [scale])


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp8_rollout"])
def test_rollout_samples_what_each_member_samples_alone(precision):
    """Each member draws from its own stream (seed, step, row, position): in an ensemble of 3 it samples the
    tokens it samples alone, with the same log μ; an ended member draws nothing; in fp32 log μ is its
    transformers model's own log-probability of the token."""
    models = members(3)
    spec = precision_spec(precision)
    engine = StackedRollout(stacked(models), spec, [1.0, 1.0, 1.0])
    prompts = torch.randint(3, VOCAB, (3, 2, 5), generator=torch.Generator().manual_seed(0))
    index = torch.tensor([0, 0, 1, 1])
    seeds, temperatures = torch.tensor([10, 11, 12]), [1.0, 0.7, 1.0]
    together = engine.generate(prompts, 6, temperatures, Draws(seeds, ROLLOUT, 3), [True, True, True], topk=3,
                               prompt_index=index).members()
    for k, hf in enumerate(models):
        own = alone(hf, spec).generate(
            prompts[k:k + 1], 6, temperatures[k:k + 1], Draws(seeds[k:k + 1], ROLLOUT, 3), [True], topk=3,
            prompt_index=index).members()[0]
        assert torch.equal(together[k].tokens, own.tokens) and torch.equal(together[k].mask, own.mask)
        # rounding-level: an elementwise kernel over [M, ...] may take its scalar path for the last elements
        torch.testing.assert_close(together[k].logp, own.logp, atol=1e-6, rtol=0)
        assert torch.equal(together[k].topk_ids, own.topk_ids)
        if precision == "fp32":
            expected, _ = token_logprobs(hf, prompts[k][index], together[k].tokens, temperature=temperatures[k])
            torch.testing.assert_close(together[k].logp, expected * together[k].mask, atol=1e-5, rtol=0)
    assert len({tuple(r.tokens.flatten().tolist()) for r in together}) == 3
    ended = engine.generate(prompts, 6, temperatures, Draws(seeds, ROLLOUT, 3), [True, False, True],
                            prompt_index=index).members()
    assert torch.equal(ended[0].tokens, together[0].tokens) and torch.equal(ended[2].tokens, together[2].tokens)
    assert ended[1].mask.sum() == 0 and torch.all(ended[1].tokens == 0)


def test_mismatch_scale_is_per_member():
    models = members(1)
    model = stacked(models * 2)
    engine = StackedRollout(model, precision_spec("bf16"), [1.0, 4.0])
    for scale, k in ((1.0, 0), (4.0, 1)):
        for name, weight in alone(models[0], precision_spec("bf16"), scale).weights.items():
            assert torch.equal(engine.weights[name][k], weight[0]), (name, scale)
