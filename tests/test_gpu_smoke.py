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


def test_the_gpu_benchmark_runs_its_three_parts_on_cpu(tmp_path):
    """benchmarks/gpu_bench.py (issue 9's GPU figures) with a tiny shape on CPU: the trainer
    and plain torch train the same tokens, both caches generate every requested token."""
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_bench.py"), "--shape",
                          "tiny", "--device", "cpu", "--seq", "48", "--micro", "4",
                          "--steps", "1", "--score-seqs", "16", "--score-len", "48",
                          "--gen-batch", "6", "--gen-tokens", "8", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads((tmp_path / "gpu_bench.json").read_text())
    train, gen = out["train"], out["generate"]
    assert train["deepspeed_tokens_per_s"] > 0 and train["torch_tokens_per_s"] > 0
    assert "deepspeed_mfu" not in train  # only on a GPU
    assert out["score"]["tokens_per_s"] > 0
    for cache in ("dynamic", "static"):  # 6 rows of at most 8 tokens (fewer after an EOS)
        assert 6 <= gen[f"{cache}_tokens"] <= 6 * 8 and gen[f"{cache}_tokens_per_s"] > 0
    assert "static" in (tmp_path / "gpu_bench.md").read_text()
