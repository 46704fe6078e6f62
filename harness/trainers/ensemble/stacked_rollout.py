"""The ensemble's rollout engine: every member's policy in the rollout precision, sampled together.

One engine for every run (a run alone is the ensemble of one): the engine keeps its own copy of the
weights, cast (and for fp8, quantise-dequantised) from the trainer's float32 master weights at each `sync`,
with each member's own `mismatch_scale`; its log-probs are log μ. Decoding runs all members at once with one
KV cache [M*B, kv_heads, T, head_dim] on the trainer's device, and every member samples in one call from its
own counter-based stream (`sampling.Draws`), so member k's tokens are those it samples alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

import torch
import torch.nn.functional as F

from harness.trainers.builtin.precision import PrecisionSpec, engine_target, fp8_quant_dequant
from harness.trainers.builtin.completions import Rollout
from harness.trainers.ensemble.sampling import Draws, sample, unsampleable
from harness.trainers.ensemble.stacked_model import StackedQwen3, member_rows
from harness.trainers.ensemble.transfers import constant


CHECK_EVERY = 8  # decoded tokens between the rollout's looks at whether every row has ended


class StackedRollout:
    """Rollout weights of `model`'s members in `spec.rollout_dtype`; `mismatch_scales` [M] per member."""

    def __init__(self, model: StackedQwen3, spec: PrecisionSpec, mismatch_scales: Sequence[float]):
        self.model, self.spec = model, spec
        self.scales = constant([float(s) for s in mismatch_scales], torch.float32, model.device)
        self.scaled = any(float(s) != 1.0 for s in mismatch_scales)
        self.weights: Dict[str, torch.Tensor] = {
            name: torch.empty_like(model.param(name), dtype=spec.rollout_dtype) for name in model.names}
        self.synced_from: Dict[str, torch.Tensor] = {}  # delta sync: the trainer's weights [M, ...] at the last sync
        self.sync()

    @torch.no_grad()
    def sync(self) -> None:
        """Copy the trainer's current weights in, cast/quantised per member as the solo engine's `sync`."""
        for name in self.model.names:
            master = self.model.param(name).detach().float()
            target = self.weights[name]
            value = engine_target(master, target, self.synced_from.get(name))
            if self.spec.weight_sync == "delta":
                self.synced_from[name] = master.clone()
            rounded = fp8_quant_dequant(value) if self.spec.fp8_rollout and name in self.model.linear_names \
                else value
            scales = self.scales.view(-1, *([1] * (master.dim() - 1)))
            if self.scaled:
                magnified = value + scales * (rounded.to(target.dtype).float() - value)
                rounded = torch.where(scales == 1.0, rounded.to(target.dtype).float(), magnified)
            target.copy_(rounded)
        self._fuse()

    def member_sync_state(self, k: int) -> Optional[Dict[str, Dict[str, torch.Tensor]]]:
        """Member k's share of what a delta-synced engine needs to continue exactly (the solo engine's
        `sync_state` format; None for full sync)."""
        if self.spec.weight_sync != "delta" or not self.synced_from:
            return None
        return {"weights": {n: w[k].clone() for n, w in self.weights.items()},
                "synced_from": {n: t[k].clone() for n, t in self.synced_from.items()}}

    @torch.no_grad()
    def load_member_sync_state(self, k: int, state: Optional[Dict[str, Dict[str, torch.Tensor]]]) -> None:
        if not state or self.spec.weight_sync != "delta":
            return
        for name, weight in state["weights"].items():
            self.weights[name][k].copy_(weight)
            self.synced_from[name][k].copy_(state["synced_from"][name])
        self._fuse()

    def _fuse(self) -> None:
        """Per layer one q|k|v and one gate|up weight and one q|k norm (each output element is still its own
        dot product over the hidden size, as in separate matmuls): fewer, larger kernels per decoded token."""
        w, heads, kv = self.weights, self.model.heads, self.model.kv_heads
        self.fused = []
        for i in range(self.model.layers):
            p = f"model.layers.{i}."
            qkv = torch.cat([w[p + f"self_attn.{x}_proj.weight"] for x in "qkv"], dim=1)
            norm = torch.cat([w[p + "self_attn.q_norm.weight"].unsqueeze(1).expand(-1, heads, -1),
                              w[p + "self_attn.k_norm.weight"].unsqueeze(1).expand(-1, kv, -1)], dim=1)
            gate_up = torch.cat([w[p + "mlp.gate_proj.weight"], w[p + "mlp.up_proj.weight"]], dim=1)
            self.fused.append((qkv, norm, gate_up))

    def _decode(self, ids: torch.Tensor, start: int, cache, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Last-position logits [M, B, V] of ids [M, B, L] at positions start..start+L-1, writing their keys and
        values into `cache`: `StackedQwen3.run` with the fused weights."""
        model, w = self.model, self.weights
        M, B, L = ids.shape
        heads, kv, dim = model.heads, model.kv_heads, model.head_dim
        h = model._embed(ids, w["model.embed_tokens.weight"])
        c, s = cos[start:start + L, None, :], sin[start:start + L, None, :]
        for i, (qkv_w, norm, gate_up_w) in enumerate(self.fused):
            p = f"model.layers.{i}."
            x = model._rms(h, w[p + "input_layernorm.weight"]).reshape(M, B * L, -1)
            qkv = model._mm(x, qkv_w).view(M, B * L, heads + 2 * kv, dim)
            qk = model._rotate(model._rms_heads(qkv[:, :, :heads + kv], norm).view(M, B, L, heads + kv, dim), c, s)
            qk = qk.reshape(M * B, L, heads + kv, dim).transpose(1, 2)
            k_cache, v_cache = cache[i]
            k_cache[:, :, start:start + L] = qk[:, heads:]
            v_cache[:, :, start:start + L] = qkv[:, :, heads + kv:].reshape(M * B, L, kv, dim).transpose(1, 2)
            attn = model._attend(qk[:, :heads], k_cache[:, :, :start + L], v_cache[:, :, :start + L], causal=L > 1)
            attn = attn.transpose(1, 2).reshape(M, B * L, heads * dim)
            h = h + model._mm(attn, w[p + "self_attn.o_proj.weight"]).view(M, B, L, -1)
            gate, up = model._mm(model._rms(h, w[p + "post_attention_layernorm.weight"]).reshape(M, B * L, -1),
                                 gate_up_w).chunk(2, dim=-1)
            h = h + model._mm(F.silu(gate) * up, w[p + "mlp.down_proj.weight"]).view(M, B, L, -1)
        return model._head(self.weights.__getitem__, h[:, :, -1:])[:, :, -1]

    def _prefill(self, prompts: torch.Tensor, prompt_index: Optional[torch.Tensor], cache, cos: torch.Tensor,
                 sin: torch.Tensor) -> torch.Tensor:
        """Last-position logits [M, B, V] of the rows' prompts, their keys and values written into `cache`
        [M*B, ...]. With prompt_index each distinct prompt [M, U, P] runs once and its keys, values and logits
        are indexed out to its rows (a group of rows pays for its prompt once; the same numbers per row)."""
        if prompt_index is None:
            return self._decode(prompts, 0, cache, cos, sin)
        M, U, P = prompts.shape
        shape = (M * U, self.model.kv_heads, P, self.model.head_dim)
        shared = [(k.new_empty(shape), v.new_empty(shape)) for k, v in cache]
        logits = self._decode(prompts, 0, shared, cos, sin)  # [M, U, V]
        flat_rows = member_rows(prompt_index.view(1, -1), M, U)
        for (k_cache, v_cache), (k, v) in zip(cache, shared):
            k_cache[:, :, :P] = k[flat_rows]
            v_cache[:, :, :P] = v[flat_rows]
        return logits[:, prompt_index]

    @torch.no_grad()
    def generate(self, prompts: torch.Tensor, max_new_tokens: int, temperature: Sequence[float],
                 draws: Optional[Draws], active: Sequence[bool], topk: int = 0, greedy: bool = False,
                 prompt_index: Optional[torch.Tensor] = None,
                 on_failure: Optional[Callable[[int, Exception], None]] = None) -> "StackedRollouts":
        """Every member's rollout: prompts [M, U, P] on the engine's device (rows prompts[:, prompt_index]
        when given, else all U), temperature per member; token t of row b of member k is drawn with
        draws.uniforms(...)[k, b] at position t (its own stream: the same whatever its neighbours; `draws`
        is ignored with greedy). A member not `active` is not sampled (its rows are all padding): used for
        members that have ended. on_failure(k, error): member k's sampling failed (its probabilities not
        finite, e.g. at a temperature that rounds to 0 in float32); it draws nothing more and the others go
        on. Without it the error is raised."""
        M, P = prompts.shape[0], prompts.shape[2]
        B = prompts.shape[1] if prompt_index is None else len(prompt_index)
        pad, eos, device = self.model.pad_token_id, self.model.eos_token_id, prompts.device
        tokens = torch.full((M, B, max_new_tokens), pad, dtype=torch.long, device=device)
        logp = torch.zeros(M, B, max_new_tokens, device=device)
        mask = torch.zeros(M, B, max_new_tokens, device=device)
        topk_logp = torch.zeros(M, B, max_new_tokens, topk, device=device) if topk > 0 else None
        topk_ids = torch.zeros(M, B, max_new_tokens, topk, dtype=torch.long, device=device) if topk > 0 else None
        alive = constant([bool(a) for a in active], torch.bool, device).view(M, 1).expand(M, B).clone()
        dtype = self.spec.rollout_dtype
        shape = (M * B, self.model.kv_heads, P + max_new_tokens, self.model.head_dim)
        cache = [(torch.empty(shape, dtype=dtype, device=device), torch.empty(shape, dtype=dtype, device=device))
                 for _ in range(self.model.layers)]
        temps = constant([float(t) for t in temperature], torch.float32, device).view(M, 1, 1)
        failed_at = torch.full((M,), max_new_tokens, dtype=torch.long, device=device)  # a member's first bad token
        cos, sin = self.model.rope(P + max_new_tokens, dtype)
        position = P
        for step in range(max_new_tokens):
            if step == 0:
                logits = self._prefill(prompts, prompt_index, cache, cos, sin)
            else:
                logits = self._decode(step_input, position, cache, cos, sin)
                position += 1
            log_probs = F.log_softmax(logits.float() / temps, dim=-1)  # [M, B, V]
            if greedy:
                chosen = log_probs.argmax(dim=-1)
            else:
                if step % CHECK_EVERY == 0:  # the draws of the next CHECK_EVERY positions in one hash
                    uniforms = draws.uniforms_block(B, step, min(CHECK_EVERY, max_new_tokens - step))
                probs = log_probs.exp()
                failed = unsampleable(probs) & alive.any(dim=1)
                failed_at = torch.where(failed, torch.clamp(failed_at, max=step), failed_at)
                chosen = sample(torch.where(failed.view(M, 1, 1), 1.0, probs), uniforms[:, :, step % CHECK_EVERY])
                alive = alive & ~failed.view(M, 1)
            chosen = torch.where(alive, chosen, pad)
            tokens[:, :, step] = chosen
            logp[:, :, step] = torch.where(alive, log_probs.gather(2, chosen.unsqueeze(2)).squeeze(2), 0.0)
            mask[:, :, step] = alive.float()
            if topk > 0:  # a row's values past its end are 0, whoever else goes on
                values, ids = log_probs.topk(topk, dim=-1)
                topk_logp[:, :, step] = torch.where(alive.unsqueeze(2), values, 0.0)
                topk_ids[:, :, step] = torch.where(alive.unsqueeze(2), ids, 0)
            alive = alive & (chosen != eos)
            # the host looks every CHECK_EVERY tokens (not every token: on a GPU each look waits for the device)
            if (step + 1) % CHECK_EVERY == 0 and step + 1 < max_new_tokens and not bool(alive.any()):
                break
            step_input = chosen.unsqueeze(2)
        if not greedy:  # one copy to the host per rollout: which members' sampling failed, and where
            for k, at in enumerate(failed_at.tolist()):
                if at < max_new_tokens:
                    err = RuntimeError(f"probabilities not finite or all zero at token {at + 1}")
                    if on_failure is None:
                        raise err
                    on_failure(k, err)
        return StackedRollouts(tokens, logp, mask, topk_logp, topk_ids)


@dataclass
class StackedRollouts:
    """Every member's rollout, stacked: tokens, logp, mask [M, B, T] (as `Rollout`), topk_* [M, B, T, K]."""
    tokens: torch.Tensor
    logp: torch.Tensor
    mask: torch.Tensor
    topk_logp: Optional[torch.Tensor] = None
    topk_ids: Optional[torch.Tensor] = None

    def members(self) -> List[Rollout]:
        """One Rollout per member (views)."""
        lengths = self.mask.sum(dim=2).long()
        return [Rollout(tokens=self.tokens[k], logp=self.logp[k], mask=self.mask[k], lengths=lengths[k],
                        topk_logp=None if self.topk_logp is None else self.topk_logp[k],
                        topk_ids=None if self.topk_ids is None else self.topk_ids[k])
                for k in range(self.tokens.shape[0])]
