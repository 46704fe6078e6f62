"""Finite J and gradients for log-probs down to −30, equal log-probs, float32 and float64."""
from __future__ import annotations

import itertools

import pytest
import torch

from harness.algorithms import build_objective, list_objectives

LOGS = [-30.0, -20.0, -5.0, -0.5, -1e-7, 0.0]


def _configs():
    for name in list_objectives():
        yield name, {}
    yield "dppo", {"divergence": "binary_kl"}
    yield "bandpo", {"band": "tv"}
    yield "bandpo", {"band": "chi2"}
    yield "kl_reg", {"adv_weighted": False}
    yield "grpo", {"relax_alpha": 0.5, "dual_clip_c": 3.0}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name,params", list(_configs()), ids=lambda x: str(x))
def test_finite_for_extreme_and_equal_logprobs(name, params, dtype):
    if name == "dppo" and "divergence" not in params:
        params = {"divergence": "binary_tv"}
    pairs = list(itertools.product(LOGS, LOGS))
    logp = torch.tensor([a for a, _ in pairs], dtype=dtype)[None].requires_grad_(True)
    other = torch.tensor([b for _, b in pairs], dtype=dtype)[None]
    n = len(pairs)
    A = torch.tensor([1.0, -1.0, 0.0, 2.5] * (n // 4) + [1.0] * (n % 4), dtype=dtype)[None]
    for anchor in ("rollout", "recompute"):
        obj = build_objective(name, anchor=anchor, **params)
        J, metrics = obj.compute(logp, other, A, recomputed_logp=logp.detach())
        J.sum().backward()
        assert torch.isfinite(J).all(), (name, anchor)
        assert torch.isfinite(logp.grad).all(), (name, anchor)
        assert all(torch.isfinite(torch.tensor(v)) for v in metrics.values()), metrics
        logp.grad = None
    # equal log-probs: r = 1 exactly, J = A (or A·log π for cispo), no masking
    same = build_objective(name, **{**params, "anchor": "rollout"})
    J = same.token_objective(other, other, A)
    expected = A * other if name == "cispo" else A
    if name == "kl_reg" and params.get("adv_weighted") is False:
        expected = A  # + w/(2δ)·log 1 = 0
    torch.testing.assert_close(J, expected)


def test_topk_finite_with_extremes():
    V, K = 12, 3
    logits = torch.full((1, 4, V), -40.0)
    logits[..., 0] = 0.0
    logp = torch.log_softmax(logits, -1)[..., 5].clone().requires_grad_(True)  # ≈ −40
    top_lp, top_ids = torch.topk(torch.log_softmax(logits, -1), K, -1)
    obj = build_objective("dppo", divergence="topk_kl", topk=K)
    J, m = obj.compute(logp, torch.zeros(1, 4) - 30.0, torch.ones(1, 4), rollout_topk_logp=top_lp,
                       rollout_topk_ids=top_ids, logits=logits)
    J.sum().backward()
    assert torch.isfinite(J).all() and torch.isfinite(logp.grad).all()
    assert all(v == v for v in m.values())
