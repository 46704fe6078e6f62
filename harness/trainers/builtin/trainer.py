"""The Hugging Face reference of the built-in trainer: GRPO-style RL on CPU with a rollout engine separate
from the trainer, on a `transformers` Qwen3 model.

`trainer=builtin` runs `harness.trainers.ensemble` (a run alone is the ensemble of one), which is tested
against this class (tests/trainers/test_ensemble_trainer.py); this class trains the `model.path`
checkpoints the stacked model does not cover (other architectures).

Each step: sample prompts × group, generate with the rollout engine (its own precision, returning its
own log-probs μ), score with the task's verifier, compute group advantages, recompute π' with the
trainer's pre-update parameters, then take `mini_batches` optimizer steps on the objective from
`harness.algorithms` (later mini-batches are stale w.r.t. the rollout, as in the papers)."""
from __future__ import annotations

import logging
import math
import os
import signal
import time
from pathlib import Path
from typing import Dict

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from harness.algorithms import aggregate, build_objective, compute_advantages
from harness.trainers.builtin.model import build_model
from harness.trainers.builtin.policy import masked_mean, response_logits, token_entropy, token_logp
from harness.trainers.builtin.precision import precision_spec, training_forward
from harness.trainers.builtin.rollout import RolloutEngine, completions_text, evaluate_accuracy
from harness.trainers.builtin.tasks import build_task
from harness.trainers.builtin.token_stats import TokenStats
from harness.trainers.builtin.tokenizer import build_tokenizer, encode_batch
from harness.trainers.builtin.warmstart import cache_folder, warm_start
from harness.trainers.checkpoint import CheckpointWriter, load_checkpoint
from harness.trainers.pruning import pruning_hook

log = logging.getLogger("harness")
# The run's own record: Hydra's job logging writes it to the run folder's job.log only (conf/config.yaml).
run_log = logging.getLogger("harness.run")


def _injected_kill(step: int, checkpoints: CheckpointWriter) -> None:
    """Fault injection for the resume tests: SIGKILL this process right after the given step, once the
    checkpoint in flight is on disk (so which checkpoint a test resumes from does not depend on timing)."""
    if os.environ.get("HARNESS_FAULT_KILL_AT_STEP") == str(step):
        checkpoints.wait()
        os.kill(os.getpid(), signal.SIGKILL)


