"""Does the advantage regression act? MInTRL over a grid of (anchor, β₂, lr), a few iterations
each, with the update diagnostics (mintrl.training.diagnostics) taken at every iteration.

Run after the main command's lab (it reads the pre-trained base, the teacher and the filtered
training prompts under results/):

    python benchmarks/regression_regime.py --task arith --iterations 3 \
        --beta2 0.01,0.1,0.5,1 --lr 1e-5,1e-4   # -> results/benchmarks/regression_regime_arith.md

Each point is a real segment (``run_segment``: the same rollouts, trainer and metrics as a
pipeline run) of a run added to the config with ``--config``'s ``rl`` block and the point's
overrides, one RL seed, from the lab's base. Reported per point, as the mean over its
iterations: β₂·|Δ log π(y)| / |r − V̂| (the quadratic acts as a trust region when it is of
order 0.1-1), |residual| / |r − V̂| at the start and the end of the update, KL(π_{t+1} ‖ π_t)
per token, Δ log π(y) of control rollouts, and each part's share of the gradient norm.
"""

from __future__ import annotations

# mintrl before torch: it pins the CPU kernels every stage runs (mintrl.cpu_numerics)
import mintrl  # noqa: F401

# isort: split
import argparse
import itertools
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import yaml

from mintrl.config.loading import load_run
from mintrl.training.rl_loop import SegmentJob, run_segment

RESULTS = Path("results")
COLUMNS = [("regression/beta2_move_ratio", "β₂·|Δ log π| / |A|", 1),
           ("regression/residual_ratio_start", "|res| / |A| start", 1),
           ("regression/residual_ratio_end", "|res| / |A| end", 1),
           ("update/kl_per_token", "KL per token", 1e3),
           ("update/delta_logprob_control", "Δ log π control", 1),
           ("update/delta_logprob_semi", "Δ log π semi", 1),
           ("grad/share_semi_intervention", "grad share semi int. (%)", 100),
           ("grad/share_semi_policy", "grad share semi policy (%)", 100),
           ("grad/share_control", "grad share control (%)", 100),
           ("intervention/const_c", "c", 1),
           ("intervention/policy_logprob", "log π_t per int. token", 1)]


def run_point(config: Path, task: str, overrides: dict, iterations: int, seed: int,
              work: Path) -> list[dict]:
    """One segment of ``iterations`` with ``overrides``; returns its per-iteration metrics."""
    raw = yaml.safe_load(config.read_text())
    raw.pop("tuned", None)
    raw["runs"] = [{"method": "mintrl", "name": "regime", "group": "regime", "seeds": [seed],
                    "overrides": {**overrides, "iterations": iterations, "tasks": [task],
                                  "intervention_iterations": iterations,
                                  "eval_every": iterations, "iterations_per_job": iterations,
                                  "diagnostics_every": 1}}]  # each iteration measured
    raw.pop("ablation_reference", None)
    raw.pop("tune", None)
    path = work / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    name = "regime"  # one seed: the run is named for its entry
    cfg, run = load_run(path, name)
    root = work / "run"
    shutil.rmtree(root, ignore_errors=True)
    run_segment(SegmentJob(cfg=cfg, run=run, task=task, start=1, end=iterations,
                           init=RESULTS / "models" / task / "base",
                           prompts=RESULTS / "data" / task / "train_filtered.parquet",
                           root=root, teacher=RESULTS / "models" / task / "teacher"))
    return [json.loads((root / f"iter_{i}" / "metrics.json").read_text())
            for i in range(1, iterations + 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", default="arith")
    ap.add_argument("--config", type=Path, default=Path("config/config.yaml"))
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--anchors", default="proxy,const")
    ap.add_argument("--beta2", default="0.01,0.1,0.5,1")
    ap.add_argument("--lr", default="1e-5,1e-4")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--intensity", metavar="C/R/L", help="chunk / reviews / correction tokens "
                    "(default: the config's)")
    ap.add_argument("--out", default=None, help="file stem under results/benchmarks")
    args = ap.parse_args()
    torch.set_num_threads(1)
    points = []
    fixed = {}
    if args.intensity:
        c, r, length = map(int, args.intensity.split("/"))
        fixed = {"chunk_tokens": c, "max_reviews": r, "correction_tokens": length}
    grid = itertools.product(args.anchors.split(","), map(float, args.beta2.split(",")),
                             map(float, args.lr.split(",")))
    with tempfile.TemporaryDirectory() as tmp:
        for anchor, beta2, lr in grid:
            point = {**fixed, "anchor": anchor, "beta2": beta2, "lr": lr}
            its = run_point(args.config, args.task, point, args.iterations, args.seed, Path(tmp))
            point = {"anchor": anchor, "beta2": beta2, "lr": lr, "iterations": its}
            points.append(point)
            print(json.dumps({k: point[k] for k in ("anchor", "beta2", "lr")}), flush=True)
    stem = RESULTS / "benchmarks" / (args.out or f"regression_regime_{args.task}")
    stem.parent.mkdir(parents=True, exist_ok=True)
    stem.with_suffix(".json").write_text(json.dumps(points, indent=1))
    head = "| anchor | β₂ | lr | " + " | ".join(label for _, label, _ in COLUMNS) + " |"
    command = "python benchmarks/" + Path(sys.argv[0]).name + " " + " ".join(sys.argv[1:])
    lines = [f"`{command}` (from the repository root, after the main command's lab).", "",
             f"{args.task}: MInTRL from the lab's base, {args.iterations} iterations per point, "
             f"RL seed {args.seed}, C/R/L {args.intensity or 'of the config'}, the config's rl "
             f"block ({args.config}) otherwise; the mean "
             "over the iterations (KL per token x 1000).", "", head,
             "|---|---:|---:|" + "---:|" * len(COLUMNS)]
    for p in points:
        cells = []
        for key, _, scale in COLUMNS:
            vals = [m[key] for m in p["iterations"] if m.get(key) is not None]
            cells.append(f"{scale * float(np.mean(vals)):.3g}" if vals else "")
        lines.append(f"| {p['anchor']} | {p['beta2']:g} | {p['lr']:g} | " + " | ".join(cells)
                     + " |")
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
