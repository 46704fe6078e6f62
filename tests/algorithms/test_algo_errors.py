"""Bad input is refused with a one-line ValueError that names the parameter or tensor."""
from __future__ import annotations

import pytest
import torch

from harness.algorithms import build_objective, default_params, validate_params


@pytest.mark.parametrize("name,params,needle", [
    ("foo", {}, "unknown objective 'foo'; known: bandpo, cispo"),
    ("dppo", {"dleta": 0.1}, "unknown parameter 'dleta' for objective 'dppo'; allowed: anchor, delta"),
    ("dppo", {"delta": -0.1}, "algo.delta=-0.1 is out of range: must be > 0"),
    ("drpo", {"delta": 0}, "algo.delta=0 is out of range: must be > 0"),
    ("spo", {"eps": 0.0}, "algo.eps=0.0 is out of range"),
    ("dppo", {"topk": 0}, "algo.topk=0 is out of range: must be an integer >= 1"),
    ("dppo", {"topk": 2.5}, "algo.topk=2.5 has the wrong type"),
    ("grpo", {"eps_high": 1.0}, "algo.eps_high=1.0 is out of range: must be >= 0 and < 1"),
    ("grpo", {"eps_low": 1.5}, "algo.eps_low=1.5 is out of range"),
    ("grpo", {"relax_alpha": 1.5}, "algo.relax_alpha=1.5 is out of range: must be >= 0 and <= 1"),
    ("grpo", {"relax_alpha": -0.1}, "algo.relax_alpha=-0.1"),
    ("grpo", {"relax": "middle"}, "algo.relax='middle' is not allowed; choose one of both, high, low"),
    ("bandpo", {"band": "js"}, "algo.band='js' is not allowed; choose one of tv, chi2, kl"),
    ("bandpo", {"hi_max": 0.5}, "algo.hi_max=0.5 is out of range: must be >= 1"),
    ("dppo", {"divergence": "xx"},
     "algo.divergence='xx' is not allowed; choose one of binary_tv, binary_kl, topk_tv, topk_kl"),
    ("grpo", {"anchor": "old"}, "algo.anchor='old' is not allowed; choose one of rollout, recompute"),
    ("grpo", {"dual_clip_c": 1.0}, "algo.dual_clip_c=1.0 is out of range: must be > 1"),
    ("cispo", {"trunc_c": -1}, "algo.trunc_c=-1 is out of range"),
    ("grpo", {"is_cap": 0.0}, "algo.is_cap=0.0 is out of range"),
    ("spo", {"eps": "0.2"}, "algo.eps='0.2' has the wrong type"),
    ("kl_reg", {"adv_weighted": 1}, "algo.adv_weighted=1 has the wrong type"),
    ("grpo", {"eps_low": True}, "algo.eps_low=True has the wrong type"),
    ("grpo", {"delta": 0.1}, "unknown parameter 'delta' for objective 'grpo'"),
])
def test_bad_params(name, params, needle):
    for call in (lambda: validate_params(name, params), lambda: build_objective(name, **params)):
        with pytest.raises(ValueError) as err:
            call()
        msg = str(err.value)
        assert needle in msg and "\n" not in msg, msg


def test_valid_values_normalised_and_idempotent():
    full = validate_params("dppo", {"delta": 1, "divergence": "topk_kl"})
    assert full["delta"] == 1.0 and isinstance(full["delta"], float)
    assert validate_params("dppo", full) == full
    assert validate_params("dppo", {"divergence": "binary_kl"})["delta"] == 0.05
    assert validate_params("dppo", {})["delta"] == 0.15
    assert validate_params("grpo", {"name": "grpo"}) == default_params("grpo")
    with pytest.raises(ValueError, match="algo.name"):
        validate_params("grpo", {"name": "dppo"})


def _t(*shape):
    return torch.zeros(*shape, dtype=torch.float64)


def test_shape_mismatches_name_the_tensors():
    obj = build_objective("grpo")
    cases = [
        (dict(logp=_t(2, 5), rollout_logp=_t(2, 4), advantages=_t(2)), "rollout_logp has shape (2, 4)"),
        (dict(logp=_t(2, 5), rollout_logp=_t(2, 5), advantages=_t(3)), "advantages has shape (3,)"),
        (dict(logp=_t(2, 5), rollout_logp=_t(2, 5), advantages=_t(2), response_mask=_t(5, 2)),
         "response_mask has shape (5, 2)"),
        (dict(logp=_t(2, 5), rollout_logp=_t(2, 5), advantages=_t(2), recomputed_logp=_t(2, 6)),
         "recomputed_logp has shape (2, 6)"),
        (dict(logp=_t(2, 5), rollout_logp=_t(2, 5), advantages=_t(2), logits=_t(2, 4, 9)),
         "logits has shape (2, 4, 9)"),
    ]
    for kwargs, needle in cases:
        with pytest.raises(ValueError, match="shape mismatch") as err:
            obj.compute(**kwargs)
        assert needle in str(err.value), str(err.value)


def test_topk_objective_without_topk_inputs():
    obj = build_objective("dppo", divergence="topk_tv")
    assert obj.needs_topk and not build_objective("dppo").needs_topk
    with pytest.raises(ValueError, match="missing: rollout_topk_logp, rollout_topk_ids, logits"):
        obj.compute(_t(2, 5), _t(2, 5), _t(2))
    with pytest.raises(ValueError, match="missing: logits"):
        obj.compute(_t(2, 5), _t(2, 5), _t(2), rollout_topk_logp=_t(2, 5, 3),
                    rollout_topk_ids=torch.zeros(2, 5, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="rollout_topk_ids has shape"):
        obj.compute(_t(2, 5), _t(2, 5), _t(2), rollout_topk_logp=_t(2, 5, 3),
                    rollout_topk_ids=torch.zeros(2, 5, 4, dtype=torch.long), logits=_t(2, 5, 7))


@pytest.mark.parametrize("name", ["grpo", "minirl", "dppo", "bandpo"])
def test_recompute_without_recomputed_logp(name):
    obj = build_objective(name, anchor="recompute")
    with pytest.raises(ValueError, match="anchor=recompute needs recomputed_logp"):
        obj.compute(_t(2, 5), _t(2, 5), _t(2))
