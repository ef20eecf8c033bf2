"""Reading a config: YAML -> validated ``Config`` (every run resolved), the resolved file the
stages read, and the JSON schema Snakemake checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from mintrl.config.base import ConfigError
from mintrl.config.model import Config
from mintrl.config.runs import Run, reference_run, resolve_runs
from mintrl.io import atomic_path
from mintrl.sandbox import allow_unisolated


def _format(err: ValidationError, source: str) -> str:
    lines = [f"invalid config {source}:"]
    for e in err.errors():
        loc = list(e["loc"])
        if loc[:1] == ["tasks"] and len(loc) > 2 and loc[2] in ("toy", "dataset"):
            del loc[2]  # the union's tag, not a key the user wrote
        key = ".".join(str(p) for p in loc) or "<root>"
        lines.append(f"  {key}: {e['msg']}")
    return "\n".join(lines)


def parse_config(data: dict[str, Any], source: str = "<dict>") -> Config:
    """Validate ``data``, including every run of the sweep; errors name the dotted key.
    Top-level keys starting with ``_`` are ignored: they hold YAML anchors (config/paper.yaml)."""
    data = {k: v for k, v in data.items() if not str(k).startswith("_")}
    try:
        cfg = Config.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format(err, source)) from None
    # validating a config means resolving every run
    runs = resolve_runs(cfg, source)
    reference_run(cfg, runs)
    rows = {r.entry for r in runs.values() if r.group != "tune"}
    for row in sorted(set(cfg.tuned) - rows):
        raise ConfigError(f"invalid config {source}:\n  tuned.{row}: no run entry {row!r}; "
                          f"entries: {sorted(rows)}")
    for i, entry in enumerate(cfg.runs):
        if entry.tuned_as is not None and entry.tuned_as not in rows:
            raise ConfigError(f"invalid config {source}:\n  runs.{i}.tuned_as: no run entry "
                              f"{entry.tuned_as!r}; entries: {sorted(rows)}")
    return cfg


def json_schema() -> dict[str, Any]:
    """The JSON schema Snakemake validates the config against, generated from ``Config``."""
    schema = Config.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def write_resolved_config(cfg: Config, path: str | Path) -> str:
    """Write ``cfg`` to ``path`` unless it already holds exactly that; return the path.

    Stages read this file, so they see what Snakemake resolved (files merged, --config
    overrides applied). Left untouched when unchanged, so a re-run rewrites nothing; which
    jobs a change reruns is decided by the per-rule settings params in common.smk.
    """
    path = Path(path)
    text = yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=True)
    if not path.exists() or path.read_text() != text:
        with atomic_path(path) as tmp:
            tmp.write_text(text)
    return str(path)


def load_config(path: str | Path) -> Config:
    path = Path(path)
    with open(path) as f:
        data = yaml.safe_load(f) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"invalid config {path}: the top level must be a mapping")
    cfg = parse_config(data, str(path))
    allow_unisolated(cfg.sandbox.unisolated)  # every stage that runs code loads its config here
    return cfg


def load_run(config: str | Path, name: str) -> tuple[Config, Run]:
    """The config file and its run ``name``; an unknown name lists the runs (stage CLIs)."""
    cfg = load_config(config)
    runs = resolve_runs(cfg, str(config))
    if name not in runs:
        raise SystemExit(f"unknown run {name!r}; runs of {config}: {sorted(runs)}")
    return cfg, runs[name]



def main(argv: list[str] | None = None) -> None:
    """``python -m mintrl.config --schema OUT``: regenerate the JSON schema file."""
    import argparse
    import json

    ap = argparse.ArgumentParser(prog="python -m mintrl.config",
                                 description="Validate a config or write its JSON schema.")
    ap.add_argument("--schema", type=Path, help="write the JSON schema of the config here")
    ap.add_argument("--check", type=Path, help="validate this config file and list its runs")
    args = ap.parse_args(argv)
    if args.schema:
        with atomic_path(args.schema) as tmp:
            tmp.write_text(json.dumps(json_schema(), indent=2) + "\n")
    if args.check:
        cfg = load_config(args.check)
        for name, run in resolve_runs(cfg).items():
            print(f"{name}: method={run.method} group={run.group} tasks={','.join(run.tasks)} "
                  f"iterations={run.spec.iterations}")


if __name__ == "__main__":
    main()
