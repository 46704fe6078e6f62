"""The one rollout engine (harness/trainers/ensemble/stacked_rollout.py) for a run alone (one member): what it
samples, checked against transformers' own Qwen3 forward (the test oracle) on the trainer's weights and on the
engine's rounded ones, and how it keeps, rounds and syncs its weights."""

import copy

import numpy as np
import pytest
import torch
from conftest import dataset_cfg, tiny_model_cfg

from harness.trainers.builtin.completions import completions_text
from harness.trainers.builtin.model import build_model, token_logprobs
from harness.trainers.builtin.precision import fp8_quant_dequant, precision_spec
from harness.trainers.builtin.tasks import build_task
from harness.trainers.builtin.warmstart import accuracy
from harness.trainers.ensemble.sampling import ROLLOUT, Draws
from harness.trainers.ensemble.stacked_model import StackedQwen3
from harness.trainers.ensemble.stacked_rollout import StackedRollout

VOCAB, EOS, PAD = 48, 2, 0


@pytest.fixture
def model(model_cfg):
    return build_model(model_cfg, vocab_size=VOCAB, seed=0)


def _ids(batch, length, seed):
    ids = torch.randint(3, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))
    ids[:, 0] = 1
    return ids


@pytest.fixture
def prompts():
    return _ids(128, 7, seed=0)


def _engine(model, name="fp32", scale=1.0, **spec):
    """A run's engine: one member holding `model`'s weights, synced."""
    return StackedRollout(StackedQwen3(model, members=1), precision_spec(name, **spec), [scale])


def _generate(engine, prompts, seed=0, temperature=1.0, **kwargs):
    (rollout,) = engine.generate(prompts.unsqueeze(0), 8, [temperature], _draws(seed), [True], **kwargs).members()
    return rollout


def _draws(*seeds):
    """Each member's stream at step 0, seeded `seeds`."""
    return Draws(torch.tensor(seeds), ROLLOUT, 0)


def _mismatch(trainer_model, prompts, rollout):
    """Mean |log π - log μ| over real tokens, log π by transformers' forward of the trainer's weights."""
    with torch.no_grad():
        trainer_logp, _ = token_logprobs(trainer_model, prompts, rollout.tokens)
    return ((trainer_logp - rollout.logp).abs() * rollout.mask).sum() / rollout.mask.sum()


def _hf_holding(engine, template):
    """`template`'s transformers model holding the engine's rounded weights in its dtype (RoPE's inv_freq stays
    float32, as in the engine): the Hugging Face forward at the rollout precision."""
    hf = copy.deepcopy(template).eval()
    for name, parameter in hf.named_parameters():
        parameter.data = engine.weights[name][0].clone()
    return hf


def _bigram(next_token, default, members=1):
    """A real network that writes next_token.get(t, default) after token t with probability 1 to float precision:
    attention and MLP outputs zeroed and one-hot embeddings leave the last position's logits a column of lm_head."""
    model = build_model(tiny_model_cfg(hidden_size=64, intermediate_size=128, tie_word_embeddings=False), VOCAB, 0)
    head = torch.zeros(VOCAB, 64)
    for token in range(VOCAB):
        head[next_token.get(token, default), token] = 30.0
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.model.embed_tokens.weight.copy_(torch.eye(VOCAB, 64))
        model.model.norm.weight.fill_(1.0)
        model.lm_head.weight.copy_(head)
    return model


def test_shapes_mask_and_padding_after_eos(model, prompts):
    rollout = _generate(_engine(model), prompts, topk=5)
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


def test_logp_matches_the_trainers_teacher_forced_forward_fp32(model, prompts):
    rollout = _generate(_engine(model), prompts, temperature=0.7, topk=4)
    with torch.no_grad():
        logp, logits = token_logprobs(model, prompts, rollout.tokens, temperature=0.7)
    real = rollout.mask.bool()
    torch.testing.assert_close(rollout.logp[real], logp[real], atol=1e-4, rtol=0)
    top_logp, top_ids = torch.log_softmax(logits, -1).topk(4, dim=-1)
    torch.testing.assert_close(rollout.topk_logp[real], top_logp[real], atol=1e-4, rtol=0)
    assert torch.equal(rollout.topk_ids[real], top_ids[real])
    assert (rollout.topk_logp[..., 0][real] >= rollout.logp[real] - 1e-6).all()


