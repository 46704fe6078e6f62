"""Counter-based random streams, one per member, computed on the device for all members at once.

A draw is a hash of where it sits: (member seed, purpose, step, row, position), so it needs no generator
state: a member's draws never depend on its neighbours, on how many members there are, on which of them
have ended, or on the device (integer ops only); a resumed run continues its streams from the step alone.
The hash is murmur3's 32-bit finaliser chained over the words, computed in int64 with every product below
2**63 (each 32-bit multiply is done in two 16-bit halves), so no op relies on integer overflow.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

ROLLOUT, ORDER, EVAL, PROBE = 1, 2, 3, 4  # purposes: training samples, mini-batch order, evaluation samples,
# the warm start's accuracy probe
_MASK = 0xFFFFFFFF
_GOLDEN = 0x9E3779B9


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """(x * c) mod 2**32 for x in [0, 2**32): the constant's halves keep each product below 2**49."""
    return (x * (c & 0xFFFF) + (((x * (c >> 16)) & 0xFFFF) << 16)) & _MASK


def _fmix32(x: torch.Tensor) -> torch.Tensor:
    x = x ^ (x >> 16)
    x = _mul32(x, 0x85EBCA6B)
    x = x ^ (x >> 13)
    x = _mul32(x, 0xC2B2AE35)
    return x ^ (x >> 16)


def hash32(*words) -> torch.Tensor:
    """32-bit hash (int64 tensor in [0, 2**32)) of the words, broadcast together: int64 tensors or ints."""
    h = None
    for i, word in enumerate(words):
        word = word & _MASK
        h = word if h is None else h ^ word
        h = _fmix32((h + _GOLDEN * (i + 1)) & _MASK)
    return h


@dataclass(frozen=True)
class Draws:
    """The draws of one use of every member's stream: `seeds` [M] int64 on the device (each member's own
    seed), `purpose` (ROLLOUT, ORDER, EVAL) and `step` (the training step they serve). Row r of member k
    draws the same numbers in any ensemble; `row_offset` numbers a chunk's rows within a larger batch."""
    seeds: torch.Tensor
    purpose: int
    step: int
    row_offset: int = 0

    def bits(self, rows: int, position: int = 0) -> torch.Tensor:
        """[M, rows] int64 in [0, 2**32): each member's hash of (its seed, purpose, step, row, position)."""
        seeds = self.seeds.view(-1, 1)
        row = torch.arange(self.row_offset, self.row_offset + rows, device=seeds.device).view(1, -1)
        return hash32(seeds, seeds >> 32, self.purpose, self.step, row, position)

    def uniforms(self, rows: int, position: int) -> torch.Tensor:
        """[M, rows] float32 in [0, 1 - 2**-24]: the 24 top bits of `bits`."""
        return (self.bits(rows, position) >> 8).float() * 2.0 ** -24

    def uniforms_block(self, rows: int, start: int, count: int) -> torch.Tensor:
        """[M, rows, count]: `uniforms(rows, p)` at positions start..start+count-1, in one hash."""
        seeds = self.seeds.view(-1, 1, 1)
        row = torch.arange(self.row_offset, self.row_offset + rows, device=seeds.device).view(1, -1, 1)
        position = torch.arange(start, start + count, device=seeds.device).view(1, 1, -1)
        return (hash32(seeds, seeds >> 32, self.purpose, self.step, row, position) >> 8).float() * 2.0 ** -24

    def permutations(self, n: int) -> torch.Tensor:
        """[M, n]: a uniformly random order of 0..n-1 per member (its rows sorted by their hashes)."""
        return torch.argsort(self.bits(n), dim=1, stable=True)


def sample(probs: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Token ids [...] drawn from probs [..., V] (unnormalised, non-negative, finite) by inverse CDF at
    uniforms [...] in [0, 1): the first token whose cumulative probability exceeds u · total, so a token of
    zero probability is never drawn. One call for every member and row."""
    cdf = probs.cumsum(dim=-1)
    total = cdf[..., -1:]
    target = torch.minimum(uniforms.unsqueeze(-1) * total, torch.nextafter(total, torch.zeros_like(total)))
    return torch.searchsorted(cdf, target, right=True).squeeze(-1)


def unsampleable(probs: torch.Tensor) -> torch.Tensor:
    """[M]: members whose probs [M, B, V] (exp of log-probs: non-negative) cannot be sampled in some row
    (not finite, e.g. at a temperature that rounds to 0 in float32, or all zero)."""
    total = probs.sum(dim=-1)
    return (~torch.isfinite(total) | (total <= 0)).flatten(1).any(dim=1)
