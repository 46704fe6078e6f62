"""Where the built-in trainer computes: `trainer.device` (auto: the first CUDA device when one is present, else
the CPU) resolved to a torch device, with one clear line when the device asked for is not there."""
from __future__ import annotations

import torch


def resolve_device(name: str = "auto") -> torch.device:
    """The torch device `trainer.device` names; 'auto' is CUDA when available, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(f"trainer.device={name}: no CUDA device is visible here (use trainer.device=auto or cpu)")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise RuntimeError(f"trainer.device={name}: only {torch.cuda.device_count()} CUDA device(s) are visible")
    return device
