#!/usr/bin/env bash
# One MInTRL iteration on one GPU with a Qwen3-1.7B-shaped random model (no downloads):
# rollout and training tokens/s and MFU, in results/benchmarks/gpu_smoke/gpu_smoke.json.
# Under 6 minutes on one H100/H200. See benchmarks/gpu_smoke.py.
set -euo pipefail
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
exec python benchmarks/gpu_smoke.py --shape qwen3-1.7b --device cuda "$@"
