#!/usr/bin/env bash
# Issue 9's GPU figures side by side on one GPU with a Qwen3-1.7B-shaped random model (no
# downloads): the project's DeepSpeed trainer against plain torch at 8 x 4096 tokens (tokens/s,
# MFU), teacher-forced scoring tokens/s, and the transformers engine's static (CUDA graph) against
# its dynamic cache at batch 256. Writes gpu_bench.{json,md,log} to $OUT when set (a lent
# machine returns only that folder), else results/benchmarks/; the JSON after every part, so a
# failure or a timeout keeps what was measured. Under 6 minutes on one H100/H200. Pass --liger
# when liger-kernel is installed. See benchmarks/gpu_bench.py.
set -euo pipefail
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
command -v cc >/dev/null || echo "warning: no C compiler: Triton (torch.compile, liger) needs one"
out=${OUT:-results/benchmarks}
mkdir -p "$out"
py=$(command -v python || command -v python3)
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  # three models in turn: less fragmentation
"$py" benchmarks/gpu_bench.py --shape qwen3-1.7b --device cuda --out "$out" "$@" 2>&1 \
    | tee "$out/gpu_bench.log"
