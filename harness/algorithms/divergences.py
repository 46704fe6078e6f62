"""Per-token divergences between the anchor ν and the trainer π used by DPPO's mask (no gradient).

Binary: the two-outcome partition {sampled token, rest}. Top-K: the partition {S, rest} where S is the
anchor's top-K tokens with the sampled token forced in. Both are lower bounds of the full TV / KL
(DPPO Appendix B): merging outcomes can only shrink an f-divergence.

Top-K conventions: S's masses ν(a) are the rollout engine's top-K log-probs (under anchor=recompute
only the sampled token's entry is the recomputed π'(y); the trainer has no old top-K); π(a) is gathered
from the trainer's logits. The sampled token is found in the top-K by id when `token_ids` is given,
else by its log-prob (entries equal to rollout_logp within 1e-6); if absent it replaces the K-th
(smallest) entry. Masses of `rest` are clamped at 1e-12.
"""
from __future__ import annotations

from typing import NamedTuple, Optional, Tuple

import torch
from torch import Tensor

COMPLEMENT_FLOOR = 1e-8   # binary: 1 − p clamped here
REST_FLOOR = 1e-12        # top-K: rest mass clamped here
MATCH_TOL = 1e-6          # log-prob tolerance when locating the sampled token without its id


def _log1m_exp(logp: Tensor, floor: float) -> Tensor:
    """log(max(1 − e^logp, floor)), accurate for p near 0 and near 1."""
    return torch.log(torch.clamp(-torch.expm1(logp), min=floor))


def binary_tv(log_pi: Tensor, log_nu: Tensor) -> Tensor:
    """|π − ν| for the sampled token."""
    return (log_pi.exp() - log_nu.exp()).abs()


def binary_kl(log_pi: Tensor, log_nu: Tensor) -> Tensor:
    """Bernoulli KL(ν‖π) = ν log(ν/π) + (1−ν) log((1−ν)/(1−π)), complements clamped at 1e-8."""
    nu = log_nu.exp()
    rest = _log1m_exp(log_nu, COMPLEMENT_FLOOR) - _log1m_exp(log_pi, COMPLEMENT_FLOOR)
    return nu * (log_nu - log_pi) + torch.clamp(1.0 - nu, min=COMPLEMENT_FLOOR) * rest


class TopKPartition(NamedTuple):
    """The partition {S \\ {y}, y, rest} of one position (no gradient).

    nu_s, pi_s: [..., K] probabilities of the top-K columns, 0 where the column is not in S or is the
    sampled token y; log_nu_s, log_pi_s: [..., K] their log-probs (finite); log_nu_y, log_pi_y: [...]
    the sampled token's log-probs under the anchor and the trainer.
    """

    nu_s: Tensor
    pi_s: Tensor
    log_nu_s: Tensor
    log_pi_s: Tensor
    log_nu_y: Tensor
    log_pi_y: Tensor

    def rest(self) -> Tuple[Tensor, Tensor]:
        """(ν(rest), π(rest)) = 1 − Σ_S, clamped at 1e-12."""
        nu_y, pi_y = self.log_nu_y.exp(), self.log_pi_y.exp()
        rest_nu = torch.clamp(1.0 - self.nu_s.sum(-1) - nu_y, min=REST_FLOOR)
        rest_pi = torch.clamp(1.0 - self.pi_s.sum(-1) - pi_y, min=REST_FLOOR)
        return rest_nu, rest_pi


def topk_partition(log_pi: Tensor, log_nu: Tensor, log_mu: Tensor, topk_logp: Tensor, topk_ids: Tensor,
                   logits: Tensor, k: int, token_ids: Optional[Tensor] = None) -> TopKPartition:
    """S = the anchor's top-K with the sampled token y forced in (replacing the K-th entry if absent).

    log_pi, log_nu, log_mu: [...] sampled-token log-probs (trainer, anchor, rollout engine);
    topk_logp, topk_ids: [..., K'] rollout top-K in descending order, as engines return them (the last
    column is the one y replaces; K' > k: the k largest are taken); logits: [..., V] trainer logits.
    Without token_ids, y is every column whose log-prob equals log_mu within 1e-6 (an exact tie sends
    the tied token to `rest`, which keeps the lower-bound property).
    """
    dtype = log_pi.dtype
    if topk_logp.shape[-1] > k:
        topk_logp, idx = torch.topk(topk_logp, k, dim=-1)
        topk_ids = torch.gather(topk_ids, -1, idx)
    log_nu_s = torch.clamp(topk_logp, min=-1e4).to(dtype)  # -inf from the engine: mass 0 without NaN
    if token_ids is not None:
        hit = topk_ids == token_ids.unsqueeze(-1)
    else:
        hit = (log_nu_s - log_mu.unsqueeze(-1)).abs_() <= MATCH_TOL
    drop = hit
    # y among the first K-1 columns: S keeps all other K-1 columns; otherwise the K-th makes room for y
    drop[..., -1] |= ~hit[..., :-1].any(-1)
    lse = torch.logsumexp(logits, dim=-1, keepdim=True)
    log_pi_s = torch.gather(logits, -1, topk_ids).sub_(lse).to(dtype)
    nu_s = log_nu_s.exp().masked_fill_(drop, 0.0)
    pi_s = log_pi_s.exp().masked_fill_(drop, 0.0)
    return TopKPartition(nu_s, pi_s, log_nu_s, log_pi_s, log_nu, log_pi)


def topk_tv(part: TopKPartition) -> Tensor:
    """½(Σ_S |ν − π| + |ν(rest) − π(rest)|)."""
    inside = torch.sub(part.nu_s, part.pi_s).abs_().sum(-1)
    inside += (part.log_nu_y.exp() - part.log_pi_y.exp()).abs()
    rest_nu, rest_pi = part.rest()
    return 0.5 * (inside + (rest_nu - rest_pi).abs())


def topk_kl(part: TopKPartition) -> Tensor:
    """Σ_S ν log(ν/π) + ν(rest) log(ν(rest)/π(rest))."""
    inside = torch.sub(part.log_nu_s, part.log_pi_s).mul_(part.nu_s).sum(-1)
    inside += part.log_nu_y.exp() * (part.log_nu_y - part.log_pi_y)
    rest_nu, rest_pi = part.rest()
    return inside + rest_nu * (rest_nu.log() - rest_pi.log())
