"""The configuration: the single source of truth for every key, its meaning and default.

``load_config(path)`` reads YAML and validates it, every run resolved; a bad key or value
raises ``ConfigError`` naming the file and the dotted key. ``python -m mintrl.config --schema
OUT`` writes the JSON schema, ``--check FILE`` validates a config and lists its runs.

  base      Strict (unknown keys are errors), ConfigError
  tasks     the toy tasks and the paper setting's dataset tasks
  rl        a run (RunSpec) and the settings it uses
  model     the root (Config), run entries, tuning grids
  runs      runs = base run + overrides + (lab seed, RL seed); where their jobs end
  loading   YAML -> Config, the resolved file, the JSON schema
"""

from __future__ import annotations

from mintrl.config.base import (
    ConfigError,
    Strict,
)
from mintrl.config.loading import (
    json_schema,
    load_config,
    load_run,
    main,  # noqa: F401  (python -m mintrl.config)
    parse_config,
    write_resolved_config,
)
from mintrl.config.model import (
    Config,
    RunEntry,
    TuneSpec,
)
from mintrl.config.rl import (
    DeepSpeedSpec,
    EvalSpec,
    FilterSpec,
    RunSpec,
    SamplingSpec,
    SFTSpec,
)
from mintrl.config.tasks import (
    LAB_SEED_STRIDE,
    RESERVED_SPLITS,
    SPLIT_NAME,
    AnyTask,
    DatasetTaskSpec,
    DataSource,
    DifficultyRange,
    FactMix,
    FactSpec,
    ModelArch,
    ModelRef,
    PretrainSpec,
    SplitSizes,
    TaskSpec,
)

__all__ = [
    "AnyTask", "Config", "ConfigError", "DataSource", "DatasetTaskSpec", "DeepSpeedSpec",
    "DifficultyRange", "EvalSpec", "FactMix", "FactSpec", "FilterSpec", "LAB_SEED_STRIDE",
    "ModelArch", "ModelRef", "PretrainSpec", "RESERVED_SPLITS", "RunEntry", "RunSpec",
    "SFTSpec", "SPLIT_NAME", "SamplingSpec", "SplitSizes", "Strict", "TaskSpec", "TuneSpec",
    "json_schema", "load_config", "load_run", "parse_config", "write_resolved_config",
]
