r"""Stages ``fetch_model`` and ``fetch_data``: what a dataset task needs from outside, pinned.

    python -m mintrl.fetch model --hub Qwen/Qwen3-1.7B --revision <commit> \
        --out results/models/math/base
    python -m mintrl.fetch model --path /shared/qwen3-1.7b --out results/models/math/base
    python -m mintrl.fetch data --hub agentica-org/DeepCoder-Preview-Dataset \
        --file 'taco/train-*.parquet' --revision <40 hex> --out results/raw/code/taco

Hub files go to the Hugging Face cache (``HF_HOME``; downloaded once, whatever the number of
tasks that use them) and ``--out`` is a folder of links to them, moved into place when
complete, so a killed download leaves nothing Snakemake would take for finished. A data
``--file`` may be a pattern (a split's shards); readers read a folder's files in name order.
A local path is linked the same way. ``--out``'s sibling ``<name>.json`` records what was
fetched (repo, revision and the commit it resolved to, files and sizes).
"""

from __future__ import annotations

from pathlib import Path

from mintrl.cli import command_line
from mintrl.fetching import (
    data_files,
    link_folder,
    model_files,
    resolved_commit,
)
from mintrl.io import write_json


def main(argv: list[str] | None = None) -> None:
    ap = command_line("python -m mintrl.fetch", __doc__)
    ap.add_argument("what", choices=["model", "data"],
                    help="a model checkpoint or a dataset of the config's task")
    ap.add_argument("--hub", help="Hugging Face repo id")
    ap.add_argument("--path", help="a local folder (model) or file (data) instead")
    ap.add_argument("--file", help="data: the file inside the dataset repo")
    ap.add_argument("--url", help="data: a release file to download instead")
    ap.add_argument("--sha256", help="data: the content hash the --url file must have")
    ap.add_argument("--revision", help="pinned commit (required with --hub)")
    ap.add_argument("--out", type=Path, required=True,
                    help="folder the files are written to")
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
    from mintrl.cli import run_main

    run_main(main)
