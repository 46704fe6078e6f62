import types

import numpy as np
import pytest
import torch

from harness.trainers.builtin.model import build_model, token_logprobs
from harness.trainers.builtin.precision import fp8_quant_dequant, precision_spec
from harness.trainers.builtin.rollout import RolloutEngine, completions_text, evaluate_accuracy
from harness.trainers.builtin.tasks import build_task

from conftest import dataset_cfg

EOS, PAD = 2, 0


@pytest.fixture
def model(model_cfg):
    return build_model(model_cfg, vocab_size=48, seed=0)


@pytest.fixture
def prompts():
    ids = torch.randint(3, 48, (128, 7), generator=torch.Generator().manual_seed(0))
    ids[:, 0] = 1
    return ids


def _generate(engine, prompts, seed=0, **kwargs):
    arguments = dict(max_new_tokens=8, temperature=1.0, generator=torch.Generator().manual_seed(seed))
    return engine.generate(prompts, **{**arguments, **kwargs})


def _mismatch(trainer_model, prompts, rollout):
    """Mean |log π - log μ| over real tokens."""
    with torch.no_grad():
        trainer_logp, _ = token_logprobs(trainer_model, prompts, rollout.tokens)
    return ((trainer_logp - rollout.logp).abs() * rollout.mask).sum() / rollout.mask.sum()


def test_shapes_mask_and_padding_after_eos(model, prompts):
    rollout = _generate(RolloutEngine.from_model(model, precision_spec("fp32")), prompts, topk=5)
    assert rollout.tokens.shape == rollout.logp.shape == rollout.mask.shape == (128, 8)
    assert rollout.tokens.dtype == torch.long and rollout.logp.dtype == rollout.mask.dtype == torch.float32
    assert rollout.topk_logp.shape == rollout.topk_ids.shape == (128, 8, 5)
    assert torch.equal(rollout.lengths, rollout.mask.sum(1).long())
    ended = (rollout.tokens == EOS).any(1)
    assert 0 < ended.sum() < 128  # a random policy ends some rows early: the masking below is exercised
    for row in range(128):
        tokens, mask, length = rollout.tokens[row], rollout.mask[row], int(rollout.lengths[row])
        eos_positions = (tokens == EOS).nonzero().flatten().tolist()
        assert length == (eos_positions[0] + 1 if eos_positions else 8)
        assert mask[:length].eq(1).all() and mask[length:].eq(0).all()
        assert tokens[length:].eq(PAD).all() and rollout.logp[row, length:].eq(0).all()
        assert rollout.logp[row, :length].lt(0).all()


def test_logp_matches_teacher_forced_recomputation_fp32(model, prompts):
    engine = RolloutEngine.from_model(model, precision_spec("fp32"))
    rollout = _generate(engine, prompts, temperature=0.7, topk=4)
    with torch.no_grad():
        logp, logits = token_logprobs(engine.policy, prompts, rollout.tokens, temperature=0.7)
    real = rollout.mask.bool()
    torch.testing.assert_close(rollout.logp[real], logp[real], atol=1e-4, rtol=0)
    top_logp, top_ids = torch.log_softmax(logits, -1).topk(4, dim=-1)
    torch.testing.assert_close(rollout.topk_logp[real], top_logp[real], atol=1e-4, rtol=0)
    assert torch.equal(rollout.topk_ids[real], top_ids[real])
    assert (rollout.topk_logp[..., 0][real] >= rollout.logp[real] - 1e-6).all()


def test_generation_is_deterministic_given_the_generator(model, prompts):
    engine = RolloutEngine.from_model(model, precision_spec("bf16"))
    first, again, other = _generate(engine, prompts, 1), _generate(engine, prompts, 1), _generate(engine, prompts, 2)
    assert torch.equal(first.tokens, again.tokens) and torch.equal(first.logp, again.logp)
    assert not torch.equal(first.tokens, other.tokens)


def test_low_precision_rollouts_have_a_real_but_small_mismatch(model, prompts):
    mismatch = {}
    for name in ("fp32", "fp16", "bf16", "fp8_rollout"):
        mismatch[name] = _mismatch(model, prompts, _generate(RolloutEngine.from_model(model, precision_spec(name)), prompts))
    assert mismatch["fp32"] < 1e-6
    assert 1e-5 < mismatch["fp16"] < mismatch["bf16"] < mismatch["fp8_rollout"] < 0.05


def test_engine_keeps_its_own_dtype_and_fp32_rope(model):
    engine = RolloutEngine.from_model(model, precision_spec("bf16"))
    assert all(p.dtype == torch.bfloat16 for p in engine.policy.parameters())
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert all(b.dtype == torch.float32 for name, b in engine.policy.named_buffers() if "inv_freq" in name)


