r"""Stage ``sft``: SFT+GRPO's supervised stage (docs/design.md §1.3).

    python -m mintrl.sft --config results/config/resolved.yaml --run sft-grpo --task arith \
        --teacher results/models/arith/teacher --init results/models/arith/base \
        --prompts results/data/arith/train_filtered.parquet --out results/runs/arith/sft-grpo/sft

The intervention policy (the teacher) samples ``sft.samples_per_prompt`` complete trajectories
per training prompt; those its reward scores 1 are kept (``sft.only_correct``); the policy is
fine-tuned on them with next-token loss (DeepSpeed, like RL). Writes ``<out>/model`` (GRPO's
iteration-0 policy), ``<out>/samples.parquet`` (the trajectories, ROLLOUTS schema, kind "sft")
and ``<out>/metrics.json`` (its compute: reported, not counted as RL iterations).
"""

from __future__ import annotations

from pathlib import Path

from mintrl.cli import CONFIG_HELP, RUN_HELP, TASK_HELP, THREADS_HELP, command_line
from mintrl.config import load_run
from mintrl.cpu_numerics import set_threads
from mintrl.training.sft import (
    run_sft,
)


def main(argv: list[str] | None = None) -> None:
    ap = command_line("python -m mintrl.sft", __doc__)
    ap.add_argument("--config", required=True, help=CONFIG_HELP)
    ap.add_argument("--run", required=True, help=RUN_HELP)
    ap.add_argument("--task", required=True, help=TASK_HELP)
    ap.add_argument("--teacher", type=Path, required=True, help="intervention policy checkpoint")
    ap.add_argument("--init", type=Path, required=True, help="policy to fine-tune (the base)")
    ap.add_argument("--prompts", type=Path, required=True, help="training prompts (Parquet)")
    ap.add_argument("--out", type=Path, required=True,
                    help="folder for model/, samples.parquet, metrics.json")
    ap.add_argument("--device", help="cpu or cuda (default: the config's `device`)")
    ap.add_argument("--threads", type=int, help=THREADS_HELP)
    args = ap.parse_args(argv)
    cfg, run = load_run(args.config, args.run)
    set_threads(args.threads or cfg.threads)
    run_sft(cfg, run, args.task, args.teacher, args.init, args.prompts, args.out,
            args.device or cfg.device)


if __name__ == "__main__":
    from mintrl.cli import run_main

    run_main(main)
