r"""Stage ``track``: log one pipeline run (or a lab seed's base or teacher evaluation) into MLflow.

    python -m mintrl.track --config results/config/resolved.yaml --run grpo-s0 \
        --segments results/runs/*/grpo-s0/iter_*/segment.json \
        --evals results/eval/*/grpo-s0/iter_*/metrics.json \
        --out results/tracking/grpo-s0.json

Params = the resolved config as the run saw it; tags = method, seed, lab seed, overrides,
git commit, config hash; metrics per iteration (step = iteration) from the segments' files,
evaluation metrics at their iteration (the base evaluation at step 0). Safe to repeat: only
what the store lacks is logged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from mintrl.cli import CONFIG_HELP, command_line
from mintrl.config import load_config
from mintrl.config.runs import resolve_runs, split_lab_model
from mintrl.io import write_json
from mintrl.report.run_metrics import (
    collect_metrics,
    inspector_pages,
    run_colour,
    run_params,
    run_span,
)
from mintrl.report.tracking import git_commit, log_run


def main(argv: list[str] | None = None) -> None:
    ap = command_line("python -m mintrl.track", __doc__)
    ap.add_argument("--config", required=True, help=CONFIG_HELP)
    ap.add_argument("--run", required=True, help="a run of the config, a lab's base or "
                    "teacher ('base', 'teacher-lab1', ...), or 'summary-<target>' (a run "
                    "holding that target's tables and plots)")
    ap.add_argument("--segments", nargs="*", type=Path, default=[],
                    help="segment.json files of the run (its training metrics)")
    ap.add_argument("--evals", nargs="*", type=Path, default=[],
                    help="metrics.json files of the run's evaluations")
    ap.add_argument("--sft", nargs="*", type=Path, default=[], help="SFT stage metrics files")
    ap.add_argument("--artifacts", nargs="*", type=Path, default=[],
                    help="files attached to the MLflow run as artifacts")
    ap.add_argument("--out", required=True, type=Path, help="what was logged (JSON)")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    runs = resolve_runs(cfg, args.config)
    is_summary = args.run.startswith("summary-")
    lab = split_lab_model(args.run)  # a lab's base or teacher: its evaluation only
    if not (lab or is_summary or args.run in runs):
        raise SystemExit(f"unknown run {args.run!r}; runs of {args.config}: {sorted(runs)}")
    run = runs.get(args.run)
    if is_summary:
        params, tags = {}, {"method": "summary", "target": args.run.removeprefix("summary-"),
                            "git_commit": git_commit()}
    else:
        lab_seed = run.lab_seed if run else lab[1]
        params, length = run_params(cfg, run, lab_seed)
        tags = {"method": run.method if run else lab[0], "seed": run.seed if run else cfg.seed,
                "lab_seed": lab_seed, "group": run.group if run else "main",
                "row": run.entry if run else lab[0],
                "overrides": json.dumps(run.overrides, sort_keys=True) if run else "{}",
                "git_commit": git_commit(), **length,
                "iterations_done": max((json.loads(p.read_text())["end"] for p in args.segments),
                                       default=0)}  # rl.iterations is the planned length
    tags["mlflow.runColor"] = run_colour(runs, args.run)  # MLflow's UI reads this tag
    tables = {f"{p.stem}.json": pd.read_csv(p) for p in args.artifacts
              if p.name in ("table.csv", "table_stats.csv")}  # the summary's tables
    summary = log_run(cfg.tracking_uri, cfg.experiment, args.run, params=params, tags=tags,
                      metrics=collect_metrics(args.segments, args.evals, args.sft),
                      artifacts=[*args.artifacts, *inspector_pages(args.segments)],
                      tables=tables, span=run_span(args.segments, args.evals))
    write_json(args.out, summary | {"run": args.run, "tracking_uri": cfg.tracking_uri,
                                    "experiment": cfg.experiment})
    print(f"[track] {args.run}: {summary['new_metrics']} new of {summary['metrics']} metric "
          f"points -> {cfg.tracking_uri} ({cfg.experiment})", flush=True)


if __name__ == "__main__":
    from mintrl.cli import run_main

    run_main(main)
