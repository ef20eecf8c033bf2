"""Toy-lab benchmark: checks the embedded default's knowledge gap (issue 23).

Run after the main command (`snakemake --cores 2`), which pre-trains and evaluates the models:

    python benchmarks/toy_lab.py            # -> results/benchmarks/toy_lab.{json,md}

Targets, per task: the base at >= 90 % on easy (known facts), 20-50 % on medium (one partial
fact), <= 3 % on hard (one unknown fact) with strict correctness <= 1 % and lucky answers
<= 1 % of wrong chains; the teacher >= 90 % on every split; >= 30 % of the RL training
prompts (after the filter) with a base pass rate in (5 %, 60 %], where GRPO has signal; and
on hard, the reference correction at the base's first wrong step >= 1 nat per token less
likely under the base than its own samples (a gap of knowledge, not noise). Also the base's
Pass@1 by the kind of fact a problem looks up, on the validation split. A config without a
fact table (the length toy, config/length_toy.yaml) reports the old length targets instead.
"""

from __future__ import annotations

# mintrl before torch: it pins the CPU kernels every stage runs (mintrl.cpu_numerics)
import mintrl  # noqa: F401

# isort: split
import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from mintrl.config import load_config
from mintrl.engine import Sampling, load_engine
from mintrl.io import read_table, write_json
from mintrl.report.evaluation import sample_problems
from mintrl.steps import split_steps
from mintrl.tasks import Problem, get_task
from mintrl.training.logprobs import response_logprobs

RESULTS = Path("results")
BAND = (0.05, 0.60)  # a pass rate where a group of 8 rollouts has signal


def problems_of(task_name: str, split: str) -> list[Problem]:
    rows = read_table(RESULTS / "data" / task_name / f"{split}.parquet").to_dict("records")
    return [Problem.from_row(r) for r in rows]


def knowledge_gap(engine, tok, task_name: str) -> dict[str, float]:
    """Mean per-token log-prob, under the base, of (a) its own sampled tokens on hard problems
    and (b) the reference correction written at its first wrong step (what the teacher says).
    Every sample of the split is scored: the samples are stored problem by problem, so a
    prefix of them would cover a few problems (200 samples: 7 of 100)."""
    model = engine.model
    task = get_task(task_name)
    problems = {p.id: p for p in problems_of(task_name, "hard")}
    samples = read_table(RESULTS / "eval" / "lab" / task_name / "base" / "samples.parquet")
    samples = samples[samples["split"] == "hard"]
    own_p, own_r, fix_p, fix_r = [], [], [], []
    for row in samples.itertuples():
        p = problems[row.problem_id]
        prompt_ids = tok(p.prompt, add_special_tokens=False)["input_ids"]
        own_p.append(prompt_ids)
        own_r.append(tok(row.response, add_special_tokens=False)["input_ids"])
        v = task.oracle(p, row.response)
        if v.first_wrong is None or v.correct_step is None:
            continue
        cut = row.response[: split_steps(row.response)[v.first_wrong].start]
        fix_p.append(prompt_ids + tok(cut, add_special_tokens=False)["input_ids"])
        fix_r.append(tok(v.correct_step, add_special_tokens=False)["input_ids"])
    own = response_logprobs(model, own_p, own_r, tok.pad_token_id)
    fix = response_logprobs(model, fix_p, fix_r, tok.pad_token_id)
    return {
        "own_tokens_mean_logprob": float(np.mean([x for r in own for x in r])),
        "correction_tokens_mean_logprob": float(np.mean([x for r in fix for x in r])),
        "correction_least_likely_token_mean_logprob": float(np.mean([min(r) for r in fix if r])),
        "corrections_scored": len(fix),
    }


def pass_rates(engine, tok, problems: list[Problem], max_new: int, samples: int):
    """Per-problem pass rate of the base (``samples`` each), as a Series by problem id."""
    df, _ = sample_problems(engine, tok, problems, samples, Sampling(max_new_tokens=max_new))
    return df, df.groupby("problem_id")["reward"].mean()


