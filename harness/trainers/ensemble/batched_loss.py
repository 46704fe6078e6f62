"""Every member's mini-batch loss at once, over tensors stacked on the member dim [M, b, T].

Members whose objectives differ only in thresholds compute as one group (`harness.algorithms.grouped`), each
group's losses aggregated per member; the objectives' metrics stay on the device ([g, F] rows) until the
step copies them to the host once. A failure stays a member's own: a group whose compute raises is computed
again member by member, so only the member that raises ends FAILED; a non-finite loss is found per member from
the stacked losses (`finite`), without a host sync, and kept out of the backward."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch import Tensor

from harness.algorithms.aggregation import aggregate_rows
from harness.algorithms.grouped import ObjectiveGroup, group_objectives
from harness.algorithms.metrics import metrics_from_rows

log = logging.getLogger("harness")


@dataclass
class MiniBatch:
    """One mini-batch of every member, [M, b, T] (logits [M, b, T, V], advantages [M, b], top-K [M, b, T, K])."""
    logp: Tensor
    rollout_logp: Tensor
    advantages: Tensor
    mask: Tensor
    old_logp: Tensor
    logits: Tensor
    tokens: Tensor
    topk_logp: Optional[Tensor] = None
    topk_ids: Optional[Tensor] = None

    def inputs(self, index: Tensor, topk: bool) -> Tuple[Tuple[Tensor, ...], Dict[str, Tensor]]:
        """`Objective.compute` arguments of the members at `index` (a [g] tensor)."""
        pick = (lambda x: x.index_select(0, index))
        kwargs = {"response_mask": pick(self.mask), "recomputed_logp": pick(self.old_logp),
                  "logits": pick(self.logits), "token_ids": pick(self.tokens)}
        if topk:
            kwargs.update(rollout_topk_logp=pick(self.topk_logp), rollout_topk_ids=pick(self.topk_ids))
        return (pick(self.logp), pick(self.rollout_logp), pick(self.advantages)), kwargs


@dataclass
class MetricRows:
    """Objective metrics of some members on the device: `rows` [g, F] of `members`, decoded with `keys`."""
    members: List[int]
    rows: Tensor
    keys: Tuple[str, ...]


@dataclass
class Losses:
    losses: Tensor                  # [M] to backward: 0 for a member without a loss or with a non-finite one
    finite: Tensor                  # [M] bool: the loss is finite (True for a member without one)
    values: Optional[Tensor] = None  # [M] the losses as computed (detached), non-finite ones included
    metrics: List[MetricRows] = field(default_factory=list)


class BatchedLoss:
    """members: the ensemble's `Member`s; norm_len: the maximum response length (loss_agg=*-norm)."""

    def __init__(self, members: Sequence, norm_len: int):
        self.members = list(members)
        self.norm_len = norm_len
        self._groups: Dict[Tuple[int, ...], List[Tuple[List[int], ObjectiveGroup]]] = {}
        self._indices: Dict[Tuple, Tensor] = {}

    def index(self, members: Sequence[int], device: torch.device) -> Tensor:
        """`members` as a tensor on `device`, made once: a copy from the host each mini-batch would wait for
        the device's queue."""
        key = (tuple(members), device)
        if key not in self._indices:
            self._indices[key] = torch.tensor(key[0], device=device)
        return self._indices[key]

    def groups(self, alive: Sequence[int]) -> List[Tuple[List[int], ObjectiveGroup]]:
        """(member indices, their objective group) of the members `alive`, kept while they stay alive."""
        key = tuple(alive)
        if key not in self._groups:
            found = group_objectives([self.members[k].objective for k in key])
            self._groups[key] = [([key[p] for p in positions], group) for positions, group in found]
        return self._groups[key]

    def __call__(self, batch: MiniBatch, alive: Sequence[int]) -> Losses:
        M = batch.logp.shape[0]
        out = Losses(batch.logp.new_zeros(M), torch.ones(M, dtype=torch.bool, device=batch.logp.device))
        for indices, group in self.groups(alive):
            try:
                self._add(out, batch, indices, group)
            except Exception as err:  # find the member whose objective fails: each computes alone, failing alone
                for k in indices:
                    member = self.members[k]
                    with member.alone():
                        self._add(out, batch, [k], member.objective)
                if all(self.members[k].alive for k in indices):  # none failed alone: the grouped path did
                    log.warning("objectives of members %s failed as a group (%r), computed one by one", indices, err)
        out.values = out.losses.detach()
        out.finite = torch.isfinite(out.values)
        out.losses = torch.where(out.finite, out.losses, out.losses.new_zeros(()))
        return out

    def _add(self, out: Losses, batch: MiniBatch, indices: List[int], objective) -> None:
        index = self.index(indices, batch.logp.device)
        args, kwargs = batch.inputs(index, objective.needs_topk)
        J, rows, keys = objective.compute_rows(*args, groups=len(indices), **kwargs)
        mask = kwargs["response_mask"]
        modes = [self.members[k].loss_agg for k in indices]
        losses = out.losses
        for mode in dict.fromkeys(modes):
            same = [p for p, m in enumerate(modes) if m == mode]
            if len(same) == len(indices):
                value = aggregate_rows(J, mask, mode, self.norm_len)
                losses = losses.index_put((index,), -value)
            else:
                at = self.index(same, index.device)
                value = aggregate_rows(J.index_select(0, at), mask.index_select(0, at), mode, self.norm_len)
                losses = losses.index_put((index.index_select(0, at),), -value)
        out.losses = losses
        out.metrics.append(MetricRows(list(indices), rows, keys))


def decode(host: Sequence[float], offset: int, parts: Sequence[MetricRows]) -> Tuple[Dict[int, List[Dict]], int]:
    """Each member's objective metrics from the host copy of the parts' rows, laid out from `offset`; and the
    offset after them."""
    out: Dict[int, List[Dict]] = {}
    for part in parts:
        width, count = part.rows.shape[1], len(part.members)
        rows = np.asarray(host[offset:offset + width * count], dtype=np.float64).reshape(count, width)
        for k, metrics in zip(part.members, metrics_from_rows(part.keys, rows)):  # every member's at once
            out.setdefault(k, []).append(metrics)
        offset += width * count
    return out, offset
