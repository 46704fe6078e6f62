"""One RL step of the built-in trainer (the ensemble of one) against that step written out here: on the
step's own rollout, rewards and group advantages, log-probs from one plain forward of the transformers model
over each row's whole sequence, the objective from `harness.algorithms`, one clipped AdamW step. The logged
metrics and the updated weights must agree, and the rollout's log μ must be the model's own (fp32). With
several mini-batches, π' is the model before the step and later mini-batches are stale."""
from __future__ import annotations

import copy

import pytest
import torch
from omegaconf import OmegaConf

from harness.algorithms import aggregate, build_objective, compute_advantages
from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.tracking.local_tracker import Tracker
from harness.trainers.builtin.model import token_logprobs
from harness.trainers.builtin.policy import masked_mean, token_entropy
from harness.trainers.builtin.completions import completions_text
from harness.trainers.builtin.tokenizer import encode_batch
from harness.trainers.ensemble.sampling import ORDER, Draws
from harness.trainers.ensemble.trainer import EnsembleTrainer


@pytest.mark.parametrize("algo, mini_batches", [("dppo", 2), ("grpo", 1)])
def test_one_step_is_the_objective_on_its_own_rollout(tmp_path, warm_cache, algo, mini_batches):
    overrides = [f"output_root={tmp_path}", f"cache_dir={warm_cache}", "debug=quick", "precision=fp32",
                 f"trainer.mini_batches={mini_batches}", "trainer.eval_every=100", f"algo={algo}"]
    cfg = validate(compose(overrides), overrides)
    t = cfg.trainer
    trainer = EnsembleTrainer([(cfg, tmp_path / "run", Tracker(tmp_path / "run"))])
    model = trainer.member_model(0)  # the weights before the step
    data_rng = copy.deepcopy(trainer.members[0].data_rng)
    rollouts = []
    generate = trainer.engine.generate
    trainer.engine.generate = lambda *a, **kw: rollouts.append(generate(*a, **kw)) or rollouts[-1]
    got = trainer.rl_step()[0]

    (rollout,) = rollouts[0].members()
    problems = trainer.task.sample_train(data_rng, t.prompts_per_step)
    prompts = encode_batch(trainer.tokenizer, [p.prompt for p in problems]).repeat_interleave(t.group_size, dim=0)
    texts = completions_text(trainer.tokenizer, rollout)
    rewards = torch.tensor([trainer.task.reward(problems[i // t.group_size], text) for i, text in enumerate(texts)])
    advantages = compute_advantages(rewards.view(-1, t.group_size), t.advantage).reshape(-1)
    tokens, mask = rollout.tokens, rollout.mask
    with torch.no_grad():
        old_logp, old_logits = token_logprobs(model, prompts, tokens, temperature=float(t.temperature))
    torch.testing.assert_close(rollout.logp, old_logp * mask, atol=1e-5, rtol=1e-5)

    params = {k: v for k, v in OmegaConf.to_container(cfg.algo, resolve=True).items() if k != "name"}
    objective = build_objective(cfg.algo.name, **params)
    assert not objective.needs_topk
    optimizer = torch.optim.AdamW(model.parameters(), lr=t.lr, weight_decay=t.weight_decay)
    expected = {}
    order = Draws(torch.tensor([cfg.seed]), ORDER, 1).permutations(len(tokens))[0]  # the run's stream at step 1
    for rows in order.chunk(mini_batches):
        logp, logits = token_logprobs(model, prompts[rows], tokens[rows], temperature=float(t.temperature))
        J, metrics = objective.compute(logp, rollout.logp[rows], advantages[rows], response_mask=mask[rows],
                                       recomputed_logp=old_logp[rows], logits=logits, token_ids=tokens[rows])
        loss = -aggregate(J, mask[rows], t.loss_agg, norm_len=trainer.max_new_tokens)
        optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip)
        optimizer.step()
        for key, value in {**metrics, "train/loss": loss.item(), "train/grad_norm": grad_norm.item()}.items():
            expected[key] = expected.get(key, 0.0) + float(value) / mini_batches
    expected.update({"train/reward": rewards.mean().item(), "train/accuracy": (rewards > 0.5).float().mean().item(),
                     "train/response_length": mask.sum(1).mean().item(),
                     "train/entropy": masked_mean(token_entropy(old_logits), mask),
                     "train/mismatch": masked_mean((rollout.logp.exp() - old_logp.exp()).abs(), mask),
                     "train/advantage_abs": advantages.abs().mean().item()})
    assert expected["train/grad_norm"] > 0
    assert set(got) - set(expected) == {"perf/step_time_s", "perf/rollout_time_s", "perf/tokens_per_s"}
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-4, abs=1e-5), key
    for name, weight in model.state_dict().items():
        # Adam's first step moves each weight by about lr·sign(grad): a gradient within rounding of 0 may
        # round to the other sign (1 weight in 16k, 1.8e-6 apart), a wrong step is ~lr off
        torch.testing.assert_close(trainer.model.member_state_dict(0)[name], weight, atol=float(t.lr) / 20, rtol=0,
                                   msg=name)
