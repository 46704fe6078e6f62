"""DRPO: bounded weight and the stationary point π = ν + sign(A)·δ; SPO's stationary ratio for contrast."""
from __future__ import annotations

import pytest
import torch

from harness.algorithms import build_objective, gradient_weight_grid

GRID = torch.cat([torch.logspace(-8, -0.3, 40, dtype=torch.float64),
                  torch.linspace(0.55, 1.0, 20, dtype=torch.float64)])


@pytest.mark.parametrize("delta", [0.1, 0.5, 12.5])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_drpo_weight_bounded(delta, sign):
    w = gradient_weight_grid("drpo", GRID, GRID, sign, delta=delta)
    assert (w >= 1 - 1 / delta - 1e-12).all() and (w <= 1 + 1 / delta + 1e-12).all()
    # the bounds are approached: the weight is not trivially constant
    assert w.max() - w.min() > 0.9 / delta


@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("name", ["drpo", "mask_drpo"])
def test_drpo_stationary_point(sign, name):
    """dJ/dπ = 0 at π = ν + sign(A)·δ (for mask_drpo the point lies outside its own |π − ν| > δ region)."""
    delta = 0.15
    nu = torch.tensor([0.2, 0.4, 0.6, 0.8], dtype=torch.float64)
    nu = nu[(nu + sign * delta > 0) & (nu + sign * delta < 1)]
    pi_star = nu + sign * delta * (1 + (1e-12 if name == "mask_drpo" else 0.0))
    A = torch.full_like(nu, 1.7 * sign)
    pi = pi_star.clone().requires_grad_(True)
    J = build_objective(name, delta=delta).token_objective(pi.log()[None], nu.log()[None], A[None])
    J.sum().backward()
    assert pi.grad.abs().max() < 1e-9
    # and on either side the gradient points back to the stationary point
    for step in (-0.02, 0.02):
        p2 = (pi_star + step).requires_grad_(True)
        build_objective("drpo", delta=delta).token_objective(p2.log()[None], nu.log()[None], A[None]).sum().backward()
        assert (torch.sign(p2.grad) == -torch.sign(torch.tensor(step))).all()


def test_spo_stationary_ratio():
    eps = 0.3
    nu = torch.tensor([0.01, 0.3], dtype=torch.float64)
    for sign in (1.0, -1.0):
        pi = (nu * (1 + sign * eps)).requires_grad_(True)
        A = torch.full((1, 2), sign, dtype=torch.float64)
        J = build_objective("spo", eps=eps).token_objective(pi.log()[None], nu.log()[None], A)
        J.sum().backward()
        assert pi.grad.abs().max() < 1e-9


def test_mask_objectives_equal_pg_inside_the_region():
    nu = torch.tensor([[0.3, 0.5]], dtype=torch.float64)
    pi = torch.tensor([[0.35, 0.45]], dtype=torch.float64)  # |π − ν| = 0.05 < δ
    A = torch.tensor([[1.0, -2.0]], dtype=torch.float64)
    ref = build_objective("pg_is").token_objective(pi.log(), nu.log(), A)
    for name in ("mask_drpo", "mask_spo", "mask_kl"):
        J = build_objective(name, delta=0.1).token_objective(pi.log(), nu.log(), A)
        torch.testing.assert_close(J, ref, rtol=0, atol=0)
