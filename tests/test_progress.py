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
