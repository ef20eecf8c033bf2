"""Atomic file writes and table readers.

Every output is written under a temporary name in the same folder and moved into place
with ``os.replace``: a killed job never leaves a readable half file (docs/design.md §3).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


def tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success move it into place.

    Works for files and folders (a folder replaces any previous one at ``path``). On error
    the temporary is removed and ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_name(path)
    try:
        yield tmp
        commit(tmp, path)
    finally:
        discard(tmp)


def commit(tmp: Path, path: Path) -> None:
    """Move a finished temporary file or folder into place."""
    if tmp.is_dir() and path.exists():
        old = tmp_name(path)
        os.replace(path, old)  # two renames: a folder cannot replace a non-empty one
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, path)


def discard(tmp: Path) -> None:
    if tmp.is_dir():
        shutil.rmtree(tmp, ignore_errors=True)
    elif tmp.exists():
        tmp.unlink()


def write_json(path: str | Path, data: Any) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def write_table(path: str | Path, rows: list[dict[str, Any]] | pd.DataFrame, schema: pa.Schema):
    """Write rows to Parquet with ``schema`` (columns checked and cast by pyarrow)."""
    df = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows, columns=schema.names)
    missing = [c for c in schema.names if c not in df.columns]
    if missing:
        raise KeyError(f"{path}: table lacks columns {missing} of its schema")
    table = pa.Table.from_pandas(df[schema.names], schema=schema, preserve_index=False)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a Parquet or JSONL table."""
    path = Path(path)
    if path.suffix in (".jsonl", ".json"):
        return pd.read_json(path, lines=path.suffix == ".jsonl")
    return pq.read_table(path).to_pandas()


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def checkpoint_path(path: str | Path) -> str:
    """``path`` when it is a local checkpoint folder or a Hugging Face id (``org/name``);
    otherwise FileNotFoundError naming it (transformers would take a missing local path for a
    Hub id and fail with "Repo id must be in the form ...")."""
    text = str(path)
    if Path(text).is_dir() or (_HUB_ID.fullmatch(text) and not Path(text).exists()):
        return text
    raise FileNotFoundError(errno.ENOENT, "No such checkpoint folder", text)


def save_checkpoint(model, tokenizer, out: Path) -> None:
    """A Hugging Face folder (transformers and vLLM load it), written atomically."""
    with atomic_path(out) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)


def write_files(out: Path, files: dict[str, str | pd.DataFrame]) -> None:
    """Each file under ``out``, atomically: text as is, a frame as CSV without its index."""
    for name, content in files.items():
        with atomic_path(out / name) as tmp:
            if isinstance(content, str):
                tmp.write_text(content)
            else:
                content.to_csv(tmp, index=False)
