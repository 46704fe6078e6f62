"""The ensemble trainer: M runs of one shape trained in one process, batched over a member dimension.

Each member is a complete run (`member.Member`); members share only the shape of the computation (model
architecture, dataset, batch sizes, sequence lengths, steps, precision preset, optimizer settings) and may
differ in seed, objective and its parameters, sampling temperature, advantage estimator, loss aggregation,
grad clip, warm-start seed and mismatch scale. It is the only RL step of the built-in trainer (a run alone
is the ensemble of one, `loop.SoloTrainer`). Every step does, for all members at once: sample prompts (each
member's own data stream), generate with the rollout engine (each member's own sampling stream), recompute π', take `mini_batches` optimizer steps
(loss, grad clip and metrics per member, computed for all members at once, the objectives grouped by kind:
`batched_loss.py`; one backward and one AdamW step over the stacked parameters, which are elementwise per
member; the step's numbers copied to the host once: `step_tensors.host_metrics`). Everything lives on
`trainer.device`; rewards are computed from token ids there. A member's samples come from its own counter-based
stream (`sampling.Draws`: a hash of its seed, the step, the row and the position), so its numbers are those of
its solo run whatever it is grouped with (tests/trainers/test_ensemble_trainer.py, test_member_independence.py).
Each member's tracking run is tagged with its ensemble (`harness.ensemble_*`). A member whose own part fails
(its sampling, rewards, loss, metrics, logging, set-up: any error, a memory error included) ends FAILED alone;
the others go on, their numbers unchanged (`Member.alone`)."""
from __future__ import annotations

import functools
import logging
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import torch
from omegaconf import DictConfig

from harness.infra.locks import LockHeld
from harness.trainers.builtin.model import build_model, plain_qwen3
from harness.trainers.builtin.policy import token_entropy, token_logp
from harness.trainers.builtin.precision import precision_spec
from harness.trainers.builtin.tasks import build_task
from harness.trainers.builtin.tasks.token_rewards import answer_array, answer_ids, token_rewards
from harness.trainers.builtin.token_stats import TokenStats
from harness.trainers.builtin.tokenizer import build_tokenizer, encode_batch, encode_prompts
from harness.trainers.builtin.warmstart import cache_folder, warm_start, warmstart_key
from harness.trainers.checkpoint import CheckpointWriter, load_checkpoint
from harness.trainers.device import resolve_device
from harness.trainers.ensemble import evaluation
from harness.trainers.ensemble.batched_loss import BatchedLoss, Losses, MiniBatch
from harness.trainers.ensemble.clip import clip_per_member
from harness.trainers.ensemble.advantages import grouped_advantages
from harness.trainers.ensemble.member import (Member, load_member_optimizer_state, member_optimizer_state,
                                              tag_ensemble)
from harness.trainers.ensemble.sampling import ORDER, ROLLOUT, Draws
from harness.trainers.ensemble.stacked_model import StackedQwen3
from harness.trainers.ensemble.stacked_rollout import StackedRollout
from harness.trainers.ensemble.step_tensors import StepTensors, host_metrics, step_metrics
from harness.trainers.ensemble.transfers import from_numpy

log = logging.getLogger("harness")


def stackable(cfg: DictConfig) -> bool:
    """Whether the run's policy is a plain Qwen3 decoder the stacked model computes (the built-in models are;
    a `model.path` checkpoint may be another architecture)."""
    if cfg.model.get("path") is None:
        return True

    return plain_qwen3(build_model(cfg.model, vocab_size=len(build_tokenizer()), seed=0))


