"""What the update diagnostics cost a MInTRL iteration (mintrl.training.diagnostics): the
same 3-iteration segment with ``gradient_parts`` on and off, side by side, twice.

    python benchmarks/diagnostics_cost.py   # -> results/benchmarks/diagnostics_cost.md

Run after the main command's lab (reads results/models and results/data); MInTRL-Const at the
config's intensity, lr 5e-6, beta2 0.01, one thread, arith.
"""

from __future__ import annotations

# mintrl before torch: it pins the CPU kernels every stage runs (mintrl.cpu_numerics)
import mintrl  # noqa: F401

# isort: split
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from regression_regime import RESULTS, run_point  # noqa: E402

KEYS = ["time/iteration", "time/gradient_parts", "time/update_stats", "time/update",
        "time/old_logprobs"]


def main() -> None:
    torch.set_num_threads(1)
    rows = []
    for parts in (True, False, True, False):
        with tempfile.TemporaryDirectory() as tmp:
            its = run_point(Path("config/config.yaml"), "arith",
                            {"anchor": "const", "beta2": 0.01, "lr": 5e-6,
                             "gradient_parts": parts}, 3, 0, Path(tmp))
        rows.append({"gradient_parts": parts,
                     **{k: float(np.mean([m.get(k, 0.0) for m in its])) for k in KEYS}})
        print(json.dumps(rows[-1]), flush=True)
    lines = ["`python benchmarks/diagnostics_cost.py` (after the main command's lab): seconds "
             "per iteration, mean over 3 iterations of MInTRL-Const on arith, one thread, the "
             "two settings alternated twice.", "",
             "| gradient_parts | iteration | gradient parts | update stats (KL, Δ log π, "
             "residuals) | update | reference pass |", "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['gradient_parts']} | " + " | ".join(f"{r[k]:.2f}" for k in KEYS)
                     + " |")
    on = np.mean([r["time/iteration"] for r in rows if r["gradient_parts"]])
    off = np.mean([r["time/iteration"] for r in rows if not r["gradient_parts"]])
    stats = np.mean([r["time/update_stats"] for r in rows])
    lines += ["", f"Gradient parts add {on / off - 1:.0%} to a MInTRL iteration; the update "
              f"statistics, logged by every method, {stats:.2f} s per iteration "
              f"({stats / (off - stats):.0%} of the iteration without them)."]
    out = RESULTS / "benchmarks" / "diagnostics_cost.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
