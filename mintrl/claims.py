r"""Stage ``claims``: decide the paper's claims (``config/claims.yaml``, fixed before the
sweep) from the evaluations, by the rule each claim names (``mintrl/report/claims.py``).

    python -m mintrl.claims --config results/config/resolved.yaml --claims config/claims.yaml \
        --evals results/eval/*/*/iter_*/metrics.json results/eval/lab/*/*/metrics.json \
        --out results/summary/claims

Each run counts at its latest evaluated iteration, as in the tables. Writes ``verdicts.md``
(one line per claim: reproduced / not reproduced / inconclusive / not run, the paired
difference that decided it with its 95 % interval, the same difference in strict correctness,
and why), ``verdicts.csv``, ``comparisons.csv`` (every comparison of every claim with its
interval) and ``verdicts.png`` (those intervals, grouped by claim, coloured by outcome). A
claim whose rows were not evaluated is "not run", never decided on part of its evidence; so is
one naming a row the config does not run (another config's claims file may name other
ablations).
"""

from __future__ import annotations

from pathlib import Path

from mintrl.cli import CONFIG_HELP, command_line
from mintrl.config import load_config
from mintrl.config.runs import resolve_runs
from mintrl.io import atomic_path
from mintrl.report.claims import (
    comparison_table,
    decide,
    interval_table,
    load_claims,
    verdict_markdown,
)
from mintrl.report.plots import plot_claims
from mintrl.report.tables import eval_records, problem_scores, rows_and_labs


def main(argv: list[str] | None = None) -> None:
    ap = command_line("python -m mintrl.claims", __doc__)
    ap.add_argument("--config", required=True, help=CONFIG_HELP)
    ap.add_argument("--claims", required=True, type=Path, help="claims file (config/claims.yaml)")
    ap.add_argument("--evals", nargs="+", required=True, type=Path,
                    help="evaluate metrics.json of the runs and of the lab's base")
    ap.add_argument("--out", required=True, type=Path, help="output folder")
    args = ap.parse_args(argv)
    claims = load_claims(args.claims)
    runs = resolve_runs(load_config(args.config))
    evals = eval_records(args.evals)
    row_of, lab_of = rows_and_labs(evals["run"].unique(), runs)
    entries = {r.entry for r in runs.values()} | {"base", "teacher"}
    scores = problem_scores(evals, row_of, lab_of)
    # the bootstrap intervals, once: the verdicts and the figure read the same ones
    main_iv = interval_table(scores, claims, claims.metric)
    table = decide(main_iv, interval_table(scores, claims, claims.beside), claims, entries)
    evidence = comparison_table(main_iv, claims, entries)
    md = verdict_markdown(table, claims.metric, claims.beside)
    with atomic_path(args.out / "verdicts.md") as tmp:
        tmp.write_text(md)
    with atomic_path(args.out / "verdicts.csv") as tmp:
        table.to_csv(tmp, index=False)
    with atomic_path(args.out / "comparisons.csv") as tmp:
        evidence.to_csv(tmp, index=False)
    plot_claims(evidence, table, args.out / "verdicts.png")
    print(md, flush=True)


if __name__ == "__main__":
    from mintrl.cli import run_main

    run_main(main)
