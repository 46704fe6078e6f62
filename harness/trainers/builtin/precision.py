"""Numeric precisions of the rollout engine and of the training forward.

The papers study the mismatch between the rollout engine's low-precision probabilities (μ) and the trainer's
(π). A `PrecisionSpec` says how each side computes:

- `fp32`: rollout in float32 (the no-mismatch reference, up to kernel differences);
- `bf16` / `fp16`: rollout weights and activations in bfloat16 / float16, trainer in float32;
- `fp8_rollout`: rollout linear weights quantise-dequantised to float8 e4m3fn (per-output-channel absmax
  scale), computed in bfloat16; trainer in float32;
- `fp8_e2e`: the same fp8 rollout, and the training forward also sees fp8 fake-quantised weights computed in
  bfloat16 (`apply_train_precision`), while gradients reach the float32 master weights straight through.

`mismatch_scale` is the emulation strength: the rollout engine stores w + s·(q(w) − w) (q = the rollout's
rounding of the float32 weight w, then cast to the rollout dtype), so s = 1 is the real rounding and s > 1
magnifies the weight-rounding part of the mismatch (activation rounding is unchanged). A 0.1M-parameter
model has far smaller logits than an LLM, so its real bf16 mismatch is tiny; the toy-scale findings use s > 1.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

import torch

FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = torch.finfo(FP8_DTYPE).max  # 448.0


@dataclass(frozen=True)
class PrecisionSpec:
    name: str
    rollout_dtype: torch.dtype
    fp8_rollout: bool
    fp8_train: bool
    mismatch_scale: float = 1.0
    weight_sync: str = "full"  # full | delta (see `engine_target`)


PRECISIONS: dict[str, PrecisionSpec] = {
    spec.name: spec
    for spec in (
        PrecisionSpec("fp32", torch.float32, fp8_rollout=False, fp8_train=False),
        PrecisionSpec("bf16", torch.bfloat16, fp8_rollout=False, fp8_train=False),
        PrecisionSpec("fp16", torch.float16, fp8_rollout=False, fp8_train=False),
        PrecisionSpec("fp8_rollout", torch.bfloat16, fp8_rollout=True, fp8_train=False),
        PrecisionSpec("fp8_e2e", torch.bfloat16, fp8_rollout=True, fp8_train=True),
    )
}


WEIGHT_SYNCS = ("full", "delta")


def precision_spec(name: str, mismatch_scale: float = 1.0, weight_sync: str = "full") -> PrecisionSpec:
    """The registered PrecisionSpec called `name` (with the given emulation strength and weight sync);
    ValueError naming the allowed values otherwise."""
    if name not in PRECISIONS:
        raise ValueError(f"precision={name!r} is unknown; allowed: {sorted(PRECISIONS)}")
    if mismatch_scale < 0:
        raise ValueError(f"precision.mismatch_scale={mismatch_scale} must be >= 0")
    if weight_sync not in WEIGHT_SYNCS:
        raise ValueError(f"precision.weight_sync={weight_sync!r} is not allowed; allowed: {', '.join(WEIGHT_SYNCS)}")
    return replace(PRECISIONS[name], mismatch_scale=float(mismatch_scale), weight_sync=weight_sync)


def engine_target(master: torch.Tensor, engine: torch.Tensor, synced_from) -> torch.Tensor:
    """What the rollout engine's copy of a weight should hold before its rounding, in float32.

    Full sync (`synced_from` None): the trainer's weight. Delta sync: the engine's own low-precision weight
    moved by the trainer's change since the last sync, as engines that receive weight deltas apply them; a
    change smaller than half the engine's rounding step is lost, and rounding errors add up over syncs
    instead of being reset, so the mismatch grows over training."""
    if synced_from is None:
        return master
    return engine.float() + (master - synced_from)


def fp8_quant_dequant(weight: torch.Tensor) -> torch.Tensor:
    """Round a weight [out, in] to float8 e4m3fn with one absmax scale per output row, back in weight.dtype.

    No gradient path (use `fp8_fake_quant` for training). Rows of zeros stay zero.
    """
    with torch.no_grad():
        master = weight.float()
        absmax = master.abs().amax(dim=-1, keepdim=True)
        scale = torch.where(absmax > 0, absmax / FP8_MAX, torch.ones_like(absmax))
        quantised = (master / scale).to(FP8_DTYPE).float() * scale
    return quantised.to(weight.dtype)


def fp8_fake_quant(weight: torch.Tensor) -> torch.Tensor:
    """`fp8_quant_dequant(weight)` in the forward, identity in the backward (straight-through estimator).

    weight: [out, in]; returns the same shape and dtype; d(out)/d(weight) = I, so the float32 master weight
    gets the gradient computed at the quantised point.
    """
    return weight + (fp8_quant_dequant(weight) - weight).detach()


def fp8_quantised_linear_names(model) -> list[str]:
    """Names of the weights fp8 modes quantise: every nn.Linear inside the decoder layers.

    Embeddings, norms and the lm_head stay in the compute dtype, as FP8 inference engines usually keep them.
    """
    return [
        f"{name}.weight"
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and ".layers." in f".{name}."
    ]


class _FakeQuantFP8(torch.nn.Module):
    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        return fp8_fake_quant(weight)


@contextlib.contextmanager
def apply_train_precision(model, spec: PrecisionSpec):
    """Context manager for the trainer's forward under `spec`; a no-op unless `spec.fp8_train`.

    With `fp8_train`, inside the block every decoder Linear weight is seen through `fp8_fake_quant` (a
    torch parametrization, so the optimizer's float32 Parameter objects are untouched) and the forward runs
    under bfloat16 autocast. Run the forward inside the block; `backward()` may run inside or after it.
    Usage: `with apply_train_precision(model, spec): logp, _ = token_logprobs(model, prompt, tokens)`.
    """
    if not spec.fp8_train:
        yield model
        return
    from torch.nn.utils import parametrize

    modules = dict(model.named_modules())
    quantised = [modules[name.rsplit(".", 1)[0]] for name in fp8_quantised_linear_names(model)]
    for module in quantised:
        parametrize.register_parametrization(module, "weight", _FakeQuantFP8())
    try:
        with torch.autocast(device_type=_device_type(model), dtype=torch.bfloat16):
            yield model
    finally:
        for module in quantised:
            # leave_parametrized=False puts the original float32 Parameter object back in place.
            parametrize.remove_parametrizations(module, "weight", leave_parametrized=False)


def _device_type(model) -> str:
    return next(model.parameters()).device.type