def by_fact_level(cfg, task_name: str, df) -> dict[str, float]:
    """Pass@1 by how the base's data showed the one uncertain fact a problem looks up
    (known / partial q=... / unknown), from sampled validation rows."""
    table = cfg.tasks[task_name].facts.table()
    level = {p.id: table.problem_level(p.spec["facts"]["keys"])
             for p in problems_of(task_name, "validation")}
    df = df.assign(level=df["problem_id"].map(level))
    out = df.groupby("level")["reward"].mean()
    order = sorted(out.index, key=lambda s: (s != "known", s == "unknown", s))
    return {k: round(float(out[k]), 4) for k in order}


PROBE = (("grpo", "medium"), ("opd", "hard"))  # on-policy RL has signal; distillation teaches


def learnability(tasks) -> dict:
    """Whether RL can learn on the toy: GRPO's and OPD's paired differences to the base on
    medium and hard, from the main command's summary (results/summary/main/table_stats.csv);
    empty before the main command's summary exists."""
    import pandas as pd

    path = RESULTS / "summary" / "main" / "table_stats.csv"
    if not path.exists() or not tasks:
        return {}
    stats = pd.read_csv(path)
    stats = stats[stats["metric"] == "pass@1"].set_index(["row", "benchmark"])
    out = {"source": str(path), "tasks": {}}
    for name in tasks:
        cells = {}
        for row, split in PROBE:
            x = stats.loc[(row, f"{name}/{split}")]
            cells[f"{row} {split}"] = {"delta": float(x["delta"]), "lo": float(x["delta_lo"]),
                                       "hi": float(x["delta_hi"]), "pairs": int(x["seeds"])}
        out["tasks"][name] = cells
    out["iteration"] = load_config(RESULTS / "config" / "resolved.yaml").main_iterations
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--samples", type=int, default=16,
                    help="samples per problem for the training prompts' pass rates")
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    cfg = load_config(args.config)
    report: dict = {"date": time.strftime("%Y-%m-%d"), "config": args.config, "tasks": {}}
    toy = [n for n in sorted(cfg.tasks) if cfg.tasks[n].kind == "toy"]
    splits = {n: cfg.tasks[n].eval_splits for n in toy}
    all_splits = max(splits.values(), key=len)
    lines = ["| task | model | pre-train s | " + " | ".join(f"{s} Pass@1" for s in all_splits)
             + " | hard strict | lucky (hard) |",
             "|---|---|---:|" + "---:|" * len(all_splits) + "---:|---:|"]
    checks, extra = [], []
    for name in toy:
        spec = cfg.tasks[name]
        entry: dict = {}
        for role in ("base", "teacher"):
            pre = json.loads((RESULTS / "models" / name / f"{role}.json").read_text())
            ev = json.loads((RESULTS / "eval" / "lab" / name / role / "metrics.json").read_text())
            entry[role] = {"pretrain_seconds": pre["seconds"], **{
                s: ev["splits"][s] for s in splits[name]}}
            cells = [f"{100 * ev['splits'][s]['pass@1']:.1f}" if s in splits[name] else "–"
                     for s in all_splits]
            h = ev["splits"]["hard"]
            lines.append(f"| {name} | {role} | {pre['seconds']:.0f} | " + " | ".join(cells)
                         + f" | {100 * h['strict']:.1f} | {100 * (h['lucky'] or 0):.2f} |")
        base, teacher = entry["base"], entry["teacher"]
        # The luck rule protects the policy's Pass@1 (RL starts from the base).
        checks.append((f"{name} base: lucky <= 1 % of wrong chains on hard",
                       (base["hard"]["lucky"] or 0) <= 0.01))
        engine, tok = load_engine("transformers", str(RESULTS / "models" / name / "base"), 512)
        entry["knowledge_gap"] = gap = knowledge_gap(engine, tok, name)
        checks.append((f"{name}: hard corrections >= 1 nat/token less likely than own tokens",
                       gap["correction_tokens_mean_logprob"]
                       <= gap["own_tokens_mean_logprob"] - 1.0))
        if spec.facts is None:
            checks += [
                (f"{name} base easy Pass@1 >= 0.8", base["easy"]["pass@1"] >= 0.8),
                (f"{name} base hard Pass@1 <= 0.2", base["hard"]["pass@1"] <= 0.2),
                (f"{name} teacher hard Pass@1 >= 0.8", teacher["hard"]["pass@1"] >= 0.8),
            ]
            report["tasks"][name] = entry
            continue
        checks += [
            (f"{name} base easy Pass@1 >= 90 %", base["easy"]["pass@1"] >= 0.9),
            (f"{name} base medium Pass@1 in [20 %, 50 %]",
             0.2 <= base["medium"]["pass@1"] <= 0.5),
            (f"{name} base hard Pass@1 <= 3 %", base["hard"]["pass@1"] <= 0.03),
            (f"{name} base hard strict <= 1 %", base["hard"]["strict"] <= 0.01),
            *[(f"{name} teacher {s} Pass@1 >= 90 %", teacher[s]["pass@1"] >= 0.9)
              for s in splits[name]],
        ]
        train = problems_of(name, "train_filtered")
        _, rates = pass_rates(engine, tok, train, spec.max_new_tokens, args.samples)
        share = float(((rates > BAND[0]) & (rates <= BAND[1])).mean())
        entry["train_filtered"] = {"prompts": len(train), "samples": args.samples,
                                   "share_in_band": share,
                                   "share_at_0": float((rates == 0).mean()),
                                   "share_at_1": float((rates == 1).mean())}
        checks.append((f"{name}: >= 30 % of filtered training prompts with a base pass rate "
                       "in (5 %, 60 %]", share >= 0.3))
        val, _ = pass_rates(engine, tok, problems_of(name, "validation"), spec.max_new_tokens,
                            args.samples)
        entry["base_validation_pass@1_by_fact"] = by_fact_level(cfg, name, val)
        report["tasks"][name] = entry
    extra += ["", "| task | base log-prob per token: own samples (hard) | reference correction "
              "at its first wrong step | least likely token of that correction |",
              "|---|---:|---:|---:|"]
    for name, entry in report["tasks"].items():
        g = entry["knowledge_gap"]
        extra.append(f"| {name} | {g['own_tokens_mean_logprob']:.3f} | "
                     f"{g['correction_tokens_mean_logprob']:.2f} | "
                     f"{g['correction_least_likely_token_mean_logprob']:.2f} |")
    facts = {n: e for n, e in report["tasks"].items() if "train_filtered" in e}
    if facts:
        extra += ["", f"RL training prompts after the filter, base pass rate over "
                  f"{args.samples} samples each:", "",
                  "| task | prompts | in (5 %, 60 %] | at 0 | at 1 |", "|---|---:|---:|---:|---:|"]
        for name, e in facts.items():
            t = e["train_filtered"]
            extra.append(f"| {name} | {t['prompts']} | {100 * t['share_in_band']:.1f} % | "
                         f"{100 * t['share_at_0']:.1f} % | {100 * t['share_at_1']:.1f} % |")
        extra += ["", f"Base Pass@1 on the validation split by the fact a problem looks up "
                  f"({args.samples} samples per problem; partial: the share q of the base's "
                  "data that showed the fact's true value):", ""]
        for name, e in facts.items():
            extra.append(f"- {name}: " + ", ".join(
                f"{k} {100 * v:.1f} %" for k, v in e["base_validation_pass@1_by_fact"].items()))
    probe = learnability(facts)
    if probe:
        report["learnability"] = probe
        extra += ["", f"Learnability (the main command's runs at iteration {probe['iteration']}, "
                  "Pass@1 minus the base's, pp [95 % interval over problems]):", "",
                  "| task | GRPO on medium | OPD on hard |", "|---|---:|---:|"]
        for name, cells in probe["tasks"].items():
            extra.append(f"| {name} | " + " | ".join(
                f"{c['delta']:+.1f} [{c['lo']:.1f}, {c['hi']:.1f}]" for c in cells.values()) + " |")
            for (row, split), c in zip(PROBE, cells.values(), strict=True):
                checks.append((f"{name}: {row} lifts {split} by >= 10 pp, interval above 0",
                               c["delta"] >= 10 and c["lo"] > 0))
    report["checks"] = {label: ok for label, ok in checks}
    out = RESULTS / "benchmarks"
    write_json(out / "toy_lab.json", report)
    check_lines = ["", *[f"- [{'x' if ok else ' '}] {label}" for label, ok in checks]]
    text = "\n".join(lines + extra + check_lines) + "\n"
    (out / "toy_lab.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
