"""A lean decode path for the Qwen3 architecture: the rollout engine's sampling loop without transformers.

For the built-in trainer's tiny models (64 hidden units, 2 layers) a decode step is a few hundred
microseconds of arithmetic, and calling the Hugging Face model once per token (module hooks, kwargs
plumbing, mask building, DynamicCache bookkeeping) cost several times that. `LeanQwen3` computes the same
forward with plain tensor ops on the engine's own parameters (in the rollout dtype; fp8 modes keep their
quantised-dequantised weights in bf16, used as stored), over a preallocated KV cache:

  embedding -> per layer [RMSNorm -> q/k/v projections -> q/k RMSNorm over head_dim -> RoPE ->
  causal GQA attention (SDPA) over the cache -> o projection -> residual -> RMSNorm -> SwiGLU MLP ->
  residual] -> RMSNorm -> lm_head (tied or not).

It follows transformers' Qwen3 modules op by op (RMSNorm in float32 then cast back, RoPE tables computed
in float32 and cast to the activation dtype, SDPA with `enable_gqa`, no attention mask since prompts are
unpadded), so float32 logits match the HF forward to float rounding and sampling draws the same tokens
from the same generator state (tests/trainers/test_fast_decode.py). Architectures or settings it does not
cover (`supports` is False: other model classes, attention biases, sliding windows, scaled RoPE, other
activations) keep the Hugging Face path, and so does a policy with forward hooks registered (they would
not run here), or HARNESS_ROLLOUT_HF=1.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F


def supports(policy) -> bool:
    """True when `policy` is a transformers Qwen3ForCausalLM with the plain settings this path implements."""
    try:
        return _supports(policy)
    except (AttributeError, TypeError, ValueError):  # an unexpected config layout: keep the HF path
        return False


def _supports(policy) -> bool:
    if type(policy).__name__ != "Qwen3ForCausalLM":
        return False
    cfg = policy.config
    layer_types = getattr(cfg, "layer_types", None) or []
    rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
    rotary = getattr(getattr(policy, "model", None), "rotary_emb", None)
    return (
        not getattr(cfg, "attention_bias", False)
        and not getattr(cfg, "use_sliding_window", False)
        and all(t == "full_attention" for t in layer_types)
        and getattr(cfg, "hidden_act", "silu") == "silu"
        and rope.get("rope_type", "default") == "default"
        and rotary is not None
        and float(getattr(rotary, "attention_scaling", 1.0)) == 1.0
        and getattr(cfg, "_attn_implementation", "sdpa") in ("sdpa", "eager")
    )


def has_hooks(policy) -> bool:
    """Whether forward hooks are registered on `policy`'s modules (or globally): they only run in the HF forward."""
    from torch.nn.modules import module as nn_module

    if nn_module._global_forward_hooks or nn_module._global_forward_pre_hooks:
        return True
    return any(m._forward_hooks or m._forward_pre_hooks for m in policy.modules())


class _Layer:
    __slots__ = ("ln_in", "q", "k", "v", "o", "q_norm", "k_norm", "ln_post", "gate", "up", "down",
                 "qkv", "qk_norm", "gate_up")

    def __init__(self, layer):
        attn, mlp = layer.self_attn, layer.mlp
        self.ln_in, self.ln_post = layer.input_layernorm.weight, layer.post_attention_layernorm.weight
        self.q, self.k, self.v, self.o = attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight, attn.o_proj.weight
        self.q_norm, self.k_norm = attn.q_norm.weight, attn.k_norm.weight
        self.gate, self.up, self.down = mlp.gate_proj.weight, mlp.up_proj.weight, mlp.down_proj.weight
        self.qkv = self.qk_norm = self.gate_up = None

    def fuse(self, heads: int, kv_heads: int) -> None:
        """Concatenated copies of the current weights: one q|k|v and one gate|up matmul, one q|k norm.
        Each output element is still its own dot product over the hidden size, as in separate matmuls."""
        with torch.no_grad():
            self.qkv = torch.cat((self.q, self.k, self.v), dim=0)
            self.gate_up = torch.cat((self.gate, self.up), dim=0)
            self.qk_norm = torch.cat((self.q_norm.expand(heads, -1), self.k_norm.expand(kv_heads, -1)), dim=0)


