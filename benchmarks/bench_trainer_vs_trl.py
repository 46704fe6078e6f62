"""Seconds per RL step and generated tokens/s: the built-in trainer versus TRL's GRPOTrainer, side by side.

    python benchmarks/bench_trainer_vs_trl.py [--quick] [--json PATH] [--reps N]

Both train the same warm-started tiny Qwen3 (the built-in trainer's weights, copied), on the same task
(sorting, the default) with the same prompts × group size (16 × 8; --quick 4 × 4), completion length
(task answer + <eos> = 8 tokens), objective (PPO clip ε = 0.2, group-normalised advantages, token-mean
loss, no KL), optimizer (AdamW, lr 3e-4, no weight decay, grad clip 1.0, constant lr) and one mini-batch
per step, on CPU with one torch thread. TRL generates with `model.generate` (KV cache, no vLLM) and
reports to nothing; the built-in trainer logs to its metrics.jsonl only (tracking=none). TRL's
`GRPOConfig` turns gradient checkpointing on by default, which slows it and is not what anyone would use
for a model this small: it is turned off here (`gradient_checkpointing=False`).

Two shapes, one figure each: the default run's (hidden 64, 2 layers, sorting: `step_speedup`) and a
bigger one (hidden 128, 4 layers, arithmetic: `step_speedup_bigger`, --quick skips it).

Interleaving: TRL's own training loop drives; a callback at the end of every TRL step runs one built-in
step, so the two alternate step by step in one process. A TRL step is timed from the end of the previous
built-in step to TRL's next `on_step_end` (its data loading and logging included); a built-in step is
`rl_step()` + `log_metrics`, as in the trainer's loop (harness/trainers/ensemble/loop.py; a run alone is
the ensemble of one). Figures are medians of per-pair ratios.

Known differences, kept as each trainer does them: TRL runs every completion's whole sequence (its
prompt repeated once per row of the group) through generation's prefill and through the training forward;
the built-in trainer runs each distinct prompt once and shares its KV cache among the group's rows, in the
rollout engine's prefill and in the training forward (`StackedQwen3.run_shared`; same logits
to float rounding, tests/trainers/test_ensemble_model.py). The built-in trainer's π' of its one mini-batch
comes from the grad forward; TRL skips π' with one mini-batch (π' = π).
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import bench_args, bench_config, median, median_ratio, skipped, figure, write_figures  # noqa: E402

NAME = "trainer_vs_trl"
TARGET = ">= 2.0"
BASELINE = "TRL GRPOTrainer, same model/task/batch/optimizer, steps interleaved 1:1 in one process"


BIGGER = ["model.hidden_size=128", "model.num_layers=4", "dataset=arithmetic"]


def builtin_trainer(quick: bool, root: Path, cache_dir: Path, shape=()):
    from harness.tracking.local_tracker import Tracker
    from harness.trainers.ensemble.trainer import EnsembleTrainer

    overrides = ["algo=grpo", "trainer.mini_batches=1", "tracking=none", "trainer.progress=false",
                 "trainer.torch_threads=1", *shape, *(["debug=quick"] if quick else [])]
    cfg = bench_config(overrides, root, cache_dir)
    run_dir = root / "builtin"
    return EnsembleTrainer([(cfg, run_dir, Tracker(run_dir))]), overrides  # a run alone: the ensemble of one


def trl_trainer(builtin, steps: int, root: Path, callback):
    """A TRL GRPOTrainer set up like `builtin`, on a copy of its (warm-started) model."""
    import numpy as np
    import torch
    from datasets import Dataset
    from transformers.trainer_callback import PrinterCallback
    from trl import GRPOConfig, GRPOTrainer

    from harness.trainers.builtin.tasks.base import Problem
    from harness.trainers.builtin.tokenizer import BOS, build_tokenizer

    t, task = builtin.t, builtin.task
    seed = builtin.members[0].spec.seed
    problems = task.sample_train(np.random.default_rng(seed + 1), t.prompts_per_step * (steps + 2))
    # The built-in trainer prepends <bos> itself; TRL tokenizes the prompt text, where "<bos>" is the special token.
    dataset = Dataset.from_dict({"prompt": [BOS + p.prompt for p in problems], "answer": [p.answer for p in problems]})

    def verifier(prompts, completions, answer, **_):
        return [task.reward(Problem(p, a), c) for p, a, c in zip(prompts, answer, completions)]

    args = GRPOConfig(
        output_dir=str(root / "trl"), max_steps=steps, per_device_train_batch_size=t.prompts_per_step * t.group_size,
        num_generations=t.group_size, gradient_accumulation_steps=1, num_iterations=1,
        max_completion_length=builtin.max_new_tokens, temperature=t.temperature, top_k=0, top_p=1.0,
        learning_rate=t.lr, weight_decay=t.weight_decay, max_grad_norm=t.grad_clip, optim="adamw_torch",
        lr_scheduler_type="constant", warmup_steps=0, beta=0.0, epsilon=0.2, loss_type="dapo",
        gradient_checkpointing=False,  # TRL's default is on: slower, and pointless for a model this small
        scale_rewards="group", mask_truncated_completions=False, logging_steps=1, save_strategy="no",
        report_to=[], use_cpu=True, bf16=False, fp16=False, seed=builtin.members[0].spec.seed, disable_tqdm=True,
        dataloader_num_workers=0, dataloader_pin_memory=False, log_level="error")
    trainer = GRPOTrainer(model=builtin.member_model(0), reward_funcs=verifier, args=args,
                          train_dataset=dataset, processing_class=build_tokenizer(), callbacks=[callback])
    trainer.remove_callback(PrinterCallback)  # it prints every step's logs to stdout
    torch.set_num_threads(builtin.t.torch_threads)
    return trainer


def make_callback(builtin):
    from transformers import TrainerCallback

    batch = builtin.t.prompts_per_step * builtin.t.group_size

    class Interleave(TrainerCallback):
        """After each TRL step, one built-in step; records both durations and generated token counts."""

        def __init__(self):
            self.mark, self.trl_s, self.builtin_s, self.trl_tokens, self.builtin_tokens = None, [], [], [], []

        def on_train_begin(self, args, state, control, **kwargs):
            self.mark = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.trl_s.append(time.perf_counter() - self.mark)
            started = time.perf_counter()
            metrics = builtin.rl_step()[0]
            builtin.step += 1
            builtin.members[0].tracker.log_metrics(metrics, step=builtin.step)
            self.builtin_s.append(time.perf_counter() - started)
            self.builtin_tokens.append(metrics["train/response_length"] * batch)
            self.mark = time.perf_counter()

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "completions/mean_length" in logs:
                self.trl_tokens.append(float(logs["completions/mean_length"]) * batch)

    return Interleave()


def main(argv=None) -> int:
    args = bench_args(__doc__, argv)
    warmup, reps = (1, args.reps or 3) if args.quick else (3, args.reps or 30)
    try:
        import trl  # noqa: F401
    except Exception as err:  # optional: pip install -e '.[bench]'
        reason = f"trl not importable ({type(err).__name__}: {err}); install it with pip install -e '.[bench]'"
        write_figures(args.json, NAME, [skipped(f"{NAME}.step_speedup", reason, TARGET, BASELINE),
                                        skipped(f"{NAME}.tokens_per_s", reason, None, BASELINE),
                                        skipped(f"{NAME}.step_speedup_bigger", reason, TARGET, BASELINE)])
        return 0
    default = measure(args, warmup, reps, ())
    t_s, b_s = default["trl_s"], default["builtin_s"]
    t_tok, b_tok = default["trl_tokens"], default["builtin_tokens"]
    speed = [bt / b / (rt / r) for bt, b, rt, r in zip(b_tok, b_s, t_tok, t_s)]
    figures = [
        figure(f"{NAME}.step_speedup", median_ratio(t_s, b_s), TARGET, BASELINE,
               builtin_s_per_step=median(b_s), trl_s_per_step=median(t_s), **default["setup"]),
        figure(f"{NAME}.tokens_per_s", median(speed), None, BASELINE + " (generated tokens/s, built-in / TRL)",
               builtin_tokens_per_s=median(b / s for b, s in zip(b_tok, b_s)),
               trl_tokens_per_s=median(r / s for r, s in zip(t_tok, t_s)),
               builtin_tokens_per_step=median(b_tok), trl_tokens_per_step=median(t_tok)),
    ]
    steps = {k: default[k] for k in ("builtin_s", "trl_s", "builtin_tokens", "trl_tokens")}
    if not args.quick:
        bigger = measure(args, warmup, reps, BIGGER)
        figures.append(figure(f"{NAME}.step_speedup_bigger", median_ratio(bigger["trl_s"], bigger["builtin_s"]),
                              TARGET, BASELINE + " (hidden 128, 4 layers, arithmetic)",
                              builtin_s_per_step=median(bigger["builtin_s"]), trl_s_per_step=median(bigger["trl_s"]),
                              **bigger["setup"]))
        steps.update({f"bigger_{k}": bigger[k] for k in ("builtin_s", "trl_s")})
    else:
        figures.append(skipped(f"{NAME}.step_speedup_bigger", "--quick measures the default shape only", TARGET,
                               BASELINE + " (hidden 128, 4 layers, arithmetic)"))
    write_figures(args.json, NAME, figures, steps=steps)
    return 0


def measure(args, warmup: int, reps: int, shape) -> dict:
    """TRL and built-in steps interleaved on one shape: per-step seconds and generated tokens, past warm-up."""
    import torch
    import transformers
    import trl

    with tempfile.TemporaryDirectory(prefix="bench-trl-") as tmp:
        root = Path(tmp)
        builtin, overrides = builtin_trainer(args.quick, root, args.cache_dir, shape)
        callback = make_callback(builtin)
        trainer = trl_trainer(builtin, warmup + reps, root, callback)
        trainer.train()
        builtin.members[0].tracker.finish("FINISHED")
    t = builtin.t
    setup = {"overrides": overrides, "prompts_x_group": f"{t.prompts_per_step} x {t.group_size}",
             "max_new_tokens": builtin.max_new_tokens, "torch_threads": torch.get_num_threads(),
             "warmup_steps": warmup, "reps": len(callback.trl_s[warmup:]), "trl": trl.__version__,
             "trl_gradient_checkpointing": False, "transformers": transformers.__version__,
             "torch": torch.__version__}
    return {"trl_s": callback.trl_s[warmup:], "builtin_s": callback.builtin_s[warmup:],
            "trl_tokens": callback.trl_tokens[warmup:], "builtin_tokens": callback.builtin_tokens[warmup:],
            "setup": setup}


if __name__ == "__main__":
    sys.exit(main())
