#!/usr/bin/env bash
# Create the CPU environment the verl tests run in (tests/verl, marker `verl`): torch 2.13.0 (CPU) and
# verl 0.9.1 without its dependency closure (no vLLM, no CUDA), plus the few packages its loss and config
# modules import (requirements-cpu.txt). harness itself is not installed: the tests put the repository
# on PYTHONPATH.
#
#   launchers/verl/make_venv.sh [VENV]      # default: $HARNESS_VERL_VENV or ~/.cache/harness/verl-venv
#
# Idempotent: an environment made from the same requirements file is kept. torch comes from pip's
# configured index (a CPU wheel on CI through its pip constraint); TORCH_INDEX_URL picks another, e.g.
# https://download.pytorch.org/whl/cpu. For a GPU cluster, install verl with its own instructions
# instead (launchers/verl/README.md).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:-${HARNESS_VERL_VENV:-$HOME/.cache/harness/verl-venv}}"
python="${PYTHON:-python3}"
reqs="$here/requirements-cpu.txt"
stamp="$venv/.harness-verl-requirements"

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$reqs" "$stamp"; then
  echo "verl venv up to date: $venv"
  exit 0
fi
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
pin() { grep -E "^$1==" "$reqs"; }
"${pip[@]}" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "$(pin torch)"
"${pip[@]}" --no-deps "$(pin verl)"
"${pip[@]}" $(grep -vE '^(#|verl==|torch==|$)' "$reqs")
"$venv/bin/python" -c "import verl.trainer.ppo.core_algos, hydra, torch; print('verl', __import__('verl').__version__, 'torch', torch.__version__)"
cp "$reqs" "$stamp"
echo "verl venv ready: $venv"
