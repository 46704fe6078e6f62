"""The lean Qwen3 decode path (harness/trainers/builtin/fast_decode.py) computes the Hugging Face model's
forward, and the rollout engine samples the same tokens with it."""

import pytest
import torch
from conftest import tiny_model_cfg

from harness.trainers.builtin import fast_decode
from harness.trainers.builtin.model import build_model
from harness.trainers.builtin.precision import precision_spec
from harness.trainers.builtin.rollout import RolloutEngine

VOCAB = 40


@pytest.fixture(scope="module")
def model():
    return build_model(tiny_model_cfg(hidden_size=64, intermediate_size=128), vocab_size=VOCAB, seed=3)


def _ids(batch, length, seed=0):
    ids = torch.randint(3, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))
    ids[:, 0] = 1
    return ids


@pytest.mark.parametrize("precision, atol", [("fp32", 2e-5), ("bf16", 5e-2), ("fp16", 1e-2), ("fp8_rollout", 5e-2)])
def test_logits_match_the_hf_forward(model, precision, atol):
    engine = RolloutEngine.from_model(model, precision_spec(precision))
    lean = engine._lean_decoder()
    assert lean is not None
    ids = _ids(6, 11)
    with torch.no_grad():
        expected = engine.policy(input_ids=ids, use_cache=False).logits.float()
        ours = lean.logits_all(ids).float()
    assert ours.shape == expected.shape
    torch.testing.assert_close(ours, expected, atol=atol, rtol=0)


def test_incremental_decode_matches_a_full_forward(model):
    engine = RolloutEngine.from_model(model, precision_spec("fp32"))
    lean = engine._lean_decoder()
    ids = _ids(4, 12, seed=1)
    cache = lean.new_cache(4, 12)
    lean.prepare()
    cos, sin = lean.rope_tables(12)
    steps = [lean.forward(ids[:, :7], 0, cache, cos, sin)]
    steps += [lean.forward(ids[:, p:p + 1], p, cache, cos, sin) for p in range(7, 12)]
    with torch.no_grad():
        full = engine.policy(input_ids=ids, use_cache=False).logits[:, 6:]
    torch.testing.assert_close(torch.stack(steps, 1), full, atol=2e-5, rtol=0)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_generate_samples_the_same_tokens(model, precision, monkeypatch):
    engine = RolloutEngine.from_model(model, precision_spec(precision))
    prompts = _ids(64, 9, seed=2)

    def run(hf: bool):
        engine._lean = False if hf else None  # rebuilt on demand
        return engine.generate(prompts, 8, 1.0, torch.Generator().manual_seed(7), topk=3)

    lean, hf = run(False), run(True)
    assert engine._lean is False
    assert torch.equal(lean.tokens, hf.tokens) and torch.equal(lean.mask, hf.mask)
    torch.testing.assert_close(lean.logp, hf.logp, atol=1e-5 if precision == "fp32" else 2e-2, rtol=0)
    torch.testing.assert_close(lean.topk_logp, hf.topk_logp, atol=1e-5 if precision == "fp32" else 2e-2, rtol=0)
    greedy = [engine.generate(prompts, 8, 1.0, torch.Generator(), greedy=True).tokens for _ in range(1)]
    engine._lean = None
    assert torch.equal(engine.generate(prompts, 8, 1.0, torch.Generator(), greedy=True).tokens, greedy[0])


def test_sync_is_seen_and_unsupported_models_keep_the_hf_path(model, monkeypatch):
    engine = RolloutEngine.from_model(model, precision_spec("fp32"))
    lean = engine._lean_decoder()
    ids = _ids(2, 5)
    before = lean.logits_all(ids)
    changed = build_model(tiny_model_cfg(hidden_size=64, intermediate_size=128), vocab_size=VOCAB, seed=4)
    engine.sync(changed)
    with torch.no_grad():
        torch.testing.assert_close(lean.logits_all(ids), changed(input_ids=ids).logits, atol=2e-5, rtol=0)
    assert not torch.allclose(before, lean.logits_all(ids))
    handle = engine.policy.lm_head.register_forward_hook(lambda *a: None)
    assert engine._lean_decoder() is None, "hooks only run in the HF forward"
    handle.remove()
    assert engine._lean_decoder() is lean
    monkeypatch.setenv("HARNESS_ROLLOUT_HF", "1")
    engine._lean = None
    assert engine._lean_decoder() is None
    engine.policy.config.attention_bias = True
    assert not fast_decode.supports(engine.policy)
    engine.policy.config.attention_bias = False
    assert not fast_decode.supports(torch.nn.Linear(2, 2))
