"""Every harness objective, registered in verl, gives harness.algorithms' loss and gradient through verl's
own loss entry point (in the verl environment; tests/verl/verl_side/check_losses.py does the work).

Covered: 32 objective/parameter variants x anchor (rollout; recompute uncapped; recompute C_is=3) x the
4 aggregations x (float64 without global-batch info, float32 with the info verl's workers set). The anchor
mapping is exercised end to end: anchor=rollout feeds μ as verl's old_log_prob (bypass mode), anchor=
recompute feeds π' and verl's own rollout IS weights computed with the settings objective.py generates.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.verl

# Measured (verl 0.9.1, torch 2.13.0 CPU): every loss and gradient is bit-identical (difference 0.0),
# because the plugin evaluates the same objective and verl's agg_loss / IS weights match the harness's
# aggregate / anchor rule term for term. The bounds leave room for reordered float arithmetic.
LOSS_TOL = {"float64": 1e-12, "float32": 1e-5}
GRAD_REL_TOL = {"float64": 1e-10, "float32": 1e-5}


@pytest.fixture(scope="module")
def results(run_verl_side):
    return run_verl_side("check_losses.py")


def test_every_objective_matches_through_verls_loss_entry_point(results):
    from harness.algorithms import list_objectives

    cases = results["cases"]
    assert {c["objective"] for c in cases} == set(list_objectives())
    assert len(cases) == 768
    bad = [c for c in cases if c["loss_abs_diff"] > LOSS_TOL[c["dtype"]] * max(1.0, abs(c["loss_harness"]))
           or c["grad_max_rel_diff"] > GRAD_REL_TOL[c["dtype"]]]
    assert not bad, bad[:3]
    assert all(c["grad_nonzero"] > 0 for c in cases)  # the comparison is not vacuous
    assert all(c["metrics_ok"] for c in cases)
    worst = {dt: max(c["grad_max_abs_diff"] for c in cases if c["dtype"] == dt) for dt in LOSS_TOL}
    print(f"max |grad diff| over {len(cases)} cases: {worst}")


def test_both_anchors_and_caps_are_covered(results):
    seen = {(c["anchor"], c["is_cap"]) for c in results["cases"]}
    assert seen == {("rollout", None), ("recompute", None), ("recompute", 3.0)}
    assert {c["agg"] for c in results["cases"]} == {"token-mean", "seq-mean-token-mean", "seq-mean-token-sum",
                                                   "seq-mean-token-sum-norm"}


def test_verl_builtins_match_only_with_the_documented_settings(results):
    """launchers/verl/README.md: verl's dppo_tv/dppo_kl truncate the ratio at clip_ratio_c (3 by default),
    its cispo clips both sides, its vanilla always applies the dual clip."""
    checks = {(c["verl_loss"], tuple(sorted(c["harness_params"].items()))): c for c in results["builtin"]}
    for key in [("dppo_tv", (("delta", 0.2),)), ("dppo_kl", (("delta", 0.05), ("divergence", "binary_kl"))),
                ("cispo", (("trunc_c", 3.0),)), ("vanilla", (("dual_clip_c", 3.0),))]:
        c = checks[key]
        assert c["grad_max_abs_diff_matched"] <= 1e-12 * max(1.0, c["grad_scale"]), c
    for key in [("dppo_tv", (("delta", 0.2),)), ("dppo_kl", (("delta", 0.05), ("divergence", "binary_kl"))),
                ("cispo", (("trunc_c", 3.0),))]:
        assert checks[key]["grad_max_abs_diff_verl_default"] > 1e-3 * checks[key]["grad_scale"], checks[key]
    plain_grpo = checks[("vanilla", ())]
    assert plain_grpo["grad_max_abs_diff_matched"] > 1e-3 * plain_grpo["grad_scale"]  # dual clip on in verl
