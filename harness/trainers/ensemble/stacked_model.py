"""M Qwen3 decoders of one architecture as one module: every parameter carries a leading member dimension.

Member k's weights are exactly the tensors of a `transformers.Qwen3ForCausalLM` state dict (`load_member`,
`member_state_dict`), so warm-start caches and checkpoints are shared with the solo trainer. The forward
follows transformers' Qwen3 op by op (RMSNorm in float32, q/k RMSNorm over head_dim before RoPE, causal GQA
attention through SDPA, SwiGLU MLP, tied or separate lm_head) with batched matmuls over members on the
device the module is moved to (every tensor it makes is created there), so member
k's logits equal its HF model's to float rounding (tests/trainers/test_ensemble_model.py) and no member's
numbers depend on the others': every op is per member (bmm over the member dimension, norms per row).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F

from harness.trainers.builtin.precision import fp8_fake_quant

Cache = List[Tuple[torch.Tensor, torch.Tensor]]
# the most rows (members x batch) one SDPA call gets: flash attention launches grid (blocks, batch, heads), and
# CUDA's grid.y is at most 65,535; cuDNN's attention refuses a larger batch too. Larger calls run in chunks.
SDPA_MAX_BATCH = 32_768


def _linear_names(layers: int) -> List[str]:
    names = []
    for i in range(layers):
        prefix = f"model.layers.{i}."
        names += [prefix + s for s in ("self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                                       "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
                                       "mlp.down_proj.weight")]
    return names


def member_rows(rows: torch.Tensor, members: int, distinct: int) -> torch.Tensor:
    """Indices into a flat [members * distinct] batch of each member's rows: rows [B] or [members, B] name a
    distinct prompt per row; returns [members * B]."""
    return (rows + torch.arange(members, device=rows.device).view(members, 1) * distinct).reshape(-1)


class StackedQwen3(torch.nn.Module):
    """`members` copies of the architecture of `template` (a Qwen3ForCausalLM); parameters [M, *shape]."""

    def __init__(self, template, members: int):
        super().__init__()
        cfg = template.config
        self.members = members
        self.tied = bool(getattr(cfg, "tie_word_embeddings", False))
        self.layers = int(cfg.num_hidden_layers)
        self.heads, self.kv_heads = int(cfg.num_attention_heads), int(cfg.num_key_value_heads)
        self.head_dim = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads)
        self.eps = float(cfg.rms_norm_eps)
        self.scaling = self.head_dim ** -0.5
        self.pad_token_id, self.eos_token_id = cfg.pad_token_id, cfg.eos_token_id
        self.register_buffer("inv_freq", template.model.rotary_emb.inv_freq.detach().float().clone(), persistent=False)
        self.names = [name for name, _ in template.named_parameters()]  # HF's order (the optimizer's too)
        self.linear_names = set(_linear_names(self.layers))
        self.weights = torch.nn.ParameterDict({
            self._key(name): torch.nn.Parameter(p.detach().float().unsqueeze(0).repeat(members, *([1] * p.dim())).clone())
            for name, p in template.named_parameters()})

    @staticmethod
    def _key(name: str) -> str:
        return name.replace(".", "__")  # ParameterDict keys cannot hold dots

    @property
    def device(self) -> torch.device:
        return self.inv_freq.device

    def param(self, name: str) -> torch.nn.Parameter:
        return self.weights[self._key(name)]

    def ordered_parameters(self) -> List[torch.nn.Parameter]:
        """The stacked parameters in HF `named_parameters()` order."""
        return [self.param(name) for name in self.names]

    # -- members' state dicts -------------------------------------------------------------------------
    @torch.no_grad()
    def load_member(self, k: int, state_dict: Dict[str, torch.Tensor]) -> None:
        for name in self.names:
            self.param(name)[k].copy_(state_dict[name])

    @torch.no_grad()
    def member_state_dict(self, k: int) -> Dict[str, torch.Tensor]:
        """Member k's weights as a Qwen3ForCausalLM state dict (clones; lm_head included when tied)."""
        state = {name: self.param(name)[k].detach().clone() for name in self.names}
        if self.tied:
            state["lm_head.weight"] = state["model.embed_tokens.weight"]
        return state

    # -- pieces ---------------------------------------------------------------------------------------
    def _rms(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """x [M, ..., D] float; weight [M, D]."""
        shape = (weight.shape[0],) + (1,) * (x.dim() - 2) + (weight.shape[-1],)
        dtype = x.dtype
        return weight.view(shape) * F.rms_norm(x.float(), (x.shape[-1],), eps=self.eps).to(dtype)

    def _rms_heads(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """RMSNorm over head_dim with a weight per (member, head): x [M, N, heads, D], weight [M, heads, D]."""
        dtype = x.dtype
        return weight.unsqueeze(1) * F.rms_norm(x.float(), (x.shape[-1],), eps=self.eps).to(dtype)

    @staticmethod
    def _mm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """Per-member x @ weight.T: x [M, N, in], weight [M, out, in] -> [M, N, out]."""
        return torch.bmm(x, weight.transpose(1, 2))

    def rope(self, length: int, dtype: torch.dtype) -> Tuple[torch.Tensor, torch.Tensor]:
        """cos, sin [length, head_dim] (float32 tables cast to `dtype`, as Qwen3RotaryEmbedding), the first half
        of sin negated (the form `_rotate` takes)."""
        positions = torch.arange(length, dtype=torch.float32, device=self.inv_freq.device)
        freqs = positions[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        sin = emb.sin().to(dtype)
        half = sin.shape[-1] // 2
        return emb.cos().to(dtype), torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)

    @staticmethod
    def _rotate(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
        """RoPE, x * cos + rotate_half(x) * sin, written as x * cos + roll(x, half) * signed_sin: the same numbers
        (the sign moves from one factor of each product to the other), and roll's backward is one more roll
        where slicing's backward fills zeros."""
        return x * cos + torch.roll(x, x.shape[-1] // 2, dims=-1) * signed_sin

    def _qkv(self, i: int, w, h: torch.Tensor, start: int, cos: torch.Tensor, sin: torch.Tensor):
        """Layer i's queries [M*B, heads, L, D] and keys, values [M*B, kv_heads, L, D] of h [M, B, L, hidden]
        at positions start..start+L-1 (RoPE applied)."""
        M, B, L, _ = h.shape
        heads, kv, dim = self.heads, self.kv_heads, self.head_dim
        p = f"model.layers.{i}."
        x = self._rms(h, w(p + "input_layernorm.weight")).reshape(M, B * L, -1)
        q = self._mm(x, w(p + "self_attn.q_proj.weight"))
        k = self._mm(x, w(p + "self_attn.k_proj.weight"))
        v = self._mm(x, w(p + "self_attn.v_proj.weight"))
        q = self._rms(q.reshape(M, B * L * heads, dim), w(p + "self_attn.q_norm.weight")).view(M, B, L, heads, dim)
        k = self._rms(k.reshape(M, B * L * kv, dim), w(p + "self_attn.k_norm.weight")).view(M, B, L, kv, dim)
        c, s = cos[start:start + L, None, :], sin[start:start + L, None, :]
        q = self._rotate(q, c, s).reshape(M * B, L, heads, dim).transpose(1, 2)
        k = self._rotate(k, c, s).reshape(M * B, L, kv, dim).transpose(1, 2)
        v = v.reshape(M * B, L, kv, dim).transpose(1, 2)
        return q, k, v

    def _attend(self, q, k, v, causal: bool, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """SDPA of q [N, heads, L, D] over k, v [N, kv_heads, S, D] (mask [L, S], True: attend). In float32 it is
        written out as two batched matmuls and a softmax, each key head's query heads stacked as rows: on a
        CPU, for heads this small, several times faster than SDPA's kernel, forward and backward (the same
        numbers to float rounding). Other dtypes, autocast and other devices (a GPU's fused attention
        kernels) keep SDPA, in chunks of at most SDPA_MAX_BATCH rows (M x B reaches 131,072 at 1,024 members)."""
        if q.dtype != torch.float32 or q.device.type != "cpu" or torch.is_autocast_enabled("cpu"):
            if q.shape[0] <= SDPA_MAX_BATCH:
                return self._sdpa(q, k, v, causal, mask)
            return torch.cat([self._sdpa(q[i:i + SDPA_MAX_BATCH], k[i:i + SDPA_MAX_BATCH], v[i:i + SDPA_MAX_BATCH],
                                         causal, mask) for i in range(0, q.shape[0], SDPA_MAX_BATCH)])
        N, H, L, D = q.shape
        KV, S = k.shape[1], k.shape[2]
        q, keys = q.reshape(N * KV, H // KV * L, D), k.reshape(N * KV, S, D).transpose(1, 2)
        if causal and mask is None:
            mask = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()  # SDPA's is_causal (top-left aligned)
        if mask is None:
            scores = torch.bmm(q, keys) * self.scaling
        else:  # the mask as an additive bias (0 or -inf) in the matmul's own kernel: no masked copy of the scores
            bias = torch.zeros(L, S, device=q.device).masked_fill_(~mask, float("-inf")).repeat(H // KV, 1)
            scores = torch.baddbmm(bias, q, keys, alpha=self.scaling)
        return torch.bmm(torch.softmax(scores, dim=-1), v.reshape(N * KV, S, D)).view(N, H, L, D)

    def _sdpa(self, q, k, v, causal: bool, mask: Optional[torch.Tensor]) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal and mask is None,
                                              scale=self.scaling, enable_gqa=self.heads != self.kv_heads)

    def _rest(self, i: int, w, h: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
        """Layer i after attention: attn [M*B, heads, L, D] -> o_proj, residual, MLP, residual."""
        M, B, L, _ = h.shape
        p = f"model.layers.{i}."
        attn = attn.transpose(1, 2).reshape(M, B * L, self.heads * self.head_dim)
        h = h + self._mm(attn, w(p + "self_attn.o_proj.weight")).view(M, B, L, -1)
        x = self._rms(h, w(p + "post_attention_layernorm.weight")).reshape(M, B * L, -1)
        gated = F.silu(self._mm(x, w(p + "mlp.gate_proj.weight"))) * self._mm(x, w(p + "mlp.up_proj.weight"))
        return h + self._mm(gated, w(p + "mlp.down_proj.weight")).view(M, B, L, -1)

    def _layer(self, i: int, w, h: torch.Tensor, start: int, cos: torch.Tensor, sin: torch.Tensor,
               cache: Optional[Cache]) -> torch.Tensor:
        """One decoder layer on h [M, B, L, hidden] at positions start..start+L-1 (cache: per layer
        [M*B, kv_heads, max_len, head_dim], written at those positions and attended over)."""
        L = h.shape[2]
        q, k, v = self._qkv(i, w, h, start, cos, sin)
        if cache is not None:
            k_cache, v_cache = cache[i]
            k_cache[:, :, start:start + L] = k
            v_cache[:, :, start:start + L] = v
            k, v = k_cache[:, :, :start + L], v_cache[:, :, :start + L]
        return self._rest(i, w, h, self._attend(q, k, v, causal=L > 1))

    def _embed(self, ids: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        """ids [M, B, L] into table [M, V, hidden] -> [M, B, L, hidden]."""
        M = ids.shape[0]
        offsets = (torch.arange(M, device=ids.device) * table.shape[1]).view(M, 1, 1)
        return F.embedding(ids + offsets, table.reshape(-1, table.shape[-1]))

    def run(self, w, ids: torch.Tensor, start: int = 0, cache: Optional[Cache] = None,
            last_only: bool = False, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """Logits [M, B, L, V] (or [M, B, V] with last_only) of ids [M, B, L] under weights `w(name)`."""
        total = start + ids.shape[2]
        cos, sin = self.rope(total, dtype)
        h = self._embed(ids, w("model.embed_tokens.weight"))
        for i in range(self.layers):
            h = self._layer(i, w, h, start, cos, sin, cache)
        logits = self._head(w, h[:, :, -1:] if last_only else h)
        return logits[:, :, -1] if last_only else logits

    def _head(self, w, h: torch.Tensor) -> torch.Tensor:
        h = self._rms(h, w("model.norm.weight"))
        head = w("model.embed_tokens.weight") if self.tied else w("lm_head.weight")
        M, B, L, D = h.shape
        return self._mm(h.reshape(M, B * L, D), head).view(M, B, L, -1)

    def run_shared(self, w, prompts: torch.Tensor, rows: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """Logits [M, B, 1 + R, V] predicting each row's response tokens: prompts [M, U, P] (distinct prompts),
        rows [M, B] (each row's prompt), responses [M, B, R] (the response tokens fed, the last one left out).

        Each distinct prompt runs once; its keys and values are indexed out to its rows, whose response
        positions attend to them and causally to each other: the logits of one forward of cat(prompt,
        response) per row, to float rounding, with a group of rows paying for its prompt once."""
        M, U, P = prompts.shape
        B, R = responses.shape[1], responses.shape[2]
        cos, sin = self.rope(P + R, prompts.dtype if prompts.is_floating_point() else torch.float32)
        table = w("model.embed_tokens.weight")
        h_p, h_r = self._embed(prompts, table), self._embed(responses, table)
        flat_rows = member_rows(rows, M, U)
        allowed = torch.ones(R, P + R, dtype=torch.bool, device=prompts.device).tril(diagonal=P)  # prompt + 0..i
        for i in range(self.layers):
            q_p, k_p, v_p = self._qkv(i, w, h_p, 0, cos, sin)
            q_r, k_r, v_r = self._qkv(i, w, h_r, P, cos, sin)
            keys = torch.cat([k_p[flat_rows], k_r], dim=2)
            values = torch.cat([v_p[flat_rows], v_r], dim=2)
            attn_r = self._attend(q_r, keys, values, causal=False, mask=allowed)
            if i < self.layers - 1:
                h_p = self._rest(i, w, h_p, self._attend(q_p, k_p, v_p, causal=True))
            else:  # past the last layer only a prompt's last position is read: the rest of it is not computed
                h_p = self._rest(i, w, h_p[:, :, -1:], self._attend(q_p[:, :, -1:], k_p, v_p, causal=False))
            h_r = self._rest(i, w, h_r, attn_r)
        first = self._head(w, h_p)  # [M, U, 1, V]: predicts each row's first response token
        first = first.reshape(M * U, 1, -1)[flat_rows].view(M, B, 1, -1)
        return torch.cat([first, self._head(w, h_r)], dim=2)

    def forward(self, prompts: torch.Tensor, rows: torch.Tensor, responses: torch.Tensor,
                fp8_train: bool = False) -> torch.Tensor:
        """`run_shared` on the float32 master weights, differentiable; float32 logits. fp8_train: decoder
        Linear weights seen through `fp8_fake_quant` and the forward under bfloat16 autocast (fp8_e2e)."""
        if not fp8_train:
            return self.run_shared(self.param, prompts, rows, responses).float()

        def quantised(name: str) -> torch.Tensor:
            weight = self.param(name)
            return fp8_fake_quant(weight) if name in self.linear_names else weight

        with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16):
            return self.run_shared(quantised, prompts, rows, responses).float()
