"""Each task's splits: a toy task's drawn from its generator (easy / medium / hard by the
facts they look up), a dataset task's read from its pinned sources. ``python -m
mintrl.prepare`` is its CLI.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from mintrl.config import DatasetTaskSpec, DataSource, TaskSpec
from mintrl.datasets import LoadReport, load_problems
from mintrl.io import write_json, write_table
from mintrl.schemas import PROBLEMS
from mintrl.tasks import Problem, Task

SPLIT_FACTS = {"easy": "known", "medium": "partial", "hard": "unknown"}


def fact_kinds(split: str, spec: TaskSpec, n: int) -> list[str]:
    """The fact kind of each of a split's ``n`` problems (a toy task with a fact table)."""
    if split in SPLIT_FACTS:
        return [SPLIT_FACTS[split]] * n
    kinds = ("known", "partial", "unknown")
    if split == "validation":
        return [kinds[i % 3] for i in range(n)]
    mix = spec.facts.train_mix
    shares = np.array([mix.known, mix.partial, mix.unknown]) / (mix.known + mix.partial
                                                                + mix.unknown)
    counts = np.floor(shares * n).astype(int)
    counts[int(np.argmax(shares))] += n - int(counts.sum())
    return [k for k, c in zip(kinds, counts, strict=True) for _ in range(c)]


def draw_splits(task: Task, spec: TaskSpec, seed: int) -> dict[str, list[Problem]]:
    """Distinct problems per split (evaluation splits drawn first); difficulty uniform over
    each split's range."""
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    table = spec.facts.table() if spec.facts is not None else None
    ranges = {s: getattr(spec, s) for s in spec.eval_splits}
    ranges |= {"validation": spec.train, "train": spec.train}
    out: dict[str, list[Problem]] = {}
    for split, r in ranges.items():
        want, rows, tries = getattr(spec.sizes, split), [], 0
        kinds = fact_kinds(split, spec, want) if table is not None else ["known"] * want
        while len(rows) < want:
            tries += 1
            if tries > 100 * want:
                raise ValueError(f"task {task.name}: cannot draw {want} distinct {split} problems")
            k = int(rng.integers(r.lo, r.hi + 1))
            p = task.sample(rng, k, table, kinds[len(rows)])
            if p.prompt not in seen:
                seen.add(p.prompt)
                rows.append(p)
        out[split] = rows
    return out


def read_source(src: DataSource, path: str | Path, spec: DatasetTaskSpec) -> LoadReport:
    """The problems of one dataset file, as the task presents them (its chat flag), with the
    report of the rows that could not be read. A reader of another reward is an error."""
    report = load_problems(src.format, path, revision=src.revision, on_bad=spec.on_bad,
                           **src.options)
    if src.limit is not None:
        report.problems = report.problems[: src.limit]
    wrong = {p.task for p in report.problems} - {spec.reward}
    if wrong:
        raise SystemExit(f"{path}: format {src.format!r} gives {sorted(wrong)} problems, but the "
                         f"task's reward is {spec.reward!r}")
    report.problems = [dataclasses.replace(p, chat=spec.chat) for p in report.problems]
    return report


def split_train(problems: list, spec: DatasetTaskSpec, seed: int) -> dict[str, list]:
    """``validation_size`` prompts held out of the training file (a seeded draw), then at most
    ``train_size`` of the rest, both in file order."""
    if len(problems) <= spec.validation_size:
        raise SystemExit(f"{len(problems)} training problems: not enough to hold out "
                         f"validation_size {spec.validation_size} and keep any for training")
    order = np.random.default_rng(seed).permutation(len(problems))
    val = set(order[: spec.validation_size].tolist())
    rest = order[spec.validation_size:]
    if spec.train_size is not None:
        rest = rest[: spec.train_size]
    train = set(rest.tolist())
    return {"validation": [p for i, p in enumerate(problems) if i in val],
            "train": [p for i, p in enumerate(problems) if i in train]}


def write_split(out: Path, split: str, problems: list, report: LoadReport | None) -> None:
    rows = [p.to_row() | {"split": split} for p in problems]
    write_table(out / f"{split}.parquet", rows, PROBLEMS)
    if report is not None:
        write_json(out / f"{split}.report.json", {"source": report.path,
                                                   "problems": len(problems),
                                                   "bad_rows": len(report.bad),
                                                   "bad": report.bad})
    print(f"[prepare] {split}: {len(rows)} problems"
          + (f"; {report.summary()}" if report is not None and report.bad else ""), flush=True)