# measured: 5e-7, 4e-3, 5e-4, 4e-3; fp8_rollout's logits without the quantised weights are 2.4e-2 away
@pytest.mark.parametrize("precision, atol", [("fp32", 1e-5), ("bf16", 1.5e-2), ("fp16", 2e-3), ("fp8_rollout", 1e-2)])
def test_every_position_is_the_hf_forward_at_the_rollout_precision(model, precision, atol):
    """Oracle: each sampled position's whole distribution (a group's shared prompt prefilled once, then decoded
    over the KV cache) is what one transformers forward of prompt + response computes on the engine's weights."""
    engine = _engine(model, precision)
    prompts, index = _ids(8, 9, seed=2), torch.arange(8).repeat_interleave(4)
    (rollout,) = engine.generate(prompts.unsqueeze(0), 8, [1.0], _draws(7), [True], topk=VOCAB,
                                 prompt_index=index).members()
    with torch.no_grad():
        logits = _hf_holding(engine, model)(input_ids=torch.cat([prompts[index], rollout.tokens], dim=1)).logits
    expected = torch.log_softmax(logits[:, prompts.shape[1] - 1:-1].float(), dim=-1)
    ours = torch.empty_like(expected).scatter_(2, rollout.topk_ids, rollout.topk_logp)
    real = rollout.mask.bool()
    torch.testing.assert_close(ours[real], expected[real], atol=atol, rtol=0)


def test_generation_is_deterministic_given_the_generator(model, prompts):
    engine = _engine(model, "bf16")
    first, again, other = _generate(engine, prompts, 1), _generate(engine, prompts, 1), _generate(engine, prompts, 2)
    assert torch.equal(first.tokens, again.tokens) and torch.equal(first.logp, again.logp)
    assert not torch.equal(first.tokens, other.tokens)


def test_prompt_index_samples_what_repeated_prompts_sample(model):
    engine = _engine(model, "bf16")
    prompts, index = _ids(8, 7, seed=5), torch.arange(8).repeat_interleave(4)
    shared = _generate(engine, prompts, seed=9, prompt_index=index)
    repeated = _generate(engine, prompts[index], seed=9)
    assert torch.equal(shared.tokens, repeated.tokens)
    torch.testing.assert_close(shared.logp, repeated.logp, atol=1e-5, rtol=0)


def test_low_precision_rollouts_have_a_real_but_small_mismatch(model, prompts):
    mismatch = {name: _mismatch(model, prompts, _generate(_engine(model, name), prompts))
                for name in ("fp32", "fp16", "bf16", "fp8_rollout")}
    assert mismatch["fp32"] < 1e-6
    assert 1e-5 < mismatch["fp16"] < mismatch["bf16"] < mismatch["fp8_rollout"] < 0.05


def test_engine_keeps_its_own_dtype(model):
    engine = _engine(model, "bf16")
    assert all(weight.dtype == torch.bfloat16 for weight in engine.weights.values())
    assert all(parameter.dtype == torch.float32 for parameter in engine.model.ordered_parameters())


def test_fp8_engine_holds_quantised_weights(model):
    engine = _engine(model, "fp8_rollout")
    trainer = dict(model.named_parameters())
    q_proj = "model.layers.0.self_attn.q_proj.weight"
    assert torch.equal(engine.weights[q_proj][0], fp8_quant_dequant(trainer[q_proj]).to(torch.bfloat16))
    assert not torch.equal(engine.weights[q_proj][0].float(), trainer[q_proj])
    embedding = "model.embed_tokens.weight"
    assert torch.equal(engine.weights[embedding][0], trainer[embedding].to(torch.bfloat16))


