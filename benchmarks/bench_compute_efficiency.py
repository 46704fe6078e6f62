"""Compute efficiency: the built-in trainer's step time against the pure model compute that step needs.

    python benchmarks/bench_compute_efficiency.py [--quick] [--json PATH] [--reps N]

The harness side is `EnsembleTrainer.rl_step()` of a run alone (the ensemble of one, what `trainer=builtin`
runs) on the default run (dppo, sorting, 16 prompts × 8, two mini-batches, fp32, one torch thread; --quick:
debug=quick sizes). The baseline is the same model work written as a tight loop with nothing of the harness
around it, on copies of the same stacked model and rollout weights:
  - sampling with a KV cache for exactly as many decode steps as the paired harness step took (it stops
    early once every row has emitted <eos>), through the rollout engine's own decoder
    (`StackedRollout._prefill`: each distinct prompt prefilled once; `_decode` per token); log_softmax +
    multinomial;
  - one no-grad forward of the rows outside the first mini-batch (the harness takes π' of the first
    mini-batch's rows from its grad forward and recomputes the others with the trainer's weights);
  - per mini-batch: forward (`StackedQwen3`, the trainer's model call: each distinct prompt once, its keys
    and values shared by its rows), log-probs of the sampled tokens, a plain importance-weighted
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
    """The model compute of one RL step, without the harness: own copies of the stacked model and its
    rollout weights (one member)."""

    def __init__(self, trainer):
        import torch

        from harness.trainers.ensemble.stacked_rollout import StackedRollout

        self.model = copy.deepcopy(trainer.model)
        self.engine = StackedRollout(self.model, trainer.precision, [1.0])
        self.optimizer = torch.optim.AdamW(self.model.ordered_parameters(), lr=trainer.t.lr,
                                           weight_decay=trainer.t.weight_decay, fused=True)
        self.generator = torch.Generator().manual_seed(0)
        self.mini_batches = trainer.t.mini_batches

    def step(self, prompts, prompt_index, decode_steps: int) -> None:
        """prompts [1, U, P], prompt_index [B]: as the trainer's rollout call."""
        import torch
        import torch.nn.functional as F

        model, engine = self.model, self.engine
        rows, length = len(prompt_index), prompts.shape[2] + decode_steps
        with torch.no_grad():
            shape = (rows, model.kv_heads, length, model.head_dim)
            dtype = engine.spec.rollout_dtype
            cache = [(torch.empty(shape, dtype=dtype), torch.empty(shape, dtype=dtype)) for _ in range(model.layers)]
            cos, sin = model.rope(length, dtype)
            tokens, logps, position = [], [], prompts.shape[2]
            for index in range(decode_steps):
                if index == 0:
                    last = engine._prefill(prompts, prompt_index, cache, cos, sin)
                else:
                    last = engine._decode(step_input, position, cache, cos, sin)
                    position += 1
                log_probs = F.log_softmax(last[0].float(), dim=-1)
                chosen = torch.multinomial(log_probs.exp(), 1, generator=self.generator)
                step_input = chosen.view(1, rows, 1)
                tokens.append(chosen)
                logps.append(log_probs.gather(1, chosen))
            tokens, rollout_logp = torch.cat(tokens, dim=1), torch.cat(logps, dim=1)
        advantages = torch.randn(rows, 1, generator=self.generator)
        batches = torch.randperm(rows, generator=self.generator).chunk(self.mini_batches)

        def logits_of(batch):
            return model(prompts, prompt_index[batch].unsqueeze(0), tokens[batch][:, :-1].unsqueeze(0))[0]

        if len(batches) > 1:
            with torch.no_grad():  # π' of the rows outside the first mini-batch
                logits_of(torch.cat(batches[1:]))
        for batch in batches:
            logp = F.log_softmax(logits_of(batch), dim=-1).gather(-1, tokens[batch].unsqueeze(-1)).squeeze(-1)
            loss = -((logp - rollout_logp[batch]).exp() * advantages[batch]).mean()
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()


def capture_rollouts(trainer) -> dict:
    """Wrap the trainer's rollout engine so each step leaves its prompts and decode-step count behind."""
    seen = {}
    generate = trainer.engine.generate

    def recording(prompts, *args, **kwargs):
        rollouts = generate(prompts, *args, **kwargs)
        seen["prompts"], seen["prompt_index"] = prompts, kwargs["prompt_index"]
        seen["decode_steps"] = int(rollouts.mask[0].any(dim=0).sum())
        return rollouts

    trainer.engine.generate = recording
    return seen


def main(argv=None) -> int:
    args = bench_args(__doc__, argv)
    warmup, reps = (1, args.reps or 3) if args.quick else (3, args.reps or 30)
    import torch

    from harness.tracking.local_tracker import Tracker
    from harness.trainers.ensemble.trainer import EnsembleTrainer

    overrides = ["tracking=none", "trainer.progress=false", "trainer.torch_threads=1",
                 *(["debug=quick"] if args.quick else [])]
    with tempfile.TemporaryDirectory(prefix="bench-compute-") as tmp:
        cfg = bench_config(overrides, Path(tmp), args.cache_dir)
        trainer = EnsembleTrainer([(cfg, Path(tmp), Tracker(Path(tmp)))])  # a run alone: the ensemble of one
        seen = capture_rollouts(trainer)
        pure = PureLoop(trainer)
        harness_s, pure_s, decode_steps = [], [], []
        for rep in range(warmup + reps):
            started = time.perf_counter()
            trainer.rl_step()
            harness_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            pure.step(seen["prompts"], seen["prompt_index"], seen["decode_steps"])
            pure_s.append(time.perf_counter() - started)
            decode_steps.append(seen["decode_steps"])
        trainer.members[0].tracker.finish("FINISHED")
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
