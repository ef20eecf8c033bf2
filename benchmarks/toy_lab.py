"""Toy-lab benchmark: checks the calibration targets of the embedded default.

Run after the main command (`snakemake --cores 2`), which pre-trains and evaluates the models:

    python benchmarks/toy_lab.py            # -> results/benchmarks/toy_lab.{json,md}

Targets (issue 2): base Pass@1 high on easy and <= 20 % on hard; teacher >= 80 % on hard;
each model pre-trained in <= 5 minutes on 2 cores; a wrong chain of steps hits the right
answer by luck in < 1 % of cases; the base has a knowledge gap: the reference correction at
its first wrong step is improbable under it, far below its own tokens.
"""

from __future__ import annotations

# mintrl before torch: it pins the CPU kernels every stage runs (mintrl.cpu_numerics)
import mintrl  # noqa: F401

# isort: split
import json
import time
from pathlib import Path

import numpy as np
import torch

from mintrl.config import load_config
from mintrl.engine import Sampling, load_engine
from mintrl.evaluate import sample_problems
from mintrl.io import read_table, write_json
from mintrl.logprobs import response_logprobs
from mintrl.steps import split_steps
from mintrl.tasks import Problem, get_task

RESULTS = Path("results")


def knowledge_gap(engine, tok, task_name: str, n: int = 200) -> dict[str, float]:
    """Mean per-token log-prob, under the base, of (a) its own sampled tokens on hard problems
    and (b) the reference correction written at its first wrong step (what the teacher says)."""
    model = engine.model
    task = get_task(task_name)
    problems = {r["id"]: Problem.from_row(r) for r in read_table(
        RESULTS / "data" / task_name / "hard.parquet").to_dict("records")}
    samples = read_table(RESULTS / "eval" / "lab" / task_name / "base" / "samples.parquet")
    samples = samples[samples["split"] == "hard"]
    own_p, own_r, fix_p, fix_r = [], [], [], []
    for row in samples.itertuples():
        if len(fix_p) >= n:
            break
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


def pass_rate_by_difficulty(engine, tok, task_name: str, samples: int = 8) -> dict[str, float]:
    """The base's Pass@1 per difficulty on the validation split (which spans the RL training
    range): where on-policy RL has signal (0 < p < 1) and where it has none."""
    problems = [Problem.from_row(r) for r in read_table(
        RESULTS / "data" / task_name / "validation.parquet").to_dict("records")]
    max_new = load_config("config/config.yaml").tasks[task_name].max_new_tokens
    df, _ = sample_problems(engine, tok, problems, samples, Sampling(max_new_tokens=max_new))
    by_k = df.groupby("difficulty")["reward"].mean()
    return {str(k): round(float(v), 4) for k, v in by_k.items()}


def main() -> None:
    torch.set_num_threads(2)
    cfg = load_config("config/config.yaml")
    report: dict = {"date": time.strftime("%Y-%m-%d"), "tasks": {}}
    lines = ["| task | model | pre-train s | easy Pass@1 | hard Pass@1 | hard strict "
             "| hard pass@32 | lucky (hard) | gen tok/s |", "|---|---|---|---|---|---|---|---|---|"]
    checks = []
    for name in sorted(cfg.tasks):
        entry = {}
        for role in ("base", "teacher"):
            pre = json.loads((RESULTS / "models" / name / f"{role}.json").read_text())
            ev = json.loads((RESULTS / "eval" / "lab" / name / role / "metrics.json").read_text())
            e, h = ev["splits"]["easy"], ev["splits"]["hard"]
            entry[role] = {"pretrain_seconds": pre["seconds"], "easy": e, "hard": h}
            lines.append(
                f"| {name} | {role} | {pre['seconds']:.0f} | {e['pass@1']:.3f} | {h['pass@1']:.3f} "
                f"| {h['strict']:.3f} | {h.get('pass@32', float('nan')):.3f} | {h['lucky']:.4f} "
                f"| {np.mean([e['tokens_per_s'], h['tokens_per_s']]):.0f} |")
            checks.append((f"{name} {role} pre-trained in <= 300 s", pre["seconds"] <= 300))
        # The luck rule protects the policy's Pass@1 (RL starts from the base): its wrong
        # chains must not hit the right answer. The teacher's share is reported in the table.
        base_hard = entry["base"]["hard"]
        checks.append((f"{name} base: lucky < 1 % of wrong chains on hard",
                       base_hard["lucky"] < 0.01))
        checks += [
            (f"{name} base easy Pass@1 >= 0.8", entry["base"]["easy"]["pass@1"] >= 0.8),
            (f"{name} base hard Pass@1 <= 0.2", entry["base"]["hard"]["pass@1"] <= 0.2),
            (f"{name} teacher hard Pass@1 >= 0.8", entry["teacher"]["hard"]["pass@1"] >= 0.8),
        ]
        engine, tok = load_engine("transformers", str(RESULTS / "models" / name / "base"), 512)
        entry["knowledge_gap"] = gap = knowledge_gap(engine, tok, name)
        entry["base_validation_pass@1_by_difficulty"] = pass_rate_by_difficulty(engine, tok, name)
        checks.append((f"{name}: correction tokens >= 1 nat/token less likely than own tokens",
                       gap["correction_tokens_mean_logprob"]
                       <= gap["own_tokens_mean_logprob"] - 1.0))
        report["tasks"][name] = entry
    gap_lines = ["", "| task | base log-prob per token: own samples | reference correction at "
                 "its first wrong step | least likely token of that correction |",
                 "|---|---|---|---|"]
    for name, entry in report["tasks"].items():
        g = entry["knowledge_gap"]
        gap_lines.append(f"| {name} | {g['own_tokens_mean_logprob']:.3f} | "
                         f"{g['correction_tokens_mean_logprob']:.2f} | "
                         f"{g['correction_least_likely_token_mean_logprob']:.2f} |")
    gap_lines += ["", "Base Pass@1 by difficulty on the validation split (8 samples per problem):",
                  ""]
    for name, entry in report["tasks"].items():
        by_k = entry["base_validation_pass@1_by_difficulty"]
        gap_lines.append(f"- {name}: " + ", ".join(f"k={k}: {v:.2f}" for k, v in by_k.items()))
    report["checks"] = {label: ok for label, ok in checks}
    out = RESULTS / "benchmarks"
    write_json(out / "toy_lab.json", report)
    check_lines = ["", *[f"- [{'x' if ok else ' '}] {label}" for label, ok in checks]]
    (out / "toy_lab.md").write_text("\n".join(lines + gap_lines + check_lines) + "\n")
    print("\n".join(lines + gap_lines + check_lines))


if __name__ == "__main__":
    main()
