"""benchmarks/gpu_smoke.py, the GPU smoke test, kept runnable: the same script on CPU with a
tiny shape (what a GPU session runs is this code with the Qwen3-1.7B shape)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_gpu_smoke_script_runs_one_intervened_iteration_on_cpu(tmp_path):
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_smoke.py"), "--shape",
                          "tiny", "--device", "cpu", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads((tmp_path / "gpu_smoke.json").read_text())
    # the noisy judge flags every review: every semi-on-policy rollout (half) is intervened on
    assert out["rollouts"] == 32 and out["intervention_rate"] == 0.5
    assert out["rollout_tokens_per_s"] > 0 and out["train_tokens_per_s"] > 0
    assert out["mfu"] is None  # only on a GPU
    metrics = json.loads((tmp_path / "run" / "iter_1" / "metrics.json").read_text())
    assert metrics["memory/peak_rss_gb"] > 0
