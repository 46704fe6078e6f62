#!/usr/bin/env bash
# GPU smoke test of trainer=verl: ONE real verl training step (vLLM rollout, FSDP update) of a tiny random
# Qwen3 on one GPU, with the harness loss (algo=dppo as verl policy loss harness_dppo) plugged in and the
# metrics reaching the run's MLflow store. Self-checking: ends with a one-screen summary, one PASS/FAIL line
# per check (launchers/verl/smoke_checks.py: the harness loss's objective/* metrics in MLflow after one step,
# μ reaching the loss, vLLM's max_model_len, the actor's peak memory against the preflight), then
# "gpu smoke: OK" (exit 0) or "gpu smoke: FAILED: ..." (exit 1).
#
#   launchers/verl/gpu_smoke.sh /path/to/verl-env/bin/python      # from the repository root
#
# Needs: one CUDA GPU; the verl GPU environment (launchers/verl/requirements-gpu.txt) at the given python
# (or $HARNESS_VERL_PYTHON); the harness environment at $HARNESS_PYTHON (default .venv/bin/python). No
# network: the model and data are made locally. The run is stopped after $SMOKE_TIMEOUT_S (default 480 s: the
# whole check fits 9 minutes; vLLM start-up dominates). Work folder: $SMOKE_DIR (default a new
# /tmp/verl-smoke.*), kept for inspection.
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

# 1. the machine and the environment: a driver that runs the torch's CUDA, a GPU torch sees, verl/vllm/ray
# importable at the versions the harness expects
PYTHONPATH=. "$VERL_PYTHON" -m harness.trainers.verl.driver || fail "the NVIDIA driver is too old (the line above)"
"$VERL_PYTHON" - <<'PY' > "$WORK/environment.txt" || fail "the verl environment cannot see a GPU or lacks verl/vllm"
import torch, verl, vllm, ray
assert torch.cuda.is_available(), "torch sees no CUDA GPU"
print(f"{torch.cuda.get_device_name(0)} ({torch.cuda.get_device_properties(0).total_memory / 1e9:.0f} GB), "
      f"torch {torch.__version__} (CUDA {torch.version.cuda}), verl {verl.__version__}, vllm {vllm.__version__}, "
      f"ray {ray.__version__}")
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
# (stopped with SIGINT on time: the harness then stops the batch script, whose trap stops Ray)
PROMPT_LEN=256
RESPONSE_LEN=32
HARNESS_OUTPUT_ROOT="$WORK/out" timeout -s INT -k 60 "${SMOKE_TIMEOUT_S:-480}" "$HARNESS_PYTHON" -m harness trainer=verl model=tiny_qwen3 \
    model.path="$WORK/model" model.max_position_embeddings=512 algo=dppo tracking=sqlite \
    trainer.steps=1 trainer.prompts_per_step=4 trainer.group_size=2 trainer.mini_batches=1 \
    trainer.max_new_tokens=$RESPONSE_LEN trainer.eval_every=1 trainer.checkpoint_every=1 \
    trainer.verl.python="$VERL_PYTHON" trainer.verl.local_gpus=1 trainer.verl.micro_batch_per_gpu=4 \
    trainer.verl.max_prompt_length=$PROMPT_LEN trainer.verl.eval_samples=1 trainer.verl.gpu_memory_utilization=0.3 \
    "trainer.verl.data.train=[$WORK/train.jsonl]" "trainer.verl.data.eval={smoke: [$WORK/eval.jsonl]}" \
    2>&1 | tee "$WORK/harness.log"
rc=${PIPESTATUS[0]}
set -e
run_s=$SECONDS

# 4. what must have happened, one line per check (launchers/verl/smoke_checks.py), then the verdict
echo
echo "gpu smoke summary ($WORK)"
echo "  env   $(cat "$WORK/environment.txt")"
echo "  time  ${run_s} s to the end of the run (limit ${SMOKE_TIMEOUT_S:-480} s); harness exit code $rc"
checks_rc=0
"$HARNESS_PYTHON" launchers/verl/smoke_checks.py "$WORK" $((PROMPT_LEN + RESPONSE_LEN)) || checks_rc=$?
[ "$rc" = 0 ] || fail "the harness run exited with $rc (124: stopped after ${SMOKE_TIMEOUT_S:-480} s; see $WORK/harness.log and <run>/verl/launch.log)"
[ "$checks_rc" = 0 ] || fail "a check above failed"
echo "gpu smoke: OK"
