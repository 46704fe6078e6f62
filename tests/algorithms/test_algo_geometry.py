"""gradient_weight_grid reproduces the known trust-region shapes."""
from __future__ import annotations

import pytest
import torch

from harness.algorithms import gradient_weight_grid

P = torch.cat([torch.logspace(-6, -0.5, 30, dtype=torch.float64), torch.linspace(0.4, 1.0, 25, dtype=torch.float64)])


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_ppo_weights_are_ratio_bands(sign):
    w = gradient_weight_grid("grpo_cliphigher", P, P, sign)
    assert w.shape == (len(P), len(P)) and w.dtype == torch.float64
    assert set(w.unique().tolist()) == {0.0, 1.0}
    r = P[None, :] / P[:, None]
    kept = (r <= 1.28) if sign > 0 else (r >= 0.8)
    assert torch.equal(w == 1.0, kept)


def test_dppo_weights_are_absolute_shift_bands():
    w = gradient_weight_grid("dppo", P, P, 1.0, delta=0.1)
    shift = P[None, :] - P[:, None]
    assert torch.equal(w == 1.0, shift <= 0.1)
    # the top-K divergence is drawn as its binary counterpart
    torch.testing.assert_close(gradient_weight_grid("dppo", P, P, 1.0, delta=0.1, divergence="topk_tv"), w)


def test_alpha_relaxation_opens_the_band_for_low_probability_anchors():
    w = gradient_weight_grid("grpo", P, P, 1.0, relax_alpha=0.1)
    assert (w[P < 0.1] == 1.0).all()
    assert (w[P >= 0.1] == 0.0).any()


def test_drpo_bounded_spo_unbounded_as_nu_goes_to_zero():
    nu = torch.logspace(-8, -1, 20, dtype=torch.float64)
    pi = torch.tensor([0.5], dtype=torch.float64)
    drpo = gradient_weight_grid("drpo", nu, pi, 1.0, delta=0.2)[:, 0]
    spo = gradient_weight_grid("spo", nu, pi, 1.0, eps=0.2)[:, 0]
    assert (drpo >= 1 - 1 / 0.2 - 1e-12).all() and (drpo <= 1 + 1 / 0.2 + 1e-12).all()
    assert spo[0] < -1e6 and (spo[:-1] < spo[1:]).all()  # grows without bound as ν → 0
    torch.testing.assert_close(spo, 1 - (0.5 / nu - 1) / 0.2)


def test_bandpo_weights_widen_for_rare_tokens():
    w = gradient_weight_grid("bandpo", P, P, 1.0)
    allowed_ratio = [(P[w[i] == 1.0] / P[i]).max().item() for i in range(len(P))]
    assert allowed_ratio[0] > allowed_ratio[-5]  # rare anchors get a wider upper band


def test_grid_refuses_recompute_and_zero_advantage():
    with pytest.raises(ValueError, match="anchor"):
        gradient_weight_grid("grpo", P, P, 1.0, anchor="recompute")
    with pytest.raises(ValueError, match="adv_sign"):
        gradient_weight_grid("grpo", P, P, 0.0)
