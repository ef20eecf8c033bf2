"""The configuration model: the single source of truth for every key, its meaning and default.

``load_config(path)`` reads YAML and validates it; a bad key or value raises ``ConfigError``
naming the file and the dotted key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mintrl.io import atomic_path


class Strict(BaseModel):
    """Unknown keys are errors: a typo must not silently fall back to a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class DifficultyRange(Strict):
    """Inclusive range of the number of operation steps in a problem."""

    lo: int = Field(ge=1, le=32, description="Fewest operation steps.")
    hi: int = Field(ge=1, le=32, description="Most operation steps.")

    @model_validator(mode="after")
    def _ordered(self) -> DifficultyRange:
        if self.lo > self.hi:
            raise ValueError(f"lo ({self.lo}) must not exceed hi ({self.hi})")
        return self


class ModelArch(Strict):
    """Shape of a toy Qwen3-architecture model."""

    hidden_size: int = Field(128, ge=16, description="Width; must divide by num_heads.")
    intermediate_size: int = Field(512, ge=16, description="MLP width.")
    num_layers: int = Field(2, ge=1, description="Transformer blocks.")
    num_heads: int = Field(4, ge=1, description="Attention heads.")
    num_kv_heads: int = Field(2, ge=1, description="Key/value heads (grouped-query attention).")
    max_positions: int = Field(512, ge=64, description="Longest prompt + response, in tokens.")

    @model_validator(mode="after")
    def _divisible(self) -> ModelArch:
        if self.hidden_size % self.num_heads or self.num_heads % self.num_kv_heads:
            raise ValueError("hidden_size must divide by num_heads, num_heads by num_kv_heads")
        return self


class PretrainSpec(Strict):
    """How one toy model is pre-trained from scratch (next-token loss on responses only)."""

    arch: ModelArch = Field(default_factory=ModelArch, description="Model shape.")
    difficulties: DifficultyRange = Field(
        description="Problem lengths it is trained on; the base's upper end below the hard "
        "split is its knowledge gap."
    )
    steps: int = Field(800, ge=1, description="Optimizer steps (fixed count: deterministic).")
    batch_size: int = Field(64, ge=1, description="Sequences per step.")
    length_buckets: int = Field(
        8, ge=1, description="Micro-batches per step, grouped by length to cut padding "
        "(2.5x faster than one padded batch on the toy, same loss)."
    )
    lr: float = Field(3e-3, gt=0, description="Peak AdamW learning rate (cosine decay).")
    warmup_steps: int = Field(50, ge=0, description="Linear warm-up steps.")
    privileged_fraction: float = Field(
        0.15, ge=0, le=1, description="Share of examples whose prompt carries the reference "
        "solution, so the model can act as its own intervener (self-intervention)."
    )
    seed: int = Field(0, description="Initialisation and data seed, added to the global seed.")


class SplitSizes(Strict):
    """Problems per split (the evaluation splits need >= 100 for a usable Pass@1)."""

    train: int = Field(512, ge=1, description="RL training prompts (mixed difficulty).")
    validation: int = Field(128, ge=1, description="Tuning only; never reported.")
    easy: int = Field(200, ge=1, description="Easy evaluation split.")
    hard: int = Field(200, ge=1, description="Hard evaluation split.")


class TaskSpec(Strict):
    """One toy task: its splits and the base policy and teacher trained on it."""

    easy: DifficultyRange = Field(description="Difficulty of the easy evaluation split.")
    hard: DifficultyRange = Field(description="Difficulty of the hard evaluation split.")
    train: DifficultyRange = Field(
        description="Difficulty of RL training and validation prompts: spans easy to hard so "
        "on-policy RL has signal on some prompts and none on the hardest."
    )
    sizes: SplitSizes = Field(default_factory=SplitSizes, description="Split sizes.")
    max_new_tokens: int = Field(128, ge=1, description="Response length limit, in tokens.")
    base: PretrainSpec = Field(description="The base policy (with a knowledge gap).")
    teacher: PretrainSpec = Field(description="The stronger teacher / intervener.")


class SamplingSpec(Strict):
    """Sampling settings of the generation engine."""

    temperature: float = Field(1.0, gt=0, description="Softmax temperature.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass.")
    top_k: int = Field(0, ge=0, description="Keep the k most likely tokens; 0 keeps all.")


class EvalSpec(Strict):
    """Pass@1 evaluation."""

    samples: int = Field(32, ge=1, description="Samples per problem; Pass@1 is their mean.")
    pass_k: list[int] = Field([1, 8, 32], description="k values of the unbiased pass@k.")
    batch_size: int = Field(512, ge=1, description="Sequences per generation batch.")
    sampling: SamplingSpec = Field(default_factory=SamplingSpec, description="Sampling.")


class Config(Strict):
    """Root of config/config.yaml."""

    seed: int = Field(0, description="Global seed; every stage derives its seeds from it.")
    threads: int = Field(
        1, ge=1, description="torch threads per process: two jobs with two threads each on two "
        "cores were 20-40x slower than one thread each."
    )
    tasks: dict[str, TaskSpec] = Field(description="Toy tasks by registered name.")
    evaluation: EvalSpec = Field(default_factory=EvalSpec, description="Evaluation settings.")


class ConfigError(ValueError):
    """A config file failed validation; the message names the file and each bad key."""


def _format(err: ValidationError, source: str) -> str:
    lines = [f"invalid config {source}:"]
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "<root>"
        lines.append(f"  {key}: {e['msg']}")
    return "\n".join(lines)


def parse_config(data: dict[str, Any], source: str = "<dict>") -> Config:
    try:
        return Config.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format(err, source)) from None


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
    return parse_config(data, str(path))
