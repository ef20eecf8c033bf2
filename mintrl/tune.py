r"""Stage ``tune``: pick each main-table row's values from its grid by validation Pass@1, and
write them into a config.

    python -m mintrl.tune --config results/config/resolved.yaml \
        --evals results/tune/*/tune-*/metrics.json --base results/tune/*/lab/base*/metrics.json \
        --prompts results/data/*/validation.parquet --out results/tune
    python -m mintrl.tune --apply results/tune/chosen.yaml --to config/config.yaml

The first writes ``chosen.yaml`` (row -> chosen values, with every point's score and guard)
and ``chosen.md``: each point is scored by validation Pass@1 on the problems of
``tune.score_kinds`` (a toy's medium and hard), and rejected when its Pass@1 on
``tune.guard_kind`` (easy) minus the base's, paired problem by problem, has a 95 % interval
wholly below 0. The second writes the chosen values into the config's ``tuned:`` block (between
``# >>> tuned`` and ``# <<< tuned``, appended when absent) with the grid and the date, after
checking that the result is a valid config; nothing else in the file changes.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from mintrl.cli import command_line
from mintrl.config import load_config
from mintrl.config.runs import split_lab_model
from mintrl.config.tuning import (
    apply,
    choose,
    problem_kinds,
    scores,
)
from mintrl.io import atomic_path


def main(argv: list[str] | None = None) -> None:
    ap = command_line("python -m mintrl.tune", __doc__)
    ap.add_argument("--config", help="config with tune.grids (choose mode)")
    ap.add_argument("--evals", nargs="*", type=Path, default=[], help="validation metrics")
    ap.add_argument("--base", nargs="*", type=Path, default=[],
                    help="the base's validation metrics, results/tune/<task>/lab/<model>/")
    ap.add_argument("--prompts", nargs="*", type=Path, default=[],
                    help="validation files, results/data/<task>/validation.parquet")
    ap.add_argument("--out", type=Path, help="folder for chosen.yaml and chosen.md")
    ap.add_argument("--apply", type=Path, help="a chosen.yaml to write into --to")
    ap.add_argument("--to", type=Path, help="the config file to write the tuned values into")
    args = ap.parse_args(argv)
    if args.apply:
        if not args.to:
            raise SystemExit("--apply needs --to CONFIG")
        apply(args.apply, args.to)
        print(f"[tune] wrote the tuned values of {args.apply} into {args.to}", flush=True)
        return
    if not (args.config and args.out):
        raise SystemExit("choose mode needs --config and --out (or use --apply FILE --to CONFIG)")
    cfg = load_config(args.config)
    base = {}
    for path in args.base:
        lab = split_lab_model(path.parent.name)
        if lab is None or lab[0] != "base":
            raise SystemExit(f"--base {path}: not a base model's evaluation (.../lab/base*/)")
        base[(path.parent.parent.parent.name, lab[1])] = path
    kinds = {path.parent.name: problem_kinds(path) for path in args.prompts}
    chosen = choose(scores(cfg, args.evals, base, kinds))
    missing = sorted(set(cfg.tune.grids) - set(chosen))
    if missing:
        raise SystemExit(f"no validation results for rows {missing}")
    with atomic_path(args.out / "chosen.yaml") as tmp:
        tmp.write_text(yaml.safe_dump(chosen, sort_keys=False))
    lines = ["| row | chosen | validation Pass@1 (%) | grid (Pass@1 % / step accuracy % / "
             "guard: easy minus base, pp [95 %]; x: rejected) |", "|---|---|---:|---|"]
    for row, c in chosen.items():
        grid = "; ".join(f"{json.dumps(g['values'])} {100 * g['pass@1']:.1f} / "
                         + ("n/a" if g.get("step_accuracy") is None
                            else f"{100 * g['step_accuracy']:.1f}")
                         + ("" if not g.get("guard") else
                            " / {:+.1f} [{:.1f}, {:.1f}]".format(*g["guard"]))
                         + (" x" if g.get("rejected") else "") for g in c["grid"])
        lines.append(f"| {row} | {json.dumps(c['values'])} | {100 * c['pass@1']:.1f} | {grid} |")
    with atomic_path(args.out / "chosen.md") as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    from mintrl.cli import run_main

    run_main(main)
