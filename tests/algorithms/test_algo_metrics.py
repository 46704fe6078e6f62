"""Shared metrics: same keys for every objective, values match their definitions and autograd."""
from __future__ import annotations

import pytest
import torch

from harness.algorithms import build_objective, list_objectives
from harness.algorithms.metrics import SHARED_KEYS


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    nu = torch.rand(6, 10, generator=g, dtype=torch.float64).clamp(min=0.01)
    pi = (nu * torch.exp(0.8 * torch.randn(6, 10, generator=g, dtype=torch.float64))).clamp(max=1.0)
    A = torch.randn(6, 10, generator=g, dtype=torch.float64)
    A[:, ::4] = 0.0
    mask = torch.ones(6, 10, dtype=torch.bool)
    mask[:, -3:] = False
    return pi, nu, A, mask


@pytest.mark.parametrize("name", list_objectives())
def test_shared_keys_and_weight_stats_match_autograd(name):
    pi, nu, A, mask = _batch()
    obj = build_objective(name, anchor="rollout")
    logp = pi.log().requires_grad_(True)
    J, m = obj.compute(logp, nu.log(), A, response_mask=mask)
    assert {f"objective/{k}" for k in SHARED_KEYS} <= set(m)
    assert all(isinstance(v, float) for v in m.values())
    J.sum().backward()
    signed = mask & (A != 0)
    weight = (logp.grad / ((pi / nu) * A))[signed]
    assert m["objective/weight_min"] == pytest.approx(weight.min().item(), rel=1e-9)
    assert m["objective/weight_max"] == pytest.approx(weight.max().item(), rel=1e-9)
    assert m["objective/weight_mean"] == pytest.approx(weight.mean().item(), rel=1e-9)
    assert m["objective/masked_frac"] == pytest.approx((weight <= 0).sum().item() / mask.sum().item())
    assert m["objective/ratio_max"] == pytest.approx((pi / nu)[mask].max().item())
    assert m["objective/abs_pi_minus_nu"] == pytest.approx((pi - nu).abs()[mask].mean().item())


def test_masked_fractions_for_grpo():
    nu = torch.full((1, 6), 0.5, dtype=torch.float64)
    pi = torch.tensor([[0.9, 0.55, 0.1, 0.45, 0.9, 0.05]], dtype=torch.float64)  # r = 1.8, 1.1, 0.2, 0.9, 1.8, 0.1
    A = torch.tensor([[1.0, 1.0, -1.0, -1.0, -1.0, 1.0]], dtype=torch.float64)
    nu[0, 2] = 0.1  # a low-probability anchor for the clipped negative token
    pi[0, 2] = 0.01
    _, m = build_objective("grpo").compute(pi.log(), nu.log(), A)
    assert m["objective/masked_frac"] == pytest.approx(2 / 6)
    assert m["objective/masked_frac_pos"] == pytest.approx(1 / 3)
    assert m["objective/masked_frac_neg"] == pytest.approx(1 / 3)
    assert m["objective/lowprob_frac"] == pytest.approx(1 / 6)
    assert m["objective/lowprob_masked_frac"] == pytest.approx(1.0)
    assert m["objective/masked_nu_mean"] == pytest.approx((0.5 + 0.1) / 2)


def test_unconstrained_objectives_report_zero_masked():
    pi, nu, A, mask = _batch(1)
    for name in ("pg_is", "cispo"):
        _, m = build_objective(name).compute(pi.log(), nu.log(), A, response_mask=mask)
        assert m["objective/masked_frac"] == 0.0 and m["objective/masked_nu_mean"] == 0.0


def test_entropy_metric_with_logits():
    logits = torch.zeros(1, 2, 4, dtype=torch.float64)  # uniform: entropy log 4
    pi = torch.full((1, 2), 0.25, dtype=torch.float64)
    nu = torch.full((1, 2), 0.1, dtype=torch.float64)  # r = 2.5: clipped for A > 0
    _, m = build_objective("grpo").compute(pi.log(), nu.log(), torch.ones(1, 2, dtype=torch.float64), logits=logits)
    assert m["objective/masked_entropy"] == pytest.approx(torch.log(torch.tensor(4.0)).item())
