"""How far one (lab seed, RL seed) pair moves the main command's table: the same table from
different pairs, cell by cell.

    python benchmarks/pair_spread.py --out benchmarks/results/pair_spread.md \
        --summary results/summary/main_table --config results/config/resolved.yaml
    python benchmarks/pair_spread.py --out FILE.md \
        --tables 0,0=results/summary/main 1,1=<other workdir>/results/summary/main

``--summary``: the summary folder of ``snakemake main_table`` (every pair in one table); each
run's Pass@1 at its latest evaluation is read from its ``evaluations.csv``, and ``--config``
says each run's row and pair. ``--tables``: one summary folder per pair, each a
``table_stats.csv`` of one pair (its rows' ``seeds`` count is 1). For every row and benchmark:
the Pass@1 of each pair, its range over pairs (what a single pair cannot tell apart), and the
same for the difference to the base of the same lab seed. A method's gain smaller than this
range is not a result of one pair.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd


def load(tables: dict[str, Path], metric: str) -> pd.DataFrame:
    """(row, benchmark, pair, mean, delta) for ``metric`` from each pair's table_stats.csv."""
    parts = []
    for pair, folder in tables.items():
        stats = pd.read_csv(folder / "table_stats.csv")
        stats = stats[stats["metric"] == metric]
        if (stats["seeds"] != 1).any():
            raise SystemExit(f"{folder}: a row averages several pairs; give one-pair tables")
        parts.append(stats.assign(pair=pair)[["row", "benchmark", "pair", "mean", "delta"]])
    return pd.concat(parts, ignore_index=True)


def load_summary(folder: Path, config: Path, metric: str) -> pd.DataFrame:
    """The same frame as ``load``, from one summary of several pairs: each run's ``metric`` at
    its latest evaluation, and its difference to the base of its lab seed (same problems)."""
    from mintrl.config import load_config
    from mintrl.config.runs import resolve_runs
    from mintrl.report.tables import latest, rows_and_labs

    runs = resolve_runs(load_config(config))
    evals = latest(pd.read_csv(folder / "evaluations.csv"))
    row_of, lab_of = rows_and_labs(evals["run"].unique(), runs)
    if unknown := sorted(set(evals["run"]) - set(row_of)):
        raise SystemExit(f"{folder / 'evaluations.csv'}: run {unknown[0]!r} is not in {config}")
    df = pd.DataFrame({"row": evals["run"].map(row_of), "benchmark": evals["benchmark"],
                       "lab": evals["run"].map(lab_of),
                       "pair": evals["run"].map({n: f"{r.lab_seed},{r.seed}"
                                                 for n, r in runs.items()}),
                       "mean": evals[metric]})
    pair_of_lab = df.dropna(subset="pair").groupby("lab")["pair"].first()
    df["pair"] = df["pair"].fillna(df["lab"].map(pair_of_lab))
    base = df[df["row"] == "base"].set_index(["lab", "benchmark"])["mean"]
    df["delta"] = df["mean"] - base.reindex(pd.MultiIndex.from_frame(df[["lab", "benchmark"]])
                                            ).to_numpy()
    df.loc[df["row"] == "base", "delta"] = float("nan")
    df[["mean", "delta"]] *= 100
    return df.dropna(subset="pair")[["row", "benchmark", "pair", "mean", "delta"]]


def spread_markdown(df: pd.DataFrame, pairs: list[str], rows: list[str]) -> str:
    """One line per (row, benchmark): each pair's value, the range; then the same of delta."""
    head = " | ".join(f"({p})" for p in pairs)
    lines = [f"| row | benchmark | {head} | range | minus base: {head} | range |",
             "|---|---|" + "---:|" * (2 * len(pairs) + 2)]
    for (row, bench), g in sorted(df.groupby(["row", "benchmark"]),
                                  key=lambda kv: (rows.index(kv[0][0]), kv[0][1])):
        g = g.set_index("pair").reindex(pairs)
        vals, deltas = g["mean"], g["delta"]
        cell = " | ".join(f"{v:.1f}" for v in vals)
        dcell = " | ".join("" if pd.isna(v) else f"{v:+.1f}" for v in deltas)
        drange = "" if deltas.isna().all() else f"{deltas.max() - deltas.min():.1f}"
        lines.append(f"| {row} | {bench} | {cell} | {vals.max() - vals.min():.1f} | {dcell} | "
                     f"{drange} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    given = ap.add_mutually_exclusive_group(required=True)
    given.add_argument("--tables", nargs="+", metavar="LAB,RL=FOLDER",
                       help="a pair and the summary folder of its main command")
    given.add_argument("--summary", type=Path, help="one summary folder of several pairs "
                       "(results/summary/main_table)")
    ap.add_argument("--config", type=Path, default=Path("results/config/resolved.yaml"),
                    help="with --summary: the config that names its runs")
    ap.add_argument("--metric", default="pass@1", help="table_stats.csv metric")
    ap.add_argument("--out", type=Path, required=True, help="markdown file to write")
    ap.add_argument("--title", default="", help="a line under the heading: how they were run")
    args = ap.parse_args(argv)
    if args.summary:
        df = load_summary(args.summary, args.config, args.metric)
        pairs = sorted(df["pair"].unique())
    else:
        tables = {}
        for spec in args.tables:
            pair, _, folder = spec.partition("=")
            tables[pair] = Path(folder)
        df = load(tables, args.metric)
        pairs = list(tables)
    rows = list(dict.fromkeys(df["row"]))
    worst = df.groupby(["row", "benchmark"])["mean"].agg(lambda s: s.max() - s.min())
    dworst = df.groupby(["row", "benchmark"])["delta"].agg(lambda s: s.max() - s.min())
    heading = f"How far one (lab seed, RL seed) pair moves the main table ({args.metric}, %)"
    text = [f"# {heading}",
            "", args.title, "",
            spread_markdown(df, pairs, rows), "",
            f"Largest range over pairs: {worst.max():.1f} pp ({'/'.join(worst.idxmax())}); "
            f"of a difference to the base: {dworst.max():.1f} pp ({'/'.join(dworst.idxmax())}). "
            f"Median range: {worst.median():.1f} pp, of a difference {dworst.median():.1f} pp.", ""]
    args.out.write_text("\n".join(text))
    print("\n".join(text))


if __name__ == "__main__":
    main()
