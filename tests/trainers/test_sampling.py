"""The members' counter-based streams (harness/trainers/ensemble/sampling.py): a member's draws depend on its
seed, the purpose, the step, the row and the position only, never on the other members; the sampler draws
each token at its probability and never one of probability 0; a stream unusable for a member is found."""
from __future__ import annotations

import torch

from harness.trainers.ensemble.sampling import EVAL, ORDER, ROLLOUT, Draws, hash32, sample, unsampleable


def test_a_members_draws_depend_on_its_own_seed_and_counters_only():
    alone = Draws(torch.tensor([7]), ROLLOUT, 3).uniforms(16, 2)
    among = Draws(torch.tensor([5, 7, 7, 2 ** 40 + 7]), ROLLOUT, 3).uniforms(16, 2)
    assert torch.equal(among[1], alone[0]) and torch.equal(among[2], alone[0])
    assert not torch.equal(among[0], alone[0]) and not torch.equal(among[3], alone[0])  # high seed bits count
    seven = torch.tensor([7])
    for other in (Draws(seven, ROLLOUT, 4).uniforms(16, 2), Draws(seven, EVAL, 3).uniforms(16, 2),
                  Draws(seven, ROLLOUT, 3).uniforms(16, 3)):
        assert (other != alone).float().mean() > 0.9
    chunked = Draws(torch.tensor([7]), ROLLOUT, 3, row_offset=8).uniforms(8, 2)
    assert torch.equal(chunked, alone[:, 8:])  # a chunk's rows draw what they draw in the whole batch
    assert alone.min() >= 0 and alone.max() < 1


def _reference_hash(*words: int) -> int:
    """murmur3's fmix32 chained over the words, in Python's exact integers."""
    h = None
    for i, word in enumerate(words):
        h = word & 0xFFFFFFFF if h is None else h ^ (word & 0xFFFFFFFF)
        h = (h + 0x9E3779B9 * (i + 1)) & 0xFFFFFFFF
        h ^= h >> 16
        h = (h * 0x85EBCA6B) & 0xFFFFFFFF
        h ^= h >> 13
        h = (h * 0xC2B2AE35) & 0xFFFFFFFF
        h ^= h >> 16
    return h


def test_the_hash_is_murmur3s_finaliser_in_exact_arithmetic():
    """int64 tensors with 16-bit half products give the exact 32-bit hash (no overflow anywhere), so the
    streams are the same numbers on every machine and device."""
    words = [0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 40 + 3, -5]
    got = hash32(torch.tensor(words), 5, torch.tensor(2 ** 32 - 7)).tolist()
    assert got == [_reference_hash(w, 5, 2 ** 32 - 7) for w in words]


def test_the_uniforms_are_uniform_and_the_orders_are_permutations():
    u = Draws(torch.arange(4), ROLLOUT, 1).uniforms(50_000, 0)
    assert abs(u.mean().item() - 0.5) < 0.005
    counts = torch.histc(u, bins=10, min=0, max=1)
    assert (counts / counts.sum() - 0.1).abs().max() < 0.005
    orders = Draws(torch.tensor([0, 1, 2]), ORDER, 5).permutations(128)
    assert all(torch.equal(o.sort().values, torch.arange(128)) for o in orders)
    assert not torch.equal(orders[0], orders[1]) and not torch.equal(orders[0], torch.arange(128))


def test_tokens_are_drawn_at_their_probability_and_never_at_zero():
    probs = torch.tensor([0.0, 0.5, 0.0, 0.3, 0.2, 0.0])
    draws = Draws(torch.tensor([3]), ROLLOUT, 1)
    chosen = torch.cat([sample(probs.expand(1, 20_000, -1), draws.uniforms(20_000, t)) for t in range(5)], dim=1)
    frequency = torch.bincount(chosen.flatten(), minlength=6).float() / chosen.numel()
    assert frequency[[0, 2, 5]].sum() == 0
    torch.testing.assert_close(frequency, probs, atol=0.01, rtol=0)
    one_hot = torch.zeros(1, 3, 6)
    one_hot[..., 5] = 1.0  # the last token alone, whatever u (also u next to 1)
    assert sample(one_hot, torch.tensor([[0.0, 0.5, 1 - 2 ** -24]])).tolist() == [[5, 5, 5]]


def test_a_member_whose_probabilities_cannot_be_sampled_is_found():
    probs = torch.rand(3, 2, 5)
    probs[1, 1, 2] = float("nan")
    probs[2, 0] = 0.0
    assert unsampleable(probs).tolist() == [False, True, True]
