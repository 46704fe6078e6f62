"""anchor=recompute: ν = π' and J times sg(min(π'/μ, C_is)); minirl_tis truncates at 3."""
from __future__ import annotations

import pytest
import torch

from harness.algorithms import build_objective, list_objectives

TOPK = {"dppo"}


def _inputs(seed=0, n=48):
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(4, n // 4, generator=g, dtype=torch.float64) * 4
    mu = logp + 0.5 * torch.randn(4, n // 4, generator=g, dtype=torch.float64)
    old = logp + 0.3 * torch.randn(4, n // 4, generator=g, dtype=torch.float64)
    A = torch.randn(4, n // 4, generator=g, dtype=torch.float64)
    return logp.clamp(max=0), mu.clamp(max=0), old.clamp(max=0), A


@pytest.mark.parametrize("name", list_objectives())
@pytest.mark.parametrize("is_cap", [None, 1.5])
def test_recompute_is_rollout_rule_on_recomputed_anchor_times_is_weight(name, is_cap):
    logp, mu, old, A = _inputs()
    rec = build_objective(name, anchor="recompute", is_cap=is_cap)
    ref = build_objective(name, anchor="rollout")
    J_rec = rec.token_objective(logp, mu, A, recomputed_logp=old)
    J_ref = ref.token_objective(logp, old, A)  # ν = π' as if it were the rollout
    weight = torch.exp(old - mu)
    if is_cap is not None:
        weight = weight.clamp(max=is_cap)
    torch.testing.assert_close(J_rec, J_ref * weight, rtol=1e-12, atol=1e-14)
    _, m = rec.compute(logp, mu, A, recomputed_logp=old)
    assert m["objective/is_weight_mean"] == pytest.approx(weight.mean().item())
    assert m["objective/mismatch"] == pytest.approx((mu.exp() - old.exp()).abs().mean().item())


def test_minirl_tis_truncates_at_three():
    obj = build_objective("minirl_tis")
    assert obj.params["is_cap"] == 3.0 and obj.anchor == "recompute"
    mu = torch.log(torch.tensor([[0.01, 0.4]], dtype=torch.float64))
    old = torch.log(torch.tensor([[0.1, 0.2]], dtype=torch.float64))  # π'/μ = 10 and 0.5
    logp = old.clone().requires_grad_(True)  # r = 1: inside the clip
    A = torch.ones(1, 2, dtype=torch.float64)
    obj.token_objective(logp, mu, A, recomputed_logp=old).sum().backward()
    torch.testing.assert_close(logp.grad, torch.tensor([[3.0, 0.5]], dtype=torch.float64))
    logp.grad = None
    build_objective("minirl").token_objective(logp, mu, A, recomputed_logp=old).sum().backward()
    torch.testing.assert_close(logp.grad, torch.tensor([[10.0, 0.5]], dtype=torch.float64))


def test_rollout_anchor_ignores_recomputed_logp_for_the_objective():
    logp, mu, old, A = _inputs(1)
    obj = build_objective("grpo")
    torch.testing.assert_close(obj.token_objective(logp, mu, A, recomputed_logp=old), obj.token_objective(logp, mu, A))
    _, m = obj.compute(logp, mu, A)
    assert m["objective/is_weight_mean"] == 1.0 and "objective/mismatch" not in m
