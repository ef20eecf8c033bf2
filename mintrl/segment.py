r"""Stage ``segment``: iterations ``start..end`` of one run, rollout then train, in one process
(the loop, checkpointing and resume: ``mintrl.training.rl_loop``).

    python -m mintrl.segment --config results/config/resolved.yaml --run grpo-s0 --task arith \
        --start 1 --end 10 --init results/models/arith/base \
        --prompts results/data/arith/train_filtered.parquet --root results/runs/arith/grpo-s0

Writes ``<root>/iter_<i>/{rollouts.parquet,metrics.json}`` for every iteration and
``<root>/iter_<end>/{model,optim,segment.json}``; data-parallel under ``torchrun``.
"""

from __future__ import annotations

import time

from mintrl.cli import CONFIG_HELP, RUN_HELP, TASK_HELP, THREADS_HELP, command_line
from mintrl.cpu_numerics import set_threads

T_START = time.perf_counter()  # segment.json's start-up share counts the imports

import sys  # noqa: E402
from pathlib import Path  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    ap = command_line("python -m mintrl.segment", __doc__)
    ap.add_argument("--config", required=True, help=CONFIG_HELP)
    ap.add_argument("--run", required=True, help=RUN_HELP)
    ap.add_argument("--task", required=True, help=TASK_HELP)
    ap.add_argument("--start", type=int, required=True, help="first iteration (1-based)")
    ap.add_argument("--end", type=int, required=True, help="last iteration")
    ap.add_argument("--init", type=Path, required=True, help="checkpoint after iteration start-1")
    ap.add_argument("--init-optim", type=Path, help="optimizer state after iteration start-1")
    ap.add_argument("--reference", type=Path, help="frozen KL reference (when kl_coef > 0)")
    ap.add_argument("--teacher", type=Path, help="teacher checkpoint: MInTRL's judge and "
                    "intervener, OPD's and MENTOR's teacher")
    ap.add_argument("--prompts", type=Path, required=True,
                    help="the RL training prompts (Parquet, the problems schema)")
    ap.add_argument("--root", type=Path, required=True, help="the run's folder")
    ap.add_argument("--out-model", type=Path, help="default: <root>/iter_<end>/model")
    ap.add_argument("--out-optim", type=Path, help="default: <root>/iter_<end>/optim")
    ap.add_argument("--out-metrics", type=Path, help="default: <root>/iter_<end>/segment.json")
    ap.add_argument("--device", help="cpu or cuda (default: the config's `device`)")
    ap.add_argument("--tensor-parallel", type=int, default=1,
                    help="vLLM: GPUs the policy's engine spans (the job's `tp` resource)")
    ap.add_argument("--threads", type=int, help=THREADS_HELP)
    argv = sys.argv[1:] if argv is None else argv
    # torchrun would take `--run` for its own `--run-path`: launchers pass "--" before our
    # arguments, which some Python versions keep
    args = vars(ap.parse_args(argv[1:] if argv[:1] == ["--"] else argv))


    from mintrl.config import load_run
    from mintrl.training.rl_loop import JobError, SegmentJob, run_segment

    imports = time.perf_counter() - T_START
    cfg, run = load_run(args.pop("config"), args.pop("run"))
    set_threads(args.pop("threads") or cfg.threads)
    try:  # inputs that do not fit the run: one line, not a traceback
        run_segment(SegmentJob(cfg=cfg, run=run, **args), started=T_START, imports=imports)
    except JobError as err:
        raise SystemExit(str(err)) from None


if __name__ == "__main__":
    from mintrl.cli import run_main

    run_main(main)
