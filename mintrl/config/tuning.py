"""Tuning on the validation split: score each grid point, choose per main-table row, and
write the choice into a config's ``tuned:`` block. ``python -m mintrl.tune`` is its CLI.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pandas as pd
import yaml

from mintrl.config import ConfigError, parse_config
from mintrl.config.derived_runs import tune_points
from mintrl.config.runs import resolve_runs
from mintrl.io import atomic_path, read_table
from mintrl.report.stats import cell_stats

BEGIN, END = "# >>> tuned", "# <<< tuned"


def problem_kinds(prompts: Path) -> dict[str, str]:
    """problem id -> fact kind of a validation file (empty for a task without fact kinds)."""
    out = {}
    for row in read_table(prompts).to_dict("records"):
        spec = json.loads(row["spec"]) if isinstance(row["spec"], str) else row["spec"]
        kind = (spec or {}).get("facts", {}).get("kind")
        if kind is not None:
            out[row["id"]] = kind
    return out


def per_problem(samples: Path) -> pd.Series:
    """problem id -> mean reward over its samples (Pass@1 of the problem)."""
    return read_table(samples).groupby("problem_id")["reward"].mean()


def guard_interval(run: pd.Series, base: pd.Series, n_boot: int = 2000,
                   seed: int = 0) -> tuple[float, float, float]:
    """Mean and 95 % bootstrap interval of run − base on the same problems (pp)."""
    if set(run.index) != set(base.index):
        raise SystemExit("the guard compares a tuning run and the base on other problems")
    diff = (run - base.loc[run.index]).to_numpy() * 100
    st = cell_stats([diff[None, :]], n_boot=n_boot, seed=seed)  # one run: problems resampled
    return st["mean"], st["lo"], st["hi"]


def scores(cfg, evals: list[Path], base: dict[tuple[str, int], Path] | None = None,
           kinds: dict[str, dict[str, str]] | None = None) -> dict[str, dict]:
    """Per tuning run: its row, grid point, score and guard, averaged over its tasks.

    ``evals``: the tuning runs' validation metrics.json (samples.parquet beside each);
    ``base``: (task, lab seed) -> the base's validation metrics.json; ``kinds``: task ->
    problem id -> fact kind. The score is Pass@1 on the problems of ``tune.score_kinds`` (all
    problems of a task without kinds); ``rejected`` when the guard kind's paired interval of
    run − base lies wholly below 0. Step accuracy is shown beside, not used."""
    points = tune_points(cfg)
    runs = resolve_runs(cfg)
    per_run: dict[str, dict[str, list]] = {}
    for path in evals:
        m = json.loads(Path(path).read_text())
        if m.get("run") not in points:
            raise SystemExit(f"{path}: run {m.get('run')!r} is not a tuning run of this config")
        got = per_run.setdefault(m["run"], {"score": [], "step_accuracy": [], "guard": []})
        problems = per_problem(Path(path).parent / "samples.parquet")
        kind = (kinds or {}).get(m["task"], {})
        scored = [p for p in problems.index if kind.get(p) in cfg.tune.score_kinds] or list(
            problems.index)
        got["score"].append(float(problems.loc[scored].mean()))
        for split in m["splits"].values():
            if split.get("step_accuracy") is not None:
                got["step_accuracy"].append(split["step_accuracy"])
        guarded = [p for p in problems.index if kind.get(p) == cfg.tune.guard_kind]
        key = (m["task"], runs[m["run"]].lab_seed)
        if cfg.tune.guard_kind and guarded and base and key in base:
            ref = per_problem(Path(base[key]).parent / "samples.parquet")
            got["guard"].append(guard_interval(problems.loc[guarded], ref.loc[guarded]))
    out = {}
    for run, got in per_run.items():
        guard = got["guard"]
        out[run] = {"row": points[run][0], "point": points[run][1],
                    "pass@1": sum(got["score"]) / len(got["score"]),
                    "step_accuracy": (sum(got["step_accuracy"]) / len(got["step_accuracy"])
                                      if got["step_accuracy"] else None),
                    "guard": [round(x, 2) for x in guard[0]] if guard else None,
                    "rejected": any(hi < 0 for _, _, hi in guard)}
    return out


def choose(scored: dict[str, dict]) -> dict[str, dict]:
    """Per row, the point with the best score among those the guard does not reject (the
    first listed on a tie); every point stays in the row's ``grid`` with its score and guard.
    A row whose every point is rejected keeps its best score, marked ``all_rejected``."""
    out: dict[str, dict] = {}
    for run in sorted(scored, key=lambda r: int(r.rsplit("-", 1)[1])):
        s = scored[run]
        row = out.setdefault(s["row"], {"values": None, "pass@1": None, "grid": []})
        step = s.get("step_accuracy")
        row["grid"].append({"values": s["point"], "pass@1": round(s["pass@1"], 4),
                            "step_accuracy": None if step is None else round(step, 4),
                            "guard": s.get("guard"), "rejected": s.get("rejected", False)})
    for row in out.values():
        allowed = [g for g in row["grid"] if not g["rejected"]] or row["grid"]
        best = max(allowed, key=lambda g: g["pass@1"])  # max keeps the first on a tie
        row["values"], row["pass@1"] = best["values"], best["pass@1"]
        row["all_rejected"] = not any(not g["rejected"] for g in row["grid"])
    return out


def tuned_block(chosen: dict[str, dict], date: str) -> str:
    lines = [f"{BEGIN} (python -m mintrl.tune --apply, {date}: each grid point's validation "
             "Pass@1 on tune.score_kinds; 'x': rejected by the guard on tune.guard_kind)",
             "tuned:"]
    for row, c in chosen.items():
        grid = "; ".join(f"{json.dumps(g['values'])} {100 * g['pass@1']:.1f}"
                         + (" x" if g.get("rejected") else "") for g in c["grid"])
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