class BuiltinTrainer:
    def __init__(self, cfg: DictConfig, run_dir: Path, tracker):
        self.cfg, self.t, self.run_dir, self.tracker = cfg, cfg.trainer, Path(run_dir), tracker
        torch.set_num_threads(self.t.torch_threads)
        torch.manual_seed(cfg.seed)
        self.tokenizer = build_tokenizer()
        self.task = build_task(cfg.dataset)
        self.precision = precision_spec(cfg.precision.name, cfg.precision.get("mismatch_scale", 1.0),
                                        cfg.precision.get("weight_sync", "full"))
        engine_state = None
        self.model = build_model(cfg.model, vocab_size=len(self.tokenizer), seed=self.t.warmstart.seed)
        params = {k: v for k, v in OmegaConf.to_container(cfg.algo, resolve=True).items() if k != "name"}
        self.objective = build_objective(cfg.algo.name, **params)
        self.max_new_tokens = self.t.max_new_tokens or self.task.max_answer_length + 1
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.t.lr,
                                           weight_decay=self.t.weight_decay)
        self.data_rng = np.random.default_rng(cfg.seed)
        self.sample_gen = torch.Generator().manual_seed(cfg.seed)
        self.step = 0
        self.best_eval = -math.inf
        source = ("trainer.resume", self.t.resume) if self.t.resume else ("trainer.branch_from", self.t.get("branch_from"))
        if source[1]:
            state = load_checkpoint(source[1], source[0])
            self._restore(state)
            engine_state = state.get("rollout_engine") if source[0] == "trainer.resume" else None
        else:
            stats = warm_start(self.model, self.tokenizer, self.task, self.t.warmstart,
                               cache_dir=cache_folder(self.cfg), seed=self.t.warmstart.seed)
            tracker.log_metrics({k: float(v) for k, v in stats.items()}, step=0)
            run_log.info("warm start: %s", ", ".join(f"{k.split('/')[-1]}={float(v):.4g}" for k, v in stats.items()))
        self.engine = RolloutEngine.from_model(self.model, self.precision)
        self.engine.load_sync_state(engine_state)
        self.on_eval = pruning_hook(cfg)  # None unless this run is an Optuna trial
        self.eval_problems = self.task.eval_set()

    # -- state ---------------------------------------------------------------------------------------
    def _state(self) -> Dict:
        state = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                 "data_rng": self.data_rng.bit_generator.state, "sample_gen": self.sample_gen.get_state(),
                 "torch_rng": torch.get_rng_state(), "step": self.step, "best_eval": self.best_eval}
        engine = self.engine.sync_state()
        return state if engine is None else {**state, "rollout_engine": engine}

    def _restore(self, state: Dict) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.data_rng.bit_generator.state = state["data_rng"]
        self.sample_gen.set_state(state["sample_gen"])
        torch.set_rng_state(state["torch_rng"])
        self.step, self.best_eval = state["step"], state["best_eval"]
        log.debug("resumed from step %d", self.step)  # the job says it (harness/launchers/job.py)

    # -- one RL step ---------------------------------------------------------------------------------
    def _rl_step(self) -> Dict[str, float]:
        t, started = self.t, time.perf_counter()
        problems = self.task.sample_train(self.data_rng, t.prompts_per_step)
        prompts = encode_batch(self.tokenizer, [p.prompt for p in problems])  # [prompts, P]
        prompt_index = torch.arange(len(problems)).repeat_interleave(t.group_size)  # each row's prompt
        self.engine.sync(self.model)
        rollout = self.engine.generate(prompts, self.max_new_tokens, t.temperature, self.sample_gen,
                                       topk=t.topk if self.objective.needs_topk else 0, prompt_index=prompt_index)
        rollout_seconds = time.perf_counter() - started
        texts = completions_text(self.tokenizer, rollout)
        group, mini_batches, temperature = int(t.group_size), int(t.mini_batches), float(t.temperature)
        rewards = torch.tensor([self.task.reward(problems[i // group], text)
                                for i, text in enumerate(texts)], dtype=torch.float32)
        advantages = compute_advantages(rewards.view(-1, group), t.advantage).reshape(-1)
        mask = rollout.mask.float()
        sums: Dict[str, float] = {}
        stats = TokenStats(self.objective) if (self.step + 1) % t.eval_every == 0 else None
        order = torch.randperm(len(prompt_index), generator=self.sample_gen)
        batches = order.chunk(mini_batches)
        # π' (the trainer before this update) and its entropy per token. The first mini-batch's grad forward
        # runs on the same parameters in the same precision context, so its detached log-probs ARE π' for
        # those rows; only the other rows need a no-grad forward (none with one mini-batch), and it runs
        # before the first optimizer step.
        old_logp = torch.empty_like(rollout.logp)
        old_entropy = torch.empty_like(rollout.logp)
        if len(batches) > 1:
            rest = torch.cat(batches[1:])
            with torch.no_grad(), training_forward(self.model, self.precision):
                rest_logits = response_logits(self.model, prompts, prompt_index[rest], rollout.tokens[rest], temperature)
                old_logp[rest] = token_logp(rest_logits, rollout.tokens[rest])
                old_entropy[rest] = token_entropy(rest_logits)
            del rest_logits
        for index, batch in enumerate(batches):
            with training_forward(self.model, self.precision):
                logits = response_logits(self.model, prompts, prompt_index[batch], rollout.tokens[batch], temperature)
            logp = token_logp(logits, rollout.tokens[batch])
            if index == 0:
                with torch.no_grad():
                    old_logp[batch] = logp.detach()
                    old_entropy[batch] = token_entropy(logits.detach())
            J, obj_metrics = self.objective.compute(
                logp, rollout.logp[batch], advantages[batch], response_mask=mask[batch],
                recomputed_logp=old_logp[batch],
                rollout_topk_logp=None if rollout.topk_logp is None else rollout.topk_logp[batch],
                rollout_topk_ids=None if rollout.topk_ids is None else rollout.topk_ids[batch],
                logits=logits, token_ids=rollout.tokens[batch])
            loss = -aggregate(J, mask[batch], t.loss_agg, norm_len=self.max_new_tokens)
            if stats is not None:
                stats.add(logp, rollout.logp[batch], advantages[batch], mask[batch], old_logp[batch], logits,
                          token_ids=rollout.tokens[batch])
            if not torch.isfinite(loss):
                raise FloatingPointError(f"non-finite loss {loss.item()} at step {self.step + 1}")
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.grad_clip)
            self.optimizer.step()
            for key, value in {**obj_metrics, "train/loss": loss.item(), "train/grad_norm": grad_norm.item()}.items():
                sums[key] = sums.get(key, 0.0) + float(value) / mini_batches
        if stats is not None:
            self.tracker.log_artifact(stats.save(self.run_dir / "token_stats", self.step + 1), "token_stats")
        elapsed = time.perf_counter() - started
        generated = float(mask.sum())
        return {
            **sums,
            "train/reward": rewards.mean().item(),
            "train/accuracy": (rewards > 0.5).float().mean().item(),
            "train/response_length": rollout.lengths.float().mean().item(),
            "train/entropy": masked_mean(old_entropy, mask),
            "train/mismatch": masked_mean((rollout.logp.exp() - old_logp.exp()).abs(), mask),
            "train/advantage_abs": advantages.abs().mean().item(),
            "perf/step_time_s": elapsed,
            "perf/rollout_time_s": rollout_seconds,
            "perf/tokens_per_s": generated / max(elapsed, 1e-9),
        }

    def _evaluate(self) -> Dict[str, float]:
        """Held-out accuracy of one sample per problem at the training temperature (a fixed sampling
        seed, so evaluations are comparable across steps and runs), and of greedy decoding."""
        self.engine.sync(self.model)
        args = (self.engine, self.tokenizer, self.task, self.eval_problems)
        accuracy = evaluate_accuracy(*args, temperature=self.t.temperature, seed=self.cfg.dataset.seed)
        greedy = evaluate_accuracy(*args, greedy=True)
        self.best_eval = max(self.best_eval, accuracy)
        return {"eval/accuracy": accuracy, "eval/greedy_accuracy": greedy, "eval/best_accuracy": self.best_eval}

    def train(self) -> Dict[str, float]:
        # before a checkpoint is written, the logged steps are in the store: a resumed run skips the steps
        # the store has, so none may be missing
        checkpoints = CheckpointWriter(self.run_dir, self.tracker.flush, lambda: self.tracker.run_id,
                                       background=self.t.checkpoint_background)
        try:
            final = self._train_loop(checkpoints)
        except BaseException:
            checkpoints.wait(raise_error=False)  # a stopped run leaves its latest checkpoint whole
            raise
        checkpoints.wait()
        return final

    def _train_loop(self, checkpoints: CheckpointWriter) -> Dict[str, float]:
        from tqdm import tqdm

        t = self.t
        if self.step == 0:
            evaluation = self._evaluate()
            self.tracker.log_metrics(evaluation, step=0)
            run_log.info("step 0/%d: eval/accuracy=%.4f", t.steps, evaluation["eval/accuracy"])
            checkpoints.save(self._state(), 0)  # resumable from the start
        metrics: Dict[str, float] = {}
        bar = tqdm(total=t.steps, initial=self.step, desc=f"{self.cfg.algo.name}", unit="step",
                   disable=None if t.progress else True, dynamic_ncols=True)
        while self.step < t.steps:
            metrics = self._rl_step()
            self.step += 1
            if self.step % t.eval_every == 0 or self.step == t.steps:
                metrics.update(self._evaluate())
                run_log.info("step %d/%d: train/reward=%.4f train/loss=%.4g eval/accuracy=%.4f (%.2f s/step)",
                             self.step, t.steps, metrics["train/reward"], metrics["train/loss"],
                             metrics["eval/accuracy"], metrics["perf/step_time_s"])
            self.tracker.log_metrics(metrics, step=self.step)
            if self.step % t.checkpoint_every == 0 or self.step == t.steps:
                checkpoints.save(self._state(), self.step)
            _injected_kill(self.step, checkpoints)
            if self.on_eval and "eval/accuracy" in metrics:
                self.on_eval(self.step, metrics)
            bar.update(1)
            bar.set_postfix(reward=f"{metrics['train/reward']:.2f}", eval=f"{self.best_eval:.2f}")
        bar.close()
        final = {k: v for k, v in metrics.items()}
        final["eval/best_accuracy"] = self.best_eval
        return final
