#!/usr/bin/env bash
# The GPU device check, on a machine with a GPU, a Vulkan driver and PyTorch but no Node.js:
# rl2 on WebGPU (check.mjs, run by the Node binary packed beside it) and the same measures in
# PyTorch on the same GPU, then one table. `bash run.sh tiny` runs the small shape.
set -uo pipefail
cd "$(dirname "$0")"
shape=${1:-qwen3-0.6b}
args=()
[ "$shape" = tiny ] && args=(--shape tiny)
[ -x node ] || python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('node.xz'), open('node', 'wb'))"
chmod +x node
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')
echo "== machine: $(nproc) cores; $gpu"
echo "== vulkan ICDs: $(ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>/dev/null | tr '\n' ' ')"
./node --version
./node check.mjs "${args[@]}" 2>rl2.stderr | tee rl2.out
tail -n 5 rl2.stderr
python3 torch_check.py "${args[@]}" 2>torch.stderr | tee torch.out
tail -n 5 torch.stderr
python3 tabulate.py rl2.out torch.out
