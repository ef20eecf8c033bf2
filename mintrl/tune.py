"""Stage ``tune``: pick each main-table row's values from its grid by validation Pass@1, and
write them into a config.

    python -m mintrl.tune --config results/config/resolved.yaml \
        --evals results/tune/*/tune-*/metrics.json --out results/tune
    python -m mintrl.tune --apply results/tune/chosen.yaml --to config/config.yaml

The first writes ``chosen.yaml`` (row -> chosen values, with every point's score) and
``chosen.md``. The second writes the chosen values into the config's ``tuned:`` block (between
``# >>> tuned`` and ``# <<< tuned``, appended when absent) with the grid and the date, after
checking that the result is a valid config; nothing else in the file changes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from mintrl.config import load_config
from mintrl.config.tuning import (
    apply,
    choose,
    scores,
)
from mintrl.io import atomic_path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m mintrl.tune", description=__doc__.split("\n")[0])
    ap.add_argument("--config", help="config with tune.grids (choose mode)")
    ap.add_argument("--evals", nargs="*", type=Path, default=[], help="validation metrics")
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
    chosen = choose(scores(cfg, args.evals))
    missing = sorted(set(cfg.tune.grids) - set(chosen))
    if missing:
        raise SystemExit(f"no validation results for rows {missing}")
    with atomic_path(args.out / "chosen.yaml") as tmp:
        tmp.write_text(yaml.safe_dump(chosen, sort_keys=False))
    lines = ["| row | chosen | validation Pass@1 (%) | grid (Pass@1 % / step accuracy %) |",
             "|---|---|---:|---|"]
    for row, c in chosen.items():
        grid = "; ".join(f"{json.dumps(g['values'])} {100 * g['pass@1']:.1f} / "
                         + ("n/a" if g.get("step_accuracy") is None
                            else f"{100 * g['step_accuracy']:.1f}") for g in c["grid"])
        lines.append(f"| {row} | {json.dumps(c['values'])} | {100 * c['pass@1']:.1f} | {grid} |")
    with atomic_path(args.out / "chosen.md") as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
