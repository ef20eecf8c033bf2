"""What every dataset reader shares: the registry of formats, the row type, and reading a
file's records (Parquet, JSONL, JSONL.gz, or a folder of them)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from mintrl.registry import Registry
from mintrl.tasks.base import Problem

READERS = Registry("dataset format")
Row = tuple[str, Problem | str]  # (row id, problem or the reason it could not be read)


@dataclass
class LoadReport:
    """What a load read: problems, and the rows it could not read (id -> reason)."""

    path: str
    problems: list[Problem] = field(default_factory=list)
    bad: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        text = f"{self.path}: {len(self.problems)} problems, {len(self.bad)} bad rows"
        shown = list(self.bad.items())[:10]
        more = f" (+{len(self.bad) - len(shown)} more)" if len(self.bad) > len(shown) else ""
        return text + "".join(f"\n  {rid}: {why}" for rid, why in shown) + more


DATA_SUFFIXES = (".parquet", ".jsonl", ".gz")


def source_name(path: str | Path) -> str:
    """What names a file's problems by default: a folder's own name, a file's folder's."""
    path = Path(path)
    return path.name if path.is_dir() else path.parent.name


def records(path: str | Path) -> Iterator[dict[str, Any]]:
    """Rows of a Parquet, JSONL or JSONL.gz file (or a folder of them), one dict at a time
    (Parquet in small batches: some DeepCoder test blobs are hundreds of MB). A JSONL line
    that is not a JSON object becomes ``{"__error__": reason}``, so the reader reports it."""
    path = Path(path)
    if path.is_dir():  # a split's shards (or a fetched file), in name order
        for f in sorted(p for p in path.rglob("*") if p.suffix in DATA_SUFFIXES):
            yield from records(f)
        return
    if path.suffix == ".parquet":
        for batch in pq.ParquetFile(path).iter_batches(batch_size=64):
            yield from batch.to_pylist()
        return
    opener: Callable = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)  # Python's json reads MBPP+'s bare Infinity too
            except json.JSONDecodeError as err:
                row = {"__error__": f"line {n}: not JSON ({err.msg})"}
            yield row if isinstance(row, dict) else {"__error__": f"line {n}: not an object"}
