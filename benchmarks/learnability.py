"""Learnability probe: can RL learn on the toy? GRPO on medium, OPD on hard (issue 23).

Run after the main command (`snakemake --cores 2`), which pre-trains the lab and evaluates the
base; the probe continues nothing of it, it runs GRPO and OPD (seed 0, lab seed 0, the main
table's protocol and tuned settings) from the base to ``--iterations`` in a scratch copy of
the lab, so the main command's results stay as they are:

    python benchmarks/learnability.py --iterations 40  # -> results/benchmarks/learnability.*

Reports each run's Pass@1 minus the base's on the same problems (32 samples each), with the
bootstrap 95 % interval over problems, on every split; the targets are GRPO's medium and OPD's
hard rising by >= 10 pp with an interval above 0.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

from mintrl.config import load_config
from mintrl.io import write_json
from mintrl.report.stats import cell_stats

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path("results")
PROBE = (("grpo", "medium"), ("opd", "hard"))
LAB = ("data", "models", "eval/lab", "filter")  # what the probe reuses of the main command


def scratch_lab(work: Path, parts: tuple[str, ...] = LAB) -> None:
    """A copy of the main command's lab (by default: splits, models, the base's evaluation,
    filtered prompts; ``parts`` are folders or files under results/), modification times kept
    so that Snakemake finds it up to date."""
    for part in parts:
        src, dst = RESULTS / part, work / "results" / part
        if not src.exists():
            raise SystemExit(f"{src}: missing; run the main command (snakemake --cores 2) first")
        if src.is_dir():
            shutil.copytree(src, dst, copy_function=shutil.copy2, dirs_exist_ok=True)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


def main_rows_config(config: Path, work: Path, tuned: dict | None = None) -> Path:
    """The config with its ablation entries dropped (``work/config.yaml``): the probe
    continues main-table rows only, and an ablation group may end where a longer main run
    keeps no checkpoint (the control group stops at 12). ``tuned`` overrides the `tuned:`
    block's values per row."""
    cfg = yaml.safe_load(config.read_text())  # anchors resolved
    cfg["runs"] = [r for r in cfg["runs"] if "group" not in r]
    kept = {r.get("name", r["method"]) for r in cfg["runs"]}
    for block in (cfg.get("tune", {}).get("grids", {}), cfg.get("tuned", {})):
        for name in set(block) - kept:
            del block[name]
    for row, values in (tuned or {}).items():
        cfg.setdefault("tuned", {}).setdefault(row, {}).update(values)
    work.mkdir(parents=True, exist_ok=True)
    out = work / "config.yaml"
    out.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return out


