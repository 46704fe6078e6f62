"""Compute efficiency: the built-in trainer's step time against the pure model compute that step needs.

    python benchmarks/bench_compute_efficiency.py [--quick] [--json PATH] [--reps N]

The harness side is `BuiltinTrainer._rl_step()` on the default run (dppo, sorting, 16 prompts × 8,
two mini-batches, fp32, one torch thread; --quick: debug=quick sizes). The baseline is the same model work
written as a tight loop with nothing of the harness around it, on copies of the same models:
  - sampling with a KV cache for exactly as many decode steps as the paired harness step took (it stops
    early once every row has emitted <eos>), through the same model path as the rollout engine: the lean
    Qwen3 decoder (`fast_decode.LeanQwen3`, preallocated cache, each distinct prompt prefilled once) when
    the engine uses it, else the HF model with a `DynamicCache` (logits_to_keep=1); log_softmax + multinomial;
  - one no-grad forward of the rows outside the first mini-batch (the harness takes π' of the first
    mini-batch's rows from its grad forward and recomputes the others with the trainer's weights);
  - per mini-batch: forward (`policy.response_logits`, the trainer's model call: each distinct prompt once,
    its KV cache shared by its rows), log-probs of the sampled tokens, a plain importance-weighted
    policy-gradient loss, backward, AdamW step.
Left out of the baseline, hence counted as harness cost: weight sync into the rollout engine, prompt
sampling and tokenisation, decoding and verifying completions, advantages, the objective with its
metrics, entropy and mismatch metrics, gradient clipping, and the Python around them.
Steps alternate harness / pure; the figure is the median of per-pair ratios pure / harness (1.0 = no
overhead at all).
"""
from __future__ import annotations

import copy
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import bench_args, bench_config, figure, median, median_ratio, write_figures  # noqa: E402

NAME = "compute_efficiency"


class PureLoop:
    """The model compute of one RL step, without the harness: own copies of the rollout and trainer models."""

    def __init__(self, trainer):
        import torch

        self.policy = copy.deepcopy(trainer.engine.policy)  # the rollout engine's model (eval, no grad)
        self.model = copy.deepcopy(trainer.model)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=trainer.t.lr,
                                           weight_decay=trainer.t.weight_decay)
        self.generator = torch.Generator().manual_seed(0)
        self.mini_batches = trainer.t.mini_batches
        self.cache_argument = trainer.engine._cache_argument
        lean = trainer.engine._lean_decoder() if hasattr(trainer.engine, "_lean_decoder") else None
        if lean is not None:
            from harness.trainers.builtin.fast_decode import LeanQwen3

            lean = LeanQwen3(self.policy)
        self.lean = lean

    def step(self, prompts, prompt_index, decode_steps: int) -> None:
        import torch
        import torch.nn.functional as F
        from transformers import DynamicCache

        from harness.trainers.builtin.policy import response_logits

        prompt_ids = prompts if prompt_index is None else prompts[prompt_index]
        if prompt_index is None:
            prompts, prompt_index = prompt_ids, torch.arange(len(prompt_ids))
        with torch.no_grad():
            step_input, tokens, logps = prompt_ids, [], []
            if self.lean is not None:
                total, position = prompt_ids.shape[1] + decode_steps, 0
                kv, (cos, sin) = self.lean.new_cache(len(prompt_ids), total), self.lean.rope_tables(total)
                self.lean.prepare()
            else:
                cache = DynamicCache(config=self.policy.config)
            for index in range(decode_steps):
                if self.lean is not None and index == 0:
                    last = self.lean.shared_prefill(prompts, prompt_index, kv, cos, sin)
                    position += step_input.shape[1]
                elif self.lean is not None:
                    last = self.lean.forward(step_input, position, kv, cos, sin)
                    position += step_input.shape[1]
                else:
                    last = self.policy(input_ids=step_input, use_cache=True, logits_to_keep=1,
                                       **{self.cache_argument: cache}).logits[:, -1]
                log_probs = F.log_softmax(last.float(), dim=-1)
                step_input = torch.multinomial(log_probs.exp(), 1, generator=self.generator)
                tokens.append(step_input)
                logps.append(log_probs.gather(1, step_input))
            tokens, rollout_logp = torch.cat(tokens, dim=1), torch.cat(logps, dim=1)
        advantages = torch.randn(len(tokens), 1, generator=self.generator)
        order = torch.randperm(len(tokens), generator=self.generator)
        batches = order.chunk(self.mini_batches)
        if len(batches) > 1:
            with torch.no_grad():  # π' of the rows outside the first mini-batch
                rest = torch.cat(batches[1:])
                response_logits(self.model, prompts, prompt_index[rest], tokens[rest], 1.0)
        for batch in batches:
            logits = response_logits(self.model, prompts, prompt_index[batch], tokens[batch], 1.0)
            logp = F.log_softmax(logits, dim=-1).gather(-1, tokens[batch].unsqueeze(-1)).squeeze(-1)
            loss = -((logp - rollout_logp[batch]).exp() * advantages[batch]).mean()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()


