"""Every registered objective computed for three runs at once (distinct thresholds per run, stacked [G, B, T])
gives each run the J, gradient and metrics of its own one-run `compute`."""
from __future__ import annotations

import math

import pytest
import torch

from harness.algorithms import SPECS, build_objective, default_params
from harness.algorithms.grouped import ObjectiveGroup, group_objectives
from harness.algorithms.metrics import metrics_from_row

G, B, T, V, K = 3, 4, 6, 9, 5
SCALE = (1.0, 1.3, 0.7)


def variants(name: str):
    """(label, [params of run g]) with every real threshold distinct per run; both anchors; each choice."""
    base = default_params(name)
    choices = [{}]
    if name == "dppo":
        choices = [{"divergence": d} for d in ("binary_tv", "binary_kl", "topk_tv", "topk_kl")]
        choices.append({"delta_low": 0.05, "delta_high": 0.3})
    if name == "bandpo":
        choices = [{"band": band} for band in ("tv", "chi2", "kl")] + [{"band": "kl", "relax": True}]
    if name in ("grpo", "minirl"):
        choices.append({"dual_clip_c": 3.0, "relax": "high"})
    for choice in choices:
        for anchor in ("rollout", "recompute"):
            runs = []
            for g in range(G):
                params = {**choice, "anchor": anchor}
                if anchor == "recompute":
                    params["is_cap"] = 2.0 + g
                for key, default in {**base, **choice}.items():
                    value = choice.get(key, default)
                    if key == "delta" and value is None:
                        value = 0.15
                    if isinstance(value, float) and key != "is_cap":
                        params[key] = (0.1 * g if key == "relax_alpha" else value * SCALE[g])
                runs.append(params)
            yield f"{choice}-{anchor}", runs


def inputs(seed: int):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(G, B, T, V, generator=gen, dtype=torch.float64) * 2
    tokens = torch.randint(0, V, (G, B, T), generator=gen)
    rollout_logits = logits + 0.3 * torch.randn(G, B, T, V, generator=gen, dtype=torch.float64)
    rollout_all = torch.log_softmax(rollout_logits, -1)
    topk_logp, topk_ids = rollout_all.topk(K, dim=-1)
    mask = torch.rand(G, B, T, generator=gen) > 0.2
    mask[:, :, 0] = True
    return {"logits": logits, "token_ids": tokens, "rollout_logp": rollout_all.gather(-1, tokens[..., None])[..., 0],
            "recomputed_logp": torch.log_softmax(logits + 0.1 * torch.randn(G, B, T, V, generator=gen,
                                                                          dtype=torch.float64), -1)
            .gather(-1, tokens[..., None])[..., 0],
            "advantages": torch.randn(G, B, generator=gen, dtype=torch.float64), "response_mask": mask,
            "rollout_topk_logp": topk_logp, "rollout_topk_ids": topk_ids}


def logp_of(logits, tokens):
    return torch.log_softmax(logits, -1).gather(-1, tokens[..., None])[..., 0]


CASES = [(name, label, runs) for name in sorted(SPECS) for label, runs in variants(name)]


@pytest.mark.parametrize("name, label, runs", CASES, ids=[f"{n}-{lab}" for n, lab, _ in CASES])
def test_a_group_computes_what_each_run_computes_alone(name, label, runs):
    objectives = [build_objective(name, **params) for params in runs]
    ((positions, group),) = group_objectives(objectives)
    assert positions == list(range(G))
    x = inputs(seed=len(label))
    logits = x.pop("logits").requires_grad_(True)
    logp = logp_of(logits, x["token_ids"])
    J, rows, keys = group.compute_rows(logp, logits=logits, **x)
    (grad,) = torch.autograd.grad(J.sum(), logits)
    host = rows.cpu().tolist()
    for g, objective in enumerate(objectives):
        one = logits.detach()[g].clone().requires_grad_(True)
        J_g, metrics = objective.compute(logp_of(one, x["token_ids"][g]), logits=one, **{k: v[g] for k, v in x.items()})
        (grad_g,) = torch.autograd.grad(J_g.sum(), one)
        torch.testing.assert_close(J[g], J_g, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(grad[g], grad_g, rtol=1e-10, atol=1e-12)
        grouped = metrics_from_row(keys, host[g])
        assert grouped.keys() == metrics.keys()
        for key, value in metrics.items():
            assert math.isclose(grouped[key], value, rel_tol=1e-9, abs_tol=1e-12), (g, key, grouped[key], value)


def test_thresholds_that_differ_are_tensors_and_kinds_do_not_mix():
    runs = [build_objective("dppo", delta=d) for d in (0.1, 0.2)] + [build_objective("drpo", delta=0.2)]
    groups = group_objectives(runs + [build_objective("dppo", delta=0.1, divergence="binary_kl")])
    assert [positions for positions, _ in groups] == [[0, 1], [2], [3]]
    stacked = groups[0][1].stacked(torch.zeros(1))
    assert stacked.params["delta"].shape == (2, 1, 1) and stacked.params["topk"] == 20
    with pytest.raises(ValueError, match="different kinds"):
        ObjectiveGroup(runs)
