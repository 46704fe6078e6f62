#!/usr/bin/env bash
# GPU smoke test of trainer=verl: ONE real verl training step (vLLM rollout, FSDP update) of a tiny random
# Qwen3 on one GPU, with the harness loss (algo=dppo as verl policy loss harness_dppo) plugged in and the
# metrics reaching the run's MLflow store. Self-checking: exits 0 and prints "gpu smoke: OK" only if every
# check below passes; otherwise the first failed check is the last line (exit 1).
#
#   launchers/verl/gpu_smoke.sh /path/to/verl-env/bin/python      # from the repository root
#
# Needs: one CUDA GPU; the verl GPU environment (launchers/verl/requirements-gpu.txt) at the given python
# (or $HARNESS_VERL_PYTHON); the harness environment at $HARNESS_PYTHON (default .venv/bin/python). No
# network: the model and data are made locally. About 3-6 minutes (vLLM start-up dominates). Work folder:
# $SMOKE_DIR (default a new /tmp/verl-smoke.*), kept for inspection.
set -euo pipefail
cd "$(dirname "$0")/../.."
VERL_PYTHON=${1:-${HARNESS_VERL_PYTHON:-}}
HARNESS_PYTHON=${HARNESS_PYTHON:-.venv/bin/python}
WORK=${SMOKE_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/verl-smoke.XXXXXX")}
fail() { echo "gpu smoke: FAILED: $*" >&2; exit 1; }
[ -n "$VERL_PYTHON" ] || fail "give the verl environment's python (argument or HARNESS_VERL_PYTHON)"
[ -x "$HARNESS_PYTHON" ] || fail "no harness environment at $HARNESS_PYTHON (set HARNESS_PYTHON)"
mkdir -p "$WORK"
echo "gpu smoke: work folder $WORK"

# 1. the machine and the environment: a GPU torch sees, verl/vllm/ray importable at the versions the harness expects
"$VERL_PYTHON" - <<'PY' || fail "the verl environment cannot see a GPU or lacks verl/vllm"
import torch, verl, vllm, ray
assert torch.cuda.is_available(), "torch sees no CUDA GPU"
print(f"gpu smoke: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, verl {verl.__version__}, "
      f"vllm {vllm.__version__}, ray {ray.__version__}")
PY
"$HARNESS_PYTHON" -c "
from harness.trainers.verl.environment import check_environment
check_environment('$VERL_PYTHON', 'gpu_smoke.sh')" || fail "the verl environment is not the one the harness generates for"

# 2. a tiny random model with its own tokenizer, and tiny arithmetic data (train and eval), all local
"$VERL_PYTHON" launchers/verl/make_tiny_model.py "$WORK/model" || fail "could not build the tiny model"
"$HARNESS_PYTHON" - "$WORK" <<'PY'
import json, random, sys
rng = random.Random(0)
for name, n in (("train", 64), ("eval", 8)):
    with open(f"{sys.argv[1]}/{name}.jsonl", "w") as f:
        for _ in range(n):
            a, b = rng.randint(0, 9), rng.randint(0, 9)
            f.write(json.dumps({"problem": f"What is {a}+{b}?", "answer": str(a + b)}) + "\n")
PY

# 3. one verl step through the harness (launcher=local, this GPU), tracked in a SQLite MLflow store under WORK
set +e
HARNESS_OUTPUT_ROOT="$WORK/out" "$HARNESS_PYTHON" -m harness trainer=verl model=tiny_qwen3 \
    model.path="$WORK/model" model.max_position_embeddings=512 algo=dppo tracking=sqlite \
    trainer.steps=1 trainer.prompts_per_step=4 trainer.group_size=2 trainer.mini_batches=1 \
    trainer.max_new_tokens=32 trainer.eval_every=1 trainer.checkpoint_every=1 \
    trainer.verl.python="$VERL_PYTHON" trainer.verl.local_gpus=1 trainer.verl.micro_batch_per_gpu=4 \
    trainer.verl.max_prompt_length=256 trainer.verl.eval_samples=1 trainer.verl.gpu_memory_utilization=0.3 \
    "trainer.verl.data.train=[$WORK/train.jsonl]" "trainer.verl.data.eval={smoke: [$WORK/eval.jsonl]}" \
    2>&1 | tee "$WORK/harness.log"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 0 ] || fail "the harness run exited with $rc (see $WORK/harness.log and <run>/verl/launch.log)"

# 4. what must have happened: verl ran the harness loss on the GPU; its metrics are in the MLflow run
"$HARNESS_PYTHON" - "$WORK/out" <<'PY' || fail "the run's record is incomplete (see above)"
import json, sys
from pathlib import Path
import mlflow

root = Path(sys.argv[1])
launch = next(root.rglob("verl/launch.log"), None)
assert launch is not None, f"no verl/launch.log under {root}"
run_dir = launch.parent.parent
log = launch.read_text(errors="replace")
assert "policy_loss.loss_mode=harness_dppo" in (run_dir / "verl" / "launch.sh").read_text(), "loss not plugged in"
db = next(root.rglob("*.db"), None)
assert db is not None, f"no MLflow SQLite store under {root}"
client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{db}")
runs = [r for e in client.search_experiments() for r in client.search_runs([e.experiment_id])]
runs = [r for r in runs if "objective/masked_frac" in r.data.metrics]
assert runs, f"no MLflow run in {db} has objective/masked_frac (the harness loss's own metric)"
metrics = runs[0].data.metrics
for key in ("train/loss", "train/grad_norm", "train/accuracy", "objective/masked_frac", "eval/accuracy"):
    assert key in metrics, f"MLflow run lacks {key}; has {sorted(metrics)[:40]}"
history = client.get_metric_history(runs[0].info.run_id, "train/loss")
assert [m.step for m in history] == [1], f"train/loss steps {[m.step for m in history]}, expected one step"
assert runs[0].info.status == "FINISHED", f"MLflow run status {runs[0].info.status}"
last = json.loads((run_dir / "checkpoints" / "last.json").read_text())
assert last["step"] == 1, f"checkpoints/last.json: {last}"
print(f"gpu smoke: MLflow run {runs[0].info.run_id}: train/loss={metrics['train/loss']:.4g} "
      f"grad_norm={metrics['train/grad_norm']:.4g} masked_frac={metrics['objective/masked_frac']:.3g} "
      f"eval/accuracy={metrics['eval/accuracy']:.3g}")
PY
echo "gpu smoke: OK"