def test_fp8_engine_holds_quantised_weights(model):
    engine = RolloutEngine.from_model(model, precision_spec("fp8_rollout"))
    trainer, rollout = dict(model.named_parameters()), dict(engine.policy.named_parameters())
    q_proj = "model.layers.0.self_attn.q_proj.weight"
    assert torch.equal(rollout[q_proj], fp8_quant_dequant(trainer[q_proj]).to(torch.bfloat16))
    assert not torch.equal(rollout[q_proj].float(), trainer[q_proj])
    embedding = "model.embed_tokens.weight"
    assert torch.equal(rollout[embedding], trainer[embedding].to(torch.bfloat16))


def test_sync_copies_new_weights_in_place(model, prompts):
    engine = RolloutEngine.from_model(model, precision_spec("fp32"))
    before = _generate(engine, prompts)
    pointers = [p.data_ptr() for p in engine.policy.parameters()]
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.05)
    assert torch.equal(_generate(engine, prompts).logp, before.logp)  # engine does not share the trainer's tensors

    engine.sync(model)
    after = _generate(engine, prompts)
    assert not torch.equal(after.logp, before.logp)
    assert _mismatch(model, prompts, after) < 1e-6
    assert pointers == [p.data_ptr() for p in engine.policy.parameters()]


def test_stops_once_every_row_has_ended(model, prompts):
    engine = RolloutEngine.from_model(model, precision_spec("fp32"))
    forwards = []
    engine.policy.register_forward_hook(lambda *_: forwards.append(1))
    eos_bias = torch.zeros(48)
    eos_bias[EOS] = 50.0
    engine.policy.lm_head.register_forward_hook(lambda module, inputs, output: output + eos_bias)
    rollout = _generate(engine, prompts, greedy=True)
    assert len(forwards) == 1
    assert rollout.lengths.eq(1).all() and rollout.tokens[:, 0].eq(EOS).all() and rollout.tokens[:, 1:].eq(PAD).all()
    assert completions_text(types.SimpleNamespace(decode=_decode), rollout) == [""] * 128


def _decode(ids, skip_special_tokens):
    assert skip_special_tokens
    return "".join(str(i) for i in ids if i > 2)


def test_greedy_takes_the_argmax(model, prompts):
    engine = RolloutEngine.from_model(model, precision_spec("fp32"))
    rollout = _generate(engine, prompts, greedy=True, temperature=2.0, topk=1)
    real = rollout.mask.bool()
    assert torch.equal(rollout.tokens[real], rollout.topk_ids[..., 0][real])
    assert torch.equal(rollout.tokens, _generate(engine, prompts, seed=9, greedy=True).tokens)


def test_completions_text_and_evaluate_accuracy(model, tokenizer):
    # d=1 multiplication: a policy that always writes "0" then <eos> solves exactly the problems with a 0 operand.
    task = build_task(dataset_cfg(difficulty=1, ops="*", eval_size=8))
    problems = task.sample_train(np.random.default_rng(0), 64)
    engine = RolloutEngine.from_model(model, precision_spec("bf16"))
    calls = []

    def write_zero_then_stop(module, inputs, output):
        forced = torch.full_like(output, -1e4)
        forced[..., tokenizer.convert_tokens_to_ids("0") if not calls else EOS] = 0.0
        calls.append(1)
        return forced

    engine.policy.lm_head.register_forward_hook(write_zero_then_stop)
    accuracy = evaluate_accuracy(engine, tokenizer, task, problems)
    assert accuracy == pytest.approx(sum(p.answer == "0" for p in problems) / 64)
    assert 0 < accuracy < 1
    calls.clear()
    rollout = engine.generate(torch.ones(3, 4, dtype=torch.long), 5, 1.0, torch.Generator().manual_seed(0))
    assert completions_text(tokenizer, rollout) == ["0"] * 3
    assert rollout.lengths.tolist() == [2, 2, 2]


@pytest.mark.parametrize("name", ["bf16", "fp8_rollout"])
def test_mismatch_scale_magnifies_the_weight_rounding_error(model, prompts, name):
    """scale 1 is the plain precision; scale k stores w + k·(q(w) − w); fp32 has no error to magnify."""
    def engine(scale):
        return RolloutEngine.from_model(model, precision_spec(name, mismatch_scale=scale))

    plain, scaled = engine(1.0), engine(8.0)
    reference = RolloutEngine.from_model(model, precision_spec(name))
    for (key, a), b in zip(plain.policy.named_parameters(), reference.policy.parameters()):
        assert torch.equal(a, b), key
    weight = "model.layers.0.mlp.down_proj.weight"
    master = dict(model.named_parameters())[weight].detach().float()
    error = dict(plain.policy.named_parameters())[weight].float() - master
    magnified = dict(scaled.policy.named_parameters())[weight].float() - master
    assert error.abs().mean() > 0
    assert torch.allclose(magnified, 8 * error, atol=float(master.abs().max()) * 2 ** -7)  # one more bf16 rounding
    assert _mismatch(model, prompts, _generate(scaled, prompts)) > 3 * _mismatch(model, prompts, _generate(plain, prompts))
    exact = RolloutEngine.from_model(model, precision_spec("fp32", mismatch_scale=8.0))
    assert _mismatch(model, prompts, _generate(exact, prompts)) < 1e-6
