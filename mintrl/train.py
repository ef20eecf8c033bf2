r"""Stage ``train``: one iteration of optimisation on a rollout file, with DeepSpeed.

    python -m mintrl.train --config config/config.yaml --run grpo-s0 \
        --init results/models/arith/base --rollouts rollouts.parquet --iteration 1 \
        --out-model iter_1/model --out-optim iter_1/optim

Old-policy log-probs are recomputed from ``--init`` (the policy that sampled the rollouts);
``--init-optim`` carries the optimizer state of the previous iteration. The DAG runs the same
functions inside ``segment``; this CLI runs one iteration on its own.
"""

from __future__ import annotations

import json
from pathlib import Path

from mintrl.cli import CONFIG_HELP, RUN_HELP, THREADS_HELP, command_line
from mintrl.config import load_run
from mintrl.cpu_numerics import set_threads
from mintrl.io import read_table
from mintrl.schemas import ROLLOUTS
from mintrl.training.one_iteration import (
    train_on_rollouts,
)


def main(argv: list[str] | None = None) -> None:
    ap = command_line("python -m mintrl.train", __doc__)
    ap.add_argument("--config", required=True, help=CONFIG_HELP)
    ap.add_argument("--run", required=True, help=RUN_HELP)
    ap.add_argument("--init", type=Path, required=True, help="policy that sampled the rollouts")
    ap.add_argument("--init-optim", type=Path, help="optimizer state of the previous iteration")
    ap.add_argument("--rollouts", type=Path, required=True, help="rollouts Parquet file")
    ap.add_argument("--iteration", type=int, required=True,
                    help="the RL iteration the rollouts belong to (1-based)")
    ap.add_argument("--out-model", type=Path, required=True,
                    help="folder for the updated model")
    ap.add_argument("--out-optim", type=Path, required=True,
                    help="folder for the optimizer state")
    ap.add_argument("--const-c", type=float, help="Const anchor's c (default: config)")
    ap.add_argument("--teacher", type=Path, help="teacher checkpoint scoring the sampled tokens "
                    "(OPD needs it; MENTOR logs its KL)")
    ap.add_argument("--task", help="the task the rollouts are from (its `rl` keys apply)")
    ap.add_argument("--device", help="cpu or cuda (default: the config's `device`)")
    ap.add_argument("--threads", type=int, help=THREADS_HELP)
    args = ap.parse_args(argv)
    cfg, run = load_run(args.config, args.run)
    spec = run.spec_for(args.task) if args.task else run.spec
    df = read_table(args.rollouts)
    missing = sorted(set(ROLLOUTS.names) - set(df.columns))
    if missing:
        raise SystemExit(f"{args.rollouts}: not a rollouts table, missing columns {missing}")
    set_threads(args.threads or cfg.threads)
    stats = train_on_rollouts(run, spec, df, args.iteration, args.init, args.init_optim,
                              args.out_model, args.out_optim,
                              args.const_c if args.const_c is not None else spec.const_c,
                              args.teacher, args.device or cfg.device)
    print(json.dumps(stats, indent=1), flush=True)


if __name__ == "__main__":
    from mintrl.cli import run_main

    run_main(main)
