"""Pipeline benchmark: where the main command's time goes, and what GRPO did vs base.

Run after the main command (`snakemake --cores 2`) in the same folder:

    python benchmarks/pipeline.py           # -> results/benchmarks/pipeline.{json,md}

Reads Snakemake's own records (the newest run log for the wall time; `benchmark:` files for
each job's wall time and peak resident memory) and what the stages record about themselves
(segment start-up: imports, model loading, DeepSpeed init, state loading; checkpoint writes per
iteration; evaluation and pre-training work time). A job's overhead is its wall time minus
the work it reports.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pandas as pd

from mintrl.io import write_json

RESULTS = Path("results")


def wall_time(log_dir: Path = Path(".snakemake/log")) -> float | None:
    """Seconds from the first to the last timestamp of the newest Snakemake log."""
    logs = sorted(log_dir.glob("*.snakemake.log"))
    if not logs:
        return None
    stamps = re.findall(r"^\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]$", logs[-1].read_text(), re.M)
    if len(stamps) < 2:
        return None
    t = [datetime.strptime(s, "%a %b %d %H:%M:%S %Y") for s in (stamps[0], stamps[-1])]
    return (t[1] - t[0]).total_seconds()


def job_walls() -> pd.DataFrame:
    rows = []
    for tsv in sorted((RESULTS / "benchmarks" / "rules").glob("**/*.tsv")):
        bench = pd.read_csv(tsv, sep="\t")
        rows.append({"rule": tsv.parent.name if tsv.parent.name != "rules" else tsv.stem,
                     "job": tsv.stem, "s": float(bench["s"].iloc[-1]),
                     "max_rss_mb": float(bench["max_rss"].iloc[-1])})
    return pd.DataFrame(rows)


def segment_breakdown() -> dict[str, float]:
    """Sum over segment jobs of their wall time split into start-up, compute and I/O."""
    out = dict.fromkeys(("jobs", "imports", "model_load", "deepspeed_init", "state_load",
                         "checkpoint_io", "iterations", "iteration_compute", "rollout_write",
                         "generate", "reward", "old_logprobs", "update"), 0.0)
    for path in sorted((RESULTS / "runs").glob("*/*/iter_*/*.json")):
        if path.name not in ("segment.json", "handoff.json"):
            continue
        seg = json.loads(path.read_text())
        out["jobs"] += 1
        for key in ("imports", "model_load", "deepspeed_init", "state_load"):
            out[key] += seg["startup"][key]
        for it in seg["iterations"]:
            out["iterations"] += 1
            out["checkpoint_io"] += it["time/checkpoint"]
            out["iteration_compute"] += it["time/iteration"]
            for key in ("generate", "reward", "old_logprobs", "update"):
                out[key] += it[f"time/{key}"]
    return out


def grpo_vs_base() -> pd.DataFrame | None:
    path = RESULTS / "summary" / "table.csv"
    return pd.read_csv(path, index_col=0) if path.exists() else None


def main() -> None:
    wall = wall_time()
    jobs = job_walls()
    by_rule = jobs.groupby("rule").agg(count=("s", "count"), sum=("s", "sum"),
                                       peak_rss_mb=("max_rss_mb", "max")).round(1)
    seg = segment_breakdown()
    seg_wall = float(jobs.loc[jobs["rule"] == "segment", "s"].sum())
    startup = seg["imports"] + seg["model_load"] + seg["deepspeed_init"] + seg["state_load"]
    # what no stage reports: interpreter start, argument parsing, writing segment.json, exit
    seg_other = seg_wall - startup - seg["iteration_compute"] - seg["checkpoint_io"]
    evals = [json.loads(p.read_text()) for p in RESULTS.glob("eval/**/metrics.json")]
    eval_work = sum(e["seconds"] for e in evals)
    eval_wall = float(jobs.loc[jobs["rule"] == "evaluate", "s"].sum())
    pre_work = sum(json.loads(p.read_text())["seconds"]
                   for p in RESULTS.glob("models/*/*.json"))
    pre_wall = float(jobs.loc[jobs["rule"] == "pretrain", "s"].sum())
    job_total = float(jobs["s"].sum())
    overhead = startup + seg_other + seg["checkpoint_io"] + (eval_wall - eval_work) \
        + (pre_wall - pre_work)
    report = {
        "wall_s": wall, "job_seconds": job_total, "rules": by_rule.to_dict(orient="index"),
        "segments": seg | {"wall": seg_wall, "other": seg_other},
        "evaluate": {"wall": eval_wall, "work": eval_work},
        "pretrain": {"wall": pre_wall, "work": pre_work},
        "overhead_s": overhead, "overhead_share_of_job_time": overhead / job_total,
        "peak_rss_mb": float(jobs["max_rss_mb"].max()),
    }
    table = grpo_vs_base()
    if table is not None:
        report["pass@1"] = table.to_dict(orient="index")
    write_json(RESULTS / "benchmarks" / "pipeline.json", report)

    lines = [f"Main command wall time: {wall / 60:.1f} min on this machine" if wall else
             "Main command wall time: unknown (no Snakemake log)", "",
             "| rule | jobs | job time (s) | peak RSS of a job (MB) |", "|---|---:|---:|---:|"]
    lines += [f"| {r} | {int(v['count'])} | {v['sum']:.0f} | {v['peak_rss_mb']:.0f} |"
              for r, v in by_rule.iterrows()]
    lines += ["", f"Job time in all: {job_total:.0f} s (two jobs at a time on 2 cores); "
              f"start-up, imports, model loading, DeepSpeed init and checkpoint I/O: "
              f"{overhead:.0f} s ({100 * overhead / job_total:.1f} %).", "",
              "| segment jobs (sum) | s |", "|---|---:|"]
    for key in ("imports", "model_load", "deepspeed_init", "state_load", "checkpoint_io",
                "generate", "reward", "old_logprobs", "update"):
        lines.append(f"| {key} | {seg[key]:.1f} |")
    lines.append(f"| other (interpreter start, exit, writes) | {seg_other:.1f} |")
    lines.append(f"| **wall, {int(seg['jobs'])} jobs, {int(seg['iterations'])} iterations** "
                 f"| **{seg_wall:.1f}** |")
    if table is not None:
        lines += ["", "Pass@1 (%) at each run's last evaluated checkpoint:", "",
                  "| run | " + " | ".join(table.columns) + " |",
                  "|---|" + "---:|" * len(table.columns)]
        lines += [f"| {r} | " + " | ".join(f"{v:.1f}" for v in row) + " |"
                  for r, row in table.iterrows()]
    text = "\n".join(lines) + "\n"
    (RESULTS / "benchmarks" / "pipeline.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
