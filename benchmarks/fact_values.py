"""Which value a policy writes for each fact on the hard split: the diagnostic behind OPD's
hard row (issue 23).

Run after the main command and the learnability probe (it reads evaluation samples):

    python benchmarks/fact_values.py --task arith \\
        base=results/eval/lab/arith/base/samples.parquet \\
        opd-40=results/learnability/results/eval/arith/opd-s0/iter_40/samples.parquet
    # -> results/benchmarks/fact_values_arith.md

For every fact a hard problem looks up, over all its samples: the share that write the true
value, the share whose first digit is right, and the most frequent values written ('none':
no lookup step for it). A hard problem looks up one unknown fact, so its known facts show
whether learning the unknown one cost the others.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
from pathlib import Path

from mintrl.io import read_table

RESULTS = Path("results")
LOOKUP = {"arith": r"#(\d)=(\d+)", "intfn": r"k(\d)=(\d+)"}  # the lookup step's text


def fact_values(samples: Path, data: Path, task: str) -> dict[int, dict]:
    """Per fact key: its true value, the share of samples writing it exactly and with the
    right first digit, and the four most frequent values written."""
    problems = read_table(data)
    keys = {r.id: json.loads(r.spec)["facts"]["keys"] for r in problems.itertuples()}
    truth = {}
    for r in problems.itertuples():
        truth.update({int(k): v for k, v in re.findall(LOOKUP[task], r.solution)})
    rows = read_table(samples)
    rows = rows[rows["split"] == "hard"]
    written: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in rows.itertuples():
        wrote = {int(k): v for k, v in re.findall(LOOKUP[task], r.response)}
        for k in keys[r.problem_id]:
            written[k][wrote.get(k, "none")] += 1
    out = {}
    for k in sorted(written):
        c, n = written[k], sum(written[k].values())
        out[k] = {"true": truth[k], "exact": c[truth[k]] / n,
                  "first_digit": sum(v for w, v in c.items() if w[:1] == truth[k][:1]) / n,
                  "top": c.most_common(4), "samples": n}
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", choices=sorted(LOOKUP), required=True)
    ap.add_argument("samples", nargs="+", metavar="LABEL=PATH",
                    help="evaluation samples.parquet files, each with a label")
    args = ap.parse_args(argv)
    data = RESULTS / "data" / args.task / "hard.parquet"
    lines = [f"Values written for each fact on {args.task}'s hard split (all samples; exact: "
             "the true value; first digit: its first digit right; top: the most frequent "
             "values, % of samples).", "",
             "| policy | fact | true | exact % | first digit % | top |",
             "|---|---:|---:|---:|---:|---|"]
    for item in args.samples:
        label, _, path = item.partition("=")
        for k, v in fact_values(Path(path), data, args.task).items():
            top = ", ".join(f"{w} {100 * m / v['samples']:.0f}" for w, m in v["top"])
            lines.append(f"| {label} | {k} | {v['true']} | {100 * v['exact']:.1f} | "
                         f"{100 * v['first_digit']:.1f} | {top} |")
    text = "\n".join(lines) + "\n"
    out = RESULTS / "benchmarks" / f"fact_values_{args.task}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
