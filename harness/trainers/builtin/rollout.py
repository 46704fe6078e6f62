"""The rollout engine: a copy of the policy kept in its own precision, sampling with a KV cache.

It plays the part of vLLM/SGLang in the papers: the trainer never samples, it only `sync`s its float32
weights into the engine, which casts (and for fp8, quantises) them. The log-probs it returns are log μ,
computed by the engine's own low-precision forward, so comparing them with the trainer's π exposes the real
training-inference mismatch.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np
import torch
import torch.nn.functional as F

from harness.trainers.builtin import fast_decode
from harness.trainers.builtin.model import build_model
from harness.trainers.builtin.policy import cache_argument
from harness.trainers.builtin.precision import (PrecisionSpec, engine_target, fp8_quant_dequant,
                                                fp8_quantised_linear_names)
from harness.trainers.builtin.tokenizer import encode_batch


@dataclass
class Rollout:
    """Sampled continuations of a batch of prompts (B rows, T = max_new_tokens columns).

    tokens: LongTensor [B, T], generated tokens only, `<pad>` after `<eos>`.
    logp: FloatTensor [B, T] float32, log μ(token) = log_softmax(logits / temperature) under the engine, 0 at padding.
    mask: FloatTensor [B, T], 1 for real tokens (the `<eos>` included), 0 after it.
    lengths: LongTensor [B], number of real tokens per row (= mask.sum(1)).
    topk_logp, topk_ids: [B, T, K] float32 / long, the engine's K most likely tokens per position
    (same temperature; rows of padding positions are meaningless), or None when topk == 0.
    """

    tokens: torch.LongTensor
    logp: torch.FloatTensor
    mask: torch.FloatTensor
    lengths: torch.LongTensor
    topk_logp: torch.FloatTensor | None = None
    topk_ids: torch.LongTensor | None = None


class RolloutEngine:
    """Owns `policy` (not shared with the trainer) and keeps it in `spec.rollout_dtype`.

    Build it with `RolloutEngine.from_model(trainer_model, spec)` (copies and syncs) or
    `RolloutEngine.from_config(model_cfg, vocab_size, spec)` (random weights until the first `sync`).
    """

    def __init__(self, policy, spec: PrecisionSpec):
        self.spec = spec
        self.policy = policy.eval().requires_grad_(False)
        # Only parameters change dtype: rotary inv_freq buffers stay float32, as inference engines keep RoPE
        # tables in full precision.
        for parameter in self.policy.parameters():
            parameter.data = parameter.data.to(spec.rollout_dtype)
        self._parameters = dict(self.policy.named_parameters())
        self._fp8_names = set(fp8_quantised_linear_names(self.policy)) if spec.fp8_rollout else set()
        self._synced_from: Dict[str, torch.Tensor] = {}  # delta sync: the trainer's weights at the last sync
        self.pad_token_id = self.policy.config.pad_token_id
        self.eos_token_id = self.policy.config.eos_token_id
        self._cache_argument = cache_argument(self.policy)

    @classmethod
    def from_model(cls, trainer_model, spec: PrecisionSpec) -> "RolloutEngine":
        engine = cls(copy.deepcopy(trainer_model), spec)
        engine.sync(trainer_model)
        return engine

    @classmethod
    def from_config(cls, model_cfg, vocab_size: int, spec: PrecisionSpec) -> "RolloutEngine":
        return cls(build_model(model_cfg, vocab_size, seed=0), spec)

    @torch.no_grad()
    def sync(self, trainer_model) -> None:
        """Copy the trainer's current weights into the engine's buffers, cast/quantised for `spec`.

        In place: no allocation of a new model; names must match (same architecture).
        """
        for name, source in trainer_model.named_parameters():
            if name not in self._parameters:
                raise KeyError(f"sync: trainer parameter {name!r} has no counterpart in the rollout engine")
            target = self._parameters[name]
            master = source.detach().float()
            value = engine_target(master, target, self._synced_from.get(name))
            if self.spec.weight_sync == "delta":
                self._synced_from[name] = master.clone()
            rounded = fp8_quant_dequant(value) if name in self._fp8_names else value
            if self.spec.mismatch_scale != 1.0:
                rounded = value + self.spec.mismatch_scale * (rounded.to(target.dtype).float() - value)
            target.copy_(rounded)

    def sync_state(self) -> Optional[Dict[str, Dict[str, torch.Tensor]]]:
        """What a checkpoint needs to continue a delta-synced engine exactly (None for full sync)."""
        if self.spec.weight_sync != "delta" or not self._synced_from:
            return None
        return {"weights": {n: p.detach().clone() for n, p in self._parameters.items()},
                "synced_from": {n: t.clone() for n, t in self._synced_from.items()}}

    @torch.no_grad()
    def load_sync_state(self, state: Optional[Dict[str, Dict[str, torch.Tensor]]]) -> None:
        if not state or self.spec.weight_sync != "delta":
            return
        for name, weight in state["weights"].items():
            self._parameters[name].copy_(weight)
        self._synced_from = {n: t.float().clone() for n, t in state["synced_from"].items()}

    def _lean_decoder(self):
        """The engine's `fast_decode.LeanQwen3` (built once; it reads the parameters by reference), or None
        where it does not apply (other architectures) or HARNESS_ROLLOUT_HF=1 asks for the HF forward."""
        import os


        lean = self.__dict__.get("_lean")
        if lean is None:
            use = os.environ.get("HARNESS_ROLLOUT_HF", "") in ("", "0") and fast_decode.supports(self.policy)
            lean = self._lean = fast_decode.LeanQwen3(self.policy) if use else False
        if lean and fast_decode.has_hooks(self.policy):  # module hooks only run in the HF forward
            return None
        return lean or None

    @torch.no_grad()  # not inference_mode: the trainer feeds these tensors into autograd graphs
    def generate(
        self,
        prompt_ids: torch.LongTensor,
        max_new_tokens: int,
        temperature: float,
        generator: torch.Generator,
        topk: int = 0,
        greedy: bool = False,
        prompt_index: torch.LongTensor | None = None,
    ) -> Rollout:
        """Sample up to `max_new_tokens` tokens after each prompt row, with a KV cache.

        prompt_ids: LongTensor [B, P] (same length prompts, `<bos>` first). temperature > 0 scales the logits
        both for sampling and for the returned log-probs; greedy=True takes the argmax instead of sampling.
        Deterministic given the generator's state. Stops early when every row has emitted `<eos>`.
        Returns a Rollout with T = max_new_tokens.

        prompt_index: LongTensor [B] of rows into prompt_ids (e.g. a group's rows share one prompt); the rows
        are then prompt_ids[prompt_index], and the lean path runs each distinct prompt's prefill once.
        """
        if temperature <= 0:
            raise ValueError(f"generate: temperature={temperature} must be > 0 (use greedy=True for argmax)")
        lean = self._lean_decoder()
        shared = prompt_ids
        if prompt_index is not None:
            prompt_ids = prompt_ids[prompt_index]
        batch = prompt_ids.shape[0]
        tokens = torch.full((batch, max_new_tokens), self.pad_token_id, dtype=torch.long)
        logp = torch.zeros(batch, max_new_tokens)
        mask = torch.zeros(batch, max_new_tokens)
        topk_logp = torch.zeros(batch, max_new_tokens, topk) if topk > 0 else None
        topk_ids = torch.zeros(batch, max_new_tokens, topk, dtype=torch.long) if topk > 0 else None
        alive = torch.ones(batch, dtype=torch.bool)

        if lean is not None:  # harness/trainers/builtin/fast_decode.py: same forward, no per-token HF overhead
            total = prompt_ids.shape[1] + max_new_tokens
            kv_cache, position = lean.new_cache(batch, total), 0
            lean.prepare()
            cos, sin = lean.rope_tables(total)
        else:
            from transformers import DynamicCache

            cache = DynamicCache(config=self.policy.config)
        step_input = prompt_ids
        for step in range(max_new_tokens):
            if lean is not None and step == 0 and prompt_index is not None:
                last_logits = lean.shared_prefill(shared, prompt_index, kv_cache, cos, sin)
                position += step_input.shape[1]
            elif lean is not None:
                last_logits = lean.forward(step_input, position, kv_cache, cos, sin)
                position += step_input.shape[1]
            else:
                output = self.policy(
                    input_ids=step_input, use_cache=True, logits_to_keep=1, **{self._cache_argument: cache}
                )
                last_logits = output.logits[:, -1]
            # Low-precision logits, then float32 sampling: what vLLM does with a bf16 model.
            log_probs = F.log_softmax(last_logits.float() / temperature, dim=-1)
            if greedy:
                chosen = log_probs.argmax(dim=-1)
            else:
                chosen = torch.multinomial(log_probs.exp(), 1, generator=generator).squeeze(-1)
            chosen = torch.where(alive, chosen, self.pad_token_id)
            tokens[:, step] = chosen
            logp[:, step] = torch.where(alive, log_probs.gather(1, chosen.unsqueeze(1)).squeeze(1), 0.0)
            mask[:, step] = alive.float()
            if topk > 0:
                topk_logp[:, step], topk_ids[:, step] = log_probs.topk(topk, dim=-1)
            alive = alive & (chosen != self.eos_token_id)
            if not alive.any():
                break
            step_input = chosen.unsqueeze(1)
        return Rollout(
            tokens=tokens,
            logp=logp,
            mask=mask,
            lengths=mask.sum(dim=1).long(),
            topk_logp=topk_logp,
            topk_ids=topk_ids,
        )


def completions_text(tokenizer, rollout: Rollout) -> list[str]:
    """Decoded text of each row's real tokens, `<eos>` and padding dropped: list of B strings."""
    return [
        tokenizer.decode(row[:length], skip_special_tokens=True)
        for row, length in zip(rollout.tokens.tolist(), rollout.lengths.tolist())
    ]


def evaluate_accuracy(
    engine: RolloutEngine,
    tokenizer,
    task,
    problems,
    temperature: float = 1.0,
    greedy: bool = False,
    seed: int = 0,
    batch_size: int = 256,
) -> float:
    """Mean task reward of one completion per problem sampled by `engine` (fraction solved, in [0, 1]).

    Sync the engine first if the trainer's weights changed. Deterministic given `seed`.
    """
    generator = torch.Generator().manual_seed(seed)
    # Room for the longest answer and its `<eos>`; anything longer cannot be correct.
    max_new_tokens = task.max_answer_length + 1
    rewards = []
    for start in range(0, len(problems), batch_size):
        chunk = problems[start : start + batch_size]
        rollout = engine.generate(
            encode_batch(tokenizer, [p.prompt for p in chunk]), max_new_tokens, temperature, generator, greedy=greedy
        )
        rewards += [task.reward(p, c) for p, c in zip(chunk, completions_text(tokenizer, rollout))]
    return float(np.mean(rewards)) if rewards else float("nan")
