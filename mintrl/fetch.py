"""Stages ``fetch_model`` and ``fetch_data``: what a dataset task needs from outside, pinned.

    python -m mintrl.fetch model --hub Qwen/Qwen3-1.7B --revision <commit> \
        --out results/models/math/base
    python -m mintrl.fetch model --path /shared/qwen3-1.7b --out results/models/math/base
    python -m mintrl.fetch data --hub agentica-org/DeepCoder-Preview-Dataset \\
        --file 'taco/train-*.parquet' --revision <40 hex> --out results/raw/code/taco

Hub files go to the Hugging Face cache (``HF_HOME``; downloaded once, whatever the number of
tasks that use them) and ``--out`` is a folder of links to them, moved into place when
complete, so a killed download leaves nothing Snakemake would take for finished. A data
``--file`` may be a pattern (a split's shards); readers read a folder's files in name order.
A local path is linked the same way. ``--out``'s sibling ``<name>.json`` records what was
fetched (repo, revision and the commit it resolved to, files and sizes).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import os
import shutil
import urllib.request
from pathlib import Path

from mintrl.io import write_json

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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m mintrl.fetch", description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["model", "data"])
    ap.add_argument("--hub", help="Hugging Face repo id")
    ap.add_argument("--path", help="a local folder (model) or file (data) instead")
    ap.add_argument("--file", help="data: the file inside the dataset repo")
    ap.add_argument("--url", help="data: a release file to download instead")
    ap.add_argument("--sha256", help="data: the content hash the --url file must have")
    ap.add_argument("--revision", help="pinned commit (required with --hub)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if sum(x is not None for x in (args.hub, args.path, args.url)) != 1:
        raise SystemExit("give exactly one of --hub, --path and --url")
    if args.url and not args.sha256:
        raise SystemExit(f"--url {args.url}: pass its --sha256")
    if args.hub and not args.revision:
        raise SystemExit(f"--hub {args.hub}: pass the pinned --revision")
    if args.what == "model":
        files = model_files(args.hub, args.path, args.revision)
    else:
        if args.hub and not args.file:
            raise SystemExit("data --hub: pass --file")
        files = data_files(args)
    link_folder(files, args.out)
    write_json(args.out.with_name(f"{args.out.name}.json"), {
        "what": args.what, "hub": args.hub, "path": args.path, "file": args.file,
        "url": args.url, "sha256": args.sha256, "revision": args.revision,
        "resolved": resolved_commit(files),
        "files": {n: Path(f).resolve().stat().st_size for n, f in files.items()}})
    print(f"[fetch] {args.what} {args.hub or args.path}@{args.revision}: {len(files)} files "
          f"-> {args.out}", flush=True)


if __name__ == "__main__":
    main()
