r"""Stage ``rollout``: a checkpoint's on-policy rollouts with rewards, to Parquet.

    python -m mintrl.rollout --config config/config.yaml --run grpo-s0 --task arith \
        --checkpoint results/models/arith/base --prompts results/data/arith/train_filtered.parquet \
        --iteration 1 --out rollouts.parquet

The DAG runs rollouts inside ``segment`` (one model load for many iterations); this CLI runs
the same functions on their own, for inspection and debugging.
"""

from __future__ import annotations

from pathlib import Path

from mintrl.cli import CONFIG_HELP, TASK_HELP, THREADS_HELP, command_line
from mintrl.config import load_run
from mintrl.cpu_numerics import set_threads
from mintrl.engine import Sampling, load_engine
from mintrl.io import write_table
from mintrl.rollouts import (
    iteration_seed,
    load_problems,
    on_policy_rollouts,
    rollout_stats,
    select_prompts,
)
from mintrl.schemas import ROLLOUTS


def main(argv: list[str] | None = None) -> None:
    ap = command_line("python -m mintrl.rollout", __doc__)
    ap.add_argument("--config", required=True, help=CONFIG_HELP)
    ap.add_argument("--run", required=True,
                    help="run name (see python -m mintrl.config --check)")
    ap.add_argument("--task", required=True, help=TASK_HELP)
    ap.add_argument("--checkpoint", required=True, help="Hugging Face checkpoint folder")
    ap.add_argument("--prompts", required=True, help="training prompts (Parquet)")
    ap.add_argument("--iteration", type=int, default=1,
                    help="RL iteration (1-based): seeds the prompt choice and sampling")
    ap.add_argument("--out", required=True, type=Path, help="rollouts Parquet file")
    ap.add_argument("--threads", type=int, help=THREADS_HELP)
    args = ap.parse_args(argv)
    cfg, run = load_run(args.config, args.run)
    spec = run.spec_for(args.task)
    set_threads(args.threads or cfg.threads)
    engine, tokenizer = load_engine(spec.engine, args.checkpoint, batch_size=512,
                                    device=cfg.device, gpu_memory=cfg.vllm_gpu_memory)
    problems = select_prompts(load_problems(args.prompts), spec.prompts_per_iteration,
                              run.seed, args.iteration)
    sampling = Sampling.of(spec.sampling, cfg.tasks[args.task].max_new_tokens,
                            iteration_seed(run.seed, args.iteration))
    df, times = on_policy_rollouts(engine, tokenizer, problems, spec.rollouts_per_prompt,
                                   sampling, run.name, args.iteration)
    write_table(args.out, df, ROLLOUTS)
    print(f"[rollout] {len(df)} rollouts, " + ", ".join(
        f"{k} {v:.3f}" for k, v in rollout_stats(df).items()) + f"; {times}", flush=True)


if __name__ == "__main__":
    from mintrl.cli import run_main

    run_main(main)
