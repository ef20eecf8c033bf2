"""The configuration reference (``docs/config.md``), generated from the config model.

    python -m mintrl.config_reference docs/config.md

Every key with its type, default, allowed range and meaning, read from the pydantic models in
``mintrl.config`` (the one source of truth): a test keeps the committed file current.
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path

import annotated_types
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from mintrl.cli import command_line
from mintrl.config import Config, DatasetTaskSpec, TaskSpec
from mintrl.io import atomic_path

BOUNDS = {annotated_types.Ge: ">=", annotated_types.Gt: ">", annotated_types.Le: "<=",
          annotated_types.Lt: "<", annotated_types.MinLen: "len >=", annotated_types.MaxLen:
          "len <="}
# Maps with free keys (task names, benchmark names, run indices): the name each row uses.
ENTRY = {"tasks": "<task>", "benchmarks": "<benchmark>", "train": "<part>", "runs": "<i>"}


def _type(tp) -> str:
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return " \\| ".join(json.dumps(a) for a in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type(a) for a in typing.get_args(tp))
    if origin is typing.Annotated:
        return _type(typing.get_args(tp)[0])
    if origin in (list, dict):
        return f"{origin.__name__}[{', '.join(_type(a) for a in typing.get_args(tp))}]"
    if tp is type(None):
        return "null"
    return getattr(tp, "__name__", str(tp))


def _default(field) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    value = field.default_factory() if field.default_factory else field.default
    if isinstance(value, BaseModel):
        return "(section)"
    return f"`{json.dumps(value)}`"


def _bound(m) -> object:
    """The number of an annotated_types bound (``Ge(ge=1)`` -> 1)."""
    (name,) = m.__dataclass_fields__
    return getattr(m, name)


def _range(field) -> str:
    parts = [f"{BOUNDS[type(m)]} {_bound(m)}" for m in field.metadata if type(m) in BOUNDS]
    parts += [f"pattern `{m.pattern}`" for m in field.metadata if hasattr(m, "pattern")
              and m.pattern]
    return ", ".join(parts)


def _models(tp) -> list[type[BaseModel]]:
    """The config models a field holds (directly, in a list or dict, or in a union)."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    return [m for a in typing.get_args(tp) for m in _models(a)]


def rows(model: type[BaseModel], prefix: str = "") -> list[tuple[str, str, str, str, str]]:
    out = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        out.append((key, _type(field.annotation), _default(field), _range(field),
                    (field.description or "").replace("|", "\\|").replace("\n", " ")))
        subs = _models(field.annotation)
        if not subs:
            continue
        free = typing.get_origin(field.annotation) in (dict, list) or any(
            typing.get_origin(a) in (dict, list) for a in typing.get_args(field.annotation))
        inner = f"{key}.{ENTRY.get(name, '<key>')}." if free else f"{key}."
        for sub in subs:
            if sub in (TaskSpec, DatasetTaskSpec):
                out.append((f"{inner[:-1]}", sub.__name__, "", "",
                            (sub.__doc__ or "").split("\n")[0]))
            out += rows(sub, inner)
    return out


def reference() -> str:
    lines = ["# Configuration reference", "",
             "Generated from the config model (`mintrl/config/`) by "
             "`python -m mintrl.config_reference docs/config.md`; do not edit by hand. "
             "`config/config.yaml` is the embedded default, `config/paper.yaml` the paper's "
             "setting. A run (`runs.<i>`) is `rl` plus its `overrides` (dotted keys of `rl`, "
             "e.g. `sampling.temperature`), once per seed; a task's `rl` keys apply to every "
             "run on it before the run's own overrides.", "",
             "| key | type | default | range | meaning |", "|---|---|---|---|---|"]
    for key, tp, default, rng, desc in rows(Config):
        lines.append(f"| `{key}` | {tp} | {default} | {rng} | {desc} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = command_line("python -m mintrl.config_reference", __doc__)
    ap.add_argument("out", type=Path, help="the Markdown file to write")
    args = ap.parse_args(argv)
    with atomic_path(args.out) as tmp:
        tmp.write_text(reference())


if __name__ == "__main__":
    from mintrl.cli import run_main

    run_main(main)
