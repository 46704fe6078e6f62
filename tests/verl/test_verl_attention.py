"""The actor's attention (trainer.verl.attention): by default torch's sdpa, so the GPU environment needs no
flash-attn (no wheel exists for torch 2.11 / CUDA 13); flash_attention_2 on request, then the environment
must have flash-attn. Checked through verl's own model config and the actor load of its fsdp engine, on the
tiny Qwen3 of the GPU smoke test, in the verl test environment (which, like a GPU environment built from
launchers/verl/requirements-gpu.txt, has no flash-attn)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.trainers.verl.overrides import config_name
from harness.trainers.verl.plan import build_plan

REPO = Path(__file__).resolve().parents[2]
CASES = {"default": ["trainer=verl"], "flash": ["trainer=verl", "trainer.verl.attention=flash_attention_2"]}


def overrides_of(tmp_path: Path, *args: str) -> dict:
    plan = build_plan(validate(compose(list(args))), tmp_path / "run")
    return dict(o.split("=", 1) for o in plan.command[4:])


def test_sdpa_trains_on_padded_micro_batches_and_flash_attention_on_packed_ones(tmp_path):
    sdpa, flash = overrides_of(tmp_path, "trainer=verl"), overrides_of(tmp_path, *CASES["flash"])
    ar = "actor_rollout_ref.model"
    assert sdpa[f"+{ar}.override_config.attn_implementation"] == "sdpa"
    assert sdpa[f"{ar}.use_remove_padding"] == "false"  # verl packs sequences through flash-attn's varlen kernels
    assert flash[f"+{ar}.override_config.attn_implementation"] == "flash_attention_2"
    assert flash[f"{ar}.use_remove_padding"] == "true"
    megatron = overrides_of(tmp_path, "experiment=dppo_moe_qwen3_30b")
    assert megatron[f"{ar}.use_remove_padding"] == "true"  # TransformerEngine's attention packs without flash-attn


@pytest.mark.verl
def test_verl_loads_and_runs_the_actor_with_the_generated_attention(verl_python, run_verl_side, tmp_path):
    model = tmp_path / "model"
    subprocess.run([str(verl_python), str(REPO / "launchers" / "verl" / "make_tiny_model.py"), str(model)],
                   check=True, capture_output=True, text=True, timeout=600)
    cases = {}
    for label, overrides in CASES.items():
        cfg = validate(compose(overrides))
        cases[label] = {"config_name": config_name(cfg), "overrides": build_plan(cfg, tmp_path / label).command[4:]}
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    out = run_verl_side("check_attention.py", str(model), str(tmp_path / "cases.json"))
    assert out["default"] == {"ok": True, "attn_implementation": "sdpa", "use_remove_padding": False,
                              "loaded": "sdpa", "finite": True}
    flash = out["flash"]
    assert flash["ok"] and flash["attn_implementation"] == "flash_attention_2" and flash["use_remove_padding"]
    assert "FlashAttention2 has been toggled on" in flash["load_error"]  # a GPU environment without flash-attn
