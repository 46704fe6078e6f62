"""The ensemble's batched loss gives each member the loss and metrics of its own objective's one-run `compute`
and `aggregate`, whatever its group (objective kind) and loss aggregation; a non-finite loss is flagged for its
member alone and kept out of the backward."""
from __future__ import annotations

import math

import pytest
import torch

from harness.algorithms import aggregate
from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.trainers.ensemble.batched_loss import BatchedLoss, MiniBatch, decode
from harness.trainers.ensemble.member import Member

RUNS = [("dppo", 0.1, "token-mean"), ("dppo", 0.2, "seq-mean-token-sum"), ("drpo", 0.2, "seq-mean-token-mean"),
        ("dppo", 0.3, "token-mean"), ("drpo", 0.4, "seq-mean-token-sum-norm")]
M, B, T, V = len(RUNS), 4, 6, 11


@pytest.fixture(scope="module")
def members(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("batched")
    out = []
    for k, (algo, delta, agg) in enumerate(RUNS):
        overrides = [f"output_root={tmp}", "debug=quick", f"algo={algo}", f"delta={delta}", f"trainer.loss_agg={agg}"]
        out.append(Member(k, validate(compose(overrides), overrides), tmp / str(k), None))
    return out


def mini_batch(seed: int) -> MiniBatch:
    gen = torch.Generator().manual_seed(seed)
    logits = (2 * torch.randn(M, B, T, V, generator=gen)).requires_grad_(True)
    tokens = torch.randint(0, V, (M, B, T), generator=gen)
    logp = torch.log_softmax(logits, -1).gather(-1, tokens[..., None])[..., 0]
    rollout = logp.detach() + 0.3 * torch.randn(M, B, T, generator=gen)
    mask = (torch.rand(M, B, T, generator=gen) > 0.3).float()
    return MiniBatch(logp, rollout, torch.randn(M, B, generator=gen), mask, logp.detach() + 0.05, logits, tokens)


def test_each_member_gets_its_own_objective_and_aggregation(members):
    batch = mini_batch(0)
    loss = BatchedLoss(members, norm_len=T)
    assert [ks for ks, _ in loss.groups(range(M))] == [[0, 1, 3], [2, 4]]
    out = loss(batch, list(range(M)))
    (grad,) = torch.autograd.grad(out.losses.sum(), batch.logits, retain_graph=True)
    host = torch.cat([p.rows.reshape(-1) for p in out.metrics]).tolist()
    metrics, _ = decode(host, 0, out.metrics)
    assert out.finite.all()
    for k, member in enumerate(members):
        J, own = member.objective.compute(batch.logp[k], batch.rollout_logp[k], batch.advantages[k],
                                          response_mask=batch.mask[k], recomputed_logp=batch.old_logp[k],
                                          logits=batch.logits[k], token_ids=batch.tokens[k])
        expected = -aggregate(J, batch.mask[k], member.t.loss_agg, norm_len=T)
        (expected_grad,) = torch.autograd.grad(expected, batch.logits, retain_graph=True)
        torch.testing.assert_close(out.values[k], expected.detach(), rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(grad[k], expected_grad[k], rtol=1e-5, atol=1e-7)
        assert metrics[k][0].keys() == own.keys()
        for key, value in own.items():
            assert math.isclose(metrics[k][0][key], value, rel_tol=1e-5, abs_tol=1e-6), (k, key)


def test_a_non_finite_loss_is_its_members_alone_and_out_of_the_backward(members):
    batch = mini_batch(1)
    batch.rollout_logp[3, 0, 0] = float("nan")  # member 3 (in a group with members 0 and 1)
    batch.mask[3, 0, 0] = 1.0
    out = BatchedLoss(members, norm_len=T)(batch, list(range(M)))
    assert out.finite.tolist() == [True, True, True, False, True]
    assert math.isnan(out.values[3]) and out.losses[3] == 0
    clean = BatchedLoss(members, norm_len=T)(mini_batch(1), list(range(M)))
    torch.testing.assert_close(out.values[[0, 1, 2, 4]], clean.values[[0, 1, 2, 4]], rtol=0, atol=0)


def test_every_members_metrics_decoded_at_once_are_each_rows_own():
    """`metrics_from_rows` (the step's decode, numpy over all members) gives each row what `metrics_from_row`
    gives it alone, empty categories (a ratio over nothing is 0) included."""
    import numpy as np

    from harness.algorithms.metrics import _N_CODES, metrics_from_row, metrics_from_rows

    keys = ("n", "nu", "weight", "ratio", "shift", "mismatch", "masked_entropy", "", "weight_min", "weight_max",
            "ratio_max", "kl")
    rng = np.random.default_rng(0)
    rows = rng.random((6, 7 * _N_CODES + 4)) * 5
    rows[:, :_N_CODES] = rng.integers(0, 4, (6, _N_CODES))  # counts, some zero
    rows[0, :_N_CODES] = 0  # a member without a real token
    together = metrics_from_rows(keys, rows)
    for row, got in zip(rows, together):
        alone = metrics_from_row(keys, row.tolist())
        assert got.keys() == alone.keys() and "objective/kl" in got
        assert all(math.isclose(got[k], alone[k], rel_tol=1e-12, abs_tol=1e-12) for k in alone), (got, alone)
