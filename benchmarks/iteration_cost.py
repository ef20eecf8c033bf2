"""Wall time of one RL iteration per method, side by side, one job at a time.

Run after the main command, in the same folder (it reuses the lab's models and prompts):

    python benchmarks/iteration_cost.py --task arith --iterations 4

For each run of the config it trains a fresh segment of ``--iterations`` iterations from the
run's own iteration-0 policy (the base; SFT+GRPO's SFT checkpoint) under
results/benchmarks/iteration_cost/, sequentially with one torch thread, so no two jobs share
the two cores. Iterations are within MInTRL's and MENTOR's teacher phase (their costly part).
Writes results/benchmarks/iteration_cost_<task>.{json,md}: the median seconds per iteration and
its split (generate, judge, intervene, reward, old log-probs, update, checkpoint), and the
SFT stage's one-off time from the main run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from mintrl.config import load_config
from mintrl.config.runs import resolve_runs
from mintrl.io import write_json

RESULTS = Path("results")
PARTS = ["generate", "judge", "intervene", "reward", "old_logprobs", "update", "checkpoint"]


def run_segment(config: str, name: str, method: str, task: str, iterations: int) -> list[dict]:
    folder = RESULTS / "benchmarks" / "iteration_cost" / task / name
    shutil.rmtree(folder, ignore_errors=True)
    init = RESULTS / "models" / task / "base"
    if method == "sft_grpo":
        init = RESULTS / "runs" / task / name / "sft" / "model"
    cmd = [sys.executable, "-m", "mintrl.segment", "--config", config, "--run", name,
           "--task", task, "--start", "1", "--end", str(iterations), "--init", str(init),
           "--teacher", str(RESULTS / "models" / task / "teacher"),
           "--prompts", str(RESULTS / "data" / task / "train_filtered.parquet"),
           "--root", str(folder), "--threads", "1"]
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "segment.log", "w") as log:
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT)
    return [json.loads((folder / f"iter_{i}" / "metrics.json").read_text())
            for i in range(1, iterations + 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=str(RESULTS / "config" / "resolved.yaml"))
    ap.add_argument("--task", default="arith")
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--runs", nargs="*", help="run names (default: every run of the config)")
    args = ap.parse_args()
    runs = resolve_runs(load_config(args.config))
    rows = []
    for name in args.runs or list(runs):
        iters = run_segment(args.config, name, runs[name].method, args.task, args.iterations)
        row = {"run": name, "method": runs[name].method,
               "iteration_s": statistics.median(m["time/iteration"] for m in iters)}
        for part in PARTS:
            row[part] = statistics.median(m.get(f"time/{part}", 0.0) for m in iters)
        sft = RESULTS / "runs" / args.task / name / "sft" / "metrics.json"
        if sft.exists():
            row["sft_stage_s"] = json.loads(sft.read_text())["time/total"]
        rows.append(row)
        print(f"{name}: {row['iteration_s']:.2f} s per iteration", flush=True)
    out = RESULTS / "benchmarks" / f"iteration_cost_{args.task}"
    write_json(out.with_suffix(".json"), {"task": args.task, "iterations": args.iterations,
                                          "rows": rows})
    grpo = next((r["iteration_s"] for r in rows if r["method"] == "grpo"), None)
    lines = [f"Seconds per iteration on {args.task} (median of iterations 1-{args.iterations}, "
             "one job at a time, 1 thread; `python benchmarks/iteration_cost.py`)", "",
             "| run | s / iteration | × GRPO | " + " | ".join(PARTS) + " |",
             "|---|---:|---:|" + "---:|" * len(PARTS)]
    for r in rows:
        ratio = f"{r['iteration_s'] / grpo:.2f}" if grpo else "–"
        lines.append(f"| {r['run']} | {r['iteration_s']:.2f} | {ratio} | "
                     + " | ".join(f"{r[p]:.2f}" for p in PARTS) + " |")
    extra = [r for r in rows if "sft_stage_s" in r]
    if extra:
        lines += ["", "One-off SFT stage (from the main run): "
                  + ", ".join(f"{r['run']} {r['sft_stage_s']:.0f} s" for r in extra)]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
