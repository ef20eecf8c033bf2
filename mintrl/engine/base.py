"""The generation-engine interface every backend implements."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Sampling:
    """How to sample. Log-probs are always those of the raw model (temperature 1, no top-k/p):
    the quantity RL needs as the behaviour policy's log-prob."""

    max_new_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0  # 0: no top-k filter
    seed: int = 0

    @classmethod
    def of(cls, spec, max_new_tokens: int, seed: int) -> Sampling:
        """The sampling a config's ``SamplingSpec`` (temperature, top_p, top_k) asks for."""
        return cls(max_new_tokens=max_new_tokens, temperature=spec.temperature,
                   top_p=spec.top_p, top_k=spec.top_k, seed=seed)


@dataclass
class Generation:
    """Per prompt: generated ids (EOS included when produced), their log-probs, and why it
    stopped: "stop" (EOS) or "length" (max_new_tokens reached)."""

    token_ids: list[list[int]]
    logprobs: list[list[float]]
    finish_reasons: list[str]


class Engine(Protocol):
    def generate(self, prompt_token_ids: list[list[int]], sampling: Sampling,
                 progress: str | None = None) -> Generation:
        """Continue each prompt (any token-id prefix) independently; ``progress``: show a bar
        with this label (long batches: evaluation, filtering, SFT samples)."""
