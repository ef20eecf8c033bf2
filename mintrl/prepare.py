"""Stage ``prepare``: draw each task's splits and write them to Parquet.

    python -m mintrl.prepare --config config/config.yaml --task arith --out results/data/arith

Splits: ``train`` (RL prompts, mixed difficulty), ``validation`` (tuning only), ``easy`` and
``hard`` (evaluation). Problems are distinct across splits; the same seed gives the same files.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from mintrl.config import TaskSpec, load_config
from mintrl.io import write_table
from mintrl.schemas import PROBLEMS
from mintrl.tasks import Problem, Task, get_task

SPLITS = ("easy", "hard", "validation", "train")  # evaluation splits drawn first


def draw_splits(task: Task, spec: TaskSpec, seed: int) -> dict[str, list[Problem]]:
    """Distinct problems per split; difficulty uniform over each split's range."""
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    ranges = {"easy": spec.easy, "hard": spec.hard, "validation": spec.train, "train": spec.train}
    out: dict[str, list[Problem]] = {}
    for split in SPLITS:
        want, rows, tries = getattr(spec.sizes, split), [], 0
        r = ranges[split]
        while len(rows) < want:
            tries += 1
            if tries > 100 * want:
                raise ValueError(f"task {task.name}: cannot draw {want} distinct {split} problems")
            p = task.sample(rng, int(rng.integers(r.lo, r.hi + 1)))
            if p.prompt not in seen:
                seen.add(p.prompt)
                rows.append(p)
        out[split] = rows
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m mintrl.prepare", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--config", required=True)
    ap.add_argument("--task", required=True)
    ap.add_argument("--out", required=True, type=Path, help="folder for <split>.parquet")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    if args.task not in cfg.tasks:
        raise SystemExit(f"task {args.task!r} is not in the config's tasks: {sorted(cfg.tasks)}")
    splits = draw_splits(get_task(args.task), cfg.tasks[args.task], cfg.seed)
    for split, problems in splits.items():
        rows = [p.to_row() | {"split": split} for p in problems]
        write_table(args.out / f"{split}.parquet", rows, PROBLEMS)
        print(f"[prepare] {args.task}/{split}: {len(rows)} problems", flush=True)


if __name__ == "__main__":
    main()
