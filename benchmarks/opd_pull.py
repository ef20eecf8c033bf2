"""How hard OPD pulls where the base is already right: the teacher's per-token log-ratio to the
base on the base's own samples, split by split.

OPD's per-token advantage is ``log π_T(y_t) − log π_θ(y_t)`` on the tokens the policy samples
(docs/design.md §1.3). At the start of training π_θ is the base, so this ratio on the base's
own samples is the signal OPD's first updates follow. On `easy` (facts the base knows) every
nat of it moves the policy away from answers that were already right; on `hard` it is the
knowledge to learn. Run after the main command (`snakemake --cores 2`), which writes the base's
samples (results/eval/lab/<task>/base/samples.parquet); compare teachers made differently:

    python benchmarks/opd_pull.py --task arith \\
        --teacher from-base=results/models/arith/teacher \\
        --teacher scratch=OTHER_CLONE/results/models/arith/teacher
    # -> results/benchmarks/opd_pull_<task>.{json,md}
"""

from __future__ import annotations

# mintrl before torch: it pins the CPU kernels every stage runs (mintrl.cpu_numerics)
import mintrl  # noqa: F401

# isort: split
import argparse
import time
from pathlib import Path

import numpy as np
import torch
from transformers import AutoTokenizer

from mintrl.io import read_table, write_json
from mintrl.models import load_model
from mintrl.training.logprobs import response_logprobs

RESULTS = Path("results")
SPLITS = ("easy", "medium", "hard")


def scored_samples(task: str, per_problem: int) -> tuple[list[str], list[list[int]],
                                                          list[list[int]], object]:
    """The base's first ``per_problem`` samples of every problem of each split, tokenized."""
    tok = AutoTokenizer.from_pretrained(RESULTS / "models" / task / "base")
    prompts = {}
    for split in SPLITS:
        for row in read_table(RESULTS / "data" / task / f"{split}.parquet").itertuples():
            prompts[row.id] = row.prompt
    samples = read_table(RESULTS / "eval" / "lab" / task / "base" / "samples.parquet")
    samples = samples[samples["sample"] < per_problem]
    splits = samples["split"].tolist()
    p = [tok(prompts[i], add_special_tokens=False)["input_ids"] for i in samples["problem_id"]]
    r = [tok(t, add_special_tokens=False)["input_ids"] for t in samples["response"]]
    return splits, p, r, tok


def pull(base: list[list[float]], teacher: list[list[float]], splits: list[str]) -> dict:
    """Per split: the mean per-token log-ratio teacher − base (OPD's mean advantage), its mean
    absolute value, the share of tokens where it exceeds 1 nat in size, and the mean over
    samples of its sum (one sequence's total pull)."""
    out = {}
    for split in SPLITS:
        rows = [np.subtract(t, b) for t, b, s in zip(teacher, base, splits, strict=True)
                if s == split]
        if not rows:
            continue
        tokens = np.concatenate(rows)
        out[split] = {"mean": float(tokens.mean()), "mean_abs": float(np.abs(tokens).mean()),
                      "share_over_1_nat": float((np.abs(tokens) > 1).mean()),
                      "sequence_sum": float(np.mean([r.sum() for r in rows])),
                      "samples": len(rows), "tokens": int(tokens.size)}
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", default="arith")
    ap.add_argument("--teacher", action="append", required=True, metavar="NAME=PATH",
                    help="a teacher checkpoint to score (repeatable)")
    ap.add_argument("--per-problem", type=int, default=4, help="base samples per problem")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    t0 = time.time()
    splits, prompts, responses, tok = scored_samples(args.task, args.per_problem)

    def score(path) -> list[list[float]]:
        model = load_model(path).eval()
        return response_logprobs(model, prompts, responses, tok.pad_token_id)

    base = score(RESULTS / "models" / args.task / "base")
    result = {"task": args.task, "per_problem": args.per_problem, "teachers": {}}
    for name, path in (t.split("=", 1) for t in args.teacher):
        result["teachers"][name] = {"path": path, "by_split": pull(base, score(path), splits)}
    result["seconds"] = round(time.time() - t0, 1)
    out = RESULTS / "benchmarks" / f"opd_pull_{args.task}"
    write_json(out.with_suffix(".json"), result)
    lines = ["| teacher | split | mean log π_T − log π_base per token | mean abs | share > 1 nat "
             "| per sample (sum) |", "|---|---|---:|---:|---:|---:|"]
    for name, t in result["teachers"].items():
        for split, s in t["by_split"].items():
            lines.append(f"| {name} | {split} | {s['mean']:+.3f} | {s['mean_abs']:.3f} | "
                         f"{100 * s['share_over_1_nat']:.1f} % | {s['sequence_sum']:+.2f} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
