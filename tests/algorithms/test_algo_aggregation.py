"""Loss aggregation modes and group advantage estimators, with pinned numbers."""
from __future__ import annotations

import pytest
import torch

from harness.algorithms import aggregate, compute_advantages

J = torch.tensor([[1.0, 2.0, 3.0, 99.0], [4.0, 99.0, 99.0, 99.0], [99.0, 99.0, 99.0, 99.0]])
MASK = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]])


@pytest.mark.parametrize("mode,expected", [
    ("token-mean", 10.0 / 4),
    ("seq-mean-token-mean", (2.0 + 4.0) / 2),
    ("seq-mean-token-sum", (6.0 + 4.0) / 2),
])
def test_modes(mode, expected):
    assert aggregate(J, MASK, mode).item() == pytest.approx(expected)


def test_sum_norm_needs_norm_len():
    assert aggregate(J, MASK, "seq-mean-token-sum-norm", norm_len=8).item() == pytest.approx((6 / 8 + 4 / 8) / 2)
    with pytest.raises(ValueError, match="norm_len"):
        aggregate(J, MASK, "seq-mean-token-sum-norm")


def test_unknown_mode_and_gradient_flow():
    with pytest.raises(ValueError, match="loss_agg='sum'.*token-mean, seq-mean-token-mean"):
        aggregate(J, MASK, "sum")
    x = J.clone().requires_grad_(True)
    aggregate(x, MASK, "token-mean").backward()
    assert torch.equal(x.grad, MASK.float() / 4)
    assert aggregate(J, torch.zeros_like(MASK), "seq-mean-token-mean").item() == 0.0


def test_advantages():
    R = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 0.0]])
    dr = compute_advantages(R, "drgrpo")
    torch.testing.assert_close(dr, torch.tensor([[0.5, -0.5, -0.5, 0.5], [0.25, 0.25, 0.25, -0.75]]))
    gr = compute_advantages(R, "grpo", eps=0.0)
    torch.testing.assert_close(gr, dr / R.std(dim=1, keepdim=True))
    rl = compute_advantages(R, "rloo")
    torch.testing.assert_close(rl[0], torch.tensor([1 - 1 / 3, -2 / 3, -2 / 3, 1 - 1 / 3]))
    torch.testing.assert_close(rl, dr * 4 / 3)  # RLOO = G/(G-1) × mean-centred
    const = compute_advantages(torch.ones(2, 3), "grpo")
    assert torch.equal(const, torch.zeros(2, 3))
    with pytest.raises(ValueError, match="advantage='ppo' is not allowed; choose one of grpo, drgrpo, rloo"):
        compute_advantages(R, "ppo")
    with pytest.raises(ValueError, match="G=1"):
        compute_advantages(torch.ones(3, 1), "rloo")
