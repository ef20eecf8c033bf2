"""Tuning on the validation split: score each grid point, choose per main-table row, and
write the choice into a config's ``tuned:`` block. ``python -m mintrl.tune`` is its CLI.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import yaml

from mintrl.config import ConfigError, parse_config
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
