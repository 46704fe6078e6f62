"""Rows of a group share their prompt: the rollout engine's prefill (`LeanQwen3.shared_prefill`) runs each
distinct prompt once, and must compute what one forward of every row's whole sequence computes: logits and
sampled tokens. (The trainer's forward, `StackedQwen3.run_shared`, is checked in test_ensemble_model.py.)"""

import pytest
import torch
from conftest import tiny_model_cfg

from harness.trainers.builtin.model import build_model
from harness.trainers.builtin.precision import precision_spec
from harness.trainers.builtin.rollout import RolloutEngine

VOCAB = 40


@pytest.fixture(scope="module")
def model():
    return build_model(tiny_model_cfg(hidden_size=64, intermediate_size=128), vocab_size=VOCAB, seed=4)


def _ids(batch, length, seed):
    ids = torch.randint(3, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))
    ids[:, 0] = 1
    return ids


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
