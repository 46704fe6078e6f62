"""Host-to-device copies of a step: host values made into device tensors without blocking the host (pinned
memory, non-blocking copy on a GPU), and small constants (which members are alive, their temperatures, an
estimator's members) copied once and reused while they stay the same."""
from __future__ import annotations

from collections import OrderedDict
from typing import Sequence

import numpy as np
import torch

_CONSTANTS: "OrderedDict[tuple, torch.Tensor]" = OrderedDict()
_KEEP = 256  # constants kept (least recently used dropped): a few per ensemble


def to_device(host: torch.Tensor, device: torch.device) -> torch.Tensor:
    """`host` (a CPU tensor) on `device`: on a GPU copied from pinned memory without blocking."""
    if device.type != "cuda":
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)


def from_numpy(array: np.ndarray, device: torch.device) -> torch.Tensor:
    return to_device(torch.from_numpy(np.ascontiguousarray(array)), device)


def constant(values: Sequence, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A read-only tensor of `values` on `device`, copied there once per distinct value (callers must not
    write into it)."""
    key = (tuple(values), dtype, str(device))
    tensor = _CONSTANTS.get(key)
    if tensor is None:
        tensor = _CONSTANTS[key] = to_device(torch.tensor(list(values), dtype=dtype), device)
        while len(_CONSTANTS) > _KEEP:
            _CONSTANTS.popitem(last=False)
    else:
        _CONSTANTS.move_to_end(key)
    return tensor