class EnsembleTrainer:
    """members: (spec, run_dir, tracker) of each run, specs of one shape (`harness.trainers.ensemble.shape`)."""

    def __init__(self, members: Sequence[tuple], threads: Optional[int] = None):
        """members: (spec, run_dir, tracker) or (spec, run_dir, tracker, on_eval) of each run."""
        self.members = [Member(i, *member) for i, member in enumerate(members)]
        self.warm_start_stats: Dict[Member, Dict[str, float]] = {}
        self._announced: set = set()
        first = self.members[0].spec
        self.t, self.model_cfg = first.trainer, first.model  # one shape: every member's trainer and model agree
        self.device = resolve_device(str(self.t.get("device", "auto")))  # before any work: a missing GPU is one line
        torch.set_num_threads(int(threads or self.t.torch_threads))
        self.tokenizer = build_tokenizer()
        self.task = build_task(first.dataset)
        self.precision = precision_spec(first.precision.name, weight_sync=first.precision.get("weight_sync", "full"))
        self._engine_states: Dict[int, Dict] = {}  # member -> its checkpoint's delta-synced engine weights
        template = build_model(first.model, vocab_size=len(self.tokenizer), seed=self.t.warmstart.seed)
        self.model = StackedQwen3(template, len(self.members)).to(self.device)
        self.params = self.model.ordered_parameters()
        # fused: one kernel per parameter instead of a dozen (the same update to float rounding, ~4x faster on CPU)
        self.optimizer = torch.optim.AdamW(self.params, lr=self.t.lr, weight_decay=self.t.weight_decay, fused=True)
        self.max_new_tokens = self.t.max_new_tokens or self.task.max_answer_length + 1
        self.step = 0
        self.step_of: Dict[int, int] = {}  # member -> the step its checkpoint was taken at
        restored = [m for m in self.members if m.t.get("resume") or m.t.get("branch_from")]
        for member in restored:
            with member.alone():
                self._restore(member)
        # a base model another process is training (an ensemble beside this one, same seeds) is loaded after
        # the others, once it is cached, rather than trained twice
        busy = []
        for member in (m for m in self.members if m not in restored):
            with member.alone():
                if not self._warm_start(member, wait=False):
                    busy.append(member)
        for member in busy:
            with member.alone():
                self._warm_start(member, wait=True)
        steps = {int(self.step_of.get(m.index, 0)) for m in self.alive} or {0}
        if len(steps) != 1:
            raise ValueError(f"an ensemble's members must start at the same step, got steps {sorted(steps)}")
        self.step = steps.pop()
        scales = [float(m.spec.precision.get("mismatch_scale", 1.0)) for m in self.members]
        self.engine = StackedRollout(self.model, self.precision, scales)
        for index, engine_state in self._engine_states.items():
            self.engine.load_member_sync_state(index, engine_state)
        self.eval_problems = self.task.eval_set()
        self.eval_prompts = encode_batch(self.tokenizer, [p.prompt for p in self.eval_problems]).to(self.device)
        self.eval_answers = answer_ids([p.answer for p in self.eval_problems], self.device)
        self.temperatures = torch.tensor([float(m.t.temperature) for m in self.members],
                                         device=self.device).view(-1, 1, 1, 1)
        self.seeds = torch.tensor([int(m.spec.seed) for m in self.members], dtype=torch.long, device=self.device)
        tag_ensemble(self.members, self.device)

    # -- set-up ----------------------------------------------------------------------------------------
    def _warm_start(self, member: Member, *, wait: bool) -> bool:
        """Warm-start `member` from the cache or by training; False (nothing done) when not `wait`ing and
        another process is training its base model."""
        model = build_model(member.spec.model, vocab_size=len(self.tokenizer), seed=member.t.warmstart.seed)
        cache_dir, seed = cache_folder(member.spec.output_root, member.spec.cache_dir), member.t.warmstart.seed
        key = warmstart_key(model, self.tokenizer, self.task, member.t.warmstart, seed)
        def announce() -> None:  # the process that trains a task's base model says so, once (not its waiters)
            if key not in self._announced:
                self._announced.add(key)
                print(f"warm start: the base model for {member.spec.dataset.name} (warm-start seed {seed}) is "
                      f"trained once and cached in {cache_dir}", flush=True)

        try:
            stats = warm_start(model, self.tokenizer, self.task, member.t.warmstart, cache_dir=cache_dir, seed=seed,
                               wait=wait, announce=announce)
        except LockHeld:
            return False
        self.model.load_member(member.index, model.state_dict())
        member.tracker.log_metrics({k: float(v) for k, v in stats.items()}, step=0)
        self.warm_start_stats[member] = stats
        return True

    def _restore(self, member: Member) -> None:
        source = ("trainer.resume", member.t.resume) if member.t.get("resume") else \
            ("trainer.branch_from", member.t.get("branch_from"))
        state = load_checkpoint(source[1], source[0])
        self.model.load_member(member.index, state["model"])
        load_member_optimizer_state(self.optimizer, self.params, member.index, state["optimizer"])
        member.data_rng.bit_generator.state = state["data_rng"]  # its sampling stream is keyed by the step alone
        member.best_eval = state["best_eval"]
        if source[0] == "trainer.resume" and state.get("rollout_engine"):  # a branch starts its engine afresh
            self._engine_states[member.index] = state["rollout_engine"]
        self.step_of[member.index] = int(state["step"])
        log.debug("member %d (%s) resumed from step %d", member.index, member.run_dir, state["step"])  # the job says it

    def member_state(self, member: Member) -> Dict:
        """Member's checkpoint, in the solo trainer's format."""
        state = {"model": self.model.member_state_dict(member.index),
                 "optimizer": member_optimizer_state(self.optimizer, self.params, member.index),
                 "data_rng": member.data_rng.bit_generator.state,
                 "torch_rng": torch.get_rng_state(), "step": self.step, "best_eval": member.best_eval}
        engine = self.engine.member_sync_state(member.index)
        return state if engine is None else {**state, "rollout_engine": engine}

    def member_model(self, index: int):
        """Member `index`'s current weights in a transformers Qwen3ForCausalLM (an export, not a view)."""
        model = build_model(self.model_cfg, vocab_size=len(self.tokenizer), seed=self.t.warmstart.seed)
        model.load_state_dict(self.model.member_state_dict(index))
        return model

    @property
    def alive(self) -> List[Member]:
        return [m for m in self.members if m.alive]

    def sampling_failed(self, where: str):
        """The engine's `on_failure`: a member whose sampling failed ends alone, the error saying where."""
        def failed(k: int, err: Exception) -> None:
            member = self.members[k]
            member.fail(RuntimeError(f"sampling failed {where} (trainer.temperature={member.t.temperature}): {err}"))
        return failed

    # -- the forward that predicts response tokens -------------------------------------------------------
    def _response_logits(self, prompts: torch.Tensor, prompt_index: torch.Tensor, tokens: torch.Tensor,
                         rows: torch.Tensor, grad: bool) -> torch.Tensor:
        """Logits [M, b, T, V] (float32, divided by each member's temperature) predicting each row's response
        tokens: prompts [M, U, P]; rows [M, b] the rows of each member; tokens [M, B, T] the responses."""
        members = torch.arange(rows.shape[0], device=rows.device).view(-1, 1)
        responses = tokens[members, rows][:, :, :-1]
        with torch.set_grad_enabled(grad):
            logits = self.model(prompts, prompt_index[rows], responses, fp8_train=self.precision.fp8_train)
        return logits / self.temperatures

    def _sample_prompts(self, count: int):
        """Each member's `count` problems from its own data stream: prompt ids [M, count, P] and answer ids
        [M, count, A] on the device, encoded for all members at once and copied without blocking."""
        problems = [p for m in self.members for p in self.task.sample_train(m.data_rng, count)]
        prompts = encode_prompts([p.prompt for p in problems])
        answers = answer_array([p.answer for p in problems])
        M = len(self.members)
        return (from_numpy(prompts.reshape(M, count, -1), self.device),
                from_numpy(answers.reshape(M, count, -1), self.device))

    # -- one RL step for every member ------------------------------------------------------------------
    def rl_step(self) -> Dict[int, Dict[str, float]]:
        t, started, M = self.t, time.perf_counter(), len(self.members)
        group, mini_batches = int(t.group_size), int(t.mini_batches)
        prompts, answers = self._sample_prompts(int(t.prompts_per_step))
        prompt_index = torch.arange(prompts.shape[1], device=self.device).repeat_interleave(group)
        self.engine.sync()
        topk = int(t.topk) if any(m.objective.needs_topk for m in self.alive) else 0
        rollout = self.engine.generate(prompts, self.max_new_tokens, [m.temperature for m in self.members],
                                     Draws(self.seeds, ROLLOUT, self.step + 1), [m.alive for m in self.members],
                                     topk=topk, prompt_index=prompt_index,
                                     on_failure=self.sampling_failed(f"at step {self.step + 1}"))
        rollout_seconds = time.perf_counter() - started
        rewards = token_rewards(rollout.tokens, rollout.mask, answers[:, prompt_index])  # [M, B]
        batch = StepTensors(rollout.tokens, rollout.logp, rollout.mask.float(), rollout.mask.sum(dim=2).long(),
                            rewards, grouped_advantages(self.members, rewards, group), rollout.topk_logp,
                            rollout.topk_ids)
        evaluating = (self.step + 1) % t.eval_every == 0
        stats = [TokenStats(m.objective) if evaluating else None for m in self.members]
        order = Draws(self.seeds, ORDER, self.step + 1).permutations(len(prompt_index))  # [M, B]
        size = -(-order.shape[1] // mini_batches)  # torch.chunk's: each member's rows.chunk(mini_batches)
        batches = [order[:, i * size:(i + 1) * size] for i in range(mini_batches) if i * size < order.shape[1]]
        members = torch.arange(M, device=batch.tokens.device).view(M, 1)
        old_logp, old_entropy = torch.empty_like(batch.logp), torch.empty_like(batch.logp)
        if len(batches) > 1:  # π' of the later mini-batches, before the first optimizer step (as the solo trainer)
            rest = order[:, size:]
            rest_logits = self._response_logits(prompts, prompt_index, batch.tokens, rest, grad=False)
            old_logp[members, rest] = token_logp(rest_logits, batch.tokens[members, rest])
            old_entropy[members, rest] = token_entropy(rest_logits)
            del rest_logits
        steps: List[Losses] = []
        norms: List[torch.Tensor] = []
        for index, rows in enumerate(batches):
            at = (members, rows)
            logits = self._response_logits(prompts, prompt_index, batch.tokens, rows, grad=True)
            logp = token_logp(logits, batch.tokens[at])
            if index == 0:  # the first mini-batch's π' is its own forward's (as the solo trainer)
                with torch.no_grad():
                    old_logp[at] = logp.detach()
                    old_entropy[at] = token_entropy(logits.detach())
            mini = MiniBatch(logp, batch.logp[at], batch.advantages[at], batch.mask[at], old_logp[at], logits,
                             batch.tokens[at], *((batch.topk_logp[at], batch.topk_ids[at]) if batch.topk_logp
                                                 is not None else ()))
            alive = [k for k, m in enumerate(self.members) if m.alive]
            for k in (k for k in alive if stats[k] is not None):
                with self.members[k].alone():
                    stats[k].add(logp[k], mini.rollout_logp[k], mini.advantages[k], mini.mask[k], mini.old_logp[k],
                                 logits[k], token_ids=mini.tokens[k])
            steps.append(self.batched_loss(mini, [k for k in alive if self.members[k].alive]))
            self.optimizer.zero_grad(set_to_none=True)
            if steps[-1].losses.requires_grad:
                steps[-1].losses.sum().backward()
            norms.append(clip_per_member(self.params, self.grad_clips))
            self.optimizer.step()
        out = host_metrics(self.members, steps, norms, step_metrics(batch, old_logp, old_entropy), self.step + 1,
                           started, rollout_seconds)
        for k, member in enumerate(self.members):
            if member.alive and stats[k] is not None:
                with member.alone():
                    member.tracker.log_artifact(stats[k].save(member.run_dir / "token_stats", self.step + 1),
                                                "token_stats")
        return {k: values for k, values in out.items() if self.members[k].alive}

    @functools.cached_property
    def batched_loss(self) -> BatchedLoss:
        return BatchedLoss(self.members, norm_len=self.max_new_tokens)

    @functools.cached_property
    def grad_clips(self) -> torch.Tensor:
        """Each member's trainer.grad_clip, [M] on the parameters' device."""
        return torch.tensor([float(m.t.grad_clip) for m in self.members], device=self.params[0].device)

    def evaluate(self) -> Dict[int, Dict[str, float]]:
        """Each member's held-out accuracy at its training temperature (fixed sampling seed) and greedy."""
        return evaluation.evaluate(self)

    def checkpoint_writers(self) -> List[CheckpointWriter]:
        return [CheckpointWriter(m.run_dir, m.tracker.flush, (lambda tr=m.tracker: tr.run_id),
                                 background=m.t.checkpoint_background) for m in self.members]
