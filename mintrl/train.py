"""Stage ``train``: one iteration of optimisation on a rollout file, with DeepSpeed.

    python -m mintrl.train --config config/config.yaml --run grpo-s0 \
        --init results/models/arith/base --rollouts rollouts.parquet --iteration 1 \
        --out-model iter_1/model --out-optim iter_1/optim

Old-policy log-probs are recomputed from ``--init`` (the policy that sampled the rollouts);
``--init-optim`` carries the optimizer state of the previous iteration. The DAG runs the same
functions inside ``segment``; this CLI runs one iteration on its own.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from mintrl.io import read_table, write_json
from mintrl.objectives import get_objective
from mintrl.rollout import iteration_seed
from mintrl.runs import load_run
from mintrl.schemas import ROLLOUTS


def main(argv: list[str] | None = None) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mintrl.trainer import (
        deepspeed_engine,
        load_optimizer_state,
        save_optimizer_state,
        save_policy,
        train_iteration,
    )

    ap = argparse.ArgumentParser(prog="python -m mintrl.train", description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--init", type=Path, required=True, help="policy that sampled the rollouts")
    ap.add_argument("--init-optim", type=Path, help="optimizer state of the previous iteration")
    ap.add_argument("--rollouts", type=Path, required=True, help="rollouts Parquet file")
    ap.add_argument("--iteration", type=int, required=True)
    ap.add_argument("--out-model", type=Path, required=True)
    ap.add_argument("--out-optim", type=Path, required=True)
    ap.add_argument("--const-c", type=float, help="Const anchor's c (default: config)")
    ap.add_argument("--teacher", type=Path, help="teacher checkpoint scoring the sampled tokens "
                    "(OPD needs it; MENTOR logs its KL)")
    ap.add_argument("--task", help="the task the rollouts are from (its `rl` keys apply)")
    ap.add_argument("--device", help="cpu or cuda (default: the config's `device`)")
    ap.add_argument("--threads", type=int)
    args = ap.parse_args(argv)
    cfg, run = load_run(args.config, args.run)
    spec = run.spec_for(args.task) if args.task else run.spec
    df = read_table(args.rollouts)
    missing = sorted(set(ROLLOUTS.names) - set(df.columns))
    if missing:
        raise SystemExit(f"{args.rollouts}: not a rollouts table, missing columns {missing}")
    torch.set_num_threads(args.threads or cfg.threads)
    args.device = args.device or cfg.device
    tokenizer = AutoTokenizer.from_pretrained(args.init)
    model = AutoModelForCausalLM.from_pretrained(args.init, dtype="float32")
    engine = deepspeed_engine(model, spec, args.device)
    if args.init_optim:
        load_optimizer_state(engine, args.init_optim)
    objective = get_objective(spec.objective_at(args.iteration))
    c = args.const_c if args.const_c is not None else spec.const_c
    if "anchor_logprobs" in objective.needs and spec.anchor == "const" and c is None:
        raise SystemExit("the const anchor needs c: pass --const-c or set rl.const_c")
    teacher = None
    if args.teacher:
        from mintrl.engine.mixed import shared_vocab_check

        shared_vocab_check(tokenizer, AutoTokenizer.from_pretrained(args.teacher), run.method)
        teacher = AutoModelForCausalLM.from_pretrained(args.teacher, dtype="float32")
        teacher.to(args.device).eval()
    elif "teacher_logprobs" in objective.needs:
        raise SystemExit(f"the {spec.objective_at(args.iteration)} objective needs the teacher: "
                         "pass --teacher CHECKPOINT")
    stats = train_iteration(engine, df, spec, objective, tokenizer.pad_token_id,
                            iteration_seed(run.seed, args.iteration, 2), args.device,
                            const_c=c, teacher_model=teacher, iteration=args.iteration)
    save_policy(engine, tokenizer, args.out_model)
    save_optimizer_state(engine, args.out_optim, args.iteration)
    write_json(args.out_model.parent / f"{args.out_model.name}.train.json", stats)
    print(json.dumps(stats, indent=1), flush=True)


if __name__ == "__main__":
    main()
