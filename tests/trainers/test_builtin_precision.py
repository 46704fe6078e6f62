import pytest
import torch

from harness.trainers.builtin.model import build_model, token_logprobs
from harness.trainers.builtin.precision import (
    PRECISIONS,
    apply_train_precision,
    fp8_fake_quant,
    fp8_quant_dequant,
    fp8_quantised_linear_names,
    precision_spec,
)


def test_registry_and_specs():
    assert set(PRECISIONS) == {"fp32", "bf16", "fp16", "fp8_rollout", "fp8_e2e"}
    assert precision_spec("bf16").rollout_dtype == torch.bfloat16 and not precision_spec("bf16").fp8_train
    assert precision_spec("fp16").rollout_dtype == torch.float16
    assert precision_spec("fp8_rollout").fp8_rollout and not precision_spec("fp8_rollout").fp8_train
    assert precision_spec("fp8_e2e").fp8_rollout and precision_spec("fp8_e2e").fp8_train
    with pytest.raises(ValueError, match="precision='int4'.*'bf16'.*'fp8_e2e'"):
        precision_spec("int4")


def test_fp8_quant_dequant_error_is_bounded_nonzero_and_per_row():
    torch.manual_seed(0)
    weight = torch.randn(16, 64) * torch.logspace(-3, 3, 16).unsqueeze(1)  # rows of very different scales
    quantised = fp8_quant_dequant(weight)
    error = (quantised - weight).abs()
    assert error.max() > 0
    # e4m3 keeps 3 mantissa bits: relative rounding error <= 2^-4 for normal numbers; below the smallest
    # normal (2^-6 of the scale unit) the absolute error is at most half the smallest subnormal step.
    scale = weight.abs().amax(1, keepdim=True) / 448.0
    bound = torch.maximum(weight.abs() * 2**-4, scale * 2**-10) * (1 + 1e-6)
    assert (error <= bound).all()
    # Per-row scaling: the relative error of each row does not depend on that row's magnitude.
    relative = (error / weight.abs().amax(1, keepdim=True)).amax(1)
    assert relative.max() < 0.04 and relative.min() > 1e-4
    # The row maximum maps to 448, which e4m3 represents exactly.
    rows = torch.arange(16)
    peak = weight.abs().argmax(1)
    torch.testing.assert_close(quantised[rows, peak], weight[rows, peak], rtol=1e-6, atol=0)
    # Only 8-bit values: at most 256 distinct levels per row.
    assert max(len(torch.unique(row)) for row in quantised / scale) <= 256
    assert torch.equal(fp8_quant_dequant(torch.zeros(2, 3)), torch.zeros(2, 3))


def test_fp8_fake_quant_has_straight_through_gradient():
    weight = torch.randn(8, 8, requires_grad=True)
    coefficients = torch.randn(8, 8)
    output = fp8_fake_quant(weight)
    torch.testing.assert_close(output.detach(), fp8_quant_dequant(weight.detach()))
    (output * coefficients).sum().backward()
    torch.testing.assert_close(weight.grad, coefficients)


def test_train_precision_fp8_e2e_changes_forward_and_keeps_master_gradients(model_cfg):
    model = build_model(model_cfg, vocab_size=48, seed=0)
    parameters_before = list(model.parameters())
    prompt, tokens = torch.randint(3, 48, (4, 5)), torch.randint(3, 48, (4, 4))
    with torch.no_grad():
        reference, _ = token_logprobs(model, prompt, tokens)

    with apply_train_precision(model, precision_spec("fp8_e2e")):
        fp8_logp, _ = token_logprobs(model, prompt, tokens)
    fp8_logp.sum().backward()

    gap = (fp8_logp.detach() - reference).abs()
    assert 1e-4 < gap.max() < 0.1
    assert all(a is b for a, b in zip(parameters_before, model.parameters()))
    assert all(p.dtype == torch.float32 for p in model.parameters())
    named = dict(model.named_parameters())
    for name in fp8_quantised_linear_names(model):
        assert named[name].grad is not None and named[name].grad.abs().sum() > 0, name
    assert named["model.embed_tokens.weight"].grad.abs().sum() > 0
    with torch.no_grad():
        after, _ = token_logprobs(model, prompt, tokens)
    assert torch.equal(after, reference)  # the parametrization is gone outside the block


@pytest.mark.parametrize("name", ["fp32", "bf16", "fp16", "fp8_rollout"])
def test_train_precision_is_identity_without_fp8_train(model_cfg, name):
    model = build_model(model_cfg, vocab_size=48, seed=0)
    prompt, tokens = torch.randint(3, 48, (2, 5)), torch.randint(3, 48, (2, 3))
    with torch.no_grad():
        reference, _ = token_logprobs(model, prompt, tokens)
        with apply_train_precision(model, precision_spec(name)):
            inside, _ = token_logprobs(model, prompt, tokens)
    assert torch.equal(inside, reference)


def test_fp8_quantises_decoder_linears_only(model_cfg):
    names = fp8_quantised_linear_names(build_model(model_cfg, vocab_size=48, seed=0))
    assert len(names) == 2 * 7  # q, k, v, o, gate, up, down per layer
    assert not any("embed" in name or "lm_head" in name or "norm" in name for name in names)
