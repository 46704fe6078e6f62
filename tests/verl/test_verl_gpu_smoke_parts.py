"""What of launchers/verl/gpu_smoke.sh can run without a GPU: its tiny model and tokenizer load and run in
the verl environment (transformers), the harness accepts its run (dry run of the same overrides), and its
checks (smoke_checks.py) pass on a run record that has what a GPU run must leave and fail on one that lacks it."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from harness.launchers.compose import compose
from harness.launchers.compose import validated as validate
from harness.tracking import open_tracker

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "launchers" / "verl" / "gpu_smoke.sh"
GOOD = {"train/loss": 0.1, "train/grad_norm": 0.2, "train/accuracy": 0.0, "eval/accuracy": 0.0,
        "train/entropy": 4.6, "objective/masked_frac": 0.0, "objective/abs_pi_minus_nu": 0.004,
        "perf/actor/max_memory_allocated_gb": 0.9}
GOOD_LOG = "'loss_mode': 'harness_dppo',\n'max_model_len': 288,\nInitializing a V1 LLM engine ... max_seq_len=288, ...\n"


def smoke_overrides(work: Path, verl_python: str) -> list:
    """The harness overrides of gpu_smoke.sh's run, read from the script itself."""
    text = SMOKE.read_text()
    block = text[text.index('"$HARNESS_PYTHON" -m harness trainer=verl'):text.index("2>&1 | tee")]
    block = block.replace("\\\n", " ").replace('"$HARNESS_PYTHON" -m harness', "")
    block = block.replace("$WORK", str(work)).replace("$VERL_PYTHON", verl_python)
    for name, number in re.findall(r"^([A-Z_]+_LEN)=(\d+)$", text, re.M):
        block = block.replace(f"${name}", number)
    return shlex.split(block)


def smoke_record(work: Path, metrics: dict, log: str) -> Path:
    """What a GPU run of gpu_smoke.sh leaves in its work folder: the tiny model (a safetensors header of 6,400
    parameters), the run folder with verl's launch.log and checkpoint record, the run in a real MLflow store."""
    model = work / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"num_hidden_layers": 2, "num_key_value_heads": 2, "head_dim": 64,
                                                   "num_attention_heads": 4}))
    header = json.dumps({"w": {"dtype": "F32", "shape": [100, 64], "data_offsets": [0, 25600]}}).encode()
    (model / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + bytes(25600))
    run_dir = work / "out" / "run"
    (run_dir / "verl").mkdir(parents=True)
    (run_dir / "verl" / "launch.log").write_text(log)
    (run_dir / "checkpoints").mkdir()
    (run_dir / "checkpoints" / "last.json").write_text(json.dumps({"step": 1, "run_id": "x"}))
    tracker = open_tracker(validate(compose([f"output_root={work / 'out'}"])), run_dir, run_name="smoke")
    tracker.log_metrics(metrics, step=1)
    tracker.finish("FINISHED")
    return work


def smoke_checks(work: Path):
    return subprocess.run([sys.executable, str(REPO / "launchers" / "verl" / "smoke_checks.py"), str(work), "288"],
                          capture_output=True, text=True, timeout=300, cwd=REPO)


def test_the_checks_pass_on_what_a_good_run_leaves(tmp_path):
    proc = smoke_checks(smoke_record(tmp_path, GOOD, GOOD_LOG))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.rstrip().splitlines()
    assert len(lines) == 7 and all(line.startswith("  PASS") for line in lines)
    assert "objective/abs_pi_minus_nu=0.004 in (0, 0.1)" in proc.stdout and "max_model_len 288" in proc.stdout


def test_the_checks_fail_on_what_the_first_gpu_run_would_have_left(tmp_path):
    # before issue 24: objective/* renamed verl/actor/objective/*, vLLM sized for the model's whole context
    bad = {k: v for k, v in GOOD.items() if not k.startswith("objective/")}
    bad.update({"verl/actor/objective/masked_frac": 0.0, "perf/actor/max_memory_allocated_gb": 1e-6})
    proc = smoke_checks(smoke_record(tmp_path, bad, GOOD_LOG.replace("288", "32768")))
    assert proc.returncode == 1
    failed = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("  FAIL")]
    assert failed == ["loss", "mu", "vllm", "peak"], proc.stdout


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
