#!/usr/bin/env bash
# One MInTRL iteration on one GPU with a Qwen3-1.7B-shaped random model (no downloads):
# rollout and training tokens/s and MFU. The run (model, rollouts, a ~35 GB checkpoint with its
# optimizer state) goes to a scratch folder; gpu_smoke.json, the iteration's metrics.json and the
# log go to $OUT when set (a lent machine returns only that folder), else results/benchmarks/.
# Under 6 minutes on one H100/H200. See benchmarks/gpu_smoke.py.
set -euo pipefail
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
out=${OUT:-results/benchmarks}
work=${TMPDIR:-/tmp}/gpu_smoke
rm -rf "$work"  # a reused machine: never report an earlier run's figures
mkdir -p "$out"
py=$(command -v python || command -v python3)
status=0
"$py" benchmarks/gpu_smoke.py --shape qwen3-1.7b --device cuda --out "$work" "$@" 2>&1 \
    | tee "$out/gpu_smoke.log" || status=$?
cp "$work/gpu_smoke.json" "$out/" 2>/dev/null || true
cp "$work/run/iter_1/metrics.json" "$out/gpu_smoke_iter_1_metrics.json" 2>/dev/null || true
exit "$status"