def run_in_scratch(work: Path, config: Path, targets: list[str], iterations: int,
                   cores: int) -> None:
    """Snakemake ``targets`` in the scratch lab ``work`` (made by ``scratch_lab``), with the
    main table's runs continued to ``iterations``."""
    # targets first: --config and --rerun-triggers take every word that follows them
    cmd = [sys.executable, "-m", "snakemake", *targets, "-s",
           str(ROOT / "workflow" / "Snakefile"), "--directory", str(work),
           "--configfile", str(config.resolve()), "--cores", str(cores),
           "--rerun-triggers", "mtime", "--config", f"main_iterations={iterations}"]
    print("[scratch lab]", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def paired(base: pd.DataFrame, run: pd.DataFrame, split: str) -> dict[str, float]:
    """Pass@1 of ``run`` minus ``base`` on ``split`` in pp: per-problem mean rewards paired by
    problem, bootstrap interval over problems."""
    b = base[base["split"] == split].groupby("problem_id")["reward"].mean()
    r = run[run["split"] == split].groupby("problem_id")["reward"].mean()
    if set(b.index) != set(r.index):
        raise SystemExit(f"{split}: the run and the base were evaluated on other problems")
    diff = (r - b.loc[r.index]).to_numpy(float)[None, :] * 100
    stats = cell_stats([diff])
    return {"base": float(b.mean() * 100), "run": float(r.mean() * 100),
            "delta": stats["mean"], "lo": stats["lo"], "hi": stats["hi"],
            "problems": int(diff.shape[1])}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--iterations", type=int, default=40)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--work", type=Path, default=RESULTS / "learnability",
                    help="scratch working directory (a copy of the lab)")
    ap.add_argument("--tasks", help="comma-separated tasks (default: every toy task)")
    ap.add_argument("--rows", default=",".join(row for row, _ in PROBE),
                    help="comma-separated probe rows (grpo, opd)")
    ap.add_argument("--set", dest="overrides", action="append", default=[],
                    metavar="ROW.KEY=VALUE", help="a tuned value changed for a diagnostic "
                    "run, e.g. opd.lr=3e-4 (repeatable); not the protocol's choice")
    ap.add_argument("--name", default="learnability",
                    help="report name: results/benchmarks/<name>.{md,json}")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    tasks = (args.tasks.split(",") if args.tasks else
             [t for t in sorted(cfg.tasks) if cfg.tasks[t].kind == "toy"])
    probe = [(row, split) for row, split in PROBE if row in args.rows.split(",")]
    runs = {row: f"{row}-s0" for row, _ in probe}
    tuned: dict[str, dict] = {}
    for item in args.overrides:
        key, _, value = item.partition("=")
        row, _, name = key.partition(".")
        try:  # YAML 1.1 reads 3e-4 as a string
            tuned.setdefault(row, {})[name] = float(value)
        except ValueError:
            tuned.setdefault(row, {})[name] = yaml.safe_load(value)
    scratch_lab(args.work)
    targets = [f"results/eval/{t}/{r}/iter_{args.iterations}/metrics.json"
               for t in tasks for r in runs.values()]
    t0 = time.perf_counter()
    config = main_rows_config(Path(args.config), args.work, tuned)
    run_in_scratch(args.work, config, targets, args.iterations, args.cores)
    seconds = time.perf_counter() - t0
    command = " ".join(["python benchmarks/learnability.py", *(argv if argv is not None
                                                              else sys.argv[1:])])
    report = {"date": time.strftime("%Y-%m-%d"), "iterations": args.iterations,
              "seconds": seconds, "command": command, "tuned_overrides": tuned, "tasks": {}}
    lines = [f"# Learnability probe: GRPO and OPD after {args.iterations} iterations", "",
             f"`{report['command']}` after the main command, {time.strftime('%Y-%m-%d')}: "
             "seed 0, lab seed 0, the main table's protocol and tuned settings"
             + (f" except {tuned} (a diagnostic, not the protocol's choice)" if tuned else "")
             + "; Pass@1 (%) "
             "and the paired difference to the base on the same problems (32 samples × "
             "100 problems per split) [bootstrap 95 % interval over problems]. "
             f"Wall time {seconds / 60:.1f} min.", "",
             "| task | run | split | base | run | run − base |", "|---|---|---|---:|---:|---:|"]
    checks = []
    for t in tasks:
        base = pd.read_parquet(RESULTS / "eval" / "lab" / t / "base" / "samples.parquet")
        report["tasks"][t] = {}
        for row, split in probe:
            run = pd.read_parquet(args.work / "results" / "eval" / t / runs[row]
                                  / f"iter_{args.iterations}" / "samples.parquet")
            cells = {s: paired(base, run, s) for s in cfg.tasks[t].eval_splits}
            report["tasks"][t][row] = cells
            for s, c in cells.items():
                mark = "**" if s == split else ""
                lines.append(f"| {t} | {row} | {mark}{s}{mark} | {c['base']:.1f} | "
                             f"{c['run']:.1f} | {c['delta']:+.1f} [{c['lo']:.1f}, "
                             f"{c['hi']:.1f}] |")
            c = cells[split]
            checks.append((f"{t}: {row} lifts {split} by >= 10 pp, interval above 0",
                           bool(c["delta"] >= 10 and c["lo"] > 0)))
    report["checks"] = dict(checks)
    lines += ["", *[f"- [{'x' if ok else ' '}] {label}" for label, ok in checks]]
    out = RESULTS / "benchmarks"
    write_json(out / f"{args.name}.json", report)
    (out / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
