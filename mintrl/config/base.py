"""The base of every config model (unknown keys are errors) and the config error."""

from __future__ import annotations

from pydantic import (
    BaseModel,
    ConfigDict,
)


class Strict(BaseModel):
    """Unknown keys are errors: a typo must not silently fall back to a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ConfigError(ValueError):
    """A config file failed validation; the message names the file and each bad key."""


