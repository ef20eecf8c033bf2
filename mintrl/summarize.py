"""Stage ``summarize``: the results tables (rows methods, columns benchmarks + average, like the
paper's Table 4) in CSV and Markdown, and plots of training reward and Pass@1.

    python -m mintrl.summarize --config results/config/resolved.yaml \
        --evals results/eval/**/metrics.json --segments results/runs/*/*/iter_*/segment.json \
        --out results/summary/main

Each run counts at its latest evaluated iteration; a benchmark is ``<task>/<split>``. A row is
a config entry (``grpo``, ...): its seeds' runs give mean ± std over seeds and a bootstrap 95 %
interval over problems and seeds (``mintrl/stats.py``), from the evaluations' per-sample files.
Writes ``table.{md,csv}`` (Pass@1; best per column in bold), ``quality.md`` (strict
correctness and step accuracy: on the toy, Pass@1 alone can hide what was learned),
``table_stats.csv`` (every statistic, long format), ``runs.md`` (one row per run),
``evaluations.csv``, ``iterations.csv`` and the plots (``mintrl/plots.py``): ``pass1.png``,
``reward.png``, ``curves.png`` (reward, coverage, off-policy share, intervention rate, length),
``knobs.png`` (an ablation's Pass@1 against each knob it varies alone).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from mintrl.io import atomic_path
from mintrl.plots import plot_curves, plot_knobs, plot_pass1, plot_rewards
from mintrl.stats import cell_stats

# table metric -> column of the evaluations' samples.parquet
SAMPLE_METRICS = {"pass@1": "reward", "strict": "strict", "step_accuracy": "step_accuracy"}


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
                         "benchmark": f"{m['task']}/{split}", "source": str(path), **values})
    return pd.DataFrame(rows)


def latest(evals: pd.DataFrame) -> pd.DataFrame:
    """Each (run, task)'s latest evaluated iteration."""
    last = evals.groupby(["run", "task"])["iteration"].transform("max")
    return evals[evals["iteration"] == last]


def problem_scores(evals: pd.DataFrame, row_of: dict[str, str]) -> pd.DataFrame:
    """Per (row, run, benchmark, problem): the mean over samples of each SAMPLE_METRICS
    column, at each run's latest evaluation (read from the ``samples.parquet`` next to its
    ``metrics.json``). ``row_of`` maps a run to its table row (runs not in it are their own)."""
    parts = []
    final = latest(evals)[["run", "task", "source"]].drop_duplicates()
    for run, task, source in final.itertuples(index=False):
        path = Path(source).parent / "samples.parquet"
        if not path.exists():
            raise SystemExit(f"{path}: missing (it is written with {source})")
        samples = pd.read_parquet(path, columns=["problem_id", "split",
                                                 *SAMPLE_METRICS.values()])
        cols = list(SAMPLE_METRICS.values())
        samples[cols] = samples[cols].astype(float)  # strict is null where nothing is graded
        per = samples.groupby(["split", "problem_id"])[cols].mean().reset_index()
        per["benchmark"] = task + "/" + per.pop("split")
        per["run"], per["row"] = run, row_of.get(run, run)
        parts.append(per)
    return pd.concat(parts, ignore_index=True)


def trained_benchmarks(scores: pd.DataFrame, trained: set[str]) -> pd.DataFrame:
    """Only the benchmarks the ``trained`` runs were evaluated on (the lab's base and teacher
    are evaluated on every task: an arith-only ablation's table has no intfn columns, and
    its reference rows get an average over the same benchmarks). No trained run: all."""
    mine = scores[scores["run"].isin(trained)]
    return scores[scores["benchmark"].isin(set(mine["benchmark"]))] if len(mine) else scores


def seed_table(scores: pd.DataFrame, metric: str, n_boot: int = 1000) -> pd.DataFrame:
    """Long table (row, benchmark, metric, mean, std, lo, hi, seeds), in %: each row's runs
    are its seeds. "average" is the mean over benchmarks, only for rows that have them all."""
    column = SAMPLE_METRICS[metric]
    benchmarks = sorted(scores["benchmark"].unique())
    out = []
    for row, part in scores.groupby("row", sort=False):
        mats = {}
        for bench, b in part.groupby("benchmark"):
            if b[column].isna().all():  # not graded on this benchmark (no reference steps)
                continue
            m = b.pivot(index="run", columns="problem_id", values=column)  # seeds × problems
            if m.isna().any().any():
                raise SystemExit(f"row {row!r}, {bench}: its runs were evaluated on different "
                                 "problems")
            mats[bench] = m.to_numpy(float) * 100
        cells = {bench: [m] for bench, m in mats.items()}
        if sorted(mats) == benchmarks:
            cells["average"] = list(mats.values())
        for bench, ms in cells.items():
            out.append({"row": row, "benchmark": bench, "metric": metric,
                        **cell_stats(ms, n_boot=n_boot)})
    return pd.DataFrame(out)


def single_knobs(specs: dict[str, dict], reference: str | None) -> dict[str, dict[str, float]]:
    """knob -> {row: value} for the rows whose numeric settings differ from ``reference``'s
    in exactly one key (``specs``: row -> flat run spec); the reference joins every knob."""
    if reference not in specs:
        return {}
    ref = specs[reference]
    out: dict[str, dict[str, float]] = {}
    for row, spec in specs.items():
        diff = [k for k in spec if k != "tasks" and spec[k] != ref.get(k)]
        if row == reference or len(diff) != 1 or not _is_number(spec[diff[0]]):
            continue
        knob = out.setdefault(diff[0], {})
        knob[row] = spec[diff[0]]
        if _is_number(ref.get(diff[0])):  # e.g. not a measured (None) const_c
            knob[reference] = ref[diff[0]]
    return out


