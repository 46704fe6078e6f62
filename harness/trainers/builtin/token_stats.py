"""Per-token samples for the reports' histograms (which tokens the objective masks or clips, at what
anchor probability and entropy), saved at evaluation steps as `token_stats/step_<k>.npz` artifacts."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List

import numpy as np
import torch


class TokenStats:
    def __init__(self, objective):
        self.objective = objective
        self.parts: List[Dict[str, np.ndarray]] = []

    @torch.no_grad()
    def add(self, logp, rollout_logp, advantages, mask, old_logp, logits, **inputs) -> None:
        """Tensors [B, T] (logits [B, T, V]) of one mini-batch, as given to the objective."""
        weight = self.objective.gradient_weight(logp.detach(), rollout_logp, advantages, response_mask=mask,
                                                recomputed_logp=old_logp, logits=logits.detach(), **inputs)
        real = mask.bool() & (advantages.unsqueeze(-1).expand_as(mask) != 0)
        anchor_logp = old_logp if self.objective.anchor == "recompute" else rollout_logp
        logq = torch.log_softmax(logits.detach().float(), dim=-1)
        entropy = -(logq.exp() * logq).sum(-1)
        sign = torch.sign(advantages).unsqueeze(-1).expand_as(mask)
        columns = {"nu": anchor_logp[real].exp(), "pi": logp.detach()[real].exp(), "masked": weight[real] <= 0,
                   "entropy": entropy[real], "adv_sign": sign[real].to(torch.int8)}
        self.parts.append({k: v.cpu().numpy() for k, v in columns.items()})  # evaluation steps only

    def save(self, folder: Path, step: int) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"step_{step:05d}.npz"
        merged = {k: np.concatenate([p[k] for p in self.parts]) for k in self.parts[0]} if self.parts else {}
        tmp = path.with_name(path.stem + ".tmp.npz")
        try:  # whole or absent: a full disk leaves no partial file
            np.savez_compressed(tmp, **merged)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        self.parts.clear()
        return path
