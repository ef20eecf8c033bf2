"""Progress bars in a log file: whole lines with rate and ETA, no carriage returns, and
nothing for a loop that ends quickly."""

import subprocess
import sys


def test_a_long_loop_logs_periodic_lines_and_a_quick_one_logs_nothing(tmp_path):
    script = ("import time\nfrom mintrl.progress import progress\n"
              "for _ in progress(range(3), desc='quick'): pass\n"
              "for _ in progress(range(6), desc='slow', unit='step'): time.sleep(0.5)\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env={"MINTRL_PROGRESS_S": "1", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    log = res.stderr  # a pipe, as in a Snakemake job's log
    assert "\r" not in log and "quick" not in log
    lines = [ln for ln in log.splitlines() if ln.startswith("slow")]
    assert len(lines) >= 2 and lines[-1].startswith("slow: 100%|")
    assert "step/s" in lines[-1] or "s/step" in lines[-1]  # the rate


def test_saving_and_loading_a_checkpoint_leaves_no_bar_in_a_log(tmp_path):
    """transformers' own bars ("Writing model shards", "Loading weights") stay out of a job's
    log: no carriage returns, no ANSI escapes (mintrl.progress.quiet_library_bars)."""
    script = ("import mintrl, sys\n"
              "from transformers import AutoModelForCausalLM, Qwen3Config\n"
              "cfg = Qwen3Config(vocab_size=32, hidden_size=16, intermediate_size=32, "
              "num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, head_dim=8)\n"
              "AutoModelForCausalLM.from_config(cfg).save_pretrained(sys.argv[1])\n"
              "AutoModelForCausalLM.from_pretrained(sys.argv[1])\n")
    res = subprocess.run([sys.executable, "-c", script, str(tmp_path / "m")],
                         capture_output=True, text=True, timeout=300,
                         env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr[-2000:]
    assert "\r" not in res.stderr and "\x1b" not in res.stderr
    assert "Writing model shards" not in res.stderr and "Loading weights" not in res.stderr