def capture_rollouts(trainer) -> dict:
    """Wrap the trainer's rollout engine so each step leaves its prompts and decode-step count behind."""
    seen = {}
    generate = trainer.engine.generate

    def recording(prompt_ids, *args, **kwargs):
        rollout = generate(prompt_ids, *args, **kwargs)
        seen["prompts"], seen["prompt_index"] = prompt_ids, kwargs.get("prompt_index")
        seen["decode_steps"] = int(rollout.mask.any(dim=0).sum())
        return rollout

    trainer.engine.generate = recording
    return seen


def main(argv=None) -> int:
    args = bench_args(__doc__, argv)
    warmup, reps = (1, args.reps or 3) if args.quick else (3, args.reps or 30)
    import torch

    from harness.tracking.local_tracker import Tracker
    from harness.trainers.builtin.trainer import BuiltinTrainer

    overrides = ["tracking=none", "trainer.progress=false", "trainer.torch_threads=1",
                 *(["debug=quick"] if args.quick else [])]
    with tempfile.TemporaryDirectory(prefix="bench-compute-") as tmp:
        cfg = bench_config(overrides, Path(tmp), args.cache_dir)
        trainer = BuiltinTrainer(cfg, Path(tmp), Tracker(Path(tmp)))
        seen = capture_rollouts(trainer)
        pure = PureLoop(trainer)
        harness_s, pure_s, decode_steps = [], [], []
        for rep in range(warmup + reps):
            started = time.perf_counter()
            trainer._rl_step()
            harness_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            pure.step(seen["prompts"], seen["prompt_index"], seen["decode_steps"])
            pure_s.append(time.perf_counter() - started)
            decode_steps.append(seen["decode_steps"])
        trainer.tracker.finish("FINISHED")
    harness_s, pure_s = harness_s[warmup:], pure_s[warmup:]
    t = cfg.trainer
    fig = figure(f"{NAME}.step", median_ratio(pure_s, harness_s), ">= 0.7",
                 "the same generation + forward/backward as a tight loop, alternating step by step",
                 harness_s_per_step=median(harness_s), pure_s_per_step=median(pure_s),
                 overhead_s_per_step=median(h - p for h, p in zip(harness_s, pure_s)),
                 algo=cfg.algo.name, prompts_x_group=f"{t.prompts_per_step} x {t.group_size}",
                 mini_batches=t.mini_batches, decode_steps=median(decode_steps[warmup:]),
                 torch_threads=torch.get_num_threads(), warmup_steps=warmup, reps=len(harness_s), overrides=overrides)
    write_figures(args.json, NAME, [fig], steps={"harness_s": harness_s, "pure_s": pure_s})
    return 0


if __name__ == "__main__":
    sys.exit(main())
