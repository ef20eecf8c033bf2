"""Cost of a MInTRL round against an on-policy round with the same rollouts.

Run after the main command (it reads the pre-trained base and teacher):

    python benchmarks/round_cost.py --task arith   # -> results/benchmarks/round_cost_arith.md

Same prompts, same number of rollouts, same sampling settings, one torch thread: a
semi-on-policy round (chunks of C tokens, oracle judge, teacher corrections, the policy's KV
cache kept across rounds) and a plain on-policy round. Reports wall time, tokens, their ratio
and the per-token ratio (the semi round writes longer responses where corrections continue a
rollout the policy would have ended), with the semi round's own split.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from mintrl.config import load_config
from mintrl.engine import Sampling, load_engine
from mintrl.interveners import ModelIntervener
from mintrl.io import read_table, write_json
from mintrl.judges import OracleJudge
from mintrl.semi_on_policy import Intensity, semi_on_policy_rollouts
from mintrl.tasks import Problem

RESULTS = Path("results")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--rollouts", type=int, default=4, help="per prompt")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = load_config(RESULTS / "config" / "resolved.yaml")
    spec = cfg.rl
    pol, tok = load_engine("transformers", str(RESULTS / "models" / args.task / "base"), 512)
    teach, ttok = load_engine("transformers", str(RESULTS / "models" / args.task / "teacher"), 512)
    table = read_table(RESULTS / "data" / args.task / "train_filtered.parquet")
    problems = [Problem.from_row(r) for r in table.head(args.prompts).to_dict("records")]
    expanded = [p for p in problems for _ in range(args.rollouts)]
    ids = tok([p.prompt for p in expanded], add_special_tokens=False)["input_ids"]
    intensity = Intensity(spec.chunk_tokens, spec.max_reviews, spec.correction_tokens)
    rows = []
    for rep in range(args.repeats):
        sampling = Sampling(max_new_tokens=cfg.tasks[args.task].max_new_tokens, seed=rep)
        t0 = time.perf_counter()
        plain = pol.generate(ids, sampling)
        t_plain = time.perf_counter() - t0
        t0 = time.perf_counter()
        trajs, split = semi_on_policy_rollouts(pol.model, tok, expanded, OracleJudge(),
                                               ModelIntervener(teach, ttok, tok), intensity,
                                               sampling)
        t_semi = time.perf_counter() - t0
        n_plain = sum(map(len, plain.token_ids))
        n_semi = sum(len(t.tokens) for t in trajs)
        rows.append({"plain_s": t_plain, "semi_s": t_semi, "plain_tokens": n_plain,
                     "semi_tokens": n_semi, "ratio": t_semi / t_plain,
                     "per_token_ratio": (t_semi / n_semi) / (t_plain / n_plain),
                     **{f"semi_{k}_s": v for k, v in split.items()}})
    best = min(rows, key=lambda r: r["ratio"])
    med = sorted(rows, key=lambda r: r["ratio"])[len(rows) // 2]
    report = {"task": args.task, "rollouts": len(expanded), "intensity": intensity.__dict__,
              "repeats": rows, "median": med, "best": best}
    write_json(RESULTS / "benchmarks" / f"round_cost_{args.task}.json", report)
    text = (f"{args.task}: {len(expanded)} rollouts, C/R/L = {intensity.chunk_tokens}/"
            f"{intensity.max_reviews}/{intensity.correction_tokens}; median of {args.repeats}: "
            f"plain {med['plain_s']:.2f} s ({med['plain_tokens']} tokens), semi "
            f"{med['semi_s']:.2f} s ({med['semi_tokens']} tokens: generate "
            f"{med['semi_generate_s']:.2f}, judge {med['semi_judge_s']:.2f}, intervene "
            f"{med['semi_intervene_s']:.2f}); ratio {med['ratio']:.2f}x, per token "
            f"{med['per_token_ratio']:.2f}x\n")
    (RESULTS / "benchmarks" / f"round_cost_{args.task}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
