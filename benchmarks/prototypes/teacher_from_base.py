"""Prototype: the teacher trained from the base's weights on the true facts instead of
pre-trained from scratch; Pass@1 on easy/medium/hard, 100 problems x 32 samples.

    python benchmarks/prototypes/teacher_from_base.py TASK STEPS LR [--results results]

Reads the main command's lab under ``--results`` (its splits, its base); peak lr LR, 20
warm-up steps, the other keys as `tasks.<task>.teacher`. Results (run as a script that
swapped the model the loop builds for the base, which ``pretrain(init=...)`` now does):
benchmarks/results/teacher_from_base_prototype.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from mintrl.config import load_config
from mintrl.engine import Sampling
from mintrl.engine.transformers_engine import TransformersEngine
from mintrl.io import read_table
from mintrl.report.evaluation import sample_problems
from mintrl.tasks import Problem, get_task
from mintrl.training.pretraining import held_out_prompts, pretrain


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("task")
    ap.add_argument("steps", type=int)
    ap.add_argument("lr", type=float)
    ap.add_argument("--results", type=Path, default=Path("results"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    res = args.results
    cfg = load_config(res / "config" / "resolved.yaml")
    ts = cfg.tasks[args.task]
    spec = ts.teacher.model_copy(update={"steps": args.steps, "lr": args.lr,
                                         "warmup_steps": 20, "init": "base"})
    t0 = time.time()
    model, tok, hist, secs = pretrain(get_task(args.task), spec, cfg.seed + spec.seed,
                                      held_out_prompts(res / "data" / args.task), progress=False,
                                      facts=ts.facts.table(),
                                      init=res / "models" / args.task / "base")
    loss = sum(v for _, v in hist[-20:]) / 20
    print(f"{args.steps} steps, lr {args.lr}: {secs:.0f} s, final loss {loss:.4f}", flush=True)
    engine = TransformersEngine(model, tok.eos_token_id, tok.pad_token_id, batch_size=512)
    sampling = Sampling.of(cfg.evaluation.sampling, ts.max_new_tokens, cfg.seed)
    out = {}
    for split in ("easy", "medium", "hard"):
        rows = read_table(res / "data" / args.task / f"{split}.parquet").to_dict("records")
        df, _ = sample_problems(engine, tok, [Problem.from_row(r, None) for r in rows], 32,
                                sampling)
        out[split] = round(100 * float(df["reward"].mean()), 1)
    print(args.task, args.steps, args.lr, out, f"total {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
