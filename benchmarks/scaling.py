"""Iteration time against rollouts per iteration (1x, 2x, 4x), and each segment's peak memory.

Run after the main command, in the same folder (it reuses the lab's models and prompts):

    python benchmarks/scaling.py --task arith   # -> results/benchmarks/scaling_arith.*

For GRPO and MInTRL-Const (the cheapest and the costliest iteration) it trains fresh segments of
``--iterations`` iterations with ``prompts_per_iteration`` scaled by 1, 2 and 4 (the group
size, minibatch size and everything else as configured: optimizer steps grow with the
rollouts), one after another with one torch thread, under results/benchmarks/scaling/. Reports
the median seconds per iteration, its ratio to the 1x point (linear scaling: 2 and 4), seconds
per rollout, and the segment's peak resident memory (``memory/peak_rss_gb``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import yaml

from mintrl.io import write_json

RESULTS = Path("results")
RUNS = {"grpo-s0": "grpo", "mintrl-const-s0": "mintrl"}


def run_segment(config: Path, name: str, task: str, iterations: int, folder: Path) -> list[dict]:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    cmd = [sys.executable, "-m", "mintrl.segment", "--config", str(config), "--run", name,
           "--task", task, "--start", "1", "--end", str(iterations),
           "--init", str(RESULTS / "models" / task / "base"),
           "--teacher", str(RESULTS / "models" / task / "teacher"),
           "--prompts", str(RESULTS / "data" / task / "train_filtered.parquet"),
           "--root", str(folder), "--threads", "1"]
    with open(folder / "segment.log", "w") as log:
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT)
    return [json.loads((folder / f"iter_{i}" / "metrics.json").read_text())
            for i in range(1, iterations + 1)]


def plot(rows: list[dict], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mintrl.report.colours import row_colours

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    colours = row_colours([r.split("-s")[0] for r in RUNS])
    for run in RUNS:
        pts = sorted((r["rollouts"], r["iteration_s"]) for r in rows if r["run"] == run)
        xs, ys = zip(*pts, strict=True)
        ax.plot(xs, ys, marker="o", color=colours[run.split("-s")[0]], label=run.split("-s")[0])
        ax.plot(xs, [ys[0] * x / xs[0] for x in xs], linestyle=":",
                color=colours[run.split("-s")[0]], alpha=0.6)
    ax.set(xlabel="rollouts per iteration", ylabel="seconds per iteration (median)",
           title="Iteration time against rollouts (dotted: linear from 1x)")
    ax.set_xscale("log", base=2)
    ax.set_xticks([r["rollouts"] for r in rows if r["run"] == "grpo-s0"],
                  [str(r["rollouts"]) for r in rows if r["run"] == "grpo-s0"])
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default=str(RESULTS / "config" / "resolved.yaml"))
    ap.add_argument("--task", default="arith")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--scales", type=int, nargs="*", default=[1, 2, 4])
    args = ap.parse_args()
    base = yaml.safe_load(Path(args.config).read_text())
    prompts = base["rl"]["prompts_per_iteration"]
    group = base["rl"]["group_size"]
    work = RESULTS / "benchmarks" / "scaling"
    rows = []
    for scale in args.scales:
        cfg = json.loads(json.dumps(base))
        cfg["rl"]["prompts_per_iteration"] = prompts * scale
        path = work / f"config_{scale}x.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        for run in RUNS:
            iters = run_segment(path, run, args.task, args.iterations,
                                work / args.task / f"{scale}x" / run)
            sec = statistics.median(m["time/iteration"] for m in iters)
            rows.append({"run": run, "scale": scale, "rollouts": prompts * scale * group,
                         "iteration_s": sec,
                         "peak_rss_gb": max(m["memory/peak_rss_gb"] for m in iters)})
            print(f"{run} {scale}x: {sec:.2f} s per iteration", flush=True)
    for r in rows:
        one = next(x for x in rows if x["run"] == r["run"] and x["scale"] == args.scales[0])
        r["ratio"] = r["iteration_s"] / one["iteration_s"]
        r["s_per_rollout"] = r["iteration_s"] / r["rollouts"]
    out = RESULTS / "benchmarks" / f"scaling_{args.task}"
    write_json(out.with_suffix(".json"), {"task": args.task, "iterations": args.iterations,
                                          "rows": rows})
    plot(rows, out.with_suffix(".png"))
    lines = [f"Iteration time against rollouts per iteration on {args.task} (median of "
             f"iterations 1-{args.iterations}, one job at a time, 1 thread; "
             "`python benchmarks/scaling.py`)", "",
             "| run | rollouts | s / iteration | × 1x | ms / rollout | peak RSS (GB) |",
             "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['run']} | {r['rollouts']} | {r['iteration_s']:.2f} | {r['ratio']:.2f} | "
              f"{1000 * r['s_per_rollout']:.1f} | {r['peak_rss_gb']:.2f} |" for r in rows]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
