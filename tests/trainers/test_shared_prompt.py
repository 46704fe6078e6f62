"""Rows of a group share their prompt: the trainer's forward (`policy.response_logits`) and the rollout
engine's prefill (`LeanQwen3.shared_prefill`) run each distinct prompt once. Both must compute what one
forward of every row's whole sequence computes: logits, gradients and sampled tokens."""

import pytest
import torch
from conftest import tiny_model_cfg

from harness.trainers.builtin.model import build_model
from harness.trainers.builtin.policy import response_logits
from harness.trainers.builtin.precision import precision_spec, training_forward
from harness.trainers.builtin.rollout import RolloutEngine

VOCAB = 40


@pytest.fixture(scope="module")
def model():
    return build_model(tiny_model_cfg(hidden_size=64, intermediate_size=128), vocab_size=VOCAB, seed=4)


def _ids(batch, length, seed):
    ids = torch.randint(3, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))
    ids[:, 0] = 1
    return ids


def full_logits(model, prompts, index, responses, temperature):
    sequences = torch.cat([prompts[index], responses], dim=1)
    logits = model(input_ids=sequences, use_cache=False).logits
    return logits[:, prompts.shape[1] - 1:-1].float() / temperature


def _grads(model, logits):
    model.zero_grad(set_to_none=True)
    (logits.log_softmax(-1)[..., 3] * torch.linspace(-1, 1, logits.shape[1])).sum().backward()
    return {name: p.grad.clone() for name, p in model.named_parameters()}


@pytest.mark.parametrize("precision", ["fp32", "fp8_e2e"])
@pytest.mark.parametrize("length", [1, 2, 7])
def test_response_logits_and_gradients_match_full_sequences(model, precision, length):
    prompts = _ids(5, 6, seed=1)
    index = torch.tensor([3, 0, 3, 3, 1, 0, 4, 1, 3])  # an uneven mix of groups, prompt 2 unused
    responses = _ids(len(index), length, seed=2)
    spec = precision_spec(precision)
    with training_forward(model, spec):
        ours = response_logits(model, prompts, index, responses, 0.7)
    got = _grads(model, ours)
    with training_forward(model, spec):
        expected = full_logits(model, prompts, index, responses, 0.7)
    want = _grads(model, expected)
    assert ours.shape == (len(index), length, VOCAB)
    # relative to the largest entry: fp8_e2e computes in bf16 (autocast), whose rounding depends on the shapes
    tol = 1e-6 if precision == "fp32" else 1e-2
    torch.testing.assert_close(ours, expected, atol=tol * float(expected.detach().abs().max()), rtol=0)
    for name in want:
        scale = float(want[name].abs().max())
        assert scale > 0, name
        assert float((got[name] - want[name]).abs().max()) <= tol * scale, name


def test_shared_prefill_matches_the_rows_own_prefill(model):
    engine = RolloutEngine.from_model(model, precision_spec("fp32"))
    lean = engine._lean_decoder()
    prompts, index = _ids(4, 9, seed=3), torch.tensor([2, 2, 0, 1, 2, 3, 0])
    cos, sin = lean.rope_tables(12)
    lean.prepare()
    own, shared = lean.new_cache(len(index), 12), lean.new_cache(len(index), 12)
    expected = lean.forward(prompts[index], 0, own, cos, sin)
    got = lean.shared_prefill(prompts, index, shared, cos, sin)
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=0)
    for (k, v), (k2, v2) in zip(own, shared):
        torch.testing.assert_close(k2[:, :, :9], k[:, :, :9], atol=1e-6, rtol=0)
        torch.testing.assert_close(v2[:, :, :9], v[:, :, :9], atol=1e-6, rtol=0)


@pytest.mark.parametrize("hf", [False, True])
def test_generate_with_prompt_index_samples_what_repeated_prompts_sample(model, hf):
    engine = RolloutEngine.from_model(model, precision_spec("bf16"))
    engine._lean = False if hf else None  # False: the Hugging Face path; None: rebuilt (lean)
    prompts = _ids(8, 7, seed=5)
    index = torch.arange(8).repeat_interleave(4)
    shared = engine.generate(prompts, 6, 1.0, torch.Generator().manual_seed(9), prompt_index=index)
    repeated = engine.generate(prompts[index], 6, 1.0, torch.Generator().manual_seed(9))
    assert torch.equal(shared.tokens, repeated.tokens)
    torch.testing.assert_close(shared.logp, repeated.logp, atol=1e-5, rtol=0)
