r"""Stage ``prepare``: each task's splits as Parquet tables (schema ``PROBLEMS``).

    python -m mintrl.prepare --config config/config.yaml --task arith --out results/data/arith
    python -m mintrl.prepare --config config/paper.yaml --task math --source math.jsonl \
        --out results/data/math         # train + validation of a dataset task (one per part)
    python -m mintrl.prepare --config config/paper.yaml --task math --split aime25 \
        --source aime_2025/train.parquet --out results/data/math    # one benchmark

A toy task draws ``train`` (RL prompts, mixed difficulty), ``validation`` (tuning only) and
its evaluation splits from its generator: distinct problems, the same seed gives the same
files. With a fact table, ``easy`` looks up known facts, ``medium`` one partial fact, ``hard``
one unknown fact; ``validation`` has equal thirds of the three kinds and ``train`` the
config's ``train_mix``. A dataset task (``kind: dataset``) reads its training file and holds
``validation_size`` prompts out of it, and reads each benchmark into the split of its name;
unreadable rows are counted and named in ``<split>.report.json`` and skipped, or fail the job
(the task's ``on_bad``).
"""

from __future__ import annotations

from pathlib import Path

from mintrl.cli import CONFIG_HELP, TASK_HELP, command_line
from mintrl.config import TaskSpec, load_config
from mintrl.datasets import LoadReport
from mintrl.splits import (
    draw_splits,
    read_source,
    split_train,
    write_split,
)
from mintrl.tasks import get_task


def main(argv: list[str] | None = None) -> None:
    ap = command_line("python -m mintrl.prepare", __doc__)
    ap.add_argument("--config", required=True, help=CONFIG_HELP)
    ap.add_argument("--task", required=True, help=TASK_HELP)
    ap.add_argument("--out", required=True, type=Path, help="folder for <split>.parquet")
    ap.add_argument("--source", type=Path, nargs="+", help="dataset task: what to read (the "
                    "training parts in the config's order, or with --split that benchmark's)")
    ap.add_argument("--split", help="dataset task: the benchmark to write (default: train and "
                    "validation)")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    if args.task not in cfg.tasks:
        raise SystemExit(f"task {args.task!r} is not in the config's tasks: {sorted(cfg.tasks)}")
    spec = cfg.tasks[args.task]
    print(f"[prepare] {args.task} ({spec.kind})", flush=True)
    if isinstance(spec, TaskSpec):
        for split, problems in draw_splits(get_task(args.task), spec, cfg.seed).items():
            write_split(args.out, split, problems, None)
        return
    if args.source is None:
        raise SystemExit(f"task {args.task!r} reads a dataset: pass --source FILE")
    if args.split is None:
        if len(args.source) != len(spec.train):
            raise SystemExit(f"task {args.task!r} has {len(spec.train)} training parts "
                             f"{list(spec.train)}: pass one --source each, in that order")
        report = LoadReport(" + ".join(map(str, args.source)))
        for (name, src), path in zip(spec.train.items(), args.source, strict=True):
            part = read_source(src, path, spec)
            report.problems += part.problems
            report.bad |= {f"{name}:{rid}": why for rid, why in part.bad.items()}
        for split, problems in split_train(report.problems, spec, cfg.seed).items():
            write_split(args.out, split, problems, report)
        return
    if args.split not in spec.benchmarks:
        raise SystemExit(f"task {args.task!r} has no benchmark {args.split!r}; "
                         f"benchmarks: {sorted(spec.benchmarks)}")
    report = read_source(spec.benchmarks[args.split], args.source[0], spec)
    write_split(args.out, args.split, report.problems, report)


if __name__ == "__main__":
    from mintrl.cli import run_main

    run_main(main)
