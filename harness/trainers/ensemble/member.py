"""One member of an ensemble: a complete run (its spec, folder, tracker, objective, data stream, warm start,
best evaluation) whose parameters live in slot `index` of the ensemble's stacked model. Its sampling stream
needs no state: a hash of its seed and the step (`sampling.Draws`).

Its checkpoint is a run's format: an HF state dict, an AdamW state dict
over the HF parameters, the data RNG's state, the step and the best evaluation. A member's checkpoint therefore
resumes as a solo run and a solo run's checkpoint resumes as a member."""
from __future__ import annotations

import copy
import logging
import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from harness.algorithms import build_objective

log = logging.getLogger("harness")


@dataclass(eq=False)  # identity: a member is one run
class Member:
    """`spec`: the member's validated run config; `tracker`: its own tracking run."""
    index: int
    spec: DictConfig
    run_dir: Path
    tracker: Any
    objective: Any = None
    data_rng: Optional[np.random.Generator] = None
    best_eval: float = -math.inf
    on_eval: Optional[Callable[[int, Dict[str, float]], None]] = None  # after each evaluation (Optuna pruning)
    error: Optional[BaseException] = None  # set when this member failed; the others go on
    final: Dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.run_dir = Path(self.run_dir)
        params = {k: v for k, v in OmegaConf.to_container(self.spec.algo, resolve=True).items() if k != "name"}
        self.objective = build_objective(self.spec.algo.name, **params)
        self.data_rng = np.random.default_rng(self.spec.seed)
        # read every step: plain values, not a config lookup per member per step
        self.temperature = float(self.spec.trainer.temperature)
        self.advantage, self.loss_agg = str(self.spec.trainer.advantage), str(self.spec.trainer.loss_agg)

    @property
    def alive(self) -> bool:
        return self.error is None

    def fail(self, err: BaseException) -> None:
        """End this member with `err` (its run ends FAILED); its partners go on."""
        self.error = err
        log.error("run %s (member %d) failed: %s", self.run_dir, self.index, err)

    @contextmanager
    def alone(self) -> Iterator[None]:
        """This member's own part of a step (its rewards, loss, metrics, logging): whatever it raises, a memory
        error included, ends this member alone. Callers check `alive` after the block."""
        try:
            yield
        except Exception as err:
            self.fail(err)

    @property
    def t(self) -> DictConfig:
        return self.spec.trainer

    @property
    def name(self) -> str:
        return self.spec.algo.name


def tag_ensemble(members, device) -> None:
    """Record in each member's tracking run the ensemble it trained in (its numbers do not depend on it, see
    README "Reproducing a run", but a reader should see where a run came from): the ensemble's size, the
    member's slot, an id its runs share, the other runs' folder names and the device."""
    import hashlib

    folders = "\n".join(str(m.run_dir.resolve()) for m in members)
    ensemble_id = hashlib.blake2b(folders.encode(), digest_size=6).hexdigest()
    for member in members:
        peers = ",".join(m.run_dir.name for m in members if m is not member)
        with member.alone():
            member.tracker.set_tags({"harness.ensemble_size": str(len(members)),
                                     "harness.ensemble_index": str(member.index), "harness.ensemble_id": ensemble_id,
                                     "harness.ensemble_peers": peers[:4000] or "-", "harness.device": str(device)})


def member_optimizer_state(optimizer: torch.optim.Optimizer, params, index: int) -> Dict[str, Any]:
    """Slot `index` of an optimizer over stacked parameters, as the state dict of the same optimizer over
    one model's parameters (HF order): what the solo trainer saves and loads."""
    full = optimizer.state_dict()
    state = {}
    for position, _ in enumerate(params):
        entry = full["state"].get(position)
        if entry is None:
            continue
        state[position] = {key: (value[index].clone() if torch.is_tensor(value) and value.dim() > 0 else
                                 (value.clone() if torch.is_tensor(value) else copy.deepcopy(value)))
                           for key, value in entry.items()}
    return {"state": state, "param_groups": copy.deepcopy(full["param_groups"])}


@torch.no_grad()
def load_member_optimizer_state(optimizer: torch.optim.Optimizer, params, index: int, state: Dict[str, Any]) -> None:
    """Write a solo optimizer state dict into slot `index` of the stacked optimizer's state."""
    for position, param in enumerate(params):
        entry = state["state"].get(position)
        if entry is None:
            continue
        mine = optimizer.state.setdefault(param, {})
        for key, value in entry.items():
            if torch.is_tensor(value) and value.dim() > 0:
                if key not in mine:
                    mine[key] = torch.zeros_like(param)
                mine[key][index].copy_(value)
            else:  # AdamW's step: on the parameters' device (a fused optimizer wants it there)
                mine[key] = value.to(param.device, copy=True) if torch.is_tensor(value) else copy.deepcopy(value)
