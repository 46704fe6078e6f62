"""DPPO: the mask truth table, divergences as lower bounds of the full TV/KL, Top-K with K = 1 = binary."""
from __future__ import annotations

import itertools

import pytest
import torch

from harness.algorithms import build_objective
from harness.algorithms import divergences as dv


def _grad(obj, pi, nu, A, **kw):
    logp = torch.tensor(pi, dtype=torch.float64).log().reshape(1, -1).requires_grad_(True)
    nu_t = torch.tensor(nu, dtype=torch.float64).reshape(1, -1)
    A_t = torch.tensor(A, dtype=torch.float64).reshape(1, -1)
    J, metrics = obj.compute(logp, nu_t.log(), A_t, **kw)
    J.sum().backward()
    return logp.grad[0], metrics


@pytest.mark.parametrize("divergence", ["binary_tv", "binary_kl"])
def test_mask_truth_table(divergence):
    """Masked iff diverging (sign(A)·(π − ν) > 0) and D > δ; every other combination keeps r·A."""
    delta = 0.1 if divergence == "binary_tv" else 0.02
    obj = build_objective("dppo", divergence=divergence, delta=delta)
    nu = 0.5
    # |π − ν| = 0.05 is inside both δ (TV 0.05 < 0.1; KL ≈ 0.005 < 0.02); 0.3 is outside both.
    rows = []
    for sign_a, direction, size in itertools.product((1.0, -1.0), (1.0, -1.0), (0.05, 0.3)):
        pi = nu + direction * size
        diverging = sign_a * direction > 0
        outside = size == 0.3
        rows.append((pi, sign_a, diverging and outside))
    pis, advs, masked = zip(*rows)
    grad, metrics = _grad(obj, list(pis), [nu] * len(pis), list(advs))
    for g, pi, a, m in zip(grad.tolist(), pis, advs, masked):
        assert (g == 0.0) == m, (pi, a, m)
        if not m:
            assert g == pytest.approx(pi / nu * a, rel=1e-12)
    assert metrics["objective/masked_frac"] == pytest.approx(2 / 8)
    assert metrics["objective/masked_frac_pos"] == pytest.approx(1 / 4)
    assert metrics["objective/masked_frac_neg"] == pytest.approx(1 / 4)


def test_asymmetric_delta_sides():
    obj = build_objective("dppo", delta_low=0.05, delta_high=0.3)
    # shift 0.2 diverging: A>0 uses 0.3 (kept), A<0 uses 0.05 (masked)
    grad, _ = _grad(obj, [0.6, 0.2], [0.4, 0.4], [1.0, -1.0])
    assert grad[0] != 0 and grad[1] == 0


def _random_pair(n, V, seed, spread=2.0, noise=0.8):
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(n, V, generator=g, dtype=torch.float64) * spread
    nu = torch.softmax(base, -1)
    logits = base + torch.randn(n, V, generator=g, dtype=torch.float64) * noise
    y = torch.multinomial(nu, 1, generator=g).squeeze(-1)
    return nu, logits, y


@pytest.mark.parametrize("seed", [0, 1])
def test_binary_and_topk_are_lower_bounds(seed):
    n, V, K = 400, 60, 8
    nu, logits, y = _random_pair(n, V, seed)
    pi = torch.softmax(logits, -1)
    true_tv = 0.5 * (nu - pi).abs().sum(-1)
    true_kl = (nu * (nu.log() - pi.log())).sum(-1)
    log_nu_y = nu.gather(-1, y[:, None]).squeeze(-1).log()
    log_pi_y = pi.gather(-1, y[:, None]).squeeze(-1).log()
    top_lp, top_ids = torch.topk(nu.log(), K, -1)
    part = dv.topk_partition(log_pi_y, log_nu_y, log_nu_y, top_lp, top_ids, logits, K, token_ids=y)
    for approx, true in ((dv.binary_tv(log_pi_y, log_nu_y), true_tv), (dv.binary_kl(log_pi_y, log_nu_y), true_kl),
                         (dv.topk_tv(part), true_tv), (dv.topk_kl(part), true_kl)):
        assert (approx <= true + 1e-12).all()
        assert (approx > 0).all()
    # Top-K sees more of the distribution than binary: never below it for TV
    assert (dv.topk_tv(part) >= dv.binary_tv(log_pi_y, log_nu_y) - 1e-12).all()
    # S holds exactly K tokens: the sampled one plus K - 1 others
    assert torch.equal((part.nu_s > 0).sum(-1), torch.full((n,), K - 1))


@pytest.mark.parametrize("with_ids", [True, False])
def test_topk_with_k1_equals_binary(with_ids):
    n, V = 300, 30
    nu, logits, y = _random_pair(n, V, seed=5)
    y[::3] = nu[::3].argmax(-1)  # a third where the sampled token is the top-1
    pi = torch.softmax(logits, -1)
    log_nu_y = nu.gather(-1, y[:, None]).squeeze(-1).log()
    log_pi_y = pi.gather(-1, y[:, None]).squeeze(-1).log()
    top_lp, top_ids = torch.topk(nu.log(), 5, -1)  # more columns than K: the top-1 is used
    part = dv.topk_partition(log_pi_y, log_nu_y, log_nu_y, top_lp, top_ids, logits, 1,
                             token_ids=y if with_ids else None)
    torch.testing.assert_close(dv.topk_tv(part), dv.binary_tv(log_pi_y, log_nu_y), rtol=1e-10, atol=1e-13)
    torch.testing.assert_close(dv.topk_kl(part), dv.binary_kl(log_pi_y, log_nu_y), rtol=1e-8, atol=1e-13)


def test_topk_objective_metrics_and_binary_metrics():
    n, V, K = 64, 30, 4
    nu, logits, y = _random_pair(n, V, seed=2, noise=2.0)
    pi = torch.softmax(logits, -1)
    logp = pi.gather(-1, y[:, None]).log().reshape(8, 8)
    rollout = nu.gather(-1, y[:, None]).log().reshape(8, 8)
    top_lp, top_ids = torch.topk(nu.log(), K, -1)
    kw = dict(rollout_topk_logp=top_lp.reshape(8, 8, K), rollout_topk_ids=top_ids.reshape(8, 8, K),
              logits=logits.reshape(8, 8, V))
    A = torch.randn(8, 8, dtype=torch.float64)
    _, m = build_objective("dppo", divergence="topk_tv", topk=K).compute(logp, rollout, A, **kw)
    assert 0 < m["objective/topk_div_mean"] <= m["objective/topk_div_max"] <= 1
    assert m["objective/masked_entropy"] > 0
    _, m = build_objective("dppo").compute(logp, rollout, A)
    assert m["objective/binary_div_max"] == pytest.approx((logp.exp() - rollout.exp()).abs().max().item())
    assert "objective/masked_entropy" not in m
