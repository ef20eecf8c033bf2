"""Stage ``summarize``: the results table (rows runs, columns benchmarks + average, like the
paper's Table 4) in CSV and Markdown, and plots of training reward and Pass@1.

    python -m mintrl.summarize --evals results/eval/**/metrics.json \
        --segments results/runs/*/*/iter_*/segment.json --out results/summary

Each run's row uses its latest evaluated iteration. A benchmark is ``<task>/<split>``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from mintrl.io import atomic_path  # noqa: E402


def eval_records(paths: list[Path]) -> pd.DataFrame:
    """One row per (run, task, iteration, split) with Pass@1 and the other split metrics."""
    rows = []
    for path in paths:
        m = json.loads(Path(path).read_text())
        for key in ("run", "task", "iteration"):
            if m.get(key) is None:
                raise SystemExit(f"{path}: no {key!r} (evaluate with --run and --iteration)")
        for split, values in m["splits"].items():
            rows.append({"run": m["run"], "task": m["task"], "iteration": m["iteration"],
                         "benchmark": f"{m['task']}/{split}", **values})
    return pd.DataFrame(rows)


def results_table(evals: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Pass@1 in % at each run's latest evaluated iteration: rows runs, columns benchmarks."""
    last = evals.groupby(["run", "task"])["iteration"].transform("max")
    final = evals[evals["iteration"] == last]
    table = final.pivot_table(index="run", columns="benchmark", values="pass@1") * 100
    # a run evaluated on fewer benchmarks gets no average: it would not compare with the others
    table["average"] = table.mean(axis=1, skipna=False)
    ranked = [r for r in order if r in table.index] + sorted(set(table.index) - set(order))
    return table.loc[ranked].round(1)


def iteration_records(paths: list[Path]) -> pd.DataFrame:
    rows = []
    for path in paths:
        seg = json.loads(Path(path).read_text())
        rows += [{"run": seg["run"], "task": seg["task"], **it} for it in seg["iterations"]]
    return pd.DataFrame(rows)


def to_markdown(table: pd.DataFrame) -> str:
    cols = list(table.columns)
    lines = ["| run | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for run, row in table.iterrows():
        lines.append(f"| {run} | " + " | ".join("–" if pd.isna(v) else f"{v:.1f}" for v in row)
                     + " |")
    return "\n".join(lines) + "\n"


def plot_rewards(iters: pd.DataFrame, out: Path) -> None:
    tasks = sorted(iters["task"].unique()) if len(iters) else []
    fig, axes = plt.subplots(1, max(1, len(tasks)), figsize=(5 * max(1, len(tasks)), 3.5),
                             squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=False):
        for run, df in iters[iters["task"] == task].groupby("run"):
            df = df.sort_values("iteration")
            ax.plot(df["iteration"], df["rollout/reward"], label=run)
        ax.set(title=task, xlabel="iteration", ylabel="training reward (mean)")
        ax.legend(fontsize=8)
    _save(fig, out)


def plot_pass1(table: pd.DataFrame, out: Path) -> None:
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * table.shape[1] * max(1, len(table)) / 2), 3.5))
    table.T.plot.bar(ax=ax, rot=0)
    ax.set(ylabel="Pass@1 (%)", xlabel="")
    ax.legend(fontsize=8)
    _save(fig, out)


def _save(fig, out: Path) -> None:
    fig.tight_layout()
    with atomic_path(out) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m mintrl.summarize",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--evals", nargs="+", type=Path, required=True, help="evaluate metrics.json")
    ap.add_argument("--segments", nargs="*", type=Path, default=[], help="segment.json files")
    ap.add_argument("--order", nargs="*", default=["base"], help="row order (others follow)")
    ap.add_argument("--out", type=Path, required=True, help="output folder")
    args = ap.parse_args(argv)
    evals = eval_records(args.evals)
    table = results_table(evals, args.order)
    iters = iteration_records(args.segments)
    with atomic_path(args.out / "table.csv") as tmp:
        table.to_csv(tmp)
    with atomic_path(args.out / "table.md") as tmp:
        tmp.write_text(to_markdown(table))
    with atomic_path(args.out / "evaluations.csv") as tmp:
        evals.to_csv(tmp, index=False)
    with atomic_path(args.out / "iterations.csv") as tmp:
        iters.to_csv(tmp, index=False)
    plot_rewards(iters, args.out / "reward.png")
    plot_pass1(table, args.out / "pass1.png")
    print(to_markdown(table), flush=True)


if __name__ == "__main__":
    main()
