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
import datetime
import json
from pathlib import Path

import yaml

from mintrl.config import ConfigError, load_config, parse_config
from mintrl.config.runs import tune_points
from mintrl.io import atomic_path

BEGIN, END = "# >>> tuned", "# <<< tuned"


def scores(cfg, evals: list[Path]) -> dict[str, dict]:
    """Per tuning run: its row, grid point and validation Pass@1 (mean over its tasks), with
    step accuracy beside it (shown, not used to choose: on the toy Pass@1 can hide what a
    policy learned)."""
    points = tune_points(cfg)
    per_run: dict[str, dict[str, list[float]]] = {}
    for path in evals:
        m = json.loads(Path(path).read_text())
        if m.get("run") not in points:
            raise SystemExit(f"{path}: run {m.get('run')!r} is not a tuning run of this config")
        got = per_run.setdefault(m["run"], {"pass@1": [], "step_accuracy": []})
        for split in m["splits"].values():
            got["pass@1"].append(split["pass@1"])
            if split.get("step_accuracy") is not None:
                got["step_accuracy"].append(split["step_accuracy"])
    return {run: {"row": points[run][0], "point": points[run][1],
                  **{k: sum(v) / len(v) if v else None for k, v in got.items()}}
            for run, got in per_run.items()}


def choose(scored: dict[str, dict]) -> dict[str, dict]:
    """Per row, the point with the best validation Pass@1 (the first listed on a tie)."""
    out: dict[str, dict] = {}
    for run in sorted(scored, key=lambda r: int(r.rsplit("-", 1)[1])):
        s = scored[run]
        row = out.setdefault(s["row"], {"values": s["point"], "pass@1": s["pass@1"],
                                        "grid": []})
        step = s.get("step_accuracy")
        row["grid"].append({"values": s["point"], "pass@1": round(s["pass@1"], 4),
                            "step_accuracy": None if step is None else round(step, 4)})
        if s["pass@1"] > row["pass@1"]:
            row["values"], row["pass@1"] = s["point"], s["pass@1"]
    return out


def tuned_block(chosen: dict[str, dict], date: str) -> str:
    lines = [f"{BEGIN} (python -m mintrl.tune --apply, {date}: validation Pass@1 of each grid "
             "point of tune.grids)", "tuned:"]
    for row, c in chosen.items():
        grid = "; ".join(f"{json.dumps(g['values'])} {100 * g['pass@1']:.1f}" for g in c["grid"])
        lines.append(f"  # {row}: {grid}")
        lines.append(f"  {row}: {json.dumps(c['values'])}")
    return "\n".join(lines + [END]) + "\n"


def apply(chosen_file: Path, config_file: Path, date: str | None = None) -> str:
    """Write the chosen values into ``config_file``'s tuned block; returns the new text."""
    chosen = yaml.safe_load(Path(chosen_file).read_text())
    text = Path(config_file).read_text()
    block = tuned_block(chosen, date or datetime.date.today().isoformat())
    if BEGIN in text:
        head, rest = text.split(BEGIN, 1)
        if END not in rest:
            raise SystemExit(f"{config_file}: '{BEGIN}' without '{END}'")
        new = head + block + rest.split(END, 1)[1].lstrip("\n")
    else:
        new = text.rstrip("\n") + "\n\n" + block
    try:
        parse_config(yaml.safe_load(new), str(config_file))
    except ConfigError as err:
        raise SystemExit("the tuned values do not make a valid config; nothing written:\n"
                         f"{err}") from None
    with atomic_path(config_file) as tmp:
        tmp.write_text(new)
    return new


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
