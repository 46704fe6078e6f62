"""Which runs of a sweep can train together: their shape, and how many members fit.

Runs of one shape share the model architecture, dataset and difficulty, batch sizes, sequence lengths,
steps, evaluation and checkpoint cadence, precision preset and optimizer settings; they may differ in what
`ALLOWED_TO_DIFFER` lists (seed, objective and its parameters, sampling temperature, ...). Every other key
is part of the shape, so a setting this module does not know about keeps runs apart instead of mixing
them."""
from __future__ import annotations

import json
import os
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence

from omegaconf import DictConfig, OmegaConf

from harness.algorithms.specs import RUN_SHORTCUTS
from harness.config.limits import CPU_MEMBERS, MAX_MEMBERS  # launcher.members caps it further

# Keys (dotted prefixes) in which members of one ensemble may differ.
ALLOWED_TO_DIFFER = (
    "seed", "algo", *RUN_SHORTCUTS, "precision.mismatch_scale",
    "trainer.temperature", "trainer.grad_clip", "trainer.advantage", "trainer.loss_agg", "trainer.warmstart.seed",
    "trainer.progress", "trainer.torch_threads", "trainer.checkpoint_background",
    # where and how a run is recorded, not what it computes
    "experiment_name", "tracking", "launcher", "force", "reuse_across_versions", "output_root", "cache_dir",
    "sweeper", "optuna",
)
MEMORY_SHARE = 0.5  # of the memory available now, what one ensemble may plan to use
GPU_MEMORY_SHARE = 0.8  # of a GPU's free memory: the GPU is the ensemble's alone, less the allocator's slack


class Room(NamedTuple):
    """The memory one ensemble's process has, in bytes, and whether it is a GPU's (the larger member cap)."""
    bytes: int
    gpu: bool


def _drop(tree: dict, dotted: str) -> None:
    head, _, rest = dotted.partition(".")
    if head not in tree:
        return
    if rest:
        if isinstance(tree[head], dict):
            _drop(tree[head], rest)
    else:
        del tree[head]


def shape_key(spec: DictConfig) -> Optional[str]:
    """The run's shape as text (equal texts: the runs can share an ensemble), or None when the run trains
    alone: another trainer, a resumed or branched run, a checkpoint of its own (`model.path`), an Optuna trial."""
    trainer = spec.trainer
    if trainer.name != "builtin" or trainer.get("resume") or trainer.get("branch_from"):
        return None
    if spec.model.get("path") is not None:
        return None
    if spec.get("optuna") is not None and spec.optuna.get("trial_id") is not None:
        return None
    tree = OmegaConf.to_container(spec, resolve=True)
    for key in ALLOWED_TO_DIFFER:
        _drop(tree, key)
    return json.dumps(tree, sort_keys=True, default=str)


