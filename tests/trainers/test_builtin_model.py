import pytest
import torch
from omegaconf import OmegaConf
from transformers import Qwen2Config, Qwen2ForCausalLM

from harness.trainers.builtin.model import build_model, plain_qwen3, token_logprobs
from harness.trainers.ensemble.loop import SoloTrainer

from conftest import tiny_model_cfg


def test_same_seed_same_weights_and_global_rng_untouched(model_cfg):
    torch.manual_seed(123)
    expected_next_draw = torch.rand(3)
    torch.manual_seed(123)
    first = build_model(model_cfg, vocab_size=48, seed=5)
    assert torch.equal(torch.rand(3), expected_next_draw)
    second = build_model(model_cfg, vocab_size=48, seed=5)
    other = build_model(model_cfg, vocab_size=48, seed=6)
    for a, b, c in zip(first.parameters(), second.parameters(), other.parameters()):
        assert torch.equal(a, b)
    assert not all(torch.equal(a, c) for a, c in zip(first.parameters(), other.parameters()))


def test_config_fields_shape_the_network():
    model = build_model(tiny_model_cfg(num_layers=3, tie_word_embeddings=False), vocab_size=48, seed=0)
    assert len(model.model.layers) == 3
    assert model.lm_head.weight.shape == (48, 32)
    assert model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr()
    assert model.model.layers[0].self_attn.k_proj.weight.shape == (2 * 8, 32)  # 2 kv heads of dim 32/4
    assert all(p.dtype == torch.float32 for p in model.parameters())
    tied = build_model(tiny_model_cfg(), vocab_size=48, seed=0)
    assert tied.lm_head.weight.data_ptr() == tied.model.embed_tokens.weight.data_ptr()


def test_path_loads_a_saved_checkpoint(model_cfg, tmp_path):
    original = build_model(model_cfg, vocab_size=48, seed=1)
    original.save_pretrained(tmp_path)
    loaded = build_model(tiny_model_cfg(path=str(tmp_path), hidden_size=999), vocab_size=48, seed=2)
    for (name, a), b in zip(original.state_dict().items(), loaded.state_dict().values()):
        assert torch.equal(a, b), name


def test_token_logprobs_scores_each_continuation_token(model_cfg):
    model = build_model(model_cfg, vocab_size=48, seed=0)
    prompt, tokens = torch.randint(3, 48, (4, 5)), torch.randint(3, 48, (4, 3))
    logp, logits = token_logprobs(model, prompt, tokens, temperature=0.5)
    assert logp.shape == (4, 3) and logits.shape == (4, 3, 48) and logp.dtype == torch.float32
    # Scoring token j alone after prompt + tokens[:j] gives the same number.
    for j in range(3):
        step_logits = model(input_ids=torch.cat([prompt, tokens[:, :j]], 1)).logits[:, -1] / 0.5
        expected = torch.log_softmax(step_logits, -1).gather(1, tokens[:, j : j + 1]).squeeze(1)
        torch.testing.assert_close(logp[:, j], expected, atol=1e-5, rtol=0)
    logp.sum().backward()
    assert model.model.embed_tokens.weight.grad is not None


def test_plain_qwen3_is_what_the_stacked_model_computes(model_cfg):
    model = build_model(model_cfg, vocab_size=48, seed=0)
    assert plain_qwen3(model)
    model.config.attention_bias = True
    assert not plain_qwen3(model)
    model.config.attention_bias = False
    model.config.use_sliding_window = True
    assert not plain_qwen3(model)
    assert not plain_qwen3(torch.nn.Linear(2, 2))


def test_a_checkpoint_of_another_architecture_is_refused_in_one_line(tmp_path):
    """A `model.path` checkpoint the stacked model does not compute (here Qwen2: attention biases) has no other
    path through the built-in trainer: it is refused before anything is built."""
    config = Qwen2Config(vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2)
    Qwen2ForCausalLM(config).save_pretrained(tmp_path / "qwen2")
    build_model(tiny_model_cfg(), vocab_size=48, seed=0).save_pretrained(tmp_path / "qwen3")
    assert plain_qwen3(build_model(tiny_model_cfg(path=tmp_path / "qwen3"), vocab_size=48, seed=0))
    cfg = OmegaConf.create({"model": {"path": str(tmp_path / "qwen2")}})
    with pytest.raises(ValueError) as refused:
        SoloTrainer(cfg, tmp_path / "run", tracker=None)
    message = str(refused.value)
    assert message.startswith(f"model.path={tmp_path / 'qwen2'}: ") and "trainer=verl" in message
    assert "\n" not in message and not (tmp_path / "run").exists()
