"""∂J/∂log π equals the G of ALGORITHMS.md for every objective, both anchors, extreme probabilities and
both advantage signs; masked tokens get exactly zero gradient and J = 0."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from algo_expected import binary_divergence, expected_G, topk_divergence_loop
from harness.algorithms import build_objective

EXTREMES = [1e-8, 1e-6, 1e-3, 0.05, 0.19, 0.5, 0.9, 1 - 1e-6, 1 - 1e-8]

MASKING = {"grpo", "grpo_cliphigher", "minirl", "minirl_tis", "dppo", "bandpo"}

CASES = [
    ("pg_is", {}), ("cispo", {}), ("cispo", {"trunc_c": 1.5}),
    ("grpo", {}), ("grpo_cliphigher", {}), ("minirl", {}), ("minirl_tis", {}),
    ("grpo", {"relax_alpha": 0.2, "relax": "both"}), ("grpo", {"relax_alpha": 0.2, "relax": "high"}),
    ("grpo_cliphigher", {"relax_alpha": 0.3, "relax": "low"}), ("grpo", {"dual_clip_c": 3.0}),
    ("dppo", {}), ("dppo", {"divergence": "binary_kl"}), ("dppo", {"delta_low": 0.05, "delta_high": 0.3}),
    ("spo", {}), ("spo", {"eps": 0.2}), ("drpo", {}), ("drpo", {"delta": 0.1}),
    ("mask_drpo", {"delta": 0.1}), ("mask_spo", {"delta": 0.1}), ("mask_kl", {"delta": 0.1}),
    ("mask_drpo", {}),
    ("kl_reg", {}), ("kl_reg", {"adv_weighted": False, "delta": 0.2}), ("k3_reg", {"delta": 0.2}),
    ("k3_reg", {"adv_weighted": False}), ("tv_reg", {"delta": 0.2}), ("tv_reg", {"adv_weighted": False}),
    ("bandpo", {}), ("bandpo", {"band": "tv", "delta": 0.1}), ("bandpo", {"band": "chi2", "delta": 0.1}),
    ("bandpo", {"relax": True}), ("bandpo", {"band": "kl", "delta": 0.2, "dual_clip_c": 2.0, "hi_max": 3.0}),
]


def _ids(case):
    name, params = case
    return name + "".join(f"-{k}={v}" for k, v in params.items())


def _probs(seed: int):
    """Pairs (π, ν, π') covering the extremes (all ordered pairs) plus log-uniform random ones."""
    g = torch.Generator().manual_seed(seed)
    ext = torch.tensor(EXTREMES, dtype=torch.float64)
    pi_e, nu_e = torch.meshgrid(ext, ext, indexing="ij")
    n_rand = 160
    def rand():
        return torch.exp(-torch.rand(n_rand, generator=g, dtype=torch.float64) * 12)

    def near(x):
        return (x * torch.exp(0.3 * torch.randn(x.numel(), generator=g, dtype=torch.float64))).clamp(max=1.0)

    nu_r = rand()
    pi = torch.cat([pi_e.reshape(-1), rand(), near(nu_r)])
    nu = torch.cat([nu_e.reshape(-1), rand(), nu_r])
    old = torch.cat([ext[torch.randint(len(ext), (81,), generator=g)], near(nu[81:])])
    n = pi.numel()
    A = torch.randn(n, generator=g, dtype=torch.float64) * 2
    A[::7] = 0.0
    A[1::5] = torch.sign(A[1::5])
    return pi, nu, old, A


@pytest.mark.parametrize("anchor", ["rollout", "recompute"])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_gradient_matches_formula(case, anchor):
    name, params = case
    obj = build_objective(name, **{**params, "anchor": anchor})
    p = dict(obj.params)
    pi, mu, old, A = _probs(seed=len(name) * 31 + len(params))
    n = pi.numel()
    mask = torch.ones(n, dtype=torch.bool)
    mask[3::11] = False
    shape = (n // 7, 7) if n % 7 == 0 else (1, n)
    logp = pi.log().clone()
    logp[~mask] = float("nan")  # padding garbage must not leak
    logp = logp.reshape(shape).requires_grad_(True)
    kwargs = dict(response_mask=mask.reshape(shape))
    if anchor == "recompute":
        kwargs["recomputed_logp"] = old.log().reshape(shape)
    J = obj.token_objective(logp, mu.log().reshape(shape), A.reshape(shape), **kwargs)
    J.sum().backward()
    grad = logp.grad.reshape(-1)

    nu = old if anchor == "recompute" else mu
    D = binary_divergence(p["divergence"], pi, nu) if name == "dppo" else None
    G = expected_G(name, p, pi, nu, A, D)
    if anchor == "recompute":
        cap = p["is_cap"] if p["is_cap"] is not None else math.inf
        G = G * torch.clamp(old / mu, max=cap)
    if name in MASKING:  # the inputs must exercise both sides of the mask
        cut = (G == 0) & (A != 0) & mask
        assert cut.any() and (~cut & (A != 0) & mask).any()
    assert torch.equal(J.reshape(-1)[~mask], torch.zeros(int((~mask).sum()), dtype=torch.float64))
    assert torch.equal(grad[~mask], torch.zeros_like(grad[~mask]))
    torch.testing.assert_close(grad[mask], G[mask], rtol=1e-5, atol=1e-12)


@pytest.mark.parametrize("divergence", ["topk_tv", "topk_kl"])
@pytest.mark.parametrize("anchor", ["rollout", "recompute"])
@pytest.mark.parametrize("with_ids", [True, False])
def test_topk_gradient_matches_formula(divergence, anchor, with_ids):
    torch.manual_seed(3)
    n, V, K = 240, 40, 6
    rollout_logits = torch.randn(n, V, dtype=torch.float64) * 2.5
    trainer_logits = rollout_logits + torch.randn(n, V, dtype=torch.float64) * 0.6
    mu_full = torch.softmax(rollout_logits, -1)
    y = torch.multinomial(mu_full, 1).squeeze(-1)
    y[::4] = torch.argsort(mu_full[::4], dim=-1)[:, 0]  # least likely: never in the top-K
    logp_full = torch.log_softmax(trainer_logits, -1)
    logp = logp_full.gather(-1, y[:, None]).squeeze(-1).clone().reshape(24, 10).requires_grad_(True)
    mu_y = mu_full.gather(-1, y[:, None]).squeeze(-1)
    old_y = (mu_y * torch.exp(0.2 * torch.randn(n, dtype=torch.float64))).clamp(max=1.0)
    top_lp, top_ids = torch.topk(mu_full.log(), K, dim=-1)
    A = torch.randn(n, dtype=torch.float64)
    obj = build_objective("dppo", divergence=divergence, topk=K, delta=0.1, anchor=anchor)
    kwargs = dict(rollout_topk_logp=top_lp.reshape(24, 10, K), rollout_topk_ids=top_ids.reshape(24, 10, K),
                  logits=trainer_logits.reshape(24, 10, V))
    if with_ids:
        kwargs["token_ids"] = y.reshape(24, 10)
    if anchor == "recompute":
        kwargs["recomputed_logp"] = old_y.log().reshape(24, 10)
    J = obj.token_objective(logp, mu_y.log().reshape(24, 10), A.reshape(24, 10), **kwargs)
    J.sum().backward()

    nu_y = old_y if anchor == "recompute" else mu_y
    pi_y = logp.detach().exp().reshape(-1)
    D = topk_divergence_loop(divergence, mu_full.numpy(), logp_full.exp().numpy(), y.numpy(),
                             nu_y.numpy(), pi_y.numpy(), K)
    G = expected_G("dppo", obj.params, pi_y, nu_y, A, D)
    if anchor == "recompute":
        G = G * old_y / mu_y
    masked = (G == 0) & (A != 0)
    assert masked.any() and (~masked).any(), "the case must exercise both branches of the mask"
    torch.testing.assert_close(logp.grad.reshape(-1), G, rtol=1e-5, atol=1e-12)


def test_per_sequence_advantages_broadcast():
    obj = build_objective("grpo")
    logp = torch.log(torch.rand(3, 5, dtype=torch.float64)).requires_grad_(True)
    old = torch.log(torch.rand(3, 5, dtype=torch.float64))
    A = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    J1 = obj.token_objective(logp, old, A)
    J2 = obj.token_objective(logp, old, A[:, None].expand(3, 5))
    assert torch.equal(J1, J2)


def test_J_values_follow_the_formulas():
    """Where ALGORITHMS.md gives J, the value matches it (not only the gradient)."""
    pi = torch.tensor([0.3, 0.05, 0.6, 0.9], dtype=torch.float64)
    nu = torch.tensor([0.2, 0.2, 0.5, 0.1], dtype=torch.float64)
    A = torch.tensor([1.0, -1.0, -2.0, 0.5], dtype=torch.float64)
    r = pi / nu
    want = {
        "pg_is": r * A,
        "grpo": torch.minimum(r * A, r.clamp(0.8, 1.2) * A),
        "spo": r * A - A.abs() / 25.0 * (r - 1) ** 2,
        "drpo": r * A - A.abs() / 25.0 * nu * (r - 1) ** 2,
        "kl_reg": r * A + A.abs() / 25.0 * torch.log(r),
        "k3_reg": r * A - A.abs() / 25.0 * (r - 1 - torch.log(r)),
        "tv_reg": r * A - A.abs() / 25.0 * (r - 1).abs(),
        "cispo": r.clamp(max=3.0) * A * pi.log(),
    }
    for name, expected in want.items():
        J = build_objective(name).token_objective(pi.log()[None], nu.log()[None], A[None])
        torch.testing.assert_close(J[0], expected, rtol=1e-12, atol=1e-12, msg=name)
    np.testing.assert_allclose(
        build_objective("dppo").token_objective(pi.log()[None], nu.log()[None], A[None])[0].numpy(),
        (r * A * torch.tensor([1.0, 1.0, 1.0, 0.0], dtype=torch.float64)).numpy())
