"""Objectives of one kind for many runs at once: one compute over inputs stacked on a leading run dim [G, B, T].

Runs group when their objectives differ only in real-valued parameters (thresholds: δ, ε, α, caps): same class,
same choices (divergence, band, anchor, flags), the same parameters unset. A threshold that differs between the
runs becomes a [G, 1, 1] tensor (dtype and device of the inputs), so all DPPO runs of an ensemble, whatever
their δ, are one computation; a threshold they share stays a number, as in the one-run `compute`. Each run's
J and metrics are those of its own objective's `compute` to float rounding
(tests/algorithms/test_algo_grouped.py)."""
from __future__ import annotations

import copy
from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from harness.algorithms.base import Objective


def _real(value: Any) -> bool:
    return isinstance(value, float)


def group_key(objective: Objective) -> Hashable:
    """Objectives with equal keys compute as one group: the class, every non-real parameter and attribute,
    and which real ones are unset."""
    def shape(values: Dict[str, Any]) -> Tuple:
        return tuple(sorted((k, "real" if _real(v) else v) for k, v in values.items()
                            if isinstance(v, (bool, int, float, str, type(None)))))
    attributes = {k: v for k, v in vars(objective).items() if k != "name"}  # names of one class compute alike
    return type(objective), shape(objective.params), shape(attributes)


class ObjectiveGroup:
    """`objectives` (equal `group_key`s), computed as one: `compute_rows` with G = len(objectives)."""

    def __init__(self, objectives: Sequence[Objective]):
        keys = {group_key(o) for o in objectives}
        if len(keys) != 1:
            raise ValueError(f"objectives of different kinds cannot be grouped: {list(objectives)}")
        self.objectives = list(objectives)
        first = self.objectives[0]
        self._varying = {k for k, v in vars(first).items() if _real(v) and
                         any(vars(o)[k] != v for o in self.objectives)}
        self._varying_params = {k for k, v in first.params.items() if _real(v) and
                                any(o.params[k] != v for o in self.objectives)}
        self._stacked: Dict[Tuple[torch.dtype, torch.device], Objective] = {}

    def __len__(self) -> int:
        return len(self.objectives)

    @property
    def needs_topk(self) -> bool:
        return self.objectives[0].needs_topk

    def stacked(self, like: Tensor) -> Objective:
        """One objective whose differing thresholds are [G, 1, 1] tensors like `like` (made once per dtype/device)."""
        key = (like.dtype, like.device)
        if key not in self._stacked:
            G = len(self.objectives)

            def column(values: List[float]) -> Tensor:
                return torch.tensor(values, dtype=like.dtype, device=like.device).view(G, 1, 1)

            obj = copy.copy(self.objectives[0])
            obj.params = dict(obj.params)
            for k in self._varying_params:
                obj.params[k] = column([o.params[k] for o in self.objectives])
            for k in self._varying:
                setattr(obj, k, column([getattr(o, k) for o in self.objectives]))
            obj.run_params = [o.params for o in self.objectives]  # for parts computed run by run (BandPO's KL table)
            self._stacked[key] = obj
        return self._stacked[key]

    def compute_rows(self, logp: Tensor, *args: Any, groups: Optional[int] = None,
                     **kwargs: Any) -> Tuple[Tensor, Tensor, Tuple[str, ...]]:
        """`Objective.compute_rows` over [G, B, T] inputs, run g with objective g."""
        if groups not in (None, len(self.objectives)):
            raise ValueError(f"groups={groups} for a group of {len(self.objectives)} objectives")
        return self.stacked(logp).compute_rows(logp, *args, groups=len(self.objectives), **kwargs)


def group_objectives(objectives: Sequence[Objective]) -> List[Tuple[List[int], ObjectiveGroup]]:
    """(positions in `objectives`, their group) for each kind, in order of first appearance."""
    kinds: Dict[Hashable, List[int]] = {}
    for position, objective in enumerate(objectives):
        kinds.setdefault(group_key(objective), []).append(position)
    return [(positions, ObjectiveGroup([objectives[p] for p in positions])) for positions in kinds.values()]
