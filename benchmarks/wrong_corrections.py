"""Issue 25, item 4: does the reward add anything to copying corrections?

The corrections-only control and MInTRL-Const, each with the clean teacher and with an
intervener whose corrections are wrong a quarter of the time (`wrong_correction_rate`), paired
problem by problem (the same problems; runs of the same lab seed). Run after their evaluations
exist (the control group's runs, and the main table's MInTRL-Const at the same iteration):

    python benchmarks/wrong_corrections.py --iteration 12 --pairs s0
    # -> results/benchmarks/wrong_corrections.md

If MInTRL uses the reward, wrong corrections should cost it less than they cost the control,
and MInTRL minus the control should be larger with the wrong intervener than with the clean one.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from mintrl.config.runs import lab_model
from mintrl.report.stats import benchmark_order
from mintrl.report.tables import eval_records, problem_scores, versus_table

RESULTS = Path("results")
ROWS = {"mintrl-const": "MInTRL-Const, clean", "mintrl-const-wrong": "MInTRL-Const, wrong",
        "corrections-only": "corrections-only, clean",
        "corrections-only-wrong": "corrections-only, wrong"}
RUN_OF = {"mintrl-const": "mintrl-const-clean-{pair}",
          "mintrl-const-wrong": "mintrl-const-wrong-{pair}",
          "corrections-only": "corrections-only-{pair}",
          "corrections-only-wrong": "corrections-only-wrong-{pair}"}
COMPARISONS = [  # (title, row, versus)
    ("wrong minus clean, MInTRL-Const", "mintrl-const-wrong", "mintrl-const"),
    ("wrong minus clean, corrections-only", "corrections-only-wrong", "corrections-only"),
    ("MInTRL-Const minus corrections-only, clean", "mintrl-const", "corrections-only"),
    ("MInTRL-Const minus corrections-only, wrong", "mintrl-const-wrong",
     "corrections-only-wrong"),
]


def lab_of_pair(pair: str) -> int:
    return int(pair.split("-")[0][3:]) if pair.startswith("lab") else 0


def paths(results: Path, tasks: list[str], pairs: list[str], iteration: int) -> list[Path]:
    out = []
    for task in tasks:
        for pair in pairs:
            lab = lab_of_pair(pair)
            out.append(results / "eval" / "lab" / task / ("base" + (f"-lab{lab}" if lab else ""))
                       / "metrics.json")
            out += [results / "eval" / task / run.format(pair=pair) / f"iter_{iteration}"
                    / "metrics.json" for run in RUN_OF.values()]
    return out


def cell(r: pd.Series) -> str:
    star = "**" if r["lo"] > 0 or r["hi"] < 0 else ""
    return f"{star}{r['mean']:+.1f} [{r['lo']:.1f}, {r['hi']:.1f}]{star}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iteration", type=int, default=12)
    ap.add_argument("--pairs", default="s0,lab1-s1,lab2-s2",
                    help="run-name suffixes of the (lab seed, RL seed) pairs")
    ap.add_argument("--tasks", default="arith,intfn")
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args()
    pairs, tasks = args.pairs.split(","), args.tasks.split(",")
    files = paths(args.results, tasks, pairs, args.iteration)
    missing = [str(p) for p in files if not p.exists()]
    if missing:
        raise SystemExit(f"missing evaluations: {missing}")
    row_of = {run.format(pair=p): row for row, run in RUN_OF.items() for p in pairs}
    lab_of = {run.format(pair=p): lab_of_pair(p) for run in RUN_OF.values() for p in pairs}
    for lab in map(lab_of_pair, pairs):  # each lab's base is the base row of its lab seed
        row_of[lab_model("base", lab)], lab_of[lab_model("base", lab)] = "base", lab
    scores = problem_scores(eval_records(files), row_of, lab_of)
    scores = scores[scores["run"].isin(row_of) | scores["row"].eq("base")]
    benches = benchmark_order(scores["benchmark"].unique()) + ["average"]
    lines = [f"Pass@1 differences (pp) at iteration {args.iteration}, paired problem by "
             f"problem and by lab seed; {len(pairs)} (lab seed, RL seed) pair(s): "
             f"{', '.join(pairs)}; bootstrap 95 % intervals over problems and pairs (bold: "
             "excludes 0). Wrong: 25 % of corrections had the digits of their last number "
             "changed.", "",
             "| comparison | " + " | ".join(benches) + " |",
             "|---|" + "---:|" * len(benches)]
    base = versus_table(scores, "pass@1", "base")
    for row, title in ROWS.items():
        part = base[base["row"] == row].set_index("benchmark")
        lines.append(f"| {title} minus base | "
                     + " | ".join(cell(part.loc[b]) if b in part.index else "–"
                                  for b in benches) + " |")
    for title, row, versus in COMPARISONS:
        sub = scores[scores["row"].isin([row, versus])]
        t = versus_table(sub, "pass@1", versus)
        part = t[t["row"] == row].set_index("benchmark")
        lines.append(f"| {title} | " + " | ".join(cell(part.loc[b]) if b in part.index
                                                   else "–" for b in benches) + " |")
    text = "\n".join(lines) + "\n"
    out = args.results / "benchmarks" / "wrong_corrections.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
