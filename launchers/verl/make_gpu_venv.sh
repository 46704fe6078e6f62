#!/usr/bin/env bash
# The verl environment of the GPU nodes, from launchers/verl/requirements-gpu.txt (run it on a GPU node, or a
# machine with the nodes' CUDA, into a folder the nodes see):
#   launchers/verl/make_gpu_venv.sh /shared/envs/verl      # then verl_python: /shared/envs/verl in the profile
# torch (and flash-attn's build tools) go in first, then the whole file without build isolation, so that
# flash-attn builds against that torch: it fetches a matching prebuilt wheel when one exists, else compiles
# (set MAX_JOBS to the cores you can spare). Ends by importing what a run loads.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:?give the folder of the new environment, e.g. /shared/envs/verl}"
python="${PYTHON:-python3.11}"
reqs="$here/requirements-gpu.txt"
pin() { grep -E "^$1==" "$reqs"; }
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --disable-pip-version-check)
"${pip[@]}" --upgrade pip setuptools wheel packaging ninja psutil einops
"${pip[@]}" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "$(pin torch)" "$(pin torchvision)" "$(pin torchaudio)"
MAX_JOBS="${MAX_JOBS:-8}" "${pip[@]}" --no-build-isolation -r "$reqs"
"$venv/bin/python" -c "import flash_attn, torch, verl, vllm, ray, transfer_queue; print('verl', verl.__version__, 'torch', torch.__version__, 'vllm', vllm.__version__, 'flash_attn', flash_attn.__version__)"
echo "verl GPU environment ready: $venv (verl_python: $venv in the launcher profile)"
