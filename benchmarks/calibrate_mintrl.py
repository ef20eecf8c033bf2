"""Calibrate MInTRL's β₂, learning rate (and see c) on the validation split, never the
reported evaluation splits (docs/design.md §1.2 and §5).

Run after the main command, in the same folder:

    python benchmarks/calibrate_mintrl.py --task arith --iterations 20 \
        --grid proxy:0.01:2e-5 proxy:0.002:1e-4 const:0.002:1e-4 grpo:0:2e-5

Each grid point ``anchor:beta2:lr`` (or ``grpo:0:lr``) trains a short run from the base with
the default config's other settings (its own folder under results/calibration/), then samples
8 responses per validation problem. Writes results/benchmarks/calibration_<task>.{json,md}:
validation Pass@1 and strict correctness, the step-0 residuals, the stability figure
β₂·n_int·|log π_t − c| next to |r − V̂|, and the last iterations' training reward.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from mintrl.io import write_json

RESULTS = Path("results")


def point_config(base: dict, anchor: str, beta2: float, lr: float, iterations: int) -> dict:
    cfg = json.loads(json.dumps(base))
    method = "grpo" if anchor == "grpo" else "mintrl"
    over = {"lr": lr, "iterations": iterations, "iterations_per_job": iterations,
            "eval_every": iterations}
    if method == "mintrl":
        over |= {"anchor": anchor, "beta2": beta2}
    cfg["runs"] = [{"method": method, "name": "cal", "overrides": over}]
    return cfg


def run_point(spec: str, task: str, iterations: int, base: dict) -> dict:
    anchor, beta2, lr = spec.split(":")
    folder = RESULTS / "calibration" / task / spec.replace(":", "_")
    folder.mkdir(parents=True, exist_ok=True)
    cfg_path = folder / "config.yaml"
    cfg_path.write_text(yaml.safe_dump(point_config(base, anchor, float(beta2), float(lr),
                                                   iterations)))
    cmd = [sys.executable, "-m", "mintrl.segment", "--config", str(cfg_path), "--run", "cal",
           "--task", task, "--start", "1", "--end", str(iterations),
           "--init", str(RESULTS / "models" / task / "base"),
           "--teacher", str(RESULTS / "models" / task / "teacher"),
           "--prompts", str(RESULTS / "data" / task / "train_filtered.parquet"),
           "--root", str(folder / "run")]
    with open(folder / "segment.log", "w") as log:
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT)
    model = folder / "run" / f"iter_{iterations}" / "model"
    with open(folder / "evaluate.log", "w") as log:
        subprocess.run([sys.executable, "-m", "mintrl.evaluate", "--config", str(cfg_path),
                        "--checkpoint", str(model), "--prompts",
                        str(RESULTS / "data" / task / "validation.parquet"), "--samples", "8",
                        "--out", str(folder / "eval")], check=True, stdout=log,
                       stderr=subprocess.STDOUT)
    seg = json.loads((folder / "run" / f"iter_{iterations}" / "segment.json").read_text())
    its = seg["iterations"]
    val = json.loads((folder / "eval" / "metrics.json").read_text())["splits"]["validation"]
    first = its[0]
    stab = None
    if anchor == "const":  # β₂ · n_int · |log π_t − c| per intervened rollout, at step 0
        n_int = first.get("intervention/offpolicy_token_frac", 0) * first["rollout/response_len"]
        stab = float(beta2) * n_int * abs(first.get("intervention/policy_logprob", 0)
                                          - first.get("intervention/const_c", 0))
    return {"point": spec, "val_pass@1": val["pass@1"], "val_strict": val["strict"],
            "val_step_accuracy": val["step_accuracy"],
            "residual0_control": first.get("losses/residual0_abs_control"),
            "residual0_semi": first.get("losses/residual0_abs_semi"),
            "stability": stab, "const_c": first.get("intervention/const_c"),
            "train_reward_last5": sum(i["rollout/reward"] for i in its[-5:]) / min(5, len(its)),
            "seconds_per_iteration": sum(i["time/iteration"] for i in its) / len(its)}


def fmt(v) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--grid", nargs="+", required=True, help="anchor:beta2:lr points")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    base = yaml.safe_load((RESULTS / "config" / "resolved.yaml").read_text())
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda g: run_point(g, args.task, args.iterations, base), args.grid))
    write_json(RESULTS / "benchmarks" / f"calibration_{args.task}.json", rows)
    cols = list(rows[0])
    text = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n" + "".join(
        "| " + " | ".join(fmt(r[c]) for c in cols) + " |\n" for r in rows)
    (RESULTS / "benchmarks" / f"calibration_{args.task}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
