"""Coverage of MInTRL's semi-on-policy and control pools by kind of fact, iteration by iteration.

Run after the main command (it reads a run's rollouts and the training prompts):

    python benchmarks/coverage_by_kind.py --task arith --runs mintrl-const-s0,mintrl-proxy
    # -> results/benchmarks/coverage_by_kind_arith.md

A prompt is covered by a pool when one of its rollouts in that pool earns reward 1. Kinds are
those of the fact the training prompt looks up (known, partial, unknown; the hard split looks
up unknown ones), so the table shows whether the teacher's corrections reach the prompts the
policy cannot solve alone (semi above control on unknown facts) while the phase lasts, and
what the policy solves on its own once it is over (on-policy rollouts only).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from mintrl.io import read_table

RESULTS = Path("results")
KINDS = ("known", "partial", "unknown")


def fact_kinds(data: Path) -> pd.Series:
    """problem id -> the kind of fact the prompt looks up."""
    table = read_table(data)
    return pd.Series([json.loads(s)["facts"]["kind"] for s in table["spec"]],
                     index=table["id"])


def coverage(rollouts: pd.DataFrame, kinds: pd.Series) -> dict[str, float]:
    """Share of the iteration's prompts of each kind solved by each pool (pool/kind -> share),
    and the prompts of each kind (n/kind)."""
    df = rollouts.assign(fact=rollouts["problem_id"].map(kinds))
    solved = df.groupby(["problem_id", "kind"])["reward"].max().unstack("kind")
    fact = df.groupby("problem_id")["fact"].first()
    out = {}
    for kind in KINDS:
        rows = solved[fact.reindex(solved.index) == kind]
        out[f"n/{kind}"] = len(rows)
        for pool in solved.columns:
            out[f"{pool}/{kind}"] = float((rows[pool] > 0).mean()) if len(rows) else float("nan")
    return out


def run_table(run_dir: Path, kinds: pd.Series) -> pd.DataFrame:
    rows = []
    for it_dir in sorted(run_dir.glob("iter_*"), key=lambda p: int(p.name.split("_")[1])):
        if not (it_dir / "rollouts.parquet").exists():
            continue
        metrics = json.loads((it_dir / "metrics.json").read_text())
        rows.append({"iteration": int(it_dir.name.split("_")[1]),
                     "teacher_tokens": metrics.get("intervention/offpolicy_token_frac",
                                                   float("nan")),
                     **coverage(read_table(it_dir / "rollouts.parquet"), kinds)})
    return pd.DataFrame(rows)


def markdown(run: str, table: pd.DataFrame) -> str:
    head = ["iteration", "teacher tokens"] + [f"{k}: semi / control (n)" for k in KINDS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]

    def pct(x):
        return "–" if pd.isna(x) else f"{100 * x:.0f}"

    for _, r in table.iterrows():
        cells = [str(int(r["iteration"])), pct(r["teacher_tokens"])]
        for k in KINDS:
            if "semi/" + k in r and not pd.isna(r.get("semi/" + k)):
                cells.append(f"{pct(r['semi/' + k])} / {pct(r['control/' + k])} "
                             f"({int(r['n/' + k])})")
            else:  # after the phase: one on-policy pool
                cells.append(f"on-policy {pct(r.get('on-policy/' + k))} ({int(r['n/' + k])})")
        lines.append("| " + " | ".join(cells) + " |")
    return f"### {run}\n\n" + "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--runs", required=True, help="comma-separated run names")
    ap.add_argument("--data", type=Path, help="training prompts (default: the lab's filtered "
                    "ones, results/data/<task>/train_filtered.parquet)")
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args()
    kinds = fact_kinds(args.data or args.results / "data" / args.task / "train_filtered.parquet")
    parts = [f"Coverage (%) of each pool on the iteration's training prompts, by the kind of "
             f"fact they look up ({args.task}; semi-on-policy / control rollouts while the "
             "teacher phase lasts, on-policy after it; n: prompts of that kind in the "
             "iteration). Teacher tokens: the share of semi-on-policy tokens the teacher "
             "wrote.\n"]
    for run in args.runs.split(","):
        parts.append(markdown(run, run_table(args.results / "runs" / args.task / run, kinds)))
    out = args.results / "benchmarks" / f"coverage_by_kind_{args.task}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(parts))
    print(out.read_text())


if __name__ == "__main__":
    main()
