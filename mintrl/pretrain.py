r"""Stage ``pretrain``: train a toy base policy or teacher on a task's generator, from scratch
or (a teacher with ``init: base``) from the base of the same lab seed.

    python -m mintrl.pretrain --config config/config.yaml --task arith --role base \
        --exclude results/data/arith --out results/models/arith/base [--lab-seed 1]

Next-token loss on response tokens only (prompt tokens are context). A fixed step count and
seeds make it deterministic on CPU for a given thread count. The lab seed pre-trains the same
role again with another seed (``lab_seed_of``), so results can be averaged over labs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mintrl.cli import UserError, command_line
from mintrl.config import load_config
from mintrl.config.runs import lab_model
from mintrl.cpu_numerics import set_threads
from mintrl.io import save_checkpoint, write_json
from mintrl.tasks import get_task
from mintrl.training.pretraining import (
    held_out_prompts,
    lab_seed_of,
    pretrain,
)


def main(argv: list[str] | None = None) -> None:
    ap = command_line("python -m mintrl.pretrain", __doc__)
    ap.add_argument("--config", required=True,
                    help="config YAML")
    ap.add_argument("--task", required=True, help="task name (a key of `tasks`)")
    ap.add_argument("--role", required=True, choices=["base", "teacher"],
                    help="which toy model to pre-train: the base policy or the teacher")
    ap.add_argument("--lab-seed", type=int, default=0,
                    help="which lab's model: its seed is offset by 1000 x this (0: the default)")
    ap.add_argument("--exclude", type=Path, help="folder of split Parquet files to hold out")
    ap.add_argument("--out", type=Path, required=True, help="checkpoint folder to write")
    ap.add_argument("--threads", type=int, help="torch threads (default: the role's "
                    "tasks.<task>.<role>.threads)")
    ap.add_argument("--init", type=Path, help="checkpoint a role with `init: base` starts "
                    "from (default: the base of the same lab seed beside --out)")
    args = ap.parse_args(argv)
    if args.lab_seed < 0:
        ap.error(f"--lab-seed {args.lab_seed}: must be >= 0")

    cfg = load_config(args.config)
    task_spec = cfg.tasks[args.task]
    spec = getattr(task_spec, args.role)
    facts = task_spec.facts.table() if task_spec.facts is not None else None
    threads = args.threads or spec.threads
    set_threads(threads)
    seed = cfg.seed + spec.seed
    model_seed = lab_seed_of(seed, args.lab_seed)
    print(f"[pretrain] task={args.task} role={args.role} lab_seed={args.lab_seed} "
          f"steps={spec.steps} seed={model_seed} threads={threads} init={spec.init} -> "
          f"{args.out}", flush=True)
    # beside the output, not in it: Snakemake deletes an incomplete job's output, not this
    resume = args.out.with_name(args.out.name + ".resume.pt")
    init = None
    if spec.init == "base":
        init = args.init or args.out.with_name(lab_model("base", args.lab_seed))
        if not (init / "config.json").exists():
            raise UserError(f"{init}: no base checkpoint; tasks.{args.task}.{args.role}.init "
                            "is `base` (pre-train the base first)")
    elif args.init:
        ap.error(f"--init {args.init}: tasks.{args.task}.{args.role}.init is `scratch`")
    model, tokenizer, history, seconds = pretrain(
        get_task(args.task), spec, seed, held_out_prompts(args.exclude), resume=resume,
        lab_seed=args.lab_seed, facts=facts, init=init,
    )
    save_checkpoint(model, tokenizer, args.out)
    resume.unlink(missing_ok=True)
    tail = [loss for _, loss in history[-20:]]
    write_json(args.out.with_suffix(".json"), {
        "task": args.task, "role": args.role, "lab_seed": args.lab_seed,
        "seed": model_seed, "seconds": seconds, "steps": spec.steps,
        "parameters": sum(p.numel() for p in model.parameters()),
        "first_loss": history[0][1], "final_loss": float(np.mean(tail)),
        "loss_curve": history[:: max(1, len(history) // 100)],
    })
    print(f"[pretrain] done in {seconds:.0f}s, final loss {np.mean(tail):.4f}", flush=True)


if __name__ == "__main__":
    from mintrl.cli import run_main

    run_main(main)
