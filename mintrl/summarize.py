r"""Stage ``summarize``: the results tables (rows methods, columns benchmarks + average, like the
paper's Table 4) in CSV and Markdown, and plots of training reward and Pass@1.

    python -m mintrl.summarize --config results/config/resolved.yaml \
        --evals results/eval/**/metrics.json --segments results/runs/*/*/iter_*/segment.json \
        --out results/summary/main

Each run counts at its latest evaluated iteration; a benchmark is ``<task>/<split>``. A row is
a config entry (``grpo``, ...): its runs, one per (lab seed, RL seed) pair, give mean ± std over
pairs and a bootstrap 95 % interval over problems and pairs (``mintrl/report/stats.py``), from the
evaluations' per-sample files. The base and teacher rows average over the lab seeds the
table's runs start from (``base``, ``base-lab1``, ...). A row's difference to the base pairs
each run with the base of its own lab seed, problem by problem, before averaging: the lab's
noise is in both and cancels. Writes ``table.{md,csv}`` (Pass@1, and its difference to the
base; best per column in bold; each row's cost per iteration: rollout tokens, teacher tokens,
FLOPs, ``mintrl/training/cost.py``), ``quality.md`` (strict correctness and step accuracy: on
the toy, Pass@1 alone can hide what was learned), ``table_stats.csv`` (every statistic, long
format), ``runs.md`` (one row per run), ``evaluations.csv``, ``iterations.csv`` and the plots
(``mintrl/report/plots.py``): ``pass1.png``, ``reward.png``, ``curves.png`` (reward, coverage,
off-policy share, intervention rate, length), ``knobs.png`` with ``--knobs`` (an ablation's
Pass@1 against each knob it varies alone).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mintrl.cli import command_line
from mintrl.config.runs import single_knobs
from mintrl.io import atomic_path, write_files
from mintrl.report.plots import plot_curves, plot_knobs, plot_pass1, plot_rewards
from mintrl.report.stats import benchmark_order
from mintrl.report.tables import (
    SAMPLE_METRICS,
    VERSUS_ROWS,
    cost_markdown,
    cost_table,
    eval_records,
    iteration_records,
    problem_scores,
    results_table,
    rows_and_labs,
    seed_table,
    stats_markdown,
    table_markdown,
    to_markdown,
    trained_benchmarks,
    versus_table,
)


def main(argv: list[str] | None = None) -> None:
    ap = command_line("python -m mintrl.summarize", __doc__)
    ap.add_argument("--evals", nargs="+", type=Path, required=True, help="evaluate metrics.json")
    ap.add_argument("--segments", nargs="*", type=Path, default=[], help="segment.json files")
    ap.add_argument("--order", nargs="*", default=["base"], help="run order (others follow)")
    ap.add_argument("--config", help="config whose runs' entries name the rows (default: one "
                    "row per run)")
    ap.add_argument("--out", type=Path, required=True, help="output folder")
    ap.add_argument("--knobs", action="store_true", help="also write knobs.png: Pass@1 against "
                    "each numeric setting a row varies alone (the workflow asks for it where "
                    "one does)")
    args = ap.parse_args(argv)
    config_runs, specs, reference = {}, {}, None
    if args.config:
        from mintrl.config import load_config
        from mintrl.config.runs import flat_spec, reference_run, resolve_runs

        cfg = load_config(args.config)
        config_runs = resolve_runs(cfg)
        in_table = set(args.order)
        specs = {r.entry: flat_spec(r.spec) for n, r in config_runs.items() if n in in_table}
        ref = reference_run(cfg, config_runs)
        reference = config_runs[ref].entry if ref else None
    evals = eval_records(args.evals)
    row_of, lab_of = rows_and_labs(evals["run"].unique(), config_runs)
    runs = results_table(evals, args.order)
    scores = trained_benchmarks(problem_scores(evals, row_of, lab_of), set(config_runs))
    stats = pd.concat([seed_table(scores, m) for m in SAMPLE_METRICS], ignore_index=True)
    rows = list(dict.fromkeys(row_of.get(r, r) for r in args.order))
    pass1 = stats[stats["metric"] == "pass@1"]
    table = pass1.pivot(index="row", columns="benchmark", values="mean")
    table = table.loc[[r for r in rows if r in table.index]
                      + sorted(set(table.index) - set(rows)), benchmark_order(table.columns)]
    table = table.round(1)
    iters = iteration_records(args.segments)
    with atomic_path(args.out / "table.csv") as tmp:
        table.to_csv(tmp)
    versus = {row: versus_table(scores, "pass@1", row) for row in VERSUS_ROWS}
    cost = cost_markdown(cost_table(iters, row_of, rows))
    text = table_markdown(pass1, rows, versus) + (
        "\nCost per iteration (the budget each row spent)\n\n" + cost if cost else "")
    quality = "".join(
        f"{title} (%)\n\n" + stats_markdown(stats[stats["metric"] == m], rows) + "\n"
        for m, title in (("strict", "Strict correctness (every step right)"),
                         ("step_accuracy", "Step accuracy")))
    write_files(args.out, {"table.md": text, "quality.md": quality, "runs.md": to_markdown(runs),
                           "table_stats.csv": stats, "evaluations.csv": evals,
                           "iterations.csv": iters})
    plot_rewards(iters, row_of, args.out / "reward.png")
    plot_curves(iters, row_of, args.out / "curves.png")
    plot_pass1(pass1, rows, args.out / "pass1.png")
    if args.knobs:
        plot_knobs(pass1, single_knobs(specs, reference), args.out / "knobs.png")
    print(text, flush=True)


if __name__ == "__main__":
    from mintrl.cli import run_main

    run_main(main)
