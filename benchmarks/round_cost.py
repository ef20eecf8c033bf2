"""Cost of a MInTRL round against an on-policy round with the same rollouts.

Run after the main command (it reads the pre-trained base and teacher):

    python benchmarks/round_cost.py --task arith   # -> results/benchmarks/round_cost_arith.md
    python benchmarks/round_cost.py --task arith --intensity 16/3/16   # other C/R/L: ..._16-3-16.md

Same prompts, same number of rollouts, same sampling settings, one torch thread, side by side
in each repeat: a plain on-policy round, and a semi-on-policy round (chunks of C tokens, oracle
judge, teacher corrections, the policy's KV cache kept across rounds) twice — with the
intervener's KV cache kept across rounds (the default, ``rl.intervener_kv_cache``) and with
each correction re-encoding prompt and prefix. Reports wall time, tokens, the ratio to the
plain round and two per-token ratios: per token kept (the semi round writes longer responses
where corrections continue a rollout the policy would have ended) and per token decoded (the
policy's tokens after a cut are decoded, reviewed and dropped), with the semi round's own
split, and the ratio of sequential forwards (policy + intervener against plain): at these
model sizes a decode step costs about the same at any batch size, so this ratio is the
round's floor whatever the per-step overheads.
"""

from __future__ import annotations

# mintrl before torch: it pins the CPU kernels every stage runs (mintrl.cpu_numerics)
import mintrl  # noqa: F401

# isort: split
import argparse
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import torch

from mintrl.config import load_config
from mintrl.config.runs import base_spec_for
from mintrl.engine import Sampling, load_engine
from mintrl.intervention.interveners import ModelIntervener
from mintrl.intervention.judges import OracleJudge
from mintrl.intervention.semi_on_policy import Intensity, semi_on_policy_rollouts
from mintrl.io import read_table, write_json
from mintrl.tasks import Problem

RESULTS = Path("results")


@contextmanager
def counting_forwards(models: dict[str, torch.nn.Module]):
    """Counts each model's top-level forward calls: a decode loop's sequential steps, which
    on a CPU cost about the same at any batch size for models this small."""
    counts: Counter = Counter()
    hooks = [m.register_forward_pre_hook(lambda *_, n=name: counts.update([n]))
             for name, m in models.items()]
    try:
        yield counts
    finally:
        for h in hooks:
            h.remove()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--rollouts", type=int, default=4, help="per prompt")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--intensity", metavar="C/R/L",
                    help="chunk tokens / max reviews / correction tokens (default: the "
                    "config's on the task: rl with the task's rl keys)")
    ap.add_argument("--config", default=str(RESULTS / "config" / "resolved.yaml"),
                    help="the config whose intensity is measured (the models are results/'s)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = load_config(args.config)
    spec = base_spec_for(cfg, args.task)
    pol, tok = load_engine("transformers", str(RESULTS / "models" / args.task / "base"), 512)
    teach, ttok = load_engine("transformers", str(RESULTS / "models" / args.task / "teacher"), 512)
    table = read_table(RESULTS / "data" / args.task / "train_filtered.parquet")
    problems = [Problem.from_row(r) for r in table.head(args.prompts).to_dict("records")]
    expanded = [p for p in problems for _ in range(args.rollouts)]
    ids = tok([p.prompt for p in expanded], add_special_tokens=False)["input_ids"]
    intensity = Intensity(spec.chunk_tokens, spec.max_reviews, spec.correction_tokens)
    stem = f"round_cost_{args.task}"
    if args.intensity:
        try:
            intensity = Intensity(*map(int, args.intensity.split("/")))
        except (TypeError, ValueError):
            ap.error(f"--intensity {args.intensity!r}: expected C/R/L, three integers")
        stem += "_" + args.intensity.replace("/", "-")
    rows = []
    for rep in range(args.repeats):
        sampling = Sampling(max_new_tokens=cfg.tasks[args.task].max_new_tokens, seed=rep)
        models = {"policy": pol.model, "intervener": teach.model}
        with counting_forwards(models) as fw:
            t0 = time.perf_counter()
            plain = pol.generate(ids, sampling)
            t_plain = time.perf_counter() - t0
        n_plain = sum(map(len, plain.token_ids))
        row = {"plain_s": t_plain, "plain_tokens": n_plain, "plain_forwards": fw["policy"]}
        for name, cached in (("semi", True), ("reencode", False)):
            with counting_forwards(models) as fw:
                t0 = time.perf_counter()
                trajs, split = semi_on_policy_rollouts(
                    pol.model, tok, expanded, OracleJudge(), ModelIntervener(teach, ttok, tok),
                    intensity, sampling, use_intervener_cache=cached)
                t = time.perf_counter() - t0
            row |= {f"{name}_policy_forwards": fw["policy"],
                    f"{name}_intervener_forwards": fw["intervener"],
                    f"{name}_forwards_ratio": (fw["policy"] + fw["intervener"])
                    / row["plain_forwards"]}
            n = sum(len(tr.tokens) for tr in trajs)
            decoded = split["tokens/policy_sampled"] + split["tokens/intervener"]
            row |= {f"{name}_s": t, f"{name}_tokens": n, f"{name}_decoded": decoded,
                    f"{name}_intervener_tokens": split["tokens/intervener"],
                    f"{name}_ratio": t / t_plain,
                    f"{name}_per_token_ratio": (t / n) / (t_plain / n_plain),
                    f"{name}_per_decoded_ratio": (t / decoded) / (t_plain / n_plain),
                    **{f"{name}_{k}_s": v for k, v in split.items() if "/" not in k}}
        rows.append(row)
    med = sorted(rows, key=lambda r: r["semi_ratio"])[len(rows) // 2]
    report = {"task": args.task, "rollouts": len(expanded), "intensity": intensity.__dict__,
              "repeats": rows, "median": med}
    write_json(RESULTS / "benchmarks" / f"{stem}.json", report)

    def line(name: str, label: str) -> str:
        return (f"- {label}: {med[name + '_s']:.2f} s ({med[name + '_tokens']} tokens: generate "
                f"{med[name + '_generate_s']:.2f}, judge {med[name + '_judge_s']:.2f}, "
                f"intervene {med[name + '_intervene_s']:.2f}); {med[name + '_ratio']:.2f}x the "
                f"plain round, {med[name + '_per_token_ratio']:.2f}x per token kept, "
                f"{med[name + '_per_decoded_ratio']:.2f}x per token decoded "
                f"({med[name + '_decoded']}, cut ones included; "
                f"{med[name + '_intervener_tokens']} by the intervener); forwards: "
                f"{med[name + '_policy_forwards']} policy + "
                f"{med[name + '_intervener_forwards']} intervener "
                f"({med[name + '_forwards_ratio']:.2f}x the plain round's)\n")

    text = (f"{args.task}: {len(expanded)} rollouts, C/R/L = {intensity.chunk_tokens}/"
            f"{intensity.max_reviews}/{intensity.correction_tokens}, one thread; the repeat "
            f"with the median ratio of {args.repeats}, each measured side by side:\n"
            f"- plain on-policy round: {med['plain_s']:.2f} s ({med['plain_tokens']} tokens, "
            f"{med['plain_forwards']} forwards)\n"
            + line("semi", "MInTRL round, intervener KV cache kept")
            + line("reencode", "MInTRL round, intervener re-encoding each prefix"))
    (RESULTS / "benchmarks" / f"{stem}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
