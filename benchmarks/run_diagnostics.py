"""What each iteration's update did, for runs of the pipeline (issue 25, item 2's diagnostics).

Run after the main command (it reads the runs' per-iteration metrics):

    python benchmarks/run_diagnostics.py --task arith --runs mintrl-const-s0,mintrl-proxy-s0
    # -> results/benchmarks/run_diagnostics_arith.md

Per run, the mean over the teacher phase and over the iterations after it (the update's own
measures over the iterations that took them: ``rl.diagnostics_every``) of: the teacher's
share of semi-on-policy tokens and corrections per rollout; KL(π_{t+1} ‖ π_t) per token;
|residual| / |r − V̂| at the start and the end of the update and β₂·|Δ log π| / |r − V̂| (the
regression acts when the latter is of order 0.1-1 and the residual shrinks); each part's share
of the gradient norm (semi policy tokens, semi intervention tokens, control rollouts); the
Const anchor's c against π_t's own log-prob of the corrections; reward per pool.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

RESULTS = Path("results")
COLUMNS = [  # (metric, label, scale)
    ("intervention/offpolicy_token_frac", "teacher tokens %", 100),
    ("intervention/corrections_per_rollout", "corrections / rollout", 1),
    ("update/kl_per_token", "KL / token x1e3", 1e3),
    ("regression/residual_ratio_start", "res/A start", 1),
    ("regression/residual_ratio_end", "res/A end", 1),
    ("regression/beta2_move_ratio", "b2 dlogpi/A", 1),
    ("grad/share_semi_policy", "grad semi policy %", 100),
    ("grad/share_semi_intervention", "grad semi intervention %", 100),
    ("grad/share_control", "grad control %", 100),
    ("intervention/const_c", "c", 1),
    ("intervention/policy_logprob", "pi_t logprob of corrections", 1),
    ("rollout/reward_semi", "reward semi", 1),
    ("rollout/reward_control", "reward control", 1),
    ("rollout/reward", "reward", 1),
]


def iteration_metrics(run_dir: Path) -> list[dict]:
    out = []
    for path in run_dir.glob("iter_*/metrics.json"):
        out.append(json.loads(path.read_text()))
    return sorted(out, key=lambda m: m["iteration"])


def phases(metrics: list[dict]) -> dict[str, list[dict]]:
    """Teacher phase (iterations with semi-on-policy rollouts) and the iterations after it."""
    inside = [m for m in metrics if "rollout/reward_semi" in m]
    after = [m for m in metrics if "rollout/reward_semi" not in m]
    return {f"1-{inside[-1]['iteration']}" if inside else "phase": inside,
            f"{after[0]['iteration']}-{after[-1]['iteration']}" if after else "after": after}


def cell(rows: list[dict], key: str, scale: float) -> str:
    vals = [m[key] for m in rows if key in m and m[key] is not None and np.isfinite(m[key])]
    return f"{scale * float(np.mean(vals)):.3g}" if vals else "–"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--runs", required=True, help="comma-separated run names")
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args()
    head = ["run", "iterations"] + [label for _, label, _ in COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * len(COLUMNS)]
    for run in args.runs.split(","):
        metrics = iteration_metrics(args.results / "runs" / args.task / run)
        for span, rows in phases(metrics).items():
            if rows:
                lines.append("| " + " | ".join([run, span] + [cell(rows, k, s) for k, _, s
                                                            in COLUMNS]) + " |")
    text = (f"{args.task}: the mean over each span of iterations of what the update did "
            "(metrics.json of each iteration; – where a span has no such metric). res/A: "
            "|residual| / |r − V̂| at the start and end of the update; b2 dlogpi/A: "
            "β₂·|Δ log π| / |r − V̂|; grad: each part's share of the gradient norm at π_t; c: "
            "the Const anchor's per-token log-prob.\n\n"
            + "\n".join(lines) + "\n")
    out = args.results / "benchmarks" / f"run_diagnostics_{args.task}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