class LeanQwen3:
    """Reads `policy`'s parameters by reference: in-place updates (the engine's `sync`) are seen at once."""

    def __init__(self, policy):
        cfg = policy.config
        model = policy.model
        self.embed = model.embed_tokens.weight
        self.norm = model.norm.weight
        self.lm_head = policy.lm_head.weight
        self.layers: List[_Layer] = [_Layer(layer) for layer in model.layers]
        self.eps = float(cfg.rms_norm_eps)
        self.heads = int(cfg.num_attention_heads)
        self.kv_heads = int(cfg.num_key_value_heads)
        self.head_dim = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads)
        self.scaling = self.head_dim ** -0.5
        self.inv_freq = model.rotary_emb.inv_freq
        self._rope: Optional[Tuple[int, torch.dtype, torch.Tensor, torch.Tensor]] = None

    def prepare(self) -> None:
        """Fuse the current weights (call before each generation: `sync` changes them in place)."""
        for layer in self.layers:
            layer.fuse(self.heads, self.kv_heads)

    # -- pieces, as in transformers' Qwen3 modules -------------------------------------------------------
    def _rms(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """Qwen3RMSNorm: normalise in float32, cast back, then scale (F.rms_norm computes the same
        x * rsqrt(mean(x^2) + eps), bit for bit, in one op)."""
        dtype = x.dtype
        return weight * F.rms_norm(x.float(), (x.shape[-1],), eps=self.eps).to(dtype)

    def rope_tables(self, length: int) -> Tuple[torch.Tensor, torch.Tensor]:
        """cos, sin [length, head_dim] in the activation dtype (computed in float32 like Qwen3RotaryEmbedding)."""
        dtype = self.embed.dtype
        if self._rope is None or self._rope[0] < length or self._rope[1] != dtype:
            positions = torch.arange(length, dtype=torch.float32)
            freqs = positions[:, None] * self.inv_freq.to(dtype=torch.float32)[None, :]
            emb = torch.cat((freqs, freqs), dim=-1)
            sin = emb.sin().to(dtype)
            half = sin.shape[-1] // 2
            # rotate_half(x) * sin = cat(x2, x1) * cat(-sin1, sin2): the sign moves onto the table (exact)
            signed = torch.cat((-sin[:, :half], sin[:, half:]), dim=-1)
            self._rope = (length, dtype, emb.cos().to(dtype), signed)
        return self._rope[2], self._rope[3]

    @staticmethod
    def _rotate(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
        """x * cos + rotate_half(x) * sin, for x [..., L, heads, D] and tables [L, D]."""
        half = x.shape[-1] // 2
        swapped = torch.cat((x[..., half:], x[..., :half]), dim=-1)
        return x * cos + swapped * signed_sin

    def forward(self, ids: torch.Tensor, start: int, cache: List[Tuple[torch.Tensor, torch.Tensor]],
                cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Logits [B, V] of the last position, for tokens `ids` [B, L] at positions start..start+L-1; writes
        their keys and values into `cache` (per layer, [B, kv_heads, max_len, head_dim]). Call `prepare()`
        after the weights change."""
        batch, length = ids.shape
        end = start + length
        heads, kv_heads, dim = self.heads, self.kv_heads, self.head_dim
        h = F.embedding(ids, self.embed)
        cos_l, sin_l = cos[start:end, None, :], sin[start:end, None, :]  # broadcast over [B, L, heads, D]
        for layer, (k_cache, v_cache) in zip(self.layers, cache):
            x = self._rms(h, layer.ln_in)
            qkv = F.linear(x, layer.qkv).view(batch, length, heads + 2 * kv_heads, dim)
            qk = self._rotate(self._rms(qkv[:, :, :heads + kv_heads], layer.qk_norm), cos_l, sin_l)
            k_cache[:, :, start:end] = qk[:, :, heads:].transpose(1, 2)
            v_cache[:, :, start:end] = qkv[:, :, heads + kv_heads:].transpose(1, 2)
            attn = F.scaled_dot_product_attention(
                qk[:, :, :heads].transpose(1, 2), k_cache[:, :, :end], v_cache[:, :, :end], is_causal=length > 1,
                scale=self.scaling, enable_gqa=heads != kv_heads)
            h = h + F.linear(attn.transpose(1, 2).reshape(batch, length, -1), layer.o)
            gate, up = F.linear(self._rms(h, layer.ln_post), layer.gate_up).chunk(2, dim=-1)
            h = h + F.linear(F.silu(gate) * up, layer.down)
        return F.linear(self._rms(h[:, -1], self.norm), self.lm_head)

    def shared_prefill(self, prompts: torch.Tensor, rows: torch.Tensor, cache: List[Tuple[torch.Tensor, torch.Tensor]],
                       cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """`forward` of the prompts prompts[rows] at position 0, running each of `prompts` [U, P] once: their
        keys and values are copied into the rows' `cache`; returns the rows' last-position logits [B, V]."""
        own = self.new_cache(prompts.shape[0], prompts.shape[1])
        logits = self.forward(prompts, 0, own, cos, sin)
        length = prompts.shape[1]
        for (k_rows, v_rows), (k_own, v_own) in zip(cache, own):
            k_rows[:, :, :length] = k_own[rows]
            v_rows[:, :, :length] = v_own[rows]
        return logits[rows]

    def new_cache(self, batch: int, max_len: int) -> List[Tuple[torch.Tensor, torch.Tensor]]:
        dtype = self.embed.dtype
        shape = (batch, self.kv_heads, max_len, self.head_dim)
        return [(torch.empty(shape, dtype=dtype), torch.empty(shape, dtype=dtype)) for _ in self.layers]

    def logits_all(self, ids: torch.Tensor) -> torch.Tensor:
        """Logits [B, L, V] of every position of `ids` (for tests: one causal forward, no cache reuse)."""
        batch, length = ids.shape
        cos, sin = self.rope_tables(length)
        self.prepare()
        out = []
        for end in range(1, length + 1):
            cache = self.new_cache(batch, end)
            out.append(self.forward(ids[:, :end], 0, cache, cos, sin))
        return torch.stack(out, dim=1)