def test_sync_copies_new_weights_in_place(model, prompts):
    engine = _engine(model)
    before = _generate(engine, prompts)
    pointers = [weight.data_ptr() for weight in engine.weights.values()]
    noise = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for parameter in engine.model.ordered_parameters():
            parameter.add_(torch.randn(parameter.shape, generator=noise) * 0.05)
    assert torch.equal(_generate(engine, prompts).logp, before.logp)  # the engine keeps its own copy

    engine.sync()
    after = _generate(engine, prompts)
    assert not torch.equal(after.logp, before.logp)
    trained = copy.deepcopy(model)
    trained.load_state_dict(engine.model.member_state_dict(0))
    assert _mismatch(trained, prompts, after) < 1e-6
    assert pointers == [weight.data_ptr() for weight in engine.weights.values()]


def test_greedy_takes_the_argmax(model, prompts):
    engine = _engine(model)
    rollout = _generate(engine, prompts, greedy=True, temperature=2.0, topk=1)
    real = rollout.mask.bool()
    assert torch.equal(rollout.tokens[real], rollout.topk_ids[..., 0][real])
    assert torch.equal(rollout.tokens, _generate(engine, prompts, seed=9, greedy=True).tokens)


def test_a_member_whose_rows_have_all_ended_draws_nothing_more(prompts, tokenizer):
    """Member 0 ends every row with its first token while member 1 samples on: member 1 samples exactly what it
    samples alone, so what a member samples never depends on how long its neighbours' responses are."""
    ending = _bigram({}, default=EOS)
    stacked = StackedQwen3(ending, members=2)
    sampler = build_model(tiny_model_cfg(hidden_size=64, intermediate_size=128, tie_word_embeddings=False), VOCAB,
                          seed=1)
    stacked.load_member(1, sampler.state_dict())
    ended, sampled = StackedRollout(stacked, precision_spec("fp32"), [1.0, 1.0]).generate(
        prompts.expand(2, -1, -1), 8, [1.0, 1.0], _draws(0, 1), [True, True]).members()
    assert ended.lengths.eq(1).all() and ended.tokens[:, 0].eq(EOS).all() and ended.tokens[:, 1:].eq(PAD).all()
    assert completions_text(tokenizer, ended) == [""] * 128
    assert sampled.lengths.max() > 1
    (alone,) = _engine(sampler).generate(prompts.unsqueeze(0), 8, [1.0], _draws(1), [True]).members()
    assert torch.equal(sampled.tokens, alone.tokens) and torch.equal(sampled.mask, alone.mask)


def test_accuracy_scores_one_completion_per_problem(tokenizer):
    # d=1 multiplication: a network that writes "0" after "=" and then <eos> solves exactly the problems whose
    # answer is 0, sampled or greedy.
    task = build_task(dataset_cfg(difficulty=1, ops="*", eval_size=8))
    problems = task.sample_train(np.random.default_rng(0), 64)
    zero, equals = tokenizer.convert_tokens_to_ids("0"), tokenizer.convert_tokens_to_ids("=")
    engine = _engine(_bigram({equals: zero}, default=EOS), "bf16")
    solved = sum(p.answer == "0" for p in problems) / 64
    assert 0 < solved < 1
    assert accuracy(engine, tokenizer, task, problems, seed=0) == solved
    assert accuracy(engine, tokenizer, task, problems, seed=None) == solved


@pytest.mark.parametrize("name", ["bf16", "fp8_rollout"])
def test_mismatch_scale_magnifies_the_weight_rounding_error(model, prompts, name):
    """scale 1 is the plain precision; scale k stores w + k·(q(w) − w); fp32 has no error to magnify."""
    plain, scaled = _engine(model, name), _engine(model, name, scale=8.0)
    weight = "model.layers.0.mlp.down_proj.weight"
    master = dict(model.named_parameters())[weight].detach().float()
    error = plain.weights[weight][0].float() - master
    magnified = scaled.weights[weight][0].float() - master
    assert error.abs().mean() > 0
    assert torch.allclose(magnified, 8 * error, atol=float(master.abs().max()) * 2 ** -7)  # one more bf16 rounding
    assert _mismatch(model, prompts, _generate(scaled, prompts)) > 3 * _mismatch(model, prompts, _generate(plain, prompts))
    exact = _engine(model, "fp32", scale=8.0)
    assert _mismatch(model, prompts, _generate(exact, prompts)) < 1e-6
