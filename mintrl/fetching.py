"""What a dataset task needs from outside, pinned: model folders and data files from the
Hugging Face Hub or a release URL (checked against its sha256), linked into results/.
``python -m mintrl.fetch`` is its CLI.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import shutil
import urllib.request
from pathlib import Path

# What loading a causal LM and its tokenizer reads; weights only as safetensors.
MODEL_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "*.jinja", "*.tiktoken"]


def link_folder(files: dict[str, Path], out: Path) -> None:
    """``out`` as a fresh folder of symlinks ``name -> file``, replacing an old one whole."""
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, target in files.items():
        dest = tmp / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.symlink_to(Path(target).resolve())
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)


def _files(root: Path) -> dict[str, Path]:
    """Every file under ``root`` by its path relative to it."""
    return {str(f.relative_to(root)): f for f in sorted(root.rglob("*")) if f.is_file()}


def model_files(hub: str | None, path: str | None, revision: str | None) -> dict[str, Path]:
    if path is not None:
        root = Path(path)
        if not (root / "config.json").is_file():
            raise SystemExit(f"{root}: not a Hugging Face model folder (no config.json)")
        return _files(root)
    from huggingface_hub import snapshot_download

    return _files(Path(snapshot_download(hub, revision=revision, allow_patterns=MODEL_FILES)))


def download(url: str, sha256: str, cache: Path) -> Path:
    """``url`` into ``cache/<sha256>/<name>`` unless already there; the content must hash to
    ``sha256`` (a changed release is an error, not a silent new dataset)."""
    dest = cache / sha256 / Path(url).name
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp{os.getpid()}")
    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=120) as r, open(tmp, "wb") as f:
        while chunk := r.read(1 << 20):
            digest.update(chunk)
            f.write(chunk)
    if digest.hexdigest() != sha256:
        tmp.unlink()
        raise SystemExit(f"{url}: sha256 {digest.hexdigest()}, the config pins {sha256}")
    os.replace(tmp, dest)
    return dest


def data_files(args) -> dict[str, Path]:
    if args.path is not None:
        if not Path(args.path).is_file():
            raise SystemExit(f"{args.path}: no such dataset file")
        return {Path(args.path).name: Path(args.path)}
    if args.url is not None:
        cache = Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface"))
        got = download(args.url, args.sha256, cache / "mintrl-downloads")
        return {got.name: got}
    from huggingface_hub import snapshot_download

    # ``--file`` may be a pattern: the shards of one split (``taco/train-*.parquet``)
    root = Path(snapshot_download(args.hub, repo_type="dataset", revision=args.revision,
                                  allow_patterns=[args.file]))
    files = {n: f for n, f in _files(root).items() if fnmatch.fnmatch(n, args.file)}
    if not files:
        raise SystemExit(f"{args.hub}@{args.revision}: no file matches {args.file!r}")
    return files


def resolved_commit(files: dict[str, Path]) -> str | None:
    """The commit the hub cache resolved a branch name to (its ``snapshots/<commit>/``)."""
    for f in files.values():
        parts = Path(f).parts
        if "snapshots" in parts and parts.index("snapshots") + 1 < len(parts):
            return parts[parts.index("snapshots") + 1]
    return None
