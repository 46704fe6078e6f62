"""What of launchers/verl/gpu_smoke.sh can run without a GPU: its tiny model and tokenizer load and run in
the verl environment (transformers), and the harness accepts its run (dry run of the same overrides)."""
from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "launchers" / "verl" / "gpu_smoke.sh"


def smoke_overrides(work: Path, verl_python: str) -> list:
    """The harness overrides of gpu_smoke.sh's run, read from the script itself."""
    text = SMOKE.read_text()
    block = text[text.index('"$HARNESS_PYTHON" -m harness trainer=verl'):text.index("2>&1 | tee")]
    block = block.replace("\\\n", " ").replace('"$HARNESS_PYTHON" -m harness', "")
    block = block.replace("$WORK", str(work)).replace("$VERL_PYTHON", verl_python)
    return shlex.split(block)


def test_the_script_is_valid_bash_and_refuses_without_an_environment(tmp_path):
    assert subprocess.run(["bash", "-n", str(SMOKE)]).returncode == 0
    proc = subprocess.run(["bash", str(SMOKE)], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "SMOKE_DIR": str(tmp_path / "w")})
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == ("gpu smoke: FAILED: give the verl environment's python "
                                                    "(argument or HARNESS_VERL_PYTHON)")


@pytest.mark.verl
def test_tiny_model_loads_chats_and_the_harness_accepts_the_run(verl_python, tmp_path, run_harness):
    model = tmp_path / "model"
    subprocess.run([str(verl_python), str(REPO / "launchers" / "verl" / "make_tiny_model.py"), str(model)],
                   check=True, capture_output=True, text=True, timeout=600)
    check = subprocess.run([str(verl_python), "-c", f"""
import json, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
tok = AutoTokenizer.from_pretrained({str(model)!r})
model = AutoModelForCausalLM.from_pretrained({str(model)!r})
text = tok.apply_chat_template([{{"role": "user", "content": "What is 3+4?"}}], tokenize=False, add_generation_prompt=True)
ids = tok(text, return_tensors="pt").input_ids
logits = model(ids).logits
print(json.dumps({{"text": text, "roundtrip": tok.decode(ids[0]), "vocab": logits.shape[-1], "eos": tok.eos_token,
                   "finite": bool(torch.isfinite(logits).all()), "head_dim": model.config.head_dim}}))
"""], check=True, capture_output=True, text=True, timeout=600)
    out = json.loads(check.stdout.strip().splitlines()[-1])
    assert out["text"] == "<|im_start|>user\nWhat is 3+4?<|im_end|>\n<|im_start|>assistant\n"
    assert out["roundtrip"] == out["text"] and out["eos"] == "<|im_end|>"
    assert out["finite"] and out["head_dim"] == 64 and out["vocab"] == 3 + 100

    work = tmp_path
    (work / "train.jsonl").write_text(json.dumps({"problem": "1+1?", "answer": "2"}) + "\n")
    (work / "eval.jsonl").write_text(json.dumps({"problem": "1+2?", "answer": "3"}) + "\n")
    proc = run_harness(*smoke_overrides(work, str(verl_python)), "--dry-run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"actor_rollout_ref.model.path={model}" in proc.stdout
    assert "loss_mode=harness_dppo" in proc.stdout and "trainer.n_gpus_per_node=1" in proc.stdout
