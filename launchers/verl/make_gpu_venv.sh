#!/usr/bin/env bash
# The verl environment of the GPU nodes, from launchers/verl/requirements-gpu.txt (run it on a GPU node, or a
# machine with the nodes' CUDA, into a folder the nodes see):
#   launchers/verl/make_gpu_venv.sh /shared/envs/verl      # then verl_python: /shared/envs/verl in the profile
# Binary wheels only for every package the file pins (nothing compiles: no CUDA toolkit needed), torch first
# ($TORCH_INDEX_URL: another index for it). Ends by importing what a run loads. The nodes' NVIDIA driver
# must run the CUDA of that torch (13.0 for torch 2.11.0: driver >= 580.65.06; launchers/verl/README.md).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
#   launchers/verl/make_gpu_venv.sh /shared/envs/verl-cu12 cu12   # driver 535-570: requirements-gpu-cu12.txt
venv="${1:?give the folder of the new environment, e.g. /shared/envs/verl}"
python="${PYTHON:-python3.11}"
case "${2:-cu13}" in
  cu13) reqs="$here/requirements-gpu.txt" ;;
  cu12) reqs="$here/requirements-gpu-cu12.txt" ;;
  *) echo "make_gpu_venv.sh: the second argument is cu13 (default) or cu12, not ${2}" >&2; exit 2 ;;
esac
pin() { grep -E "^$1==" "$reqs"; }
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --disable-pip-version-check)
pinned=$(grep -oE '^[A-Za-z0-9_.-]+' "$reqs" | paste -sd, -)
"${pip[@]}" --upgrade pip setuptools wheel
"${pip[@]}" --only-binary="$pinned" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "$(pin torch)" "$(pin torchvision)" "$(pin torchaudio)"
"${pip[@]}" --only-binary="$pinned" -r "$reqs"
"$venv/bin/python" -c "import torch, verl, vllm, ray, transfer_queue; print('verl', verl.__version__, 'torch', torch.__version__, 'cuda', torch.version.cuda, 'vllm', vllm.__version__)"
echo "verl GPU environment ready: $venv (verl_python: $venv in the launcher profile)"
