"""BandPO bounds: closed forms (TV, χ²), KL roots g(r) = δ, monotonicity, simplex limits, vectorisation."""
from __future__ import annotations

import math
import time

import pytest
import torch

from algo_expected import band_bounds_scalar
from harness.algorithms import build_objective
from harness.algorithms.bandpo_bounds import (Y_MIN, band_bounds, chunk_tokens, kl_roots_bisect,
                                              kl_roots_table)

P_GRID = torch.cat([torch.logspace(-12, -0.01, 700, dtype=torch.float64),
                    1 - torch.logspace(-1, -8, 300, dtype=torch.float64)]).sort().values


def g_kl(p, r):
    """Bernoulli KL(p ‖ r·p) in float64, written directly."""
    return -p * torch.log(r) - (1 - p) * torch.log((1 - r * p) / (1 - p))


@pytest.mark.parametrize("delta", [0.02, 0.05, 0.3])
def test_tv_and_chi2_match_closed_forms(delta):
    p = P_GRID
    inv = 1 / p
    for band, width in (("tv", delta / p), ("chi2", torch.sqrt(delta * (1 - p) / p))):
        lo, hi = band_bounds(band, p.log(), delta, hi_max=10.0)
        want_lo = (1 - width).clamp(0, 1)
        want_hi = torch.minimum(torch.minimum(1 + width, inv), torch.tensor(10.0, dtype=torch.float64)).clamp(min=1)
        near = p > 1 - 1e-6
        want_lo[near] = 1 - delta if band == "tv" else 1.0
        want_hi[near] = 1.0
        torch.testing.assert_close(lo, want_lo, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(hi, want_hi, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("delta", [0.01, 0.05, 0.2, 1.0])
def test_kl_bounds_solve_g_equals_delta(delta):
    p = P_GRID
    lo, hi = band_bounds("kl", p.log(), delta, hi_max=math.inf)
    regular = p < 1 - 1e-6
    act_hi = regular & (hi < (1 / p) * (1 - 1e-9))
    act_lo = regular & (lo > 1e-200)
    assert act_hi.sum() > 500 and act_lo.sum() > 300
    err_hi = (g_kl(p[act_hi], hi[act_hi]) - delta).abs().max().item()
    err_lo = (g_kl(p[act_lo], lo[act_lo]) - delta).abs().max().item()
    assert err_hi < 1e-7 and err_lo < 1e-7, (err_hi, err_lo)
    # both roots bracket 1, and the limit p -> 1
    assert (lo[regular] < 1).all() and (hi[regular] > 1).all()
    assert lo[-1].item() == pytest.approx(math.exp(-delta)) and hi[-1].item() == 1.0


def test_kl_bounds_agree_with_scalar_root_finder():
    p = torch.tensor([1e-7, 1e-4, 0.003, 0.02, 0.2, 0.5, 0.8, 0.97, 0.9999], dtype=torch.float64)
    lo, hi = band_bounds("kl", p.log(), 0.05, hi_max=10.0)
    for i, pv in enumerate(p.tolist()):
        want_lo, want_hi = band_bounds_scalar("kl", pv, 0.05, 10.0)
        assert lo[i].item() == pytest.approx(want_lo, rel=1e-6, abs=1e-12)
        assert hi[i].item() == pytest.approx(want_hi, rel=1e-6)


def test_table_matches_bisection():
    p = torch.exp(-torch.rand(4000, dtype=torch.float64) * 25)
    lo_t, hi_t = kl_roots_table(p.log(), 0.05)
    s_lo, t_hi = kl_roots_bisect(p.log(), 0.05, iters=80)
    ok = p < 1 - 1e-6
    torch.testing.assert_close(lo_t[ok], s_lo.exp()[ok], rtol=1e-5, atol=1e-9)
    hi_b = t_hi.exp() - torch.expm1(t_hi) / p
    torch.testing.assert_close(hi_t[ok].clamp(max=1e6), hi_b[ok].clamp(max=1e6), rtol=1e-6, atol=0)


def test_table_reads_the_cell_of_y():
    """float64: each y reads its own cell's chords (g = δ to ~4e-9 for δ = 0.05; a lookup one cell off
    gives ~3e-8), also on cell edges and one ulp either side, where y rounded to float32 changes cells."""
    edges = torch.arange(-20, 1, dtype=torch.float64).exp2() * (1 + torch.rand(21, dtype=torch.float64))
    edges = edges.float().view(torch.int32).bitwise_and(~0 << 13).view(torch.float32).double()  # 10-bit mantissa
    inside = torch.exp(torch.rand(20_000, dtype=torch.float64) * 14 - 13.8)  # 1e-6 .. 1.2
    y = torch.cat([inside, edges.nextafter(torch.zeros(())), edges, edges.nextafter(torch.full((), 99.0))])
    y = y[y > Y_MIN]
    p = torch.exp(-y)
    lo, hi = kl_roots_table(-y, 0.05)
    act_hi = hi < (1 / p) * (1 - 1e-9)  # else hi = 1/p within rounding: c underflowed (g is infinite there)
    assert act_hi.sum() > 5_000
    assert (g_kl(p, lo) - 0.05).abs().max() < 1e-8
    assert (g_kl(p[act_hi], hi[act_hi]) - 0.05).abs().max() < 1e-8


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_table_chunks_inv_p_and_empty(dtype):
    """Chunk boundaries (a partial last chunk), a caller's 1/p and empty input change nothing."""
    logp = (-torch.rand(2 * chunk_tokens(dtype) + 1234, dtype=torch.float64) * 30).to(dtype)
    lo, hi = kl_roots_table(logp, 0.05, hi_max=10.0)
    for part in logp.split(777):
        lo_p, hi_p = kl_roots_table(part, 0.05, inv_p=torch.exp(-part), hi_max=10.0)
        torch.testing.assert_close(lo_p, lo[:part.numel()], rtol=0, atol=0)
        torch.testing.assert_close(hi_p, hi[:part.numel()], rtol=4 * torch.finfo(dtype).eps, atol=0)
        lo, hi = lo[part.numel():], hi[part.numel():]
    empty = kl_roots_table(torch.empty(0, 3, dtype=dtype), 0.05)
    assert [t.shape for t in empty] == [(0, 3), (0, 3)]


@pytest.mark.parametrize("band", ["tv", "chi2", "kl"])
def test_monotone_and_simplex_limits(band):
    p = P_GRID
    lo, hi = band_bounds(band, p.log(), 0.05, hi_max=10.0)
    assert (hi[1:] <= hi[:-1] + 1e-12).all(), "upper bound must not increase with p"
    assert (lo[1:] >= lo[:-1] - 1e-12).all(), "lower bound must not decrease with p"
    assert (lo >= 0).all() and (lo <= 1).all()
    assert (hi >= 1).all() and (hi <= torch.clamp(1 / p, max=10.0) * (1 + 1e-12)).all()


def test_float32_and_batched_shapes():
    logp = torch.log(torch.rand(7, 13)).clamp(min=-30)
    lo, hi = band_bounds("kl", logp, 0.05, hi_max=10.0)
    assert lo.shape == logp.shape and lo.dtype == torch.float32
    lo64, hi64 = band_bounds("kl", logp.double(), 0.05, hi_max=10.0)
    torch.testing.assert_close(lo.double(), lo64, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(hi.double(), hi64, rtol=1e-4, atol=1e-6)


def test_vectorised_speed():
    """200k tokens in well under a CPU second: a per-token Python loop would take tens of seconds. Measured as
    this thread's CPU time with torch on this one thread, so other processes and threads do not count."""
    logp = torch.log(torch.rand(200_000, dtype=torch.float64))
    band_bounds("kl", logp[:10], 0.05, 10.0)  # build the table once
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        start = time.thread_time()
        band_bounds("kl", logp, 0.05, 10.0)
        assert time.thread_time() - start < 1.0
    finally:
        torch.set_num_threads(threads)


def test_relaxed_band_and_metrics():
    nu = torch.tensor([[0.001, 0.3, 0.95]], dtype=torch.float64)
    obj = build_objective("bandpo", relax=True)
    logp = nu.log().requires_grad_(True)
    _, m = obj.compute(logp, nu.log(), torch.ones(1, 3, dtype=torch.float64))
    lo, hi = band_bounds("kl", nu.log(), 0.05, 10.0)
    want_lo = lo.clamp(max=0.8).mean().item()
    want_hi = hi.clamp(min=1.28).mean().item()
    assert m["objective/bandpo_lo_mean"] == pytest.approx(want_lo)
    assert m["objective/bandpo_hi_mean"] == pytest.approx(want_hi)
    assert hi[0, 2] < 1.28  # the relaxation changed the high-probability token's bound
