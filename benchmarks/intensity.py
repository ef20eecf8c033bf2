"""How much of a semi-on-policy rollout the intervener writes, over a grid of C/R/L.

Run after the main command's lab (it reads the pre-trained base and teacher and the filtered
training prompts):

    python benchmarks/intensity.py --task arith   # -> results/benchmarks/intensity_arith.{json,md}

One semi-on-policy round of the base policy (oracle judge, teacher corrections) per point of
the grid, on the same prompts with the same sampling seed, and one plain on-policy round of the
same size beside them. Per point: the share of semi-on-policy tokens the teacher wrote,
corrections per rollout, the semi-on-policy reward, and the coverage (a prompt is covered when
one of its rollouts is correct) of the semi pool against the on-policy pool, per fact kind of
the prompt (known / partial / unknown: the easy / medium / hard skills). ``--choose`` prints
the default's rule: among points with a teacher share in [5 %, 15 %] and at most 2
corrections per rollout, the one with the highest semi coverage of unknown-fact prompts
(ties: fewer teacher tokens).
"""

from __future__ import annotations

# mintrl before torch: it pins the CPU kernels every stage runs (mintrl.cpu_numerics)
import mintrl  # noqa: F401

# isort: split
import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import torch

from mintrl.config import load_config
from mintrl.engine import Sampling, load_engine
from mintrl.intervention.interveners import ModelIntervener
from mintrl.intervention.judges import OracleJudge
from mintrl.intervention.semi_on_policy import Intensity, semi_on_policy_rollouts
from mintrl.io import read_table, write_json
from mintrl.tasks import Problem, grade

RESULTS = Path("results")
SHARE = (0.05, 0.15)  # the band for teacher-written tokens
MAX_CORRECTIONS = 2.0


def fact_kind(problem: Problem) -> str:
    return problem.spec["facts"]["kind"]


def coverage(problems: list[Problem], rewards: list[float], per: int) -> dict[str, float]:
    """Share of prompts with at least one correct rollout, per fact kind (rollouts of a prompt
    are ``per`` consecutive entries)."""
    solved = np.array(rewards).reshape(-1, per).max(axis=1) > 0
    kinds = np.array([fact_kind(p) for p in problems[::per]])
    return {k: float(solved[kinds == k].mean()) for k in sorted(set(kinds))}


def choose(points: list[dict]) -> dict | None:
    ok = [p for p in points if SHARE[0] <= p["teacher_share"] <= SHARE[1]
          and p["corrections_per_rollout"] <= MAX_CORRECTIONS]
    if not ok:
        return None
    return max(ok, key=lambda p: (p["semi_coverage"].get("unknown", 0.0), -p["teacher_share"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--prompts", type=int, default=128)
    ap.add_argument("--rollouts", type=int, default=4, help="per prompt")
    ap.add_argument("--chunks", default="8,16,32", help="C values")
    ap.add_argument("--reviews", default="1,2,4,12", help="R values")
    ap.add_argument("--corrections", default="4,6,8,12,16", help="L values")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = load_config(RESULTS / "config" / "resolved.yaml")
    pol, tok = load_engine("transformers", str(RESULTS / "models" / args.task / "base"), 512)
    teach, ttok = load_engine("transformers", str(RESULTS / "models" / args.task / "teacher"), 512)
    table = read_table(RESULTS / "data" / args.task / "train_filtered.parquet")
    # a seeded draw of the prompts RL sees (the file is grouped by fact kind)
    table = table.sample(n=min(args.prompts, len(table)), random_state=args.seed)
    problems = [Problem.from_row(r) for r in table.to_dict("records")]
    expanded = [p for p in problems for _ in range(args.rollouts)]
    sampling = Sampling(max_new_tokens=cfg.tasks[args.task].max_new_tokens, seed=args.seed)
    ids = tok([p.prompt for p in expanded], add_special_tokens=False)["input_ids"]
    plain = pol.generate(ids, sampling)
    plain_rewards = grade(expanded, [tok.decode(t, skip_special_tokens=True)
                                     for t in plain.token_ids])
    report = {"task": args.task, "prompts": len(problems), "rollouts_per_prompt": args.rollouts,
              "seed": args.seed, "on_policy_reward": float(np.mean(plain_rewards)),
              "on_policy_coverage": coverage(expanded, plain_rewards, args.rollouts),
              "points": []}
    grid = itertools.product(*(map(int, s.split(",")) for s in (args.chunks, args.reviews,
                                                               args.corrections)))
    for c, r, length in grid:
        trajs, _ = semi_on_policy_rollouts(pol.model, tok, expanded, OracleJudge(),
                                           ModelIntervener(teach, ttok, tok),
                                           Intensity(c, r, length), sampling)
        texts = [tok.decode(t.tokens, skip_special_tokens=True) for t in trajs]
        rewards = grade(expanded, texts)
        n_tok = sum(len(t.tokens) for t in trajs)
        n_int = sum(sum(t.provenance) for t in trajs)
        point = {"C": c, "R": r, "L": length, "teacher_share": n_int / max(n_tok, 1),
                 "corrections_per_rollout": float(np.mean([len(t.corrections) for t in trajs])),
                 "intervened": float(np.mean([bool(t.corrections) for t in trajs])),
                 "semi_reward": float(np.mean(rewards)),
                 "semi_coverage": coverage(expanded, rewards, args.rollouts)}
        report["points"].append(point)
        print(json.dumps(point), flush=True)
    report["chosen"] = choose(report["points"])
    out = RESULTS / "benchmarks" / f"intensity_{args.task}"
    write_json(out.with_suffix(".json"), report)
    kinds = sorted(report["on_policy_coverage"])
    command = "python benchmarks/" + Path(sys.argv[0]).name + " " + " ".join(sys.argv[1:])
    lines = [f"`{command}` (from the repository root, after the main command's lab).", "",
             f"{args.task}: {len(problems)} filtered training prompts x {args.rollouts} "
             f"rollouts, base policy, oracle judge, teacher corrections, sampling seed "
             f"{args.seed}. On-policy round of the same size: reward "
             f"{100 * report['on_policy_reward']:.1f} %, coverage "
             + ", ".join(f"{k} {100 * v:.0f} %" for k, v in report["on_policy_coverage"].items())
             + ".", "",
             "| C | R | L | teacher tokens (%) | corrections / rollout | intervened (%) | "
             "semi reward (%) | " + " | ".join(f"semi coverage {k} (%)" for k in kinds) + " |",
             "|" + "---:|" * (7 + len(kinds))]
    for p in report["points"]:
        lines.append(f"| {p['C']} | {p['R']} | {p['L']} | {100 * p['teacher_share']:.1f} | "
                     f"{p['corrections_per_rollout']:.2f} | {100 * p['intervened']:.0f} | "
                     f"{100 * p['semi_reward']:.1f} | "
                     + " | ".join(f"{100 * p['semi_coverage'].get(k, 0):.0f}" for k in kinds)
                     + " |")
    best = report["chosen"]
    lines += ["", "Rule: teacher tokens in [5 %, 15 %], at most 2 corrections per rollout, then "
              "the highest semi coverage of unknown-fact prompts (ties: fewer teacher tokens): "
              + (f"C/R/L = {best['C']}/{best['R']}/{best['L']}." if best
                 else "no point qualifies.")]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