def member_bytes(spec: DictConfig, vocab_size: int = 64) -> int:
    """A generous estimate of one member's memory: float32 weights, gradients, AdamW's two moments and the
    rollout copy (5× the parameters), the activations the training forward keeps for backward, the logits of
    a mini-batch (with their softmax and gradient) and the rollout's KV cache. Checked against a measurement
    (issue 36; the default shape, CPU, two RL steps and an evaluation): peak RSS grew 17.6 MB per member from
    M = 1 to 8 and 17.4 MB from 8 to 32, against 26.6 MB estimated here: generous by ~1.5x, as meant."""
    m, t, d = spec.model, spec.trainer, spec.dataset
    hidden, layers, inter = int(m.hidden_size), int(m.num_layers), int(m.intermediate_size)
    params = layers * (4 * hidden * hidden + 3 * hidden * inter) + vocab_size * hidden * (1 if m.tie_word_embeddings else 2)
    rows = int(t.prompts_per_step) * int(t.group_size)
    length = int(m.max_position_embeddings)
    tokens = -(-rows // int(t.mini_batches)) * length
    activations = tokens * layers * (12 * hidden + 4 * inter) + 3 * tokens * vocab_size
    cache = 2 * layers * max(rows, int(d.get("eval_size", rows) or rows)) * length * hidden
    return 4 * (5 * params + activations + cache)


def available_bytes() -> int:
    """Memory available now (Linux /proc/meminfo; elsewhere 4 GiB is assumed)."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 4 << 30


def room_of(device: str, ram: int, gpu: Optional[int]) -> Room:
    """Where an ensemble on `device` (trainer.device) keeps its members: `gpu` bytes of its GPU (free now, or a
    Slurm profile's gpu_memory_gb; None: no GPU) unless the device is the CPU, else `ram` bytes."""
    if device != "cpu" and gpu is not None:
        return Room(gpu, True)
    return Room(ram, False)


def gpu_driver_here() -> bool:
    """Whether this machine has a GPU driver torch could use (NVIDIA's or ROCm's device files): without one,
    `trainer.device=auto` is the CPU, known without importing torch (5 s of a busy machine's `--plan`)."""
    return any(os.path.exists(path) for path in ("/dev/nvidiactl", "/proc/driver/nvidia", "/dev/kfd"))


def room_here(device: str) -> Room:
    """The room of an ensemble on `device` in this process: its CUDA device's free memory
    (`torch.cuda.mem_get_info`) when the device is CUDA and one is visible, else the RAM available now."""
    gpu = None
    if device != "cpu" and gpu_driver_here():
        import torch  # planning a CPU-only sweep loads no torch

        if torch.cuda.is_available():
            index = torch.device(device).index if device.startswith("cuda:") else None
            gpu = torch.cuda.mem_get_info(index)[0]
    return room_of(device, available_bytes(), gpu)


def members_that_fit(spec: DictConfig, room: Optional[Room] = None) -> int:
    """Members of `spec`'s shape that fit in `room` (None: where its trainer.device is, in this process), at
    most CPU_MEMBERS on a CPU and MAX_MEMBERS on a GPU."""
    room = room_here(str(spec.trainer.get("device", "auto"))) if room is None else room
    share, ceiling = (GPU_MEMORY_SHARE, MAX_MEMBERS) if room.gpu else (MEMORY_SHARE, CPU_MEMBERS)
    return max(1, min(ceiling, int(share * room.bytes // max(member_bytes(spec), 1))))


def plan(specs: Sequence[Optional[DictConfig]], cap: Optional[int], parts: int = 1,
         rooms: Callable[[str], Room] = room_here) -> List[List[int]]:
    """Positions of `specs` grouped into ensembles: runs of one shape together, in order of first appearance,
    each shape split into the fewest groups of at most `cap` members and as many as fit in memory, and at
    least `parts` groups where it has that many runs (one per worker), of near-equal sizes. A run that
    trains alone (or whose spec is None: not composed yet, e.g. an Optuna trial) is a group of one; cap 1
    makes every run a group of one. `rooms`: trainer.device -> the room an ensemble's process has there (a
    Slurm job's mem_gb or its GPU's gpu_memory_gb; by default this process's RAM or CUDA device)."""
    shapes: Dict[str, List[int]] = {}
    groups: List[List[int]] = []
    for position, spec in enumerate(specs):
        key = None if spec is None or cap == 1 else shape_key(spec)
        if key is None:
            groups.append([position])
        else:
            shapes.setdefault(key, []).append(position)
    for positions in shapes.values():
        first = specs[positions[0]]
        fit = members_that_fit(first, rooms(str(first.trainer.get("device", "auto"))))
        limit = max(1, min(cap, fit) if cap else fit)  # an explicit cap asks fewer, never more than fit
        count = max(-(-len(positions) // limit), min(parts, len(positions)))
        size, extra = divmod(len(positions), count)
        start = 0
        for i in range(count):
            end = start + size + (1 if i < extra else 0)
            groups.append(positions[start:end])
            start = end
    return sorted(groups, key=lambda group: group[0])