def _is_number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def stats_markdown(stats: pd.DataFrame, order: list[str], bold_best: bool = True) -> str:
    """Cells ``mean ± std [lo, hi]``; the best mean of each column among the method rows in
    bold (the teacher is a reference, not a contender)."""
    if stats.empty:
        return "Not graded: these benchmarks have no reference steps to grade against.\n"
    wide = stats.pivot(index="row", columns="benchmark", values="mean")
    cols = [c for c in wide.columns if c != "average"] + (["average"] if "average" in wide else [])
    rows = [r for r in order if r in wide.index] + sorted(set(wide.index) - set(order))
    contenders = [r for r in rows if r != "teacher"]
    best = wide.loc[contenders, cols].max() if contenders else pd.Series(dtype=float)
    cell = stats.set_index(["row", "benchmark"])
    lines = ["| row | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for r in rows:
        texts = []
        for c in cols:
            if (r, c) not in cell.index:
                texts.append("–")
                continue
            x = cell.loc[(r, c)]
            text = f"{x['mean']:.1f} ± {x['std']:.1f} [{x['lo']:.1f}, {x['hi']:.1f}]"
            if bold_best and r != "teacher" and round(x["mean"], 1) == round(best[c], 1):
                text = f"**{text}**"
            texts.append(text)
        lines.append(f"| {r} | " + " | ".join(texts) + " |")
    seeds = stats.groupby("row")["seeds"].max()
    lines += ["", "Mean ± std over seeds [bootstrap 95 % interval over problems and seeds]; "
              "seeds per row: " + ", ".join(f"{r} {int(seeds[r])}" for r in rows) + "."]
    return "\n".join(lines) + "\n"


def results_table(evals: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Pass@1 in % at each run's latest evaluated iteration: rows runs, columns benchmarks."""
    table = latest(evals).pivot_table(index="run", columns="benchmark", values="pass@1") * 100
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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m mintrl.summarize",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--evals", nargs="+", type=Path, required=True, help="evaluate metrics.json")
    ap.add_argument("--segments", nargs="*", type=Path, default=[], help="segment.json files")
    ap.add_argument("--order", nargs="*", default=["base"], help="run order (others follow)")
    ap.add_argument("--config", help="config whose runs' entries name the rows (default: one "
                    "row per run)")
    ap.add_argument("--out", type=Path, required=True, help="output folder")
    args = ap.parse_args(argv)
    row_of, specs, reference = {}, {}, None
    if args.config:
        from mintrl.config import load_config
        from mintrl.runs import reference_run, resolve_runs

        cfg = load_config(args.config)
        runs = resolve_runs(cfg)
        row_of = {n: r.entry for n, r in runs.items()}
        in_table = set(args.order)
        specs = {r.entry: pd.json_normalize(r.spec.model_dump()).iloc[0].to_dict()
                 for n, r in runs.items() if n in in_table}
        ref = reference_run(cfg, runs)
        reference = runs[ref].entry if ref else None
    evals = eval_records(args.evals)
    runs = results_table(evals, args.order)
    scores = trained_benchmarks(problem_scores(evals, row_of), set(row_of))
    stats = pd.concat([seed_table(scores, m) for m in SAMPLE_METRICS], ignore_index=True)
    rows = list(dict.fromkeys(row_of.get(r, r) for r in args.order))
    pass1 = stats[stats["metric"] == "pass@1"]
    table = pass1.pivot(index="row", columns="benchmark", values="mean")
    table = table.loc[[r for r in rows if r in table.index]
                      + sorted(set(table.index) - set(rows))].round(1)
    if "average" in table:
        table = table[[c for c in table.columns if c != "average"] + ["average"]]
    iters = iteration_records(args.segments)
    with atomic_path(args.out / "table.csv") as tmp:
        table.to_csv(tmp)
    with atomic_path(args.out / "table.md") as tmp:
        tmp.write_text("Pass@1 (%)\n\n" + stats_markdown(pass1, rows))
    quality = "".join(
        f"{title} (%)\n\n" + stats_markdown(stats[stats["metric"] == m], rows) + "\n"
        for m, title in (("strict", "Strict correctness (every step right)"),
                         ("step_accuracy", "Step accuracy")))
    with atomic_path(args.out / "quality.md") as tmp:
        tmp.write_text(quality)
    with atomic_path(args.out / "table_stats.csv") as tmp:
        stats.to_csv(tmp, index=False)
    with atomic_path(args.out / "runs.md") as tmp:
        tmp.write_text(to_markdown(runs))
    with atomic_path(args.out / "evaluations.csv") as tmp:
        evals.to_csv(tmp, index=False)
    with atomic_path(args.out / "iterations.csv") as tmp:
        iters.to_csv(tmp, index=False)
    plot_rewards(iters, row_of, args.out / "reward.png")
    plot_curves(iters, row_of, args.out / "curves.png")
    plot_pass1(pass1, rows, args.out / "pass1.png")
    plot_knobs(pass1, single_knobs(specs, reference), args.out / "knobs.png")
    print(stats_markdown(pass1, rows), flush=True)


if __name__ == "__main__":
    main()
